"""Update a RAPTOR tree in place of a rebuild when the manual changes a little.

New and edited leaves join their nearest existing level-1 cluster, removed leaves
leave theirs, and only the summaries whose content changed are written again, from
level 1 up to the root. When too much of the manual changed (the drift), the
clusters of the old tree no longer describe the new one and the tree is rebuilt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from arborgraph.core.concurrency import run_ordered, workers_for

from arborgraph.core.protocols import ProgressCallback, no_progress
from raptor.build import _check_inputs, _docs_by_coverage, build_tree, summary_vector_text, summary_vectors
from raptor.config import RaptorConfig
from raptor.naming import named, uses_keyphrase_names
from raptor.summary import Cluster, ClusterMember, Summariser, Summary
from raptor.text import dominant_path
from raptor.tree import Leaf, Node, Tree, ordered_union

EmbedFn = Callable[[Sequence[str]], np.ndarray]
CountTokens = Callable[[str], int]

# A new leaf tries this many nearest level-1 clusters for room before it gets a new
# one: further clusters are too far off topic to be a better home than a fresh one.
_ROOM_CANDIDATES = 3


@dataclass(frozen=True)
class TreeUpdate:
    """What :func:`update_tree` did. With ``full_rebuild`` every summary was redone
    (``summaries_removed`` then counts the previous tree's summaries)."""

    leaves_added: int
    leaves_changed: int
    leaves_removed: int
    summaries_kept: int
    summaries_redone: int
    summaries_removed: int
    full_rebuild: bool
    summariser_calls: int
    drift: float
    redone_ids: tuple[str, ...] = ()
    removed_ids: tuple[str, ...] = ()


@dataclass
class _Mut:
    """A node while the tree is being updated."""

    node_id: str
    level: int
    title: str
    text: str
    children: list[str]
    parents: list[str]
    heading_path: tuple[str, ...]
    summariser: str | None
    cluster: int
    umap_x: float
    umap_y: float
    start: int | None = None
    end: int | None = None
    chunk_ids: tuple[str, ...] = ()
    doc_ids: tuple[str, ...] = ()
    vector: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    new: bool = False


def update_tree(
    previous: Tree,
    leaves: Sequence[Leaf],
    leaf_vectors: np.ndarray,
    *,
    embed: EmbedFn,
    count_tokens: CountTokens,
    summariser: Summariser,
    config: RaptorConfig,
    drift_threshold: float = 0.25,
    progress: ProgressCallback | None = None,
) -> tuple[Tree, TreeUpdate]:
    """The tree over ``leaves`` (the new full leaf set, in index order), reusing ``previous``.

    A previous leaf whose chunk id is gone is removed; a leaf whose id is new, or whose
    text or heading path differs from the previous leaf with that id, is added or
    changed and joins the nearest (cosine) level-1 summary with room for its text
    within ``config.max_cluster_tokens``; an edited leaf whose current parent is that
    summary stays where it is. Without room among the nearest few, a new level-1
    summary is made under the nearest level-2 node. Summaries left with no children
    are removed. Every summary whose leaf set, children, or children's text changed
    is summarised again (one ``summariser`` call each) and re-embedded, up to the root,
    and named again (``config.naming``: distinct from the kept siblings' names); the
    others keep title, text and vector. If (added + changed + removed) / previous
    leaf count exceeds ``drift_threshold``, :func:`build_tree` runs instead.
    ``previous`` must have its vectors attached.
    """
    report = progress or no_progress
    vectors = _check_inputs(leaves, leaf_vectors)
    prev_vectors = previous.node_vectors
    prev_leaves = {n.node_id: n for n in previous.leaves()}
    new_ids = [leaf.chunk_id for leaf in leaves]
    new_set = set(new_ids)
    removed = [i for i in prev_leaves if i not in new_set]
    added = [leaf.chunk_id for leaf in leaves if leaf.chunk_id not in prev_leaves]
    changed = [
        leaf.chunk_id
        for leaf in leaves
        if leaf.chunk_id in prev_leaves
        and (prev_leaves[leaf.chunk_id].text != leaf.text or prev_leaves[leaf.chunk_id].heading_path != tuple(leaf.heading_path))
    ]
    drift = (len(added) + len(changed) + len(removed)) / max(len(prev_leaves), 1)

    def rebuild() -> tuple[Tree, TreeUpdate]:
        counting = _CountingSummariser(summariser)
        tree = build_tree(
            leaves, vectors, embed=embed, count_tokens=count_tokens, summariser=counting, config=config, progress=progress
        )
        redone = tuple(n.node_id for n in tree.summaries())
        return tree, TreeUpdate(
            leaves_added=len(added), leaves_changed=len(changed), leaves_removed=len(removed),
            summaries_kept=0, summaries_redone=len(redone), summaries_removed=len(previous.summaries()),
            full_rebuild=True, summariser_calls=counting.calls, drift=drift,
            redone_ids=redone, removed_ids=tuple(n.node_id for n in previous.summaries()),
        )

    if drift > drift_threshold:
        return rebuild()

    nodes: dict[str, _Mut] = {
        n.node_id: _Mut(
            node_id=n.node_id, level=n.level, title=n.title, text=n.text, children=list(n.children),
            parents=list(n.parents), heading_path=n.heading_path, summariser=n.summariser, cluster=n.cluster,
            umap_x=n.umap_x, umap_y=n.umap_y, start=n.start, end=n.end, chunk_ids=n.chunk_ids, doc_ids=n.doc_ids,
            vector=prev_vectors[i],
        )
        for i, n in enumerate(previous.nodes)
    }
    dirty: set[str] = set()  # summaries whose children or children's text changed
    removed_summaries: list[str] = []

    def detach(child_id: str) -> None:
        child = nodes[child_id]
        for p in child.parents:
            nodes[p].children.remove(child_id)
            dirty.add(p)
        child.parents = []

    # 1. removed leaves, then summaries left without children (bottom up)
    for leaf_id in removed:
        detach(leaf_id)
        del nodes[leaf_id]
    for level in range(1, previous.height + 1):
        for node_id in previous.level_ids(level):
            if node_id in nodes and not nodes[node_id].children:
                detach(node_id)
                del nodes[node_id]
                dirty.discard(node_id)
                removed_summaries.append(node_id)
    if previous.root_id not in nodes or not any(n.level == 1 for n in nodes.values()):
        return rebuild()  # nothing left to attach new leaves to

    # 2. the leaves of the new set, with their new text and vectors
    leaf_index = {cid: i for i, cid in enumerate(new_ids)}
    added_set, changed_set = set(added), set(changed)
    kept_ids = [cid for cid in new_ids if cid in prev_leaves and cid not in changed_set]
    for leaf, vec in zip(leaves, vectors, strict=True):
        mut = nodes.get(leaf.chunk_id)
        if mut is None:
            mut = nodes[leaf.chunk_id] = _Mut(
                node_id=leaf.chunk_id, level=0, title="", text="", children=[], parents=[], heading_path=(),
                summariser=None, cluster=-1, umap_x=0.0, umap_y=0.0, new=True,
            )
        mut.title = " > ".join(leaf.heading_path)
        mut.text = leaf.text
        mut.heading_path = tuple(leaf.heading_path)
        mut.chunk_ids, mut.doc_ids = (leaf.chunk_id,), (leaf.doc_id,)
        mut.start, mut.end = leaf.start, leaf.end
        mut.vector = vec

    # 3. place added and changed leaves in level-1 clusters
    next_number = _next_numbers(previous)
    placer = _Placer(nodes, count_tokens, config.max_cluster_tokens, next_number)
    for cid in new_ids:
        if cid in added_set or cid in changed_set:
            placer.place(nodes[cid], stay=cid in changed_set)
    dirty |= placer.dirty
    _place_new_leaves(nodes, added, kept_ids, vectors, leaf_index)

    # 4. structure (leaf sets) bottom up, then summaries where anything below changed
    order = leaf_index
    doc_rank = {leaf.doc_id: i for i, leaf in reversed(list(enumerate(leaves)))}
    levels = sorted({n.level for n in nodes.values()})
    by_level = {lv: [n for n in _ordered(nodes, previous, order) if n.level == lv] for lv in levels}
    text_changed: set[str] = added_set | changed_set
    for lv in levels[1:]:
        for n in by_level[lv]:
            n.children.sort(key=lambda c: _rank(nodes[c], previous, order))
            chunk_ids = ordered_union([nodes[c].chunk_ids for c in n.children], order)
            if set(chunk_ids) != set(n.chunk_ids) or n.new:
                dirty.add(n.node_id)
            n.chunk_ids = chunk_ids
            n.doc_ids = _docs_by_coverage(chunk_ids, leaves, order, doc_rank)
    redone: list[str] = []
    calls = 0
    naming = uses_keyphrase_names(config, summariser.name)
    for lv in levels[1:]:
        todo = [n for n in by_level[lv] if n.node_id in dirty or any(c in text_changed for c in n.children)]
        clusters = [
            Cluster(
                node_id=n.node_id,
                level=lv,
                members=tuple(
                    ClusterMember(
                        c.node_id, c.text, c.heading_path, c.title if c.level > 0 else "", c.level,
                        order.get(c.chunk_ids[0], 0) if c.chunk_ids else 0,
                    )
                    for c in (nodes[cid] for cid in n.children)
                ),
                vectors=np.stack([nodes[cid].vector for cid in n.children]),
            )
            for n in todo
        ]
        # as in a full build: one level's summaries at once with an LLM summariser
        summaries = run_ordered(
            summariser.summarise, clusters, workers_for(summariser), stop_on_error=True,
            done=lambda k, total=len(todo): report("raptor.summarise", k, total),
        )
        calls += len(todo)
        for n, summary in zip(todo, summaries, strict=True):
            # with names given here, the summariser's title is a draft: only the text counts
            if summary.text != n.text or (not naming and summary.title != n.title):
                text_changed.add(n.node_id)
            n.title, n.text, n.summariser = summary.title, summary.text, summariser.name
            n.heading_path = dominant_path([nodes[c].heading_path for c in n.children])
            redone.append(n.node_id)
        if todo:
            fresh = summary_vectors(
                [summary_vector_text(n.title, n.text, config, summariser.name) for n in todo],
                [np.stack([nodes[c].vector for c in n.children]) for n in todo],
                mode=config.summary_vectors,
                summariser=summariser.name,
                embed=embed,
            )
            if fresh.shape != (len(todo), vectors.shape[1]):
                raise ValueError(f"embed returned shape {fresh.shape} for {len(todo)} texts")
            for n, v in zip(todo, fresh, strict=True):
                n.vector = v
            report("raptor.embed", lv, None)
    for lv in levels[1:]:
        for n in by_level[lv]:
            if n.new:
                n.umap_x = float(np.mean([nodes[c].umap_x for c in n.children]))
                n.umap_y = float(np.mean([nodes[c].umap_y for c in n.children]))

    # 5. freeze: leaves in the new order, then summaries level by level
    ordered = [nodes[cid] for cid in new_ids] + [n for lv in levels[1:] for n in by_level[lv]]
    root_id = next(n.node_id for n in ordered if not n.parents)
    tree = Tree(
        nodes=tuple(
            Node(
                node_id=n.node_id, level=n.level, title=n.title, text=n.text, children=tuple(n.children),
                parents=tuple(n.parents), chunk_ids=n.chunk_ids, doc_ids=n.doc_ids, heading_path=n.heading_path,
                summariser=n.summariser, cluster=n.cluster if n.parents else -1, umap_x=n.umap_x, umap_y=n.umap_y,
                start=n.start, end=n.end,
                origin="cluster" if n.level > 0 else "",
                label=("keyphrases" if uses_keyphrase_names(config, summariser.name) else "summariser") if n.level > 0 else "",
            )
            for n in ordered
        ),
        root_id=root_id,
        vectors=np.stack([n.vector for n in ordered]).astype(np.float32),
    )
    # redone summaries are named as a build names them, apart from their kept siblings
    tree = named(tree, config, summariser.name, only=set(redone))
    n_summaries = len(ordered) - len(new_ids)
    return tree, TreeUpdate(
        leaves_added=len(added), leaves_changed=len(changed), leaves_removed=len(removed),
        summaries_kept=n_summaries - len(redone), summaries_redone=len(redone),
        summaries_removed=len(removed_summaries), full_rebuild=False, summariser_calls=calls, drift=drift,
        redone_ids=tuple(redone), removed_ids=tuple(removed_summaries),
    )


class _CountingSummariser:
    def __init__(self, inner: Summariser) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0

    def summarise(self, cluster: Cluster) -> Summary:
        self.calls += 1
        return self.inner.summarise(cluster)


class _Placer:
    """Puts leaves into level-1 clusters: nearest with room, else a new cluster."""

    def __init__(
        self, nodes: dict[str, _Mut], count_tokens: CountTokens, budget: int, next_number: dict[int, int]
    ) -> None:
        self.nodes = nodes
        self.count_tokens = count_tokens
        self.budget = budget
        self.next_number = next_number
        self.dirty: set[str] = set()
        # level-1 clusters in a fixed order; a new cluster's vector is its members' centroid
        self.level1 = sorted((n for n in nodes.values() if n.level == 1), key=lambda n: _id_key(n.node_id))
        self.level2 = sorted((n for n in nodes.values() if n.level == 2), key=lambda n: _id_key(n.node_id))
        self._tokens: dict[str, int] = {}

    def tokens(self, cluster: _Mut) -> int:
        if cluster.node_id not in self._tokens:
            self._tokens[cluster.node_id] = sum(self.count_tokens(self.nodes[c].text) for c in cluster.children)
        return self._tokens[cluster.node_id]

    def place(self, leaf: _Mut, *, stay: bool) -> None:
        size = self.count_tokens(leaf.text)
        old_parents = list(leaf.parents)
        if old_parents:  # an edited leaf: its old text no longer counts
            for p in old_parents:
                self._tokens.pop(p, None)
            for p in old_parents:
                self.nodes[p].children.remove(leaf.node_id)
        sims = np.array([float(leaf.vector @ c.vector) for c in self.level1])
        ranked = sorted(range(len(self.level1)), key=lambda i: (-sims[i], i))[:_ROOM_CANDIDATES]
        target = next((self.level1[i] for i in ranked if self.tokens(self.level1[i]) + size <= self.budget), None)
        if stay and target is not None and target.node_id in old_parents:
            for p in old_parents:  # an edit that stays in its cluster keeps every membership
                self.nodes[p].children.append(leaf.node_id)
                self.dirty.add(p)
            return
        for p in old_parents:
            self.dirty.add(p)
        leaf.parents = []
        if target is None:
            target = self._new_cluster(leaf)
        before = self.tokens(target)
        target.children.append(leaf.node_id)
        self._tokens[target.node_id] = before + size
        leaf.parents = [target.node_id]
        leaf.cluster = _id_key(target.node_id)[1]
        self.dirty.add(target.node_id)
        if target.new:
            members = np.stack([self.nodes[c].vector for c in target.children])
            centroid = members.mean(axis=0)
            target.vector = (centroid / max(float(np.linalg.norm(centroid)), 1e-12)).astype(np.float32)

    def _new_cluster(self, leaf: _Mut) -> _Mut:
        node_id = self._fresh_id(1)
        if not self.level2:
            # the root is the only level-1 node: a new root goes above it and the new cluster
            root = self.level1[0]
            top = _Mut(
                node_id=self._fresh_id(2), level=2, title="", text="", children=[root.node_id], parents=[],
                heading_path=(), summariser=None, cluster=-1, umap_x=root.umap_x, umap_y=root.umap_y,
                vector=root.vector, new=True,
            )
            self.nodes[top.node_id] = top
            root.parents = [top.node_id]
            root.cluster = 0
            self.level2.append(top)
        sims = np.array([float(leaf.vector @ p.vector) for p in self.level2])
        parent = self.level2[int(np.argmax(sims))]  # argmax: first of ties, a fixed order
        cluster = _Mut(
            node_id=node_id, level=1, title="", text="", children=[], parents=[parent.node_id], heading_path=(),
            summariser=None, cluster=_id_key(parent.node_id)[1], umap_x=0.0, umap_y=0.0, vector=leaf.vector, new=True,
        )
        self.nodes[node_id] = cluster
        parent.children.append(node_id)
        self.dirty.add(parent.node_id)
        self.level1.append(cluster)
        return cluster

    def _fresh_id(self, level: int) -> str:
        n = self.next_number.get(level, 0)
        self.next_number[level] = n + 1
        return f"L{level}:{n}"


def _id_key(node_id: str) -> tuple[int, int]:
    level, _, number = node_id[1:].partition(":")
    return int(level), int(number)


def _next_numbers(tree: Tree) -> dict[int, int]:
    """Per level, the first summary number no node of ``tree`` has used."""
    out: dict[int, int] = {}
    for n in tree.summaries():
        level, number = _id_key(n.node_id)
        out[level] = max(out.get(level, 0), number + 1)
    return out


def _rank(node: _Mut, previous: Tree, order: dict[str, int]) -> tuple[int, int, int]:
    """Sort key of a node within its level: leaves by the new order, summaries by the
    previous tree's order with new ones after."""
    if node.level == 0:
        return (0, order[node.node_id], 0)
    if node.node_id in previous and not node.new:
        return (0, previous.position(node.node_id), 0)
    return (1, *_id_key(node.node_id))


def _ordered(nodes: dict[str, _Mut], previous: Tree, order: dict[str, int]) -> list[_Mut]:
    return sorted(nodes.values(), key=lambda n: (n.level, *_rank(n, previous, order)))


def _place_new_leaves(
    nodes: dict[str, _Mut], added: list[str], kept: list[str], vectors: np.ndarray, leaf_index: dict[str, int]
) -> None:
    """Layout coordinates of new leaves: those of the most similar kept leaf, or the parent's."""
    if not added:
        return
    if kept:
        kept_rows = vectors[[leaf_index[c] for c in kept]]
        sims = vectors[[leaf_index[c] for c in added]] @ kept_rows.T
        for cid, row in zip(added, sims, strict=True):
            near = nodes[kept[int(np.argmax(row))]]
            nodes[cid].umap_x, nodes[cid].umap_y = near.umap_x, near.umap_y
    else:
        for cid in added:
            parent = nodes[nodes[cid].parents[0]]
            nodes[cid].umap_x, nodes[cid].umap_y = parent.umap_x, parent.umap_y
