"""Hierarchical Leiden community detection, shaped like a scikit-learn estimator.

Level 0 partitions the whole entity graph (modularity with a resolution, via
leidenalg); every community larger than ``max_cluster_size`` is partitioned again on
its own subgraph, giving its children at the next level, until all fit or
``max_levels`` is reached. Nodes and edges are sorted before partitioning and the
seed is passed to leidenalg, so the same graph and seed give the same communities.

Note: igraph's own ``community_leiden()`` defaults to CPM with resolution 1, which
puts every node of a weighted graph in its own community; the modularity-type
partition used here does not have that trap.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence

import igraph as ig
import leidenalg

from graphrag.model import Community

# resolution multipliers tried when a community refuses to split at its resolution
_SPLIT_RETRIES = (1.0, 2.0, 4.0, 8.0)


def aggregate_edges(edges: Iterable[tuple[str, str, float]], min_weight: float = 0.0) -> list[tuple[str, str, float]]:
    """Undirected, summed, sorted edge list; self-loops and light edges dropped."""
    acc: dict[tuple[str, str], float] = defaultdict(float)
    for a, b, w in edges:
        if a == b:
            continue
        key = (a, b) if a < b else (b, a)
        acc[key] += w
    return [(a, b, w) for (a, b), w in sorted(acc.items()) if w >= min_weight]


class HierarchicalLeiden:
    """Communities at several levels; fit on nodes and weighted edges.

    Learned attributes: ``communities_`` (list of :class:`Community`, ids in level
    order) and ``membership_`` (node -> community ids, top level first).
    """

    def __init__(
        self,
        *,
        max_cluster_size: int = 25,
        resolution: float = 1.0,
        n_iterations: int = 2,
        max_levels: int = 4,
        min_community_size: int = 2,
        seed: int = 42,
    ) -> None:
        self.max_cluster_size = max_cluster_size
        self.resolution = resolution
        self.n_iterations = n_iterations
        self.max_levels = max_levels
        self.min_community_size = min_community_size
        self.seed = seed

    def fit(
        self,
        nodes: Sequence[str],
        edges: Sequence[tuple[str, str, float]],
        initial: Mapping[str, Sequence[int]] | None = None,
        fixed: Collection[str] = (),
    ) -> HierarchicalLeiden:
        """Partition; ``edges`` are (a, b, weight), undirected; duplicates are summed.

        For an update of a slightly changed graph: ``initial`` (a previous fit's
        ``membership_``: node -> community ids, top level first) starts every partition
        from the previous grouping of its nodes instead of singletons (nodes it does not
        list start alone), and the nodes in ``fixed`` (those whose edges did not change)
        keep their previous community wherever they had one; the others move freely,
        into old communities or new ones. A community whose members and edges are all
        unchanged thus comes out as it was, sub-communities included.
        """
        if self.max_cluster_size < 2:
            raise ValueError("max_cluster_size must be at least 2")
        names = sorted(set(nodes))
        index = {n: i for i, n in enumerate(names)}
        agg = [(index[a], index[b], w) for a, b, w in aggregate_edges(edges) if a in index and b in index]
        graph = ig.Graph(n=len(names), edges=[(a, b) for a, b, _ in agg], directed=False)
        graph.es["weight"] = [w for _, _, w in agg]

        communities: list[Community] = []
        # (level, parent id, member vertex ids) waiting to be partitioned
        todo: list[tuple[int, int | None, list[int]]] = [(0, None, list(range(len(names))))]
        while todo:
            level, parent, members = todo.pop(0)
            start = _start([names[v] for v in members], initial, fixed, level) if initial else None
            groups = self._partition(graph, members, split_required=parent is not None, start=start)
            if parent is not None and len(groups) < 2:
                continue  # could not split: the parent stays a leaf
            groups = [g for g in groups if len(g) >= self.min_community_size]
            groups.sort(key=lambda g: (-len(g), names[g[0]]))
            for g in groups:
                com = Community(id=len(communities), level=level, members=[names[v] for v in g], parent=parent)
                communities.append(com)
                if parent is not None:
                    communities[parent].children.append(com.id)
                if len(g) > self.max_cluster_size and level + 1 < self.max_levels:
                    todo.append((level + 1, com.id, g))
        self.communities_ = communities
        membership: dict[str, list[int]] = defaultdict(list)
        for com in communities:
            for m in com.members:
                membership[m].append(com.id)
        self.membership_ = dict(membership)
        return self

    def _partition(
        self,
        graph: ig.Graph,
        members: list[int],
        *,
        split_required: bool,
        start: tuple[list[int], list[bool]] | None = None,
    ) -> list[list[int]]:
        """Groups of vertex ids (sorted); isolated vertices are left out."""
        sub = graph.induced_subgraph(members, implementation="create_from_scratch")
        # induced_subgraph keeps vertex order, so sub vertex i is members[i]
        if sub.ecount() == 0:
            return []
        best: list[list[int]] = []
        for attempt, mult in enumerate(_SPLIT_RETRIES if split_required else (1.0,)):
            if start is not None and attempt == 0:
                part = leidenalg.RBConfigurationVertexPartition(
                    sub, initial_membership=start[0], weights="weight", resolution_parameter=self.resolution
                )
                optimiser = leidenalg.Optimiser()
                optimiser.set_rng_seed(self.seed)
                optimiser.optimise_partition(part, self.n_iterations, is_membership_fixed=start[1])
            else:  # a retry at a higher resolution starts afresh: the start did not split
                part = leidenalg.find_partition(
                    sub,
                    leidenalg.RBConfigurationVertexPartition,
                    weights="weight",
                    resolution_parameter=self.resolution * mult,
                    n_iterations=self.n_iterations,
                    seed=self.seed,
                )
            groups: dict[int, list[int]] = defaultdict(list)
            degree = sub.degree()
            for v, c in enumerate(part.membership):
                if degree[v] > 0:
                    groups[c].append(members[v])
            best = [sorted(g) for g in groups.values()]
            if len(best) >= 2:
                break
        return best


def _start(
    names: Sequence[str], previous: Mapping[str, Sequence[int]], fixed: Collection[str], level: int
) -> tuple[list[int], list[bool]]:
    """Start labels 0..k-1 for ``names`` (one per previous community at ``level``, in
    order of first appearance; a label of its own for a node without one) and whether
    each node is held in place (in ``fixed`` and with a previous community)."""
    labels: dict[tuple[bool, int | str], int] = {}
    out: list[int] = []
    hold: list[bool] = []
    for name in names:
        ids = previous.get(name, ())
        had = level < len(ids)
        key: tuple[bool, int | str] = (True, ids[level]) if had else (False, name)
        out.append(labels.setdefault(key, len(labels)))
        hold.append(had and name in fixed)
    return out, hold
