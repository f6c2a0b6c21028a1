"""The ranking stage's glue to an open index: signals of a query, candidates, new order.

:mod:`arborgraph.query.ranking` holds the pure features and the model; this module reads what
they need from an index (a :class:`RankingIndex`: its BM25 and dense indexes, its chunk
store, and the readable scopes' trees and graphs the query names) for one
:class:`~arborgraph.core.retrieval.RetrievalQuery` and the route's
:class:`~arborgraph.core.retrieval.Retrieval`, honouring the caller's visibility mask:
rows the caller may not read score nothing and count in no aggregate, so a restricted
page can neither appear nor move a visible one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from arborgraph.index.chunk_store import ChunkStore
from arborgraph.config import RetrievalConfig
from arborgraph.core.retrieval import Ranked, Retrieval, RetrievalQuery
from arborgraph.core.text import analyse
from arborgraph.query.scores import cosines_of
from arborgraph.index.opened import Index
from arborgraph.query.ranking import (
    GRAPH_SIGNALS,
    PageLayout,
    QuerySignals,
    AnyRanker,
    candidate_rows,
    explain_rows,
    feature_matrix,
    page_layout,
    rank,
)
from arborgraph.core.results import Context

if TYPE_CHECKING:
    import scipy.sparse as sp

STRUCTURE_ROUTES = ("tree", "graph", "global")


@dataclass
class RankingIndex:
    """What the ranking stage reads of an opened index: its lookup index (chunk store,
    BM25, dense vectors) and the routes it was built with; what it derives from them
    (the page layout, each scope's tree parents) is computed once and kept."""

    index: Index
    routes: Sequence[str]
    _layout: PageLayout | None = field(default=None, init=False, repr=False)
    _parents: dict[str, dict[int, list[int]]] = field(default_factory=dict, init=False, repr=False)
    _graph_rows: dict[str, "GraphRows"] = field(default_factory=dict, init=False, repr=False)

    @property
    def store(self) -> ChunkStore:
        return self.index.store

    def layout(self) -> PageLayout:
        """The index's page layout (the analysed headings and titles of its rows are
        worked out as the ranking stage reads them, once per distinct heading path)."""
        if self._layout is None:
            store = self.store
            titles = {d: frozenset(analyse(info.title or "")) for d, info in store.docs.items()}
            self._layout = page_layout(
                store.doc_ids, store.starts, store.n_tokens,
                RowTerms(lambda row: tuple(store.heading_paths[row]), lambda path: frozenset(analyse(" ".join(path))), len(store)),
                RowTerms(lambda row: store.doc_ids[row], lambda doc: titles.get(doc, frozenset()), len(store)),
            )
        return self._layout

    def parent_rows(self, scope: Any) -> dict[int, list[int]]:
        """Chunk row -> rows of its parents in ``scope``'s tree."""
        if scope.tag not in self._parents:
            tree = scope.tree
            leaves = tree.leaves()
            leaf_idx, parent_rows = tree.leaf_parent_rows()
            out: dict[int, list[int]] = {}
            row_of = self.store.row_of
            for i, parent in zip(leaf_idx.tolist(), parent_rows.tolist()):
                row = row_of.get(leaves[i].node_id)
                if row is not None:
                    out.setdefault(row, []).append(parent)
            self._parents[scope.tag] = out
        return self._parents[scope.tag]


    def graph_rows(self, scope: Any) -> "GraphRows":
        """``scope``'s graph as the chunk rows see it (worked out once per scope)."""
        if scope.tag not in self._graph_rows:
            self._graph_rows[scope.tag] = graph_rows(scope.graph, self.store.chunk_ids)
        return self._graph_rows[scope.tag]


@dataclass(frozen=True)
class GraphRows:
    """A graph's mentions and communities indexed by chunk row: ``mention_col[row]`` is
    the row's column in the graph's mention index (-1: no entity mentioned there);
    ``communities`` (rows x report positions) marks the communities of the entities
    each row mentions."""

    mention_col: np.ndarray
    communities: sp.csr_matrix


def graph_rows(kg: Any, chunk_ids: Sequence[str]) -> GraphRows:
    import scipy.sparse as sp  # with the graph's own indexes, not for every question

    from graphrag.search_index import mention_index, report_index

    mentions = mention_index(kg)
    col = mentions.chunk_col
    mention_col = np.array([col.get(c, -1) for c in chunk_ids], dtype=np.int64)
    position = report_index(kg).position
    rows: list[int] = []
    cols: list[int] = []
    for row, chunk_id in enumerate(chunk_ids):
        found = {position[c] for e in kg.chunk_entities.get(chunk_id, ()) for c in kg.membership.get(e, ()) if c in position}
        rows.extend([row] * len(found))
        cols.extend(sorted(found))
    shape = (len(chunk_ids), len(position))
    communities = sp.csr_matrix((np.ones(len(rows), dtype=np.float64), (rows, cols)), shape=shape)
    return GraphRows(mention_col, communities)


class RowTerms(Sequence[frozenset[str]]):
    """Analysed terms of each row, computed when read and kept per distinct key (many
    rows share a heading path or a page title)."""

    def __init__(self, key_of: Callable[[int], Hashable], terms_of: Callable[[Any], frozenset[str]], n: int) -> None:
        self._key_of, self._terms_of, self._n = key_of, terms_of, n
        self._memo: dict[Hashable, frozenset[str]] = {}
        self._by_row: dict[int, frozenset[str]] = {}  # rows read before: no key to build

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, row: int) -> frozenset[str]:  # type: ignore[override]
        found = self._by_row.get(row)
        if found is None:
            key = self._key_of(int(row))
            found = self._memo.get(key)
            if found is None:
                found = self._memo[key] = self._terms_of(key)
            self._by_row[int(row)] = found
        return found


def route_chunks(reached: Retrieval) -> list[Context]:
    """The chunks a structured route reached, in its order (none for lookup: its
    ranking is the query's flat hits, which every route's candidates come from)."""
    return reached.chunks if reached.route in STRUCTURE_ROUTES else []


def _route_traces(hits: Retrieval, reached: Sequence[Retrieval]) -> dict[str, list[str]]:
    """How each candidate chunk was found: the structured routes' traces (both routes',
    in route order, when two ran), else the flat hit's."""
    traces = {c.node_id: list(c.trace) for c in hits.contexts if c.kind == "chunk"}
    by_routes: dict[str, list[str]] = {}
    for found in reached:
        for chunk_id, trace in {c.node_id: c.trace for c in route_chunks(found)}.items():
            kept = by_routes.get(chunk_id)
            by_routes[chunk_id] = list(trace) if kept is None else kept + [t for t in trace if t not in kept]
    return traces | by_routes


def query_signals(
    source: RankingIndex, q: RetrievalQuery, reached: Sequence[Retrieval], cfg: RetrievalConfig
) -> QuerySignals:
    """Every signal the features of the question's candidates are computed from;
    ``reached`` is what the routes that ran found (one route's, or two when the router
    was unsure; for lookup: the flat hits), ``cfg`` the lookup weights the flat hits
    were fused with."""
    question, query_vector, hits, mask = q.question, q.query_vector, q.hits, q.mask
    scopes = q.scopes
    store = source.store
    row_of = store.row_of
    scores = q.scores
    bm25 = np.where(mask, scores.bm25, 0.0)
    n_rows = max(len(store), 1)
    term_rows = []
    for _term, postings in scores.terms:
        rows = postings[mask[postings]]  # postings are sorted and distinct
        if rows.size:
            term_rows.append((rows, math.log(1 + n_rows / rows.size)))
    rank_lists: dict[str, list[int]] = {
        name: [row_of[c] for c in ids if c in row_of] for name, ids in hits.rankings.items()
    }
    weights = {"bm25": cfg.weight_bm25, "dense": cfg.weight_dense}
    rrf: dict[int, float] = {}
    for name, rows_ in rank_lists.items():
        for i, row in enumerate(rows_):
            rrf[row] = rrf.get(row, 0.0) + weights.get(name, 1.0) / (cfg.rrf_k + i + 1)
    rank_lists["rrf"] = sorted(rrf, key=lambda r: (-rrf[r], r))
    for found in reached:
        if found.route in STRUCTURE_ROUTES:
            rank_lists[found.route] = [row_of[c.node_id] for c in route_chunks(found) if c.node_id in row_of]
    parent_cos: dict[int, float] = {}
    if query_vector is not None and "tree" in source.routes:
        wanted = wanted_rows(rank_lists)
        for scope in scopes:
            tree = scope.tree
            if tree.vectors is None:
                continue
            parents = source.parent_rows(scope)
            rows_ = [r for r in wanted if r in parents]
            if not rows_:
                continue
            flat = sorted({p for r in rows_ for p in parents[r]})
            cos = dict(zip(flat, (tree.vectors[flat] @ query_vector).tolist()))
            for r in rows_:
                best = max(cos[p] for p in parents[r])
                parent_cos[r] = max(parent_cos.get(r, -1.0), best)
    graph = _graph_signals(source, question, scopes, wanted_rows(rank_lists), mask)
    dense = None
    if scores.dense is not None:
        if scores.dense_known is not None:  # an approximate search: the rows features read, scored now
            cosines_of(scores, source.index, query_vector, feature_rows(source.layout(), wanted_rows(rank_lists)))
        dense = np.where(mask, scores.dense, -1.0)
    return QuerySignals(
        bm25=bm25, dense=dense, term_rows=term_rows, question_terms=frozenset(t for t, _ in scores.terms),
        rank_lists=rank_lists, rrf_scores=rrf, parent_cos=parent_cos, graph=graph,
    )


def wanted_rows(rank_lists: dict[str, list[int]]) -> set[int]:
    return set().union(*rank_lists.values())


def feature_rows(layout: PageLayout, candidates: set[int]) -> np.ndarray:
    """The rows whose cosines the candidates' features read: the candidates, every row
    of their pages (page aggregates) and their neighbours."""
    if not candidates:
        return np.zeros(0, dtype=np.int64)
    rows = np.fromiter(candidates, dtype=np.int64)
    pages = layout.page_rows(np.unique(layout.doc_index[rows]))
    return np.unique(np.concatenate([pages, layout.previous[rows], layout.following[rows]]).clip(min=0))


def _graph_signals(
    source: RankingIndex, question: str, scopes: Sequence[Any], rows: set[int], mask: np.ndarray
) -> dict[str, dict[int, float]]:
    """Entity and community signals of candidate rows, best over the readable scopes.

    The question's entities are linked by name (as graph search links them); a chunk
    scores their weight where it mentions them (``entity_direct``) and, one hop on, the
    weight of entities that share chunks with them, each divided by how many chunks it
    is in so that ubiquitous entities do not spread everywhere (``entity_spread``, a
    two-step personalised walk over the entity-chunk graph in the manner of HippoRAG).
    ``community_rel`` is the best BM25 score of a report of a community one of the
    chunk's entities belongs to.
    """
    out: dict[str, dict[int, float]] = {name: {} for name in GRAPH_SIGNALS}
    if not ({"graph", "global"} & set(source.routes)) or not rows:
        return out
    from graphrag.linking import link_entities
    from graphrag.search_index import mention_index, report_index

    visible = np.array(sorted(r for r in rows if mask[r]), dtype=np.int64)
    if visible.size == 0:
        return out
    best = {name: np.zeros(visible.size) for name in GRAPH_SIGNALS}
    for scope in scopes:
        kg = scope.graph
        indexed = source.graph_rows(scope)
        linked = link_entities(kg, question)
        if linked:
            mentions = mention_index(kg)
            direct = mentions.chunk_scores({le.entity_id: le.score for le in linked})
            cols = indexed.mention_col[visible]
            known = cols >= 0
            at = cols[known]
            # the spread read at the candidates' columns only: a second product over every
            # mention of a large collection cost more than the rest of the signals
            spread = mentions.spread_scores(direct / (direct.max() or 1.0), at)
            for name, values in (("entity_direct", direct[at]), ("entity_spread", spread)):
                column = np.zeros(visible.size)
                column[known] = values
                np.maximum(best[name], column, out=best[name])
        reports = report_index(kg).scores(question)
        if reports:
            by_position = np.fromiter(reports.values(), dtype=np.float64, count=len(reports))
            picked = indexed.communities[visible]
            column = np.zeros(visible.size)
            filled = np.diff(picked.indptr) > 0
            if filled.any():
                values = by_position[picked.indices]
                column[filled] = np.maximum.reduceat(values, picked.indptr[:-1][filled])
            np.maximum(best["community_rel"], np.maximum(column, 0.0), out=best["community_rel"])
    rows_list = visible.tolist()
    for name, values in best.items():
        # a signal of 0 is the default: only the rows that score are kept
        out[name] = {row: value for row, value in zip(rows_list, values.tolist()) if value > 0.0}
    return out


def candidates(
    source: RankingIndex, q: RetrievalQuery, reached: Sequence[Retrieval], cfg: RetrievalConfig
) -> tuple[list[int], np.ndarray]:
    """The candidate chunk rows of a query and their feature matrix."""
    signals = query_signals(source, q, reached, cfg)
    rows = [r for r in candidate_rows(signals) if q.mask[r]]
    return rows, feature_matrix(rows, signals, source.layout())


def rerank(
    source: RankingIndex, model: AnyRanker, q: RetrievalQuery, reached: Sequence[Retrieval], cfg: RetrievalConfig
) -> Ranked:
    """The candidates of the routes that ran (``reached``: one, or two ranked together)
    best first by ``model``, the first ``max(pool, top_k)`` as chunk contexts (``top_k``
    for lookup alone, which returns no more); each trace says the ranker's score and
    the features that raised it most, then how the routes found it, and (when the model
    is calibrated) ``extra["relevance"]`` the probability that it holds the evidence."""
    rows, matrix = candidates(source, q, reached, cfg)
    store = source.store
    scores = model.score(matrix)
    order = rank(scores)
    # lookup returns its first top_k (see compose); a structured route a pool of them
    lookup_only = all(found.route == "lookup" for found in reached)
    kept = order[: q.top_k if lookup_only else max(q.pool, q.top_k)]
    earlier = _route_traces(q.hits, reached)
    relevance = (
        model.calibration.probabilities(scores, matrix)
        if model.calibration is not None and rows else None
    )
    reasons = explain_rows(model, matrix[kept]) if kept else []
    contexts = []
    for i, why in zip(kept, reasons, strict=True):
        row, score = rows[i], float(scores[i])
        chunk_id = store.chunk_ids[row]
        trace = [f"ranker: {score:+.3f} ({', '.join(why) or 'no feature above average'})"]
        trace += earlier.get(chunk_id, [])
        context = store.context(row, score=round(score, 6), trace=trace)
        if relevance is not None:
            context.extra = {"relevance": round(float(relevance[i]), 6)}
        contexts.append(context)
    return Ranked([store.chunk_ids[rows[i]] for i in order], contexts)
