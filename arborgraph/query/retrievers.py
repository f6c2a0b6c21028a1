"""The four routes of an opened index, each a :class:`~arborgraph.core.retrieval.Retriever`.

Each is built from the parts of the index it reads (chunk store, lookup index, the
route's settings, the query embedder, the graph server) and answers a
:class:`~arborgraph.core.retrieval.RetrievalQuery` with what the route itself found:
lookup the flat hits, tree the walk over every readable scope's RAPTOR tree, graph and
global :func:`graphrag.graph_search` / :func:`graphrag.global_search` over every
readable scope's graph. Per-scope lists are merged by reciprocal rank. Composing a
route's result with the flat hits, the ranking stage and the budget come after
(:mod:`arborgraph.query.compose`).

Every route honours the query's mask: a chunk the caller may not read is never
returned, nor a summary, relation or report drawing on one.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from arborgraph.index.chunk_store import ChunkStore
from arborgraph.config import RetrievalConfig, TreeSearchConfig
from arborgraph.core.retrieval import OVERVIEW, QueryScores, Retrieval, RetrievalQuery
from arborgraph.core.protocols import Embedder
from arborgraph.query.fusion import merge_by_rank
from arborgraph.index.opened import Index
from arborgraph.query.lookup import LookupMode, lookup_search
from arborgraph.query.router import asks_about_whole_manual
from arborgraph.core.results import Context

if TYPE_CHECKING:
    from graphrag import ChunkRef, GlobalSearchConfig, GraphSearchConfig
    from graphrag.neighbours import GraphBackend

    from arborgraph.index.scoped import Scope

# The walk fills ten times the default query budget (2,000 tokens): the query's own
# budget is applied to the composed result, later.
WALK_BUDGET_TOKENS = 20_000
# a tree walk returns at least this many leaves, more when the route's pool is larger
MIN_WALK_LEAVES = 100


def visible_chunks(store: ChunkStore, mask: np.ndarray) -> Callable[[str], bool]:
    """Whether a chunk id is one of the index's chunks the mask lets through."""
    row_of = store.row_of
    return lambda chunk_id: chunk_id in row_of and bool(mask[row_of[chunk_id]])


def chunk_refs(store: ChunkStore, mask: np.ndarray) -> Callable[[str], "ChunkRef | None"]:
    """Chunk id -> its text and place (a :class:`graphrag.ChunkRef`), None when the
    mask hides it: how graph code reads chunks, and never one the caller may not read."""
    from graphrag import ChunkRef

    return _ChunkRefs(store, mask, _refs_of(store), ChunkRef)


@dataclass(frozen=True, eq=False)
class _ChunkRefs:
    """:func:`chunk_refs`'s reader: called with one id, or asked which of many ids the
    caller may read (``readable``: one mask read for all, no refs made)."""

    store: ChunkStore
    mask: np.ndarray
    made: dict[int, Any]
    make: Any

    def __call__(self, chunk_id: str) -> Any:
        row = self.store.row_of.get(chunk_id)
        if row is None or not self.mask[row]:
            return None
        ref = self.made.get(row)
        if ref is None:
            store = self.store
            ref = self.made[row] = self.make(
                text=store.texts[row], doc_id=store.doc_ids[row],
                heading_path=list(store.heading_paths[row]), start=store.starts[row], end=store.ends[row],
            )
        return ref

    def readable(self, chunk_ids: Sequence[str]) -> np.ndarray:
        rows = _rows_of(self.store, chunk_ids)
        known = rows >= 0
        out = np.zeros(len(rows), dtype=bool)
        out[known] = self.mask[rows[known]]
        return out


# a chunk's ref is the same for every question that reads it: made once per store
# (stores compare by value, so they are kept by identity, and dropped with the store)
_refs: dict[int, dict[int, Any]] = {}


# Tuples of chunk ids asked about by every question (global search's page leads, a
# tuple per graph): their rows, and their vectors once asked for, kept per store by the
# tuple's identity (a tuple cannot change, and the entry holds it, so its id is not
# reused while kept); shorter lists are looked up each time.
_KEPT_MIN = 1_000
_KEPT_MAX = 8
_kept: dict[int, dict[int, tuple[tuple[str, ...], np.ndarray, np.ndarray | None]]] = {}


def _kept_for(store: ChunkStore) -> dict[int, tuple[tuple[str, ...], np.ndarray, np.ndarray | None]]:
    key = id(store)
    kept = _kept.get(key)
    if kept is None:
        kept = _kept[key] = {}
        weakref.finalize(store, _kept.pop, key, None)
    if len(kept) > _KEPT_MAX:
        kept.clear()
    return kept


def _rows_of(store: ChunkStore, chunk_ids: Sequence[str]) -> np.ndarray:
    """The rows of ``chunk_ids`` in ``store``, -1 for an id it does not hold."""
    get = store.row_of.get
    if isinstance(chunk_ids, tuple) and len(chunk_ids) >= _KEPT_MIN:
        kept = _kept_for(store)
        found = kept.get(id(chunk_ids))
        if found is not None and found[0] is chunk_ids:
            return found[1]
        rows = np.fromiter((get(c, -1) for c in chunk_ids), dtype=np.int64, count=len(chunk_ids))
        kept[id(chunk_ids)] = (chunk_ids, rows, None)
        return rows
    return np.fromiter((get(c, -1) for c in chunk_ids), dtype=np.int64, count=len(chunk_ids))


def keep_page_leads(index: Index, leads: tuple[str, ...]) -> None:
    """Work out now what global search keeps of a graph's page leads (their rows, and
    their vectors when the index has vectors), which the first question would."""
    _rows_of(index.store, leads)
    if index.dense is not None:
        _vectors_of(index, leads)


def _vectors_of(index: Index, chunk_ids: Sequence[str]) -> np.ndarray:
    """The vectors of ``chunk_ids`` (all chunks of the index), kept for a long tuple."""
    dense = index.dense
    assert dense is not None
    if not isinstance(chunk_ids, tuple) or len(chunk_ids) < _KEPT_MIN:
        return dense.take(_known_rows(index.store, chunk_ids))
    kept = _kept_for(index.store)
    found = kept.get(id(chunk_ids))
    if found is None or found[0] is not chunk_ids or found[2] is None:
        rows = _known_rows(index.store, chunk_ids)
        found = kept[id(chunk_ids)] = (chunk_ids, rows, dense.take(rows))
    return found[2]


def _known_rows(store: ChunkStore, chunk_ids: Sequence[str]) -> np.ndarray:
    """The rows of ``chunk_ids``, every one a chunk of ``store`` (KeyError otherwise)."""
    rows = _rows_of(store, chunk_ids)
    if (rows < 0).any():
        raise KeyError(next(c for c, r in zip(chunk_ids, rows.tolist()) if r < 0))
    return rows


def _refs_of(store: ChunkStore) -> dict[int, Any]:
    key = id(store)
    made = _refs.get(key)
    if made is None:
        made = _refs[key] = {}
        weakref.finalize(store, _refs.pop, key, None)
    return made


def chunk_headings(store: ChunkStore) -> Callable[[str], "Sequence[str] | None"]:
    """Any chunk id -> its heading path, whoever asks (see :class:`graphrag.chunks.ChunkFetcher`:
    graph search keeps only the chunks the caller may see)."""
    row_of = store.row_of

    def headings(chunk_id: str) -> Sequence[str] | None:
        row = row_of.get(chunk_id)
        return None if row is None else store.heading_paths[row]

    return headings


def context_ids(contexts: Sequence[Context]) -> list[str]:
    """``kind:node_id`` of each context: the ids a structured route's ranking shows."""
    return [f"{c.kind}:{c.node_id}" for c in contexts]


def _merged(route: str, per_scope: Sequence[list[Context]], why_empty: str) -> Retrieval:
    contexts = merge_by_rank(per_scope)
    if not contexts:
        return Retrieval(route=route, why_empty=why_empty)
    return Retrieval(route=route, contexts=contexts, rankings={route: context_ids(contexts)})


@dataclass(frozen=True)
class LookupRetriever:
    """Flat hybrid retrieval over chunks (BM25 and dense, fused by RRF)."""

    index: Index
    config: RetrievalConfig
    route: str = "lookup"

    def search(self, scores: QueryScores, mask: np.ndarray | None, top_k: int, mode: LookupMode = "hybrid") -> Retrieval:
        """The ``top_k`` best chunks the mask lets through (see :func:`arborgraph.query.lookup.lookup_search`)."""
        return lookup_search(self.index.store, scores, mask=mask, top_k=top_k, config=self.config, mode=mode)

    def retrieve(self, query: RetrievalQuery) -> Retrieval:
        # the flat hits every route starts from are this route's answer: ranked once per query
        return query.hits


def tree_node_lexical_scores(
    scope: "Scope", question: str, chunk_scores: np.ndarray, row_of: Mapping[str, int]
) -> np.ndarray:
    """BM25 scores of the scope's tree nodes, one per tree row (0 where none):
    leaves from the chunk index, summaries from the scope's summary index."""
    tree_rows, chunk_rows = scope.leaf_rows(row_of)
    scores = np.zeros(len(scope.tree))
    scores[tree_rows] = np.maximum(chunk_scores[chunk_rows], 0.0)
    scores[scope.summary_rows] = np.maximum(scope.tree_lexical.scores(question), 0.0)
    return scores


@dataclass(frozen=True)
class TreeRetriever:
    """The RAPTOR walk of every readable scope's tree (:func:`raptor.traverse`; without
    a query vector, :func:`raptor.collapsed_search` over BM25 scores)."""

    index: Index
    settings: TreeSearchConfig
    count_tokens: Callable[[str], int]
    route: str = "tree"

    @property
    def _node_tokens(self) -> Callable[[Any], int]:
        return stored_tokens(self.index.store, self.count_tokens)

    def retrieve(self, query: RetrievalQuery) -> Retrieval:
        from raptor import collapsed_search, traverse

        store = self.index.store
        visible = visible_chunks(store, query.mask)
        chunk_bm25 = query.scores.bm25
        max_leaves = max(MIN_WALK_LEAVES, query.pool)
        lists = []
        for scope in query.scopes:
            lexical = tree_node_lexical_scores(scope, query.question, chunk_bm25, store.row_of)
            if query.query_vector is not None:
                beam = {"beam": self.settings.beam} if self.settings.beam else {}
                pool = _leaf_pool(scope, query.scores, store.row_of)
                pooled = {} if pool is None else {
                    "leaf_pool": pool, "read_leaves": scope.leaf_vectors.take, "leaf_sample": scope.leaf_sample,
                }
                found = traverse(
                    scope.tree, query.query_vector, scope.tree.vectors, lexical_scores=lexical,
                    budget_tokens=WALK_BUDGET_TOKENS, count_tokens=self.count_tokens, max_leaves=max_leaves,
                    node_tokens=self._node_tokens, leaf_tokens=scope.leaf_tokens(self._node_tokens), **pooled, **beam,
                )
            else:
                by_id = {scope.tree.nodes[row].node_id: float(lexical[row]) for row in np.flatnonzero(lexical > 0).tolist()}
                found = collapsed_search(scope.tree, by_id, WALK_BUDGET_TOKENS, self.count_tokens)
            # stale (or otherwise hidden) sources: derived nodes drawing on them go too
            kept = [c for c in found if all(visible(cid) for cid in c.provenance)]
            if len(query.scopes) > 1:
                # each scope has a tree of its own, with its own node ids: say whose walk it was
                for c in kept:
                    c.trace = [f"tree ({scope.scope}): {t[6:]}" if t.startswith("tree: ") else t for t in c.trace]
                _name_scope(kept, scope.scope)
            lists.append(kept)
        return _merged(self.route, lists, "the walk reached no readable node")


def _leaf_pool(scope: "Scope", scores: QueryScores, row_of: Mapping[str, int]) -> np.ndarray | None:
    """The tree rows of the leaves the approximate dense search found, when the search
    was approximate (a collection too large to score every chunk per question: its tree
    is too large to score every leaf); None, every leaf scored, when it was exact."""
    if scores.dense_known is None:
        return None
    tree_rows, chunk_rows = scope.leaf_rows(row_of)
    return tree_rows[scores.dense_known[chunk_rows]]


def _name_scope(contexts: Sequence[Context], scope: str) -> None:
    """Name, in place, the scope whose tree or reports a summary or community report
    comes from ("tree (acl:team-a)"): with several scopes, each has its own tree and
    communities, whose ids and titles alone do not say which."""
    for c in contexts:
        if c.kind in ("summary", "community_report"):
            c.source = f"{c.source} ({scope})"


def stored_tokens(store: ChunkStore, count_tokens: Callable[[str], int]) -> Callable[[Any], int]:
    """A tree node's tokens: a leaf's as its chunk's count stored at index time (the
    walk weighs hundreds of leaves), a summary's counted."""

    def tokens(node: Any) -> int:
        row = store.row_of.get(node.node_id) if node.level == 0 else None
        return store.n_tokens[row] if row is not None else count_tokens(node.text)

    return tokens


class GraphServers(Protocol):
    """Where the graph route's neighbour lookups run for a scope (a Bolt server)."""

    def backend(self, scope: str, kg: Any = None) -> "GraphBackend": ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class _GraphRoute:
    """What graph and global search share: the caller's chunks, the flat hits as the
    search's prior, the index's dense vectors and its BM25 over the whole collection."""

    index: Index
    embedder: Embedder | None

    def _search_inputs(self, query: RetrievalQuery) -> dict[str, Any]:
        store = self.index.store
        dense = self.index.dense is not None and query.query_vector is not None
        row_of = store.row_of
        bm25 = query.scores.bm25  # the index's own BM25 (idf over the whole collection)

        def chunk_lexical(chunk_ids: Any) -> np.ndarray:
            return bm25[_known_rows(store, chunk_ids)]

        return {
            "chunk_text": chunk_refs(store, query.mask),
            "embedder": self.embedder,
            "chunk_vectors": self._chunk_vectors if dense else None,
            "candidate_chunks": {c.node_id: c.score for c in query.hits.contexts},
            "query_vector": query.query_vector if dense else None,
            "chunk_lexical": chunk_lexical,
        }

    def _chunk_vectors(self, chunk_ids: Any) -> np.ndarray:
        return _vectors_of(self.index, chunk_ids)

    def _merge(self, route: str, found: Sequence[Retrieval]) -> Retrieval:
        reasons = [f.why_empty for f in found if f.why_empty]
        return _merged(route, [f.contexts for f in found], "; ".join(reasons) or "no readable graph")


@dataclass(frozen=True)
class GraphRetriever(_GraphRoute):
    """Graph search (:func:`graphrag.graph_search`) over every readable scope's graph,
    its walk on the graph server when there is one."""

    settings: "GraphSearchConfig | None" = None
    servers: GraphServers | None = None
    route: str = "graph"

    def retrieve(self, query: RetrievalQuery) -> Retrieval:
        from graphrag import graph_search

        inputs = self._search_inputs(query)
        found = []
        for scope in query.scopes:
            server = {"backend": self.servers.backend(scope.scope, scope.graph)} if self.servers else {}
            found.append(graph_search(
                scope.graph, query.question, config=self.settings, chunk_headings=chunk_headings(self.index.store),
                **inputs, **server,
            ))
        return self._merge(self.route, found)


@dataclass(frozen=True)
class GlobalRetriever(_GraphRoute):
    """Global search (:func:`graphrag.global_search`): community reports and the chunks
    that ground them, over every readable scope's graph. A question about the manual as
    a whole (:func:`arborgraph.query.router.asks_about_whole_manual`) is answered with
    each scope's tree root (the manual's digest) and its most important reports first."""

    settings: "GlobalSearchConfig | None" = None
    route: str = "global"

    def retrieve(self, query: RetrievalQuery) -> Retrieval:
        from graphrag import global_search

        inputs = self._search_inputs(query)
        overview = asks_about_whole_manual(query.question)
        found = []
        for scope in query.scopes:
            searched = global_search(scope.graph, query.question, config=self.settings, overview=overview, **inputs)
            if overview:
                searched = _with_tree_overview(searched, scope, visible_chunks(self.index.store, query.mask))
            if len(query.scopes) > 1:
                _name_scope(searched.contexts, scope.scope)
            found.append(searched)
        return self._merge(self.route, found)


def _with_tree_overview(found: Retrieval, scope: "Scope", visible: Callable[[str], bool]) -> Retrieval:
    """A global answer about the whole manual: the scope's tree root (its summary, the
    manual's digest) first, then the community reports, all marked to lead the final
    answer (:data:`arborgraph.core.retrieval.OVERVIEW`); the root only if the caller may
    read every chunk it draws on, and only where the scope has a tree."""
    from raptor.retrieve import node_context

    lead = [_marked(c) if c.kind == "community_report" else c for c in found.contexts]
    if scope.has_tree:
        root = scope.tree.root
        if all(visible(c) for c in root.chunk_ids):
            context = node_context(root, 1.0, ["global_search", "tree root: the manual's digest"])
            lead.insert(0, _marked(context))
    return replace(found, contexts=lead)


def _marked(context: Context) -> Context:
    return context.model_copy(update={"extra": context.extra | {OVERVIEW: True}})
