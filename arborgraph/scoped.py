"""Query-time access to the per-scope trees and graphs of an opened index.

Each access scope has its own tree and graph (see :mod:`arborgraph.structures`). A
retriever runs over every scope the caller may read, and the per-scope lists are
merged by reciprocal rank so no scope dominates by score scale alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from arborgraph.fusion import reciprocal_rank_fusion
from arborgraph.core.lexical import LexicalIndex
from arborgraph.core.results import Context
from arborgraph.store import Generation
from arborgraph.structures import scope_readable, scoped


@dataclass
class Scope:
    """The structures of one access scope, loaded on first use."""

    generation: Generation
    tag: str
    scope: str
    _leaf_rows: tuple[list[str], np.ndarray] | None = field(default=None, init=False, repr=False)

    @cached_property
    def tree(self) -> Any:
        return load_scope_tree(self.generation, self.tag)

    @cached_property
    def tree_lexical(self) -> LexicalIndex:
        return LexicalIndex.load(self.generation.subdir(f"bm25/tree.{self.tag}"))

    def leaf_rows(self, row_of: Mapping[str, int]) -> tuple[list[str], np.ndarray]:
        """The tree's leaves that are chunks of the index, and their rows in it
        (computed once: the generation's chunk rows do not change)."""
        if self._leaf_rows is None:
            ids = [leaf.node_id for leaf in self.tree.leaves() if leaf.node_id in row_of]
            self._leaf_rows = (ids, np.array([row_of[i] for i in ids], dtype=np.int64))
        return self._leaf_rows

    @cached_property
    def summary_ids(self) -> list[str]:
        return [n.node_id for n in self.tree.summaries()]

    @cached_property
    def graph(self) -> Any:
        from graphrag import graph_from_tables
        from graphrag.schema import TABLE_NAMES

        return graph_from_tables(
            {name: self.generation.table(scoped(name, self.tag)) for name in TABLE_NAMES}
        )


def load_scope_tree(generation: Generation, tag: str) -> Any:
    """The RAPTOR tree of one scope, with its vectors."""
    from raptor import tree_from_tables
    from raptor.schema import NODES_TABLE

    vectors = generation.vectors(scoped("tree", tag))
    table = generation.table(scoped(NODES_TABLE, tag))
    return tree_from_tables({NODES_TABLE: table}, vectors)


def load_scopes(generation: Generation) -> list[Scope]:
    return [
        Scope(generation=generation, tag=s["tag"], scope=s["scope"])
        for s in generation.manifest.get("scopes", [])
    ]


def readable(scopes: Sequence[Scope], principal: str | None) -> list[Scope]:
    return [s for s in scopes if scope_readable(s.scope, principal)]


def merge_by_rank(lists: Sequence[list[Context]]) -> list[Context]:
    """Merge per-scope result lists; a single list is returned unchanged."""
    lists = [lst for lst in lists if lst]
    if len(lists) <= 1:
        return list(lists[0]) if lists else []
    return fuse_contexts({str(i): lst for i, lst in enumerate(lists)})


def fuse_contexts(
    lists: Mapping[str, Sequence[Context]], weights: Mapping[str, float] | None = None
) -> list[Context]:
    """Weighted RRF over context lists; a context found by several keeps all their traces."""
    by_key: dict[str, Context] = {}
    rankings: dict[str, list[str]] = {}
    for name, lst in lists.items():
        keys = []
        for ctx in lst:
            key = f"{ctx.kind}:{ctx.node_id}"
            if key in by_key:
                kept = by_key[key]
                kept.trace.extend(t for t in ctx.trace if t not in kept.trace)
            else:
                # only score, trace and flags are changed downstream: copy those, share the rest
                by_key[key] = ctx.model_copy(update={"trace": list(ctx.trace), "flags": list(ctx.flags)})
            keys.append(key)
        rankings[name] = keys
    fused = reciprocal_rank_fusion(rankings, weights)
    out = []
    for key, score in fused:
        ctx = by_key[key]
        ctx.score = round(score, 6)
        out.append(ctx)
    return out


def tree_node_lexical_scores(
    scope: Scope, question: str, chunk_scores: np.ndarray, row_of: Mapping[str, int]
) -> dict[str, float]:
    """Positive BM25 scores of the scope's tree nodes: leaves from the chunk index
    (``chunk_scores[row_of[chunk id]]``), summaries from the scope's summary index."""
    tree = scope.tree
    leaf_ids, rows = scope.leaf_rows(row_of)
    values = chunk_scores[rows]
    scores: dict[str, float] = {leaf_ids[i]: float(values[i]) for i in np.flatnonzero(values > 0).tolist()}
    summary_scores = scope.tree_lexical.scores(question)
    for node_id, value in zip(scope.summary_ids, summary_scores):
        if value > 0:
            scores[node_id] = float(value)
    return scores


