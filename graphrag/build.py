"""The graph build: extract -> resolve -> communities -> reports.

Each stage is a public pure function so that benchmarks and tests can run (and
time) them one by one; :func:`build_graph` chains them. :func:`graph_from_chunks` is
the index build's entry: a full build, or an update of the previous graph.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from arborgraph.core.concurrency import run_ordered, workers_for
from arborgraph.core.leads import is_fragment, opening, points_elsewhere
from arborgraph.core.protocols import ProgressCallback, no_progress
from graphrag import schema
from graphrag.communities import HierarchicalLeiden, aggregate_edges
from graphrag.config import GraphConfig
from graphrag.extract.base import CorpusAwareExtractor, Extractor
from graphrag.graph import KnowledgeGraph
from graphrag.namesakes import with_namesakes_merged
from graphrag.model import ChunkExtraction, Community, Entity, Relation
from graphrag.reports import (
    ExtractiveReportWriter,
    ReportWriter,
    section_openers,
    sets_terms,
    states_something,
    write_reports,
)
from graphrag.resolution import resolve
from ingest.models import Chunk

if TYPE_CHECKING:  # pragma: no cover
    from graphrag.update import ExtractMany, FitMany, GraphState, GraphUpdate

_PROGRESS_EVERY = 100


def extract_all(
    chunks: Sequence[Chunk], extractor: Extractor, progress: ProgressCallback = no_progress
) -> list[ChunkExtraction]:
    """Run ``extractor`` over ``chunks`` (fitting it first if it learns from the corpus)."""
    if isinstance(extractor, CorpusAwareExtractor):
        extractor.fit(chunks)
    return extract_each(chunks, extractor, progress)


def extract_each(
    chunks: Sequence[Chunk], extractor: Extractor, progress: ProgressCallback = no_progress
) -> list[ChunkExtraction]:
    """Run an (already fitted) ``extractor`` over ``chunks``; results in chunk order.

    An extractor with a ``concurrency`` above 1 (the LLM one: its provider's limit)
    extracts that many chunks at once; each chunk's result depends on that chunk alone,
    so the output is the same as one at a time. The first failure stops the stage
    (calls already sent finish and are cached for the next run).
    """
    n = len(chunks)

    def done(finished: int) -> None:
        if finished % _PROGRESS_EVERY == 0 or finished == n:
            progress("graphrag.extract", finished, n)

    return run_ordered(extractor.extract, chunks, workers_for(extractor), stop_on_error=True, done=done)


def leiden_edges(relations: dict[str, Relation], config: GraphConfig) -> list[tuple[str, str, float]]:
    """The weighted, undirected edges Leiden partitions (relation weights summed per pair)."""
    return aggregate_edges(
        ((r.source, r.target, r.weight) for r in relations.values()), min_weight=config.min_edge_weight
    )


def detect_communities(
    entities: dict[str, Entity],
    relations: dict[str, Relation],
    config: GraphConfig,
    *,
    initial: Mapping[str, Sequence[int]] | None = None,
    fixed: Collection[str] = (),
) -> dict[int, Community]:
    """Hierarchical Leiden over the entity graph (relation weights summed per pair).

    ``initial`` and ``fixed`` start from a previous partition (see
    :meth:`HierarchicalLeiden.fit`); without them the partition starts from scratch.
    """
    leiden = HierarchicalLeiden(
        max_cluster_size=config.max_cluster_size,
        resolution=config.resolution,
        n_iterations=config.leiden_iterations,
        max_levels=config.max_levels,
        min_community_size=config.min_community_size,
        seed=config.seed,
    )
    leiden.fit(sorted(entities), leiden_edges(relations, config), initial=initial, fixed=fixed)
    return {c.id: c for c in leiden.communities_}


def build_graph(
    chunks: Sequence[Chunk],
    *,
    extractor: Extractor,
    config: GraphConfig | None = None,
    progress: ProgressCallback | None = None,
    report_writer: ReportWriter | None = None,
) -> KnowledgeGraph:
    """Build the knowledge graph of ``chunks``.

    ``chunks`` should be in document order (ties in names and descriptions go to the
    earliest chunk). Without ``report_writer`` reports are extractive (no model).
    Extraction or report errors (e.g. :class:`arborgraph.core.errors.LLMError`) propagate.
    """
    prog = progress or no_progress
    extractions = extract_all(chunks, extractor, prog)
    return graph_from_extractions(
        extractions, extractor=extractor.name, config=config, progress=prog, report_writer=report_writer,
        headings=chunk_headings(chunks), leads=section_leads(chunks), texts=chunk_texts(chunks),
    )


def chunk_texts(chunks: Sequence[Chunk]) -> dict[str, str]:
    """Chunk id -> text, in document order: what the reports' overviews are drawn from."""
    return {c.chunk_id: c.text for c in chunks}


def chunk_headings(chunks: Sequence[Chunk]) -> dict[str, list[str]]:
    """Chunk id -> heading path (page title first): what names communities and finds
    the pages to read about them."""
    return {c.chunk_id: list(c.heading_path) for c in chunks}


def section_leads(chunks: Sequence[Chunk]) -> dict[str, str]:
    """Chunk id -> lead sentence of each chunk that opens its section (the first of its
    document under its heading path, ``chunks`` in document order): where the manual
    says what a section is about, which a community's report opens with. The lead is the
    first of the chunk's opening sentences (:func:`arborgraph.core.leads.opening`) that
    is not an aside ("Note that ...", "In other words, ..."), does not go on from text
    before it, does not only send the reader elsewhere or set up an example ("Their use
    is described in section 10.6.", "Let's say a company named Example, Inc.") and is
    not a table's row or a definition without its headword."""
    out: dict[str, str] = {}
    openers = section_openers(chunk_headings(chunks))
    for c in chunks:
        if c.chunk_id in openers:
            candidates = [s for s in opening(c.text, _LEAD_CANDIDATES) if _may_lead(s)]
            # a sentence with a verb first; a noun phrase ("Macro to provide an option
            # dependent on other options.") only when the section has nothing else: it
            # says what its own heading is, and a report quotes it under no other title
            lead = next((s for s in candidates if states_something(s)), candidates[0] if candidates else None)
            if lead is not None:
                out[c.chunk_id] = lead
    return out


# how many of a section's opening sentences may be passed over for an aside
_LEAD_CANDIDATES = 3
# a sentence opening in a lower-case word goes on from text before it ("where origin/master
# used to point ..."), unlike one opening with an identifier ("git-merge(1) joins ...");
# a note or a rewording is an aside to what the section is about
_NOT_A_LEAD = re.compile(
    r"^(?:[a-z]+[\s,;:]|(?:Note|NOTE)\b|In other words\b|As (?:before|described|mentioned|noted|you can see)\b)"
)


def _may_lead(sentence: str) -> bool:
    return not (
        _NOT_A_LEAD.match(sentence) or sets_terms(sentence) or points_elsewhere(sentence)
        or is_fragment(sentence)
    )


def default_report_writer(config: GraphConfig) -> ReportWriter:
    """The report writer used when none is given: extractive, no model."""
    return ExtractiveReportWriter(n_entities=config.report_entities, n_findings=config.report_findings)


def graph_meta(
    extractor: str,
    writer: ReportWriter,
    config: GraphConfig,
    *,
    next_community_id: int,
    fit_chunks: int,
    changed_since_fit: int = 0,
) -> dict[str, str]:
    """The build facts stored with a graph. For updates (see graphrag.update):
    ``next_community_id`` is the first id no community of this graph or its earlier
    versions has had; ``fit_chunks`` the number of chunks the extractor was last fitted
    on and ``changed_since_fit`` how many were added, changed or removed since."""
    return {
        "schema_version": str(schema.SCHEMA_VERSION),
        "extractor": extractor,
        "report_writer": writer.name,
        "config": config.model_dump_json(),
        "next_community_id": str(next_community_id),
        "fit_chunks": str(fit_chunks),
        "chunks_changed_since_fit": str(changed_since_fit),
    }


def graph_from_extractions(
    extractions: Sequence[ChunkExtraction],
    *,
    extractor: str,
    config: GraphConfig | None = None,
    progress: ProgressCallback | None = None,
    report_writer: ReportWriter | None = None,
    headings: Mapping[str, Sequence[str]] | None = None,
    leads: Mapping[str, str] | None = None,
    texts: Mapping[str, str] | None = None,
) -> KnowledgeGraph:
    """Resolve, partition and report: the graph of per-chunk ``extractions`` (in
    document order) made by the extractor named ``extractor``; ``headings`` (see
    :func:`chunk_headings`) name the communities, ``leads`` (see :func:`section_leads`)
    open their reports, ``texts`` (see :func:`chunk_texts`) give their overviews."""
    cfg = config or GraphConfig()
    prog = progress or no_progress
    prog("graphrag.resolve", 0, 1)
    entities, relations = resolve(extractions, cfg)
    prog("graphrag.resolve", 1, 1)
    prog("graphrag.communities", 0, 1)
    communities = detect_communities(entities, relations, cfg)
    prog("graphrag.communities", 1, 1)
    writer = report_writer or default_report_writer(cfg)
    next_id = max(communities, default=-1) + 1
    meta = graph_meta(extractor, writer, cfg, next_community_id=next_id, fit_chunks=len(extractions))
    kg = with_namesakes_merged(KnowledgeGraph(entities, relations, communities, meta=meta), headings or {})
    write_reports(
        kg, writer, min_size=cfg.min_report_size, progress=prog, headings=headings, leads=leads, texts=texts
    )
    return kg


def graph_from_chunks(
    chunks: Sequence[Chunk],
    *,
    extractor: Extractor,
    config: GraphConfig,
    previous: GraphState | None = None,
    refit_threshold: float = 0.25,
    report_writer: ReportWriter | None = None,
    extract_many: ExtractMany | None = None,
    fit_many: FitMany | None = None,
    progress: ProgressCallback | None = None,
) -> tuple[GraphState, GraphUpdate]:
    """The graph of ``chunks`` (with communities and reports) and what an update redid.

    Given the ``previous`` graph state (same settings, other chunks), only new and
    changed chunks are extracted, community ids are kept where membership did not
    change and only changed communities get new reports; past ``refit_threshold`` of
    changed chunks the extractor is refitted and everything re-extracted. Without one,
    a full build. ``extract_many`` and ``fit_many`` run extraction and the counting of
    term statistics for a fit elsewhere (on worker processes); by default, in order here.
    """
    from graphrag.update import build_graph_state, update_graph  # graphrag.update builds on this module

    settings = {
        "extractor": extractor, "config": config, "report_writer": report_writer,
        "extract_many": extract_many, "fit_many": fit_many, "progress": progress,
    }
    if previous is None:
        return build_graph_state(chunks, **settings)
    return update_graph(previous, chunks, refit_threshold=refit_threshold, **settings)
