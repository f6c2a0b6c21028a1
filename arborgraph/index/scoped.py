"""Query-time access to the per-scope trees and graphs of an opened index.

Each access scope has its own tree and graph (see :mod:`arborgraph.pipeline.structures`). A
retriever (:mod:`arborgraph.query.retrievers`) runs over every scope the caller may read,
and the per-scope lists are merged by reciprocal rank
(:func:`arborgraph.query.fusion.merge_by_rank`) so no scope dominates by score scale alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from arborgraph.index import layout
from arborgraph.core.lexical import LexicalIndex
from arborgraph.index.manifest import index_manifest
from arborgraph.index.store import Generation
from arborgraph.index.vectors import RowReader
from arborgraph.index.layout import scoped

PUBLIC = "public"


def scope_of(acl: list[str] | None) -> str:
    """The scope key of a document: 'public' or 'acl:a,b' (principals sorted; 'acl:'
    for an empty list, which nobody may read). Principal names cannot hold a comma
    (see ``DocumentMetadata``), so two different lists never share a key."""
    return PUBLIC if acl is None else "acl:" + ",".join(sorted(set(acl)))


def scope_principals(scope: str) -> list[str]:
    """The principals who may read a restricted scope (empty for 'public')."""
    members = scope[len("acl:") :] if scope.startswith("acl:") else ""
    return members.split(",") if members else []


def scope_readable(scope: str, principal: str | None) -> bool:
    """Whether ``principal`` (None: anonymous) may read what ``scope`` holds."""
    if scope == PUBLIC:
        return True
    return principal is not None and principal in scope_principals(scope)


@dataclass
class Scope:
    """The structures of one access scope, loaded on first use."""

    generation: Generation
    tag: str
    scope: str
    _leaf_rows: tuple[np.ndarray, np.ndarray] | None = field(default=None, init=False, repr=False)
    _leaf_tokens: np.ndarray | None = field(default=None, init=False, repr=False)

    @cached_property
    def has_tree(self) -> bool:
        """Whether the index built this scope's tree (not with ``--no-tree``)."""
        from raptor.schema import NODES_TABLE

        return self.generation.has_table(layout.scoped(NODES_TABLE, self.tag))

    @cached_property
    def tree(self) -> Any:
        return load_scope_tree(self.generation, self.tag)

    @cached_property
    def leaf_vectors(self) -> RowReader:
        """The tree's rows read from its vectors' file on demand: what a walk over a large
        tree reads of its leaves (a few, here and there; see ``raptor.traverse``)."""
        return self.generation.vector_rows(scoped(layout.TREE, self.tag))

    @cached_property
    def leaf_sample(self) -> np.ndarray:
        """The vectors of the fixed sample of leaves a large tree's walk places a leaf's
        cosine among (``raptor.retrieve.rank_sample_rows``), read once."""
        from raptor.retrieve import rank_sample_rows

        return self.leaf_vectors.take(rank_sample_rows(self.tree))

    @cached_property
    def tree_lexical(self) -> LexicalIndex:
        return LexicalIndex.load(self.generation.subdir(layout.tree_bm25_dir(self.tag)))

    def leaf_rows(self, row_of: Mapping[str, int]) -> tuple[np.ndarray, np.ndarray]:
        """The tree's leaves that are chunks of the index: their rows in the tree and
        their rows in the index (computed once: the generation's rows do not change)."""
        if self._leaf_rows is None:
            tree = self.tree
            leaves = [(tree.position(leaf.node_id), row_of[leaf.node_id]) for leaf in tree.leaves() if leaf.node_id in row_of]
            pairs = np.array(leaves, dtype=np.int64).reshape(-1, 2)
            self._leaf_rows = (pairs[:, 0].copy(), pairs[:, 1].copy())
        return self._leaf_rows

    def leaf_tokens(self, tokens: Callable[[Any], int]) -> np.ndarray:
        """Each leaf's token count, in reading order, as ``tokens`` (a tree node -> its
        count) gives it: what a walk weighs against its budget (computed once)."""
        if self._leaf_tokens is None:
            self._leaf_tokens = np.array([tokens(leaf) for leaf in self.tree.leaves()], dtype=np.int64)
        return self._leaf_tokens

    @cached_property
    def summary_rows(self) -> np.ndarray:
        """The tree rows of its summaries, in the order of the summaries' BM25 index."""
        return np.array([row for row, node in enumerate(self.tree.nodes) if node.level > 0], dtype=np.int64)

    @cached_property
    def graph(self) -> Any:
        from graphrag import graph_from_tables
        from graphrag.schema import TABLE_NAMES

        graph = graph_from_tables({name: self.generation.table(scoped(name, self.tag)) for name in TABLE_NAMES})
        self.generation.read_done()  # the tables are dropped: only the graph is kept
        return graph


def load_scope_tree(generation: Generation, tag: str) -> Any:
    """The RAPTOR tree of one scope, with its vectors."""
    from raptor.schema import NODES_TABLE
    from raptor.tables import tree_from_batches

    # mapped like the chunks' vectors: a large tree's walk reads its summaries' rows and
    # few of its leaves' (see raptor.traverse's leaf_pool)
    vectors = generation.vectors(scoped(layout.TREE, tag), mmap=True)
    schema, batches = generation.table_batches(scoped(NODES_TABLE, tag))
    return tree_from_batches(schema, batches, vectors)


def load_scopes(generation: Generation) -> list[Scope]:
    """The access scopes of an index generation, in manifest order (nothing loaded yet)."""
    return [Scope(generation=generation, tag=s.tag, scope=s.scope) for s in index_manifest(generation).scopes]
