"""The tree's records: leaves given to the build, nodes and the tree it returns."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

# a page's place by its own navigation: the doc_ids of the pages above it (nearest
# first) and of the page after it
PageNavigation = tuple[tuple[str, ...], str | None]


@dataclass(frozen=True)
class Leaf:
    """A chunk as the tree sees it. ``text`` is what users read (no heading prefix).

    ``tokens`` is the token count of ``text`` when the caller knows it (the chunker
    counted it already); ``None`` lets the build count it. ``nav_up`` and ``nav_next``
    are where its page sits by the manual's own navigation (the doc_ids of the pages
    above it, nearest first, and of the page after it), when the page says.
    """

    chunk_id: str
    doc_id: str
    text: str
    heading_path: tuple[str, ...] = ()
    start: int | None = None
    end: int | None = None
    tokens: int | None = None
    nav_up: tuple[str, ...] = ()
    nav_next: str | None = None

    @classmethod
    def from_chunk(cls, chunk: object, navigation: PageNavigation = ((), None)) -> Leaf:
        """Make a leaf from an ``ingest.models.Chunk`` (or anything with its fields) and
        its page's ``navigation`` (pages above, page after)."""
        return cls(
            chunk_id=chunk.chunk_id,  # type: ignore[attr-defined]
            doc_id=chunk.doc_id,  # type: ignore[attr-defined]
            text=chunk.text,  # type: ignore[attr-defined]
            heading_path=tuple(chunk.heading_path),  # type: ignore[attr-defined]
            start=getattr(chunk, "start", None),
            end=getattr(chunk, "end", None),
            tokens=getattr(chunk, "n_tokens", None),
            nav_up=navigation[0],
            nav_next=navigation[1],
        )


@dataclass(frozen=True)
class Node:
    """One node of the tree: a leaf chunk (level 0) or a summary (level >= 1).

    ``chunk_ids`` are the leaf chunks the node covers (a leaf covers itself), in leaf
    order; ``cluster`` is the index of the node's primary cluster when its level was
    clustered (-1 for the root and outline nodes); ``summariser`` is None for leaves,
    "outline" for the digests of outline nodes. A node's ``level`` is one above its
    highest child: outline nodes of one level may cover sections of different depths.
    """

    node_id: str
    level: int
    title: str
    text: str
    children: tuple[str, ...] = ()
    parents: tuple[str, ...] = ()
    chunk_ids: tuple[str, ...] = ()
    doc_ids: tuple[str, ...] = ()
    heading_path: tuple[str, ...] = ()
    summariser: str | None = None
    cluster: int = -1
    umap_x: float = 0.0
    umap_y: float = 0.0
    start: int | None = None
    end: int | None = None
    # Where the node comes from: "outline" (a folder, page or section of the manual),
    # "cluster" (a group of outline nodes, or of chunks where there is no outline) or
    # "" for a leaf; how its title was chosen: "title" (the manual's own), "keyphrases"
    # or "summariser"; and the share of its chunks under the outline node whose title
    # it carries (None when the title is not one).
    origin: str = ""
    label: str = ""
    coverage: float | None = None

    @property
    def is_leaf(self) -> bool:
        return self.level == 0

    def _repr_html_(self) -> str:
        from arborgraph.core.cards import card, short_list

        kind = "leaf chunk" if self.is_leaf else f"summary · level {self.level}"
        return card(self.title or self.node_id, f"{kind} · {self.node_id}", [
            ("children", short_list(list(self.children))),
            ("parents", short_list(list(self.parents))),
            ("covers", f"{len(self.chunk_ids)} chunks in {short_list(list(self.doc_ids), 4)}"),
            ("summariser", self.summariser or ""),
        ], self.text)

    def embed_text(self) -> str:
        """Title, then text: what an LLM summary's vector is embedded from (see
        :func:`raptor.build.summary_vector_text`)."""
        return f"{self.title}\n{self.text}" if self.title else self.text


@dataclass(frozen=True)
class Tree:
    """A RAPTOR tree: nodes in a fixed order (leaves first, then level by level).

    ``vectors[i]`` is the unit vector of ``nodes[i]`` (leaves: the vectors given to the
    build; summaries: the mean of their children's vectors, or their embedded text,
    see :func:`raptor.build.summary_vector_text`); it may be ``None`` for a tree read
    back from tables before the store attached its saved array.
    """

    nodes: tuple[Node, ...]
    root_id: str
    vectors: np.ndarray | None = None
    _index: dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    # rows of each level, in node order (the tree is immutable: computed once)
    _rows_by_level: dict[int, list[int]] = field(default_factory=dict, repr=False, compare=False)
    _arrays: list["TreeArrays"] = field(default_factory=list, repr=False, compare=False)

    def __post_init__(self) -> None:
        index = {n.node_id: i for i, n in enumerate(self.nodes)}
        if len(index) != len(self.nodes):
            raise ValueError("node ids must be unique")
        if self.root_id not in index:
            raise ValueError(f"root {self.root_id!r} is not a node of the tree")
        if self.vectors is not None and self.vectors.shape[0] != len(self.nodes):
            raise ValueError("vectors must have one row per node")
        self._index.update(index)
        for row, node in enumerate(self.nodes):
            self._rows_by_level.setdefault(node.level, []).append(row)

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._index

    @property
    def node_vectors(self) -> np.ndarray:
        """``vectors``, or a ``ValueError`` if the tree was loaded without them."""
        if self.vectors is None:
            raise ValueError("this tree has no vectors attached (see Tree.with_vectors)")
        return self.vectors

    def node(self, node_id: str) -> Node:
        try:
            return self.nodes[self._index[node_id]]
        except KeyError:
            raise KeyError(
                f"no tree node {node_id!r}: summaries are named like {self.root_id!r} (level:index), "
                f"leaves by chunk id like {self.nodes[0].node_id!r}"
            ) from None

    def position(self, node_id: str) -> int:
        """Row of ``node_id`` in ``nodes`` and ``vectors``."""
        return self._index[node_id]

    @property
    def root(self) -> Node:
        return self.node(self.root_id)

    @property
    def height(self) -> int:
        return self.root.level

    def level_rows(self, level: int) -> list[int]:
        """Rows (in ``nodes`` and ``vectors``) of the nodes at ``level``, in node order."""
        return list(self._rows_by_level.get(level, []))

    def leaf_parent_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Every (leaf, parent) link as two arrays: the leaf's index among
        :meth:`leaves` and the parent's row (the leaves' links of :meth:`arrays`)."""
        return self.arrays().leaf_parents

    def level_ids(self, level: int) -> list[str]:
        return [self.nodes[row].node_id for row in self._rows_by_level.get(level, [])]

    def leaves(self) -> list[Node]:
        return [self.nodes[row] for row in self._rows_by_level.get(0, [])]

    def arrays(self) -> "TreeArrays":
        """The tree's shape as arrays, for walks that run per question (computed once)."""
        if not self._arrays:
            self._arrays.append(TreeArrays.of(self))
        return self._arrays[0]

    def summaries(self) -> list[Node]:
        return [n for n in self.nodes if n.level > 0]

    def with_vectors(self, vectors: np.ndarray) -> Tree:
        """The same tree with ``vectors`` attached (one row per node, in node order)."""
        return Tree(nodes=self.nodes, root_id=self.root_id, vectors=np.asarray(vectors))


@dataclass(frozen=True)
class TreeArrays:
    """A tree's shape by row: each level's rows, every (child, parent) link of a summary
    grouped by the child's level, each leaf's links by its place among the leaves, and
    each node's rank in node id order (ties between equal scores go to the greater id)."""

    level_rows: dict[int, np.ndarray]
    links: dict[int, tuple[np.ndarray, np.ndarray]]  # child level >= 1 -> (child rows, parent rows)
    leaf_parents: tuple[np.ndarray, np.ndarray]  # (leaf's place among the leaves, parent row)
    id_rank: np.ndarray

    @classmethod
    def of(cls, tree: "Tree") -> "TreeArrays":
        index = tree._index
        level_rows = {level: np.asarray(rows, dtype=np.int64) for level, rows in tree._rows_by_level.items()}
        links: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        leaf_parents = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        for level, rows in tree._rows_by_level.items():
            # a leaf is known by its place among the leaves, a summary by its row
            pairs = [
                (place if level == 0 else row, index[parent])
                for place, row in enumerate(rows) for parent in tree.nodes[row].parents if parent in index
            ]
            arr = np.array(pairs, dtype=np.int64).reshape(-1, 2)
            if level == 0:
                leaf_parents = (arr[:, 0].copy(), arr[:, 1].copy())
            else:
                links[level] = (arr[:, 0].copy(), arr[:, 1].copy())
        id_rank = np.empty(len(tree.nodes), dtype=np.int64)
        id_rank[sorted(range(len(tree.nodes)), key=lambda row: tree.nodes[row].node_id)] = np.arange(len(tree.nodes))
        return cls(level_rows, links, leaf_parents, id_rank)


def ordered_union(groups: Sequence[Sequence[str]], order: dict[str, int]) -> tuple[str, ...]:
    """Union of several id lists, sorted by ``order`` (ids missing from it go last)."""
    seen = {i for g in groups for i in g}
    return tuple(sorted(seen, key=lambda i: (order.get(i, len(order)), i)))
