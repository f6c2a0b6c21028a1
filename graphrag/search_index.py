"""Structures graph and global search reuse across questions, built once per graph.

A search used to walk ``Entity.mentions`` lists and re-analyse report texts for every
question; on a manual of thousands of chunks that was most of a query's time. Here the
mentions become one sparse entity x chunk matrix (a question's chunk scores are then
one vector-matrix product) and the community reports get their own BM25 index.

Built on first use and cached per :class:`KnowledgeGraph` object (weakly: dropping the
graph drops them). Like the graph's own cached indexes they assume the graph is not
changed after its first search.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import igraph as ig
import numpy as np
import scipy.sparse as sp

from arborgraph.core.lexical import LexicalIndex
from graphrag.chunks import doc_of
from graphrag.graph import KnowledgeGraph
from graphrag.model import CommunityReport


@dataclass(frozen=True)
class MentionIndex:
    """Entities x chunks: where each entity is mentioned, and how often."""

    chunk_ids: list[str]  # sorted: column order, so ties break by chunk id
    chunk_col: dict[str, int]
    chunk_doc: list[str]  # document of each column
    entity_row: dict[str, int]
    weighted: sp.csr_matrix  # 1 + 0.25 * (extra mentions, at most 4): the graph score's weight
    present: sp.csr_matrix  # 1 where mentioned
    # entity id -> document -> the entity's chunks there (filled as searches ask)
    _by_doc: dict[str, dict[str, list[str]]] = field(default_factory=dict, repr=False)
    _chunk_counts: list[np.ndarray] = field(default_factory=list, repr=False)
    _by_chunk: list[sp.csr_matrix] = field(default_factory=list, repr=False)

    def present_by_chunk(self) -> sp.csr_matrix:
        """``present`` chunk-major (chunks x entities; worked out once): a few chunks'
        entities are read without touching every mention."""
        if not self._by_chunk:
            by_chunk = self.present.T.tocsr()
            by_chunk.sort_indices()
            self._by_chunk.append(by_chunk)
        return self._by_chunk[0]

    def chunks_per_entity(self) -> np.ndarray:
        """Per entity row: in how many chunks it is mentioned (worked out once)."""
        if not self._chunk_counts:
            self._chunk_counts.append(np.asarray(self.present.sum(axis=1), dtype=np.float64).ravel())
        return self._chunk_counts[0]

    def chunk_scores(self, entity_scores: dict[str, float]) -> np.ndarray:
        """Per chunk column: sum over entities of score x mention weight. Only the scored
        entities' mentions are read, in entity row order: the same sums as a product
        over every row."""
        scored = sorted((row, s) for eid, s in entity_scores.items() if (row := self.entity_row.get(eid)) is not None)
        sub = self.weighted[np.array([row for row, _ in scored], dtype=np.int64)]
        return np.asarray(sub.T @ np.array([s for _, s in scored], dtype=np.float64)).ravel()

    def on_pages(self, entity_id: str, docs: set[str], limit: int) -> list[str]:
        """Up to ``limit`` chunks of the documents ``docs`` that mention the entity,
        in chunk id order."""
        by_doc = self._by_doc.get(entity_id)
        if by_doc is None:
            by_doc = self._by_doc[entity_id] = self._pages(entity_id)
        return sorted(c for d in docs for c in by_doc.get(d, []))[:limit]

    def _pages(self, entity_id: str) -> dict[str, list[str]]:
        row = self.entity_row.get(entity_id)
        if row is None:
            return {}
        out: dict[str, list[str]] = {}
        for col in np.unique(self.present.indices[self.present.indptr[row] : self.present.indptr[row + 1]]):
            out.setdefault(self.chunk_doc[col], []).append(self.chunk_ids[col])
        return out

    def spread_scores(self, chunk_scores: np.ndarray, at: np.ndarray) -> np.ndarray:
        """One hop on from per-column ``chunk_scores``: each entity gets the summed score
        of the chunks it is in over how many those are, each column of ``at`` the sum
        over its entities; ``present.T @ ((present @ scores) / chunks per entity)``
        read at ``at`` without the second product over every mention."""
        per_entity = np.asarray(self.present @ chunk_scores).ravel()
        per_entity /= np.maximum(self.chunks_per_entity(), 1.0)
        return np.asarray(self.present_by_chunk()[at] @ per_entity).ravel()

    def mention_counts(self, entity_ids: list[str]) -> np.ndarray:
        """Per chunk column: how many of ``entity_ids`` it mentions."""
        rows = [self.entity_row[e] for e in entity_ids if e in self.entity_row]
        if not rows:
            return np.zeros(len(self.chunk_ids), dtype=np.float64)
        return np.asarray(self.present[rows].sum(axis=0), dtype=np.float64).ravel()


@dataclass(frozen=True)
class ReportIndex:
    """BM25 over community reports (title, summary, findings, member names)."""

    community_ids: list[int]
    position: dict[int, int]
    lexical: LexicalIndex | None  # None: the graph has no reports

    def scores(self, question: str) -> dict[int, float]:
        if self.lexical is None:
            return {}
        values = self.lexical.scores(question)
        return {cid: float(values[i]) for i, cid in enumerate(self.community_ids)}


@dataclass(frozen=True)
class PathIndex:
    """Shortest strong paths on the undirected graph (an edge is as long as 1/weight)."""

    graph: ig.Graph
    names: list[str]
    vertex: dict[str, int]
    lengths: list[float]
    component: list[int]  # each vertex's connected component

    def shortest(self, a: str, b: str, max_len: int) -> list[str]:
        """Entity ids from ``a`` to ``b`` (both included), or [] if longer than
        ``max_len`` hops or unconnected."""
        va, vb = self.vertex[a], self.vertex[b]
        # Unconnected entities are an answer ("no path"), asked before igraph is: its
        # "Couldn't reach some vertices" warning, raised on a thread other than the
        # main one (a service's), is printed by igraph itself to stderr, past any filter.
        if self.component[va] != self.component[vb]:
            return []
        paths = self.graph.get_shortest_paths(va, to=vb, weights=self.lengths, output="vpath")
        p = paths[0] if paths else []
        if not 2 <= len(p) <= max_len + 1:
            return []
        return [self.names[v] for v in p]


_paths: "weakref.WeakKeyDictionary[KnowledgeGraph, PathIndex]" = weakref.WeakKeyDictionary()
_mentions: "weakref.WeakKeyDictionary[KnowledgeGraph, MentionIndex]" = weakref.WeakKeyDictionary()
_reports: "weakref.WeakKeyDictionary[KnowledgeGraph, ReportIndex]" = weakref.WeakKeyDictionary()


def mention_index(kg: KnowledgeGraph) -> MentionIndex:
    """The graph's :class:`MentionIndex` (built on first use)."""
    found = _mentions.get(kg)
    if found is None:
        found = _mentions[kg] = _build_mentions(kg)
    return found


def report_index(kg: KnowledgeGraph) -> ReportIndex:
    """The graph's :class:`ReportIndex` (built on first use)."""
    found = _reports.get(kg)
    if found is None:
        found = _reports[kg] = _build_reports(kg)
    return found


def path_index(kg: KnowledgeGraph) -> PathIndex:
    """The graph's :class:`PathIndex` (built on first use)."""
    found = _paths.get(kg)
    if found is None:
        g = kg.undirected
        names = list(g.vs["name"])
        found = _paths[kg] = PathIndex(
            graph=g,
            names=names,
            vertex={name: i for i, name in enumerate(names)},
            lengths=[1.0 / w for w in g.es["weight"]],
            component=list(g.connected_components().membership),
        )
    return found


def _build_mentions(kg: KnowledgeGraph) -> MentionIndex:
    chunk_ids = sorted({m.chunk_id for e in kg.entities.values() for m in e.mentions})
    col = {c: i for i, c in enumerate(chunk_ids)}
    entity_ids = sorted(kg.entities)
    rows, cols, weights = [], [], []
    for r, eid in enumerate(entity_ids):
        # repeated (entity, chunk) records add up, as they did mention by mention
        for m in kg.entities[eid].mentions:
            rows.append(r)
            cols.append(col[m.chunk_id])
            weights.append(1.0 + 0.25 * min(m.count - 1, 4))
    shape = (len(entity_ids), len(chunk_ids))
    weighted = sp.csr_matrix((np.array(weights, dtype=np.float64), (rows, cols)), shape=shape)
    present = sp.csr_matrix((np.ones(len(rows), dtype=np.float64), (rows, cols)), shape=shape)
    docs: dict[str, str] = {}
    one_doc = docs.setdefault
    return MentionIndex(
        chunk_ids=chunk_ids,
        chunk_col=col,
        chunk_doc=[one_doc(d, d) for d in map(doc_of, chunk_ids)],  # a page's id once, not once per chunk
        entity_row={e: i for i, e in enumerate(entity_ids)},
        weighted=weighted,
        present=present,
    )


def report_text(kg: KnowledgeGraph, r: CommunityReport) -> str:
    """What a report is matched on: its text and its members' names."""
    members = " ".join(kg.entities[m].name for m in kg.communities[r.community_id].members[:60])
    return "\n".join([r.title, r.summary, *(f.text for f in r.findings), members])


def _build_reports(kg: KnowledgeGraph) -> ReportIndex:
    ids = sorted(kg.reports)
    return ReportIndex(
        community_ids=ids,
        position={c: i for i, c in enumerate(ids)},
        lexical=LexicalIndex.build([report_text(kg, kg.reports[c]) for c in ids]) if ids else None,
    )
