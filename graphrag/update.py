"""Update an entity graph in place of a rebuild when the manual changes a little.

The graph is stored with what an update needs (:class:`GraphState`): every chunk's
extraction with a hash of the chunk, and the extractor's fitted statistics (the rule
extractor's term vocabulary). :func:`update_graph` then

1. extracts only new and changed chunks, with the previous fitted state, and reuses
   the stored extractions of the others (removed chunks' extractions are dropped);
2. resolves all extractions again, so entity mentions and relation chunk ids follow
   the new chunks (a deleted chunk is gone from every entity and relation);
3. re-runs hierarchical Leiden starting from the previous communities, with every
   entity whose edges did not change held in its previous community, so a community
   the change did not touch comes out with the same members;
4. gives a community whose member set equals a previous one's that community's id,
   and every other community a fresh id above all ids used before;
5. writes reports only for communities whose report input changed (members, central
   entities, relations and their evidence, the text of the chunks these cite, child
   report titles, the community's name, the pages to read and the sections whose lead
   sentences open the report, with those sections' opening chunks); the others keep
   their previous report.

When the chunks added, changed or removed since the extractor was last fitted (over
all updates since) pass ``refit_threshold`` of the chunks it was fitted on, or the
extractor changed, the previous statistics no longer describe the collection and
the communities held in place have drifted: the extractor is fitted again,
every chunk re-extracted and Leiden starts from scratch; ids and reports are still
kept wherever a community came out unchanged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from arborgraph.core.protocols import ProgressCallback, no_progress
from graphrag import schema as S
from graphrag.build import (
    chunk_headings,
    chunk_texts,
    default_report_writer,
    section_leads,
    detect_communities,
    extract_each,
    graph_meta,
    leiden_edges,
)
from graphrag.config import GraphConfig
from graphrag.extract.base import CorpusAwareExtractor, Extractor
from graphrag.graph import KnowledgeGraph
from graphrag.namesakes import with_namesakes_merged
from graphrag.model import ChunkExtraction, Community, CommunityReport, Entity, Relation
from graphrag.reports import CommunityContext, ReportWriter, community_context, write_reports
from graphrag.resolution import resolve
from graphrag.tables import (
    extractions_from_table,
    extractions_to_table,
    extractor_state_from_table,
    extractor_state_to_table,
    graph_from_tables,
    graph_to_tables,
)
from ingest.models import Chunk

# Runs a fitted extractor over chunks, in order (serially, or on an executor's workers).
ExtractMany = Callable[[Extractor, Sequence[Chunk]], list[ChunkExtraction]]
# Fits a corpus-aware extractor on chunks (in-process, or counting on a pool's workers).
FitMany = Callable[[Extractor, Sequence[Chunk]], None]


@dataclass
class GraphState:
    """A graph with what an update needs: ``extractions`` of its chunks (document
    order), ``hashes`` (chunk id -> :func:`chunk_hash`), the ``extractor`` name and its
    fitted state (kind -> key -> count; empty for extractors that learn nothing)."""

    graph: KnowledgeGraph
    extractions: list[ChunkExtraction]
    hashes: dict[str, str]
    extractor: str
    extractor_state: dict[str, dict[str, int]] = field(default_factory=dict)
    # stored extraction rows still valid for this state (the table they were read from,
    # and the chunk ids whose rows hold this state's extraction and hash): writing the
    # state takes them instead of encoding every extraction again
    stored_rows: tuple[pa.Table, frozenset[str]] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class GraphUpdate:
    """What :func:`build_graph_state` or :func:`update_graph` did, for the build report."""

    chunks_extracted: int
    chunks_reused: int
    chunks_added: int
    chunks_changed: int
    chunks_removed: int
    drift: float  # chunks added, changed or removed since the last fit / chunks at that fit
    full_refit: bool
    refit_reason: str | None
    communities_kept: int
    communities_new: int
    communities_removed: int
    reports_reused: int
    reports_redone: int  # report writer calls
    kept_ids: tuple[int, ...] = ()
    new_ids: tuple[int, ...] = ()
    removed_ids: tuple[int, ...] = ()
    redone_report_ids: tuple[int, ...] = ()

    def stats(self) -> dict[str, Any]:
        """The counts (not the id lists), for a build report."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if not f.name.endswith("_ids")
        }


def chunk_hash(chunk: Chunk) -> str:
    """A hash of everything of ``chunk`` an extractor reads (id, document, headings, text)."""
    payload = json.dumps([chunk.chunk_id, chunk.doc_id, list(chunk.heading_path), chunk.text], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


def state_to_tables(state: GraphState) -> dict[str, pa.Table]:
    """The graph tables plus the extraction and extractor-state tables."""
    tables = graph_to_tables(state.graph)
    tables[S.EXTRACTIONS] = _extractions_table(state)
    tables[S.EXTRACTOR_STATE] = extractor_state_to_table(state.extractor_state, state.extractor)
    return tables


def state_from_tables(tables: Mapping[str, pa.Table]) -> GraphState:
    """The state written by :func:`state_to_tables`; ValueError if a table is missing."""
    missing = [n for n in S.UPDATE_TABLE_NAMES if n not in tables]
    if missing:
        raise ValueError(f"graph update tables missing: {', '.join(missing)}")
    extractions, hashes, extractor = extractions_from_table(tables[S.EXTRACTIONS])
    state, _ = extractor_state_from_table(tables[S.EXTRACTOR_STATE])
    stored = (tables[S.EXTRACTIONS], frozenset(hashes))
    return GraphState(graph_from_tables(tables), extractions, hashes, extractor, state, stored_rows=stored)


def _extractions_table(state: GraphState) -> pa.Table:
    """:func:`extractions_to_table` of the state, with the rows of ``stored_rows`` taken
    as they are and only the other extractions encoded."""
    if state.stored_rows is None:
        return extractions_to_table(state.extractions, state.hashes, state.extractor)
    stored, valid = state.stored_rows
    row_of = {cid: i for i, cid in enumerate(stored.column(S.CHUNK_ID).to_pylist()) if cid in valid}
    fresh = [ex for ex in state.extractions if ex.chunk_id not in row_of]
    encoded = extractions_to_table(fresh, state.hashes, state.extractor)
    fresh_row = {ex.chunk_id: stored.num_rows + i for i, ex in enumerate(fresh)}
    both = pa.concat_tables([stored.select(encoded.column_names).cast(encoded.schema), encoded])
    rows = [row_of[ex.chunk_id] if ex.chunk_id in row_of else fresh_row[ex.chunk_id] for ex in state.extractions]
    taken = both.take(pa.array(rows, pa.int64()))
    return pa.Table.from_arrays(taken.columns, schema=encoded.schema)


def _serial(progress: ProgressCallback) -> ExtractMany:
    return lambda extractor, chunks: extract_each(chunks, extractor, progress)


def _fitted_state(extractor: Extractor) -> dict[str, dict[str, int]]:
    """The extractor's fitted state as stored: kinds with no keys leave no row, so none."""
    get = getattr(extractor, "fitted_state", None)
    return {kind: items for kind, items in get().items() if items} if callable(get) else {}


def build_graph_state(
    chunks: Sequence[Chunk],
    *,
    extractor: Extractor,
    config: GraphConfig | None = None,
    report_writer: ReportWriter | None = None,
    extract_many: ExtractMany | None = None,
    fit_many: FitMany | None = None,
    progress: ProgressCallback | None = None,
) -> tuple[GraphState, GraphUpdate]:
    """A full build (as :func:`graphrag.build_graph`) that keeps what an update needs."""
    empty = GraphState(KnowledgeGraph({}, {}), [], {}, extractor="")
    return update_graph(
        empty, chunks, extractor=extractor, config=config, report_writer=report_writer,
        extract_many=extract_many, fit_many=fit_many, progress=progress, refit_threshold=0.0,
    )


def update_graph(
    previous: GraphState,
    chunks: Sequence[Chunk],
    *,
    extractor: Extractor,
    config: GraphConfig | None = None,
    report_writer: ReportWriter | None = None,
    refit_threshold: float = 0.25,
    extract_many: ExtractMany | None = None,
    fit_many: FitMany | None = None,
    progress: ProgressCallback | None = None,
) -> tuple[GraphState, GraphUpdate]:
    """The graph of ``chunks`` (the scope's new full chunk list, in document order),
    reusing ``previous`` (see the module docstring).

    A chunk is new if its id is, changed if its :func:`chunk_hash` differs, removed if
    its id is gone. Without ``report_writer`` reports are extractive. The result
    depends only on ``previous``, ``chunks``, the extractor and ``config`` (with its
    seed): the same input gives the same tables.
    """
    cfg = config or GraphConfig()
    prog = progress or no_progress
    run = extract_many or _serial(prog)
    writer = report_writer or default_report_writer(cfg)

    hashes = {c.chunk_id: chunk_hash(c) for c in chunks}
    old = previous.hashes
    added = [c for c in chunks if c.chunk_id not in old]
    changed = [c for c in chunks if c.chunk_id in old and old[c.chunk_id] != hashes[c.chunk_id]]
    removed = [cid for cid in old if cid not in hashes]
    # drift counts every change since the extractor was last fitted, so that many small
    # updates add up to a refit as one large one would
    fitted_on = int(previous.graph.meta.get("fit_chunks", len(old)))
    changed_since_fit = int(previous.graph.meta.get("chunks_changed_since_fit", 0))
    changes = changed_since_fit + len(added) + len(changed) + len(removed)
    drift = changes / fitted_on if fitted_on else 1.0

    learns = isinstance(extractor, CorpusAwareExtractor)
    reason = _refit_reason(previous, extractor, drift, refit_threshold)
    refit = reason is not None
    if refit:
        if learns and fit_many is not None:
            fit_many(extractor, chunks)
        elif learns:
            extractor.fit(chunks)  # type: ignore[union-attr]
        if learns or previous.extractor != extractor.name:
            todo = list(chunks)
        else:  # nothing learnt from the corpus: unchanged chunks extract the same
            todo = added + changed
    else:
        if learns:
            extractor.restore_state(previous.extractor_state)  # type: ignore[attr-defined]
        todo = added + changed

    fresh = dict(zip((c.chunk_id for c in todo), run(extractor, todo), strict=True))
    kept = {ex.chunk_id: ex for ex in previous.extractions}
    extractions = [fresh[c.chunk_id] if c.chunk_id in fresh else kept[c.chunk_id] for c in chunks]

    prog("graphrag.resolve", 0, 1)
    entities, relations = resolve(extractions, cfg)
    prog("graphrag.resolve", 1, 1)
    prog("graphrag.communities", 0, 1)
    old_graph = previous.graph
    if not refit:
        detected = detect_communities(
            entities, relations, cfg,
            initial=_membership(old_graph.communities),
            fixed=_unchanged_nodes(old_graph, relations, cfg),
        )
    else:
        detected = detect_communities(entities, relations, cfg)
    communities, next_id = _stable_ids(detected, old_graph)
    prog("graphrag.communities", 1, 1)

    meta = graph_meta(
        extractor.name, writer, cfg, next_community_id=next_id,
        fit_chunks=len(chunks) if refit else fitted_on, changed_since_fit=0 if refit else changes,
    )
    headings = chunk_headings(chunks)
    # as a build does: siblings only a member's name would tell apart are one community
    kg = with_namesakes_merged(KnowledgeGraph(entities, relations, communities, meta=meta), headings)
    communities = kg.communities
    touched = {cid for cid, h in hashes.items() if old.get(cid) != h} | set(removed)
    reuse = _report_reuse(old_graph, old, hashes, writer, _dirty_entities(old_graph, entities, relations, touched))
    counting = _CountingWriter(writer)
    write_reports(
        kg, counting, min_size=cfg.min_report_size, progress=prog, reuse=reuse, headings=headings,
        leads=section_leads(chunks), texts=chunk_texts(chunks),
    )

    kept_ids = tuple(c for c in communities if c in old_graph.communities)
    new_ids = tuple(c for c in communities if c not in old_graph.communities)
    removed_ids = tuple(c for c in old_graph.communities if c not in communities)
    stored = None
    if previous.stored_rows is not None:
        table, valid = previous.stored_rows
        stored = (table, frozenset(c.chunk_id for c in chunks if c.chunk_id not in fresh and c.chunk_id in valid))
    state = GraphState(kg, extractions, hashes, extractor.name, _fitted_state(extractor), stored_rows=stored)
    return state, GraphUpdate(
        chunks_extracted=len(todo), chunks_reused=len(chunks) - len(todo),
        chunks_added=len(added), chunks_changed=len(changed), chunks_removed=len(removed),
        drift=round(drift, 6), full_refit=refit, refit_reason=reason,
        communities_kept=len(kept_ids), communities_new=len(new_ids), communities_removed=len(removed_ids),
        reports_reused=len(kg.reports) - len(counting.written), reports_redone=len(counting.written),
        kept_ids=kept_ids, new_ids=new_ids, removed_ids=removed_ids, redone_report_ids=tuple(sorted(counting.written)),
    )


def _refit_reason(previous: GraphState, extractor: Extractor, drift: float, threshold: float) -> str | None:
    """Why the previous extractions and communities cannot be built on, or None."""
    if not previous.extractions:
        return "no previous graph state"
    if previous.extractor != extractor.name:
        return f"extractor changed ({previous.extractor} -> {extractor.name})"
    if isinstance(extractor, CorpusAwareExtractor) and not hasattr(extractor, "restore_state"):
        return "the extractor cannot restore its fitted state"
    if drift > threshold:
        return f"{drift:.1%} of the chunks changed since the last fit, above the refit threshold of {threshold:.1%}"
    return None


def _membership(communities: Mapping[int, Community]) -> dict[str, list[int]]:
    """Entity id -> its communities, top level first (the form Leiden starts from)."""
    out: dict[str, list[int]] = defaultdict(list)
    for com in sorted(communities.values(), key=lambda c: (c.level, c.id)):
        for m in com.members:
            out[m].append(com.id)
    return dict(out)


def _unchanged_nodes(old: KnowledgeGraph, relations: Mapping[str, Any], cfg: GraphConfig) -> set[str]:
    """Entities whose Leiden edges (neighbours and weights) are as before."""

    def neighbours(edges: list[tuple[str, str, float]]) -> dict[str, set[tuple[str, float]]]:
        out: dict[str, set[tuple[str, float]]] = defaultdict(set)
        for a, b, w in edges:
            out[a].add((b, w))
            out[b].add((a, w))
        return out

    before = neighbours(leiden_edges(old.relations, cfg))
    after = neighbours(leiden_edges(dict(relations), cfg))
    return {n for n in old.entities if before.get(n, set()) == after.get(n, set())}


def _stable_ids(detected: Mapping[int, Community], old: KnowledgeGraph) -> tuple[dict[int, Community], int]:
    """Communities with ids kept where the member set is a previous community's, fresh
    ids (from the first id never used) elsewhere; and the next fresh id."""
    old_ids: dict[frozenset[str], int] = {}
    for com in sorted(old.communities.values(), key=lambda c: (c.level, c.id)):
        old_ids.setdefault(frozenset(com.members), com.id)
    next_id = max(int(old.meta.get("next_community_id", 0)), max(old.communities, default=-1) + 1)
    ids: dict[int, int] = {}
    used: set[int] = set()
    for com in detected.values():
        match = old_ids.get(frozenset(com.members))
        if match is not None and match not in used:
            ids[com.id] = match
            used.add(match)
        else:
            ids[com.id] = next_id
            next_id += 1
    out = {
        ids[c.id]: Community(
            id=ids[c.id], level=c.level, members=list(c.members),
            parent=None if c.parent is None else ids[c.parent], children=[ids[ch] for ch in c.children],
        )
        for c in detected.values()
    }
    return out, next_id


def context_signature(ctx: CommunityContext, hashes: Mapping[str, str]) -> str:
    """A hash of everything a report writer sees of a community (except its rank),
    including the current text of every chunk the context cites."""
    cited: set[str] = set()
    entities = []
    for ent, strength in ctx.entities:
        entities.append([ent.id, ent.name, ent.type, ent.description, ent.description_chunk, round(strength, 9)])
        if ent.description_chunk:
            cited.add(ent.description_chunk)
    relations = []
    for rel in ctx.relations:
        evidence = [[ev.chunk_id, ev.start, ev.end] for ev in rel.evidence]
        relations.append([rel.id, rel.type, rel.weight, rel.description, list(rel.chunk_ids), evidence])
        cited.update(rel.chunk_ids)
        cited.update(ev.chunk_id for ev in rel.evidence)
    # the sections' leads that open the report: a lead's chunk is cited like evidence
    cited.update(chunk for _, _, chunk in ctx.leads)
    payload = [
        ctx.community.level,
        sorted(ctx.community.members),
        entities,
        relations,
        sorted(ctx.phrases.items()),
        [r.title for r in ctx.child_reports],
        [list(lead) for lead in ctx.leads],
        sorted((c, hashes.get(c, "")) for c in cited),
    ]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()


def _dirty_entities(
    old: KnowledgeGraph, entities: Mapping[str, Entity], relations: Mapping[str, Relation], touched: set[str]
) -> set[str]:
    """Entities whose part of a report's input may differ from ``old``: changed, added
    or removed entities, the ends of changed, added or removed relations, and entities
    or relation ends citing a chunk in ``touched`` (added, changed or removed)."""
    dirty = {eid for eid, ent in entities.items() if old.entities.get(eid) != ent}
    dirty.update(old.entities.keys() - entities.keys())
    for rid in old.relations.keys() ^ relations.keys():
        rel = relations.get(rid) or old.relations[rid]
        dirty.update((rel.source, rel.target))
    for rid, rel in relations.items():
        # a relation's evidence comes from its chunks: checking chunk_ids covers both
        if not touched.isdisjoint(rel.chunk_ids) or old.relations.get(rid, rel) != rel:
            dirty.update((rel.source, rel.target))
    dirty.update(e.id for e in entities.values() if e.description_chunk in touched)
    return dirty


def _report_reuse(
    old: KnowledgeGraph,
    old_hashes: Mapping[str, str],
    hashes: Mapping[str, str],
    writer: ReportWriter,
    dirty: set[str],
) -> Callable[[CommunityContext], CommunityReport | None]:
    """The previous report of a kept community whose report input did not change.

    The input is unchanged when the community has the same level and members as
    before, no member is in ``dirty`` (see :func:`_dirty_entities`) and its child
    reports have the same titles: then its context is the previous one, and comparing
    :func:`context_signature` is skipped. Otherwise the signatures decide.
    """
    same_writer = old.meta.get("report_writer") == writer.name
    rerank = getattr(writer, "rank_from_weight", False)
    reads_names = getattr(writer, "reads_names", False)

    def unchanged(ctx: CommunityContext, before: Community) -> bool:
        com = ctx.community
        if com.level != before.level or set(com.members) != set(before.members) or dirty.intersection(com.members):
            return False
        titles = [old.reports[ch].title for ch in before.children if ch in old.reports]
        return titles == [r.title for r in ctx.child_reports]

    def reuse(ctx: CommunityContext) -> CommunityReport | None:
        cid = ctx.community.id
        if not same_writer or cid not in old.reports:
            return None
        previous = old.reports[cid]
        pages = [doc for doc, _ in ctx.pages]
        if reads_names and (previous.name != ctx.name or previous.pages != pages):
            return None  # named anew, or other pages to read: the writer's input changed
        if any(old_hashes.get(chunk) != hashes.get(chunk) for _, _, chunk in ctx.leads):
            return None  # a section's opening that the report quotes was edited or is new
        before = old.communities[cid]
        if not unchanged(ctx, before):
            # the leads' chunks are as they were (above): the previous context had them too
            previous_context = dataclasses.replace(community_context(old, before), leads=ctx.leads)
            if context_signature(previous_context, old_hashes) != context_signature(ctx, hashes):
                return None
        report = old.reports[cid]
        if rerank and report.rank != ctx.rank:
            report = dataclasses.replace(report, rank=ctx.rank)
        if report.name != ctx.name or report.pages != pages:
            # a writer that does not read them (an LLM's) keeps its text; the record follows
            report = dataclasses.replace(report, name=ctx.name, pages=pages)
        return report

    return reuse


class _CountingWriter:
    """Passes reports through and records which communities were written."""

    def __init__(self, inner: ReportWriter) -> None:
        self.inner = inner
        self.name = inner.name
        # passed on: write_reports runs an LLM writer's calls of one level at once
        self.concurrency: int = getattr(inner, "concurrency", 1)
        self.written: list[int] = []  # appended from worker threads; list.append is atomic

    def write(self, context: CommunityContext) -> CommunityReport:
        self.written.append(context.community.id)
        return self.inner.write(context)
