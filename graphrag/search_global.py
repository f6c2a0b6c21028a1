"""Global retrieval: community reports for questions about the manual as a whole.

Reports are scored against the question (BM25 over report text, the question's linked
entities among the members, optionally dense similarity); the level is chosen where
the best reports match best, unless given. The answer is the top reports (title,
summary and the findings that match the question best), then chunks taken in turn
from each chosen community (the chunks grounding its findings and the chunks of its
central members, best match first), so that the evidence spans many parts of the
manual rather than the one place a flat search would find. With a flat ranking
(``candidate_chunks``) its first chunks lead, and the first chunks of a few pages it
misses (see :func:`page_leads`) take the place of the last chunks of the answer's
window when they match the question better than those chunks do.
"""

from __future__ import annotations

import weakref
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from arborgraph.core.retrieval import Retrieval
from arborgraph.core.protocols import Embedder
from arborgraph.core.results import Context
from graphrag.chunks import (
    ChunkFetcher,
    ChunkRef,
    ChunkSource,
    ChunkVectors,
    bm25,
    chunk_context,
    doc_of,
    n_words,
    normalise,
    rank_prior,
)
from graphrag.config import GlobalSearchConfig
from graphrag.graph import KnowledgeGraph
from graphrag.linking import link_entities
from graphrag.model import CommunityReport
from graphrag.search import ChunkScores, cosines
from graphrag.search_index import mention_index, report_index


def global_search(
    kg: KnowledgeGraph,
    question: str,
    *,
    chunk_text: ChunkSource,
    level: int | None = None,
    embedder: Embedder | None = None,
    report_vectors: Mapping[int, np.ndarray] | None = None,
    chunk_vectors: ChunkVectors | None = None,
    candidate_chunks: Sequence[str] | Mapping[str, float] | None = None,
    config: GlobalSearchConfig | None = None,
    query_vector: np.ndarray | None = None,
    chunk_lexical: ChunkScores | None = None,
    overview: bool = False,
) -> Retrieval:
    """Top community reports for ``question`` and the chunks that ground them.

    With ``overview`` (a question about the manual as a whole, whose words name no
    part of it) the reports are the top level's most important ones (by rank, the
    weight of their communities), not those matching the question's words.

    A report is shown only if every chunk its findings cite is visible through
    ``chunk_text`` (derived text must not leak restricted sources). ``query_vector``
    (the question embedded by ``embedder``) saves embedding it again;
    ``chunk_lexical`` (chunk ids -> BM25 scores from a full-text index) replaces the
    BM25 computed over the candidates alone. When nothing is shown the result's
    ``why_empty`` says why; its ``notes`` name the level and reports chosen.
    """
    cfg = config or GlobalSearchConfig()
    fetch = ChunkFetcher(chunk_text)
    sized = [
        r for r in kg.reports.values() if len(kg.communities[r.community_id].members) >= cfg.min_report_size
    ]
    if not sized:
        return Retrieval(route="global", why_empty="the graph has no community reports visible to the caller")
    qvec = _question_vector(question, embedder, query_vector) if (report_vectors or chunk_vectors) else None
    scored = (
        {r.community_id: r.rank / 10.0 for r in sized} if overview
        else _score_reports(kg, question, sized, cfg, qvec, report_vectors)
    )
    # derived text is shown only if all its sources are visible: checked lazily, for
    # the reports that compete for a place (a few per level), not for all of them
    shown: dict[int, bool] = {}

    def visible(r: CommunityReport) -> bool:
        if r.community_id not in shown:
            shown[r.community_id] = all(fetch.visible(c) for c in r.chunk_ids)
        return shown[r.community_id]

    all_levels = sorted({r.level for r in sized})
    levels = [level] if level is not None else all_levels[:1] if overview else all_levels
    by_level = {lv: _cut(kg, scored, lv) for lv in levels}
    best = {lv: _top_visible(by_level[lv], visible, cfg.max_reports) for lv in levels}
    if not any(best.values()) and not any(visible(r) for r in sized):
        return Retrieval(route="global", why_empty="the graph has no community reports visible to the caller")
    chosen_level = max(levels, key=lambda lv: (_level_fit(best[lv], cfg.max_reports), -lv))
    top = [(r, s) for r, s in best[chosen_level] if s > 0]
    if not top:
        return Retrieval(route="global", why_empty="no community report matches the question")
    notes = [f"level {chosen_level} of {all_levels}", "reports: " + ", ".join(f"{r.community_id}:{s:.2f}" for r, s in top)]

    reports = [_report_context(r, s, cfg.max_findings, question) for r, s in top]
    prior_refs = _visible_prior(candidate_chunks, fetch)
    leads: list[str] = []
    if prior_refs and cfg.lead_chunks > 0:
        # the flat chunks this answer's window shows beside its reports
        window_words = cfg.budget_words - sum(n_words(r.text) for r in reports)
        prior_refs, leads = _with_page_leads(
            kg, question, prior_refs, window_words, fetch, cfg, qvec, chunk_vectors, chunk_lexical
        )
        if leads:
            notes.append("page leads: " + ", ".join(leads))
    contexts = [chunk_context(cid, ref, 0.0, ["global_search", "flat retrieval"]) for cid, ref in prior_refs[: cfg.first_hop]]
    contexts += reports
    taken = {c.node_id for c in contexts if c.kind == "chunk"}
    rest = [
        chunk_context(cid, ref, 0.0, ["global_search", "page lead" if cid in leads else "flat retrieval"])
        for cid, ref in prior_refs[cfg.first_hop :]
        if cid not in taken
    ]
    picks = _pick_chunks(
        kg, question, [r for r, _ in top], fetch, cfg, qvec, chunk_vectors, candidate_chunks, chunk_lexical
    )
    rest += [
        chunk_context(cid, ref, score, ["global_search", f"community {com}"], level=chosen_level)
        for cid, ref, score, com in picks
        if cid not in taken
    ]
    used = sum(n_words(c.text) for c in contexts)
    seen = set(taken)
    for ctx in rest:
        if used >= cfg.budget_words:
            break
        if ctx.node_id in seen:
            continue
        seen.add(ctx.node_id)
        contexts.append(ctx)
        used += n_words(ctx.text)
    return Retrieval(route="global", contexts=contexts, notes=notes)


def page_leads(
    kg: KnowledgeGraph,
    question: str,
    fetch: ChunkFetcher,
    qvec: np.ndarray | None = None,
    chunk_vectors: ChunkVectors | None = None,
    chunk_lexical: ChunkScores | None = None,
) -> list[str]:
    """The first chunk of every visible page the graph knows, best match with the
    question first.

    A page's first chunk says what the page is about ("The dbhash utility is a
    command-line program that computes ..."), and an overview question is answered
    by such defining sentences of several pages, which a flat ranking buries under
    the later sections of the one or two pages it matches best. Leads are ranked
    among themselves as the flat lookup ranks chunks: reciprocal rank fusion of BM25
    (``chunk_lexical``, else computed over the leads) and, with vectors, dense
    similarity.
    """
    leads = first_chunks(kg)
    keep = np.flatnonzero(fetch.visible_mask(leads))
    if not keep.size:
        return []
    ids = [leads[i] for i in keep.tolist()]
    # scorers that score each chunk on its own are asked about every lead at once (the
    # same tuple for every question: the caller may keep what it works out for it), and
    # the hidden leads' scores dropped before any ranking; BM25 over the leads alone
    # counts the visible ones only
    lexical = np.asarray(chunk_lexical(leads), dtype=np.float64)[keep] if chunk_lexical is not None \
        else _lexical(question, ids, fetch, None)
    dense = cosines(qvec, leads, chunk_vectors)
    fused = np.zeros(len(ids))
    for scores in (lexical, None if dense is None else dense[keep]):
        if scores is not None:
            order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
            fused[order] += 1.0 / (60 + np.arange(1, len(ids) + 1))
    return [ids[i] for i in np.argsort(-fused, kind="stable")]


def first_chunks(kg: KnowledgeGraph) -> tuple[str, ...]:
    """The first chunk the graph knows of each page, in id order (worked out once per
    graph: it is the same tuple for every question and caller)."""
    found = _first_chunks.get(kg)
    if found is None:
        first: dict[str, tuple[int, str]] = {}
        for cid in mention_index(kg).chunk_ids:
            doc, _, n = cid.rpartition("#")
            pos = int(n) if n.isdigit() else 0
            if doc not in first or pos < first[doc][0]:
                first[doc] = (pos, cid)
        found = _first_chunks[kg] = tuple(sorted(c for _, c in first.values()))
    return found


_first_chunks: "weakref.WeakKeyDictionary[KnowledgeGraph, tuple[str, ...]]" = weakref.WeakKeyDictionary()


def _with_page_leads(
    kg: KnowledgeGraph,
    question: str,
    prior: list[tuple[str, ChunkRef]],
    window_words: int,
    fetch: ChunkFetcher,
    cfg: GlobalSearchConfig,
    qvec: np.ndarray | None,
    chunk_vectors: ChunkVectors | None,
    chunk_lexical: ChunkScores | None,
) -> tuple[list[tuple[str, ChunkRef]], list[str]]:
    """The flat ranking with the best page leads of pages its window (the chunks
    that fill ``window_words``) does not quote, in place of the window's last chunks,
    and the leads put in.

    A lead goes in only if it is among the best ``max_lead_rank`` leads and matches
    the question (dense if available, else BM25) better than the weakest of the
    chunks it may push out of the window: a page the window already quotes is one
    the flat ranking found, and a lead that matches worse than the flat chunks
    would only cost evidence.
    """
    window: list[str] = []
    used = 0
    for cid, ref in prior:
        if used >= window_words:
            break
        window.append(cid)
        used += n_words(ref.text)
    if len(window) <= cfg.first_hop:
        return prior, []
    quoted = {doc_of(c) for c in window}
    best = page_leads(kg, question, fetch, qvec, chunk_vectors, chunk_lexical)[: cfg.max_lead_rank]
    fresh = [c for c in best if doc_of(c) not in quoted][: cfg.lead_chunks]
    if not fresh:
        return prior, []
    displaced = window[max(cfg.first_hop, len(window) - len(fresh)) :]
    ids = fresh + displaced
    match = cosines(qvec, ids, chunk_vectors)
    if match is None:
        match = _lexical(question, ids, fetch, chunk_lexical)
    floor = float(np.min(match[len(fresh) :]))
    leads = [c for c, m in zip(fresh, match) if float(m) > floor]
    if not leads:
        return prior, []
    at = max(cfg.first_hop, len(window) - len(leads))
    added = [(c, ref) for c in leads if (ref := fetch.get(c)) is not None]
    put = {c for c, _ in added}
    return prior[:at] + added + [p for p in prior[at:] if p[0] not in put], [c for c, _ in added]


def _lexical(question: str, ids: Sequence[str], fetch: ChunkFetcher, chunk_lexical: ChunkScores | None) -> np.ndarray:
    if chunk_lexical is not None:
        return np.asarray(chunk_lexical(ids), dtype=np.float64)
    return bm25(question, [ref.text if (ref := fetch.get(c)) is not None else "" for c in ids])


def _question_vector(question: str, embedder: Embedder | None, given: np.ndarray | None) -> np.ndarray | None:
    if given is not None:
        return np.asarray(given, dtype=np.float32)
    if embedder is None:
        return None
    return np.asarray(embedder.encode([question]), dtype=np.float32)[0]


def _top_visible(
    ranked: list[tuple[CommunityReport, float]], visible: Callable[[CommunityReport], bool], k: int
) -> list[tuple[CommunityReport, float]]:
    out: list[tuple[CommunityReport, float]] = []
    for r, s in ranked:
        if len(out) >= k:
            break
        if visible(r):
            out.append((r, s))
    return out


def _visible_prior(
    candidates: Sequence[str] | Mapping[str, float] | None, fetch: ChunkFetcher
) -> list[tuple[str, ChunkRef]]:
    if not candidates:
        return []
    ordered = sorted(candidates, key=lambda c: -candidates[c]) if isinstance(candidates, Mapping) else list(candidates)
    return [(c, ref) for c in ordered if (ref := fetch.get(c)) is not None]


def _score_reports(
    kg: KnowledgeGraph,
    question: str,
    reports: list[CommunityReport],
    cfg: GlobalSearchConfig,
    qvec: np.ndarray | None,
    report_vectors: Mapping[int, np.ndarray] | None,
) -> dict[int, float]:
    n = len(reports)
    bm = report_index(kg).scores(question)
    lex = normalise(np.array([bm.get(r.community_id, 0.0) for r in reports]), n)
    # a linked entity counts for every community it belongs to
    per_com: dict[int, float] = defaultdict(float)
    for le in link_entities(kg, question, max_entities=10):
        for cid in kg.membership.get(le.entity_id, []):
            per_com[cid] += le.score
    ent = normalise(np.array([per_com.get(r.community_id, 0.0) for r in reports]), n)
    dense = None
    if qvec is not None and report_vectors:
        dense = np.array(
            [float(np.asarray(report_vectors[r.community_id]) @ qvec) if r.community_id in report_vectors else 0.0 for r in reports]
        )
    total = cfg.lexical_weight * lex + cfg.entity_weight * ent + cfg.dense_weight * normalise(dense, n)
    return {r.community_id: float(total[i]) for i, r in enumerate(reports)}


def _cut(kg: KnowledgeGraph, scored: dict[int, float], level: int) -> list[tuple[CommunityReport, float]]:
    """Reports of the partition at ``level`` (leaves of shallower levels included), best first."""
    cut = [c.id for c in kg.community_cut(level) if c.id in scored]
    ranked = sorted(((kg.reports[c], scored[c]) for c in cut), key=lambda rs: (-rs[1], -rs[0].rank, rs[0].community_id))
    return ranked


def _level_fit(ranked: list[tuple[CommunityReport, float]], k: int) -> float:
    # a level fits when its best k reports all match well, not just its best one
    return sum(s for _, s in ranked[:k]) / k if ranked else 0.0


REPORT_SOURCE = "community reports"  # a community report's source: the reports, not a page


def _report_context(r: CommunityReport, score: float, max_findings: int, question: str) -> Context:
    """The report's title and summary, and the findings that match the question best
    (in the report's order)."""
    match = bm25(question, [f.text for f in r.findings]) if r.findings else np.zeros(0)
    best = sorted(sorted(range(len(r.findings)), key=lambda i: (-match[i], i))[:max_findings])
    findings = [r.findings[i] for i in best]
    text = "\n".join([f"# {r.title}", r.summary, *(f"- {f.text}" for f in findings)])
    chunks = list(dict.fromkeys(c for f in findings for c in f.chunk_ids))
    return Context(
        text=text,
        # what it is, not the page of its first cited passage (those stay in provenance)
        source=REPORT_SOURCE,
        heading_path=[f"Community {r.community_id}: {r.title}"],
        kind="community_report",
        score=round(score, 4),
        node_id=str(r.community_id),
        level=r.level,
        provenance=chunks,
        trace=["global_search", f"rank {r.rank}"],
        extra={"community_id": r.community_id, "title": r.title},
    )


def _pick_chunks(
    kg: KnowledgeGraph,
    question: str,
    reports: list[CommunityReport],
    fetch: ChunkFetcher,
    cfg: GlobalSearchConfig,
    qvec: np.ndarray | None,
    chunk_vectors: ChunkVectors | None,
    candidate_chunks: Sequence[str] | Mapping[str, float] | None,
    chunk_lexical: ChunkScores | None = None,
) -> list[tuple[str, ChunkRef, float, int]]:
    """Chunks of the chosen communities, best first within each, taken in turn.

    A chunk's weight in a community: 2 per finding citing it, plus 1 per member
    mention; the best-weighted visible ones are then scored against the question."""
    priors = rank_prior(candidate_chunks)
    index = mention_index(kg)
    per_com: list[list[tuple[str, ChunkRef, float, int]]] = []
    for r in reports:
        weight = index.mention_counts(kg.communities[r.community_id].members)
        for f in r.findings:
            for c in f.chunk_ids:
                # a cited chunk mentions the entities its finding names, so it has a column
                if c in index.chunk_col:
                    weight[index.chunk_col[c]] += 2.0
        cols = np.flatnonzero(weight)
        # columns are in chunk id order, so a stable sort breaks ties by id
        cand: list[tuple[str, ChunkRef]] = []
        for col in cols[np.argsort(-weight[cols], kind="stable")]:
            ref = fetch.get(index.chunk_ids[col])
            if ref is not None:
                cand.append((index.chunk_ids[col], ref))
                if len(cand) >= cfg.chunks_per_community:
                    break
        if not cand:
            continue
        ids = [c for c, _ in cand]
        n = len(ids)
        lexical = chunk_lexical(ids) if chunk_lexical is not None else bm25(question, [ref.text for _, ref in cand])
        score = (
            0.5 * normalise(np.array([weight[index.chunk_col[c]] for c in ids]), n)
            + cfg.lexical_weight * normalise(lexical, n)
            + cfg.dense_weight * normalise(cosines(qvec, ids, chunk_vectors), n)
            + cfg.prior_weight * normalise(np.array([priors.get(c, 0.0) for c in ids]), n)
        )
        ranked = sorted(range(n), key=lambda i: (-score[i], ids[i]))
        per_com.append([(ids[i], cand[i][1], float(score[i]), r.community_id) for i in ranked])
    out: list[tuple[str, ChunkRef, float, int]] = []
    seen: set[str] = set()
    depth = 0
    while any(depth < len(lst) for lst in per_com):
        for lst in per_com:
            if depth < len(lst) and lst[depth][0] not in seen:
                seen.add(lst[depth][0])
                out.append(lst[depth])
        depth += 1
    return out
