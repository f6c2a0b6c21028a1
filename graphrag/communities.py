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
from collections.abc import Iterable, Sequence

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

    def fit(self, nodes: Sequence[str], edges: Sequence[tuple[str, str, float]]) -> HierarchicalLeiden:
        """Partition; ``edges`` are (a, b, weight), undirected; duplicates are summed."""
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
            groups = self._partition(graph, members, split_required=parent is not None)
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

    def _partition(self, graph: ig.Graph, members: list[int], *, split_required: bool) -> list[list[int]]:
        """Groups of vertex ids (sorted); isolated vertices are left out."""
        sub = graph.induced_subgraph(members, implementation="create_from_scratch")
        # induced_subgraph keeps vertex order, so sub vertex i is members[i]
        if sub.ecount() == 0:
            return []
        best: list[list[int]] = []
        for mult in _SPLIT_RETRIES if split_required else (1.0,):
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
