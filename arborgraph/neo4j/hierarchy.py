"""GDS's hierarchical Leiden ids laid out as the index's community table (pure).

``gds.leiden`` with ``includeIntermediateCommunities`` gives every projected entity one
community id per level, the finest first, each level covering every entity and each
coarser community a union of finer ones. The index's table
(:class:`graphrag.communities.HierarchicalLeiden`) is laid out the other way up: level 0
partitions the whole graph, a community's children (one level deeper) partition it, a
community that is not split further is a leaf with no children, groups smaller than
``min_community_size`` get no community, members are sorted, and ids are handed out
breadth first: level 0 by size (largest first, then smallest member), then each
community's children in that order, parent by parent.

:func:`gds_hierarchy` makes that layout of GDS's levels. GDS repeats a community that
does not split at a finer level; such repeats below a community that never splits again
are left out, so it is a leaf, as in-process (``community_cut(level)`` then is GDS's
partition at that level). A repeat above a later split is kept: children are always one
level below their parent. The ids are GDS's renumbered this way, never its raw ids, so
the same partition gives the same table.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from graphrag.model import Community


class HierarchyError(ValueError):
    """GDS's levels cannot be laid out as a hierarchy (say why in one line)."""


def level_groups(levels: Mapping[str, Sequence[int]]) -> list[list[list[str]]]:
    """GDS's groups per level, the coarsest first (the index's level 0), each group's
    members sorted; :class:`HierarchyError` if the entities have different numbers of
    levels."""
    depths = {len(ids) for ids in levels.values()}
    if len(depths) > 1:
        raise HierarchyError(f"the entities have different numbers of GDS levels ({sorted(depths)})")
    depth = depths.pop() if depths else 0
    out: list[list[list[str]]] = []
    for gds_level in reversed(range(depth)):
        groups: dict[int, list[str]] = defaultdict(list)
        for entity in sorted(levels):
            groups[levels[entity][gds_level]].append(entity)
        out.append(list(groups.values()))
    return out


def _size_order(group: Sequence[str]) -> tuple[int, str]:
    # as HierarchicalLeiden orders a partition's groups: largest first, then by first member
    return (-len(group), group[0])


def gds_hierarchy(levels: Mapping[str, Sequence[int]], *, min_size: int = 2) -> dict[int, Community]:
    """The index's communities (by id) for GDS's ids per entity, the finest first (see
    the module docstring); :class:`HierarchyError` when a finer community is not inside
    one coarser community."""
    by_level = [[g for g in groups if len(g) >= min_size] for groups in level_groups(levels)]
    # the group each entity is in, per level
    home = [{m: i for i, g in enumerate(groups) for m in g} for groups in by_level]
    # children[level][i]: the groups of level + 1 inside group i of level
    children: list[dict[int, list[int]]] = [defaultdict(list) for _ in by_level]
    for level in range(1, len(by_level)):
        for j, group in enumerate(by_level[level]):
            parents = {home[level - 1].get(m) for m in group}
            if len(parents) != 1 or None in parents:
                raise HierarchyError(f"a GDS community of {len(group)} entities is not inside one coarser community")
            children[level - 1][parents.pop()].append(j)  # type: ignore[arg-type]
    # a group that never splits again keeps no repeats of itself below it
    splits: list[set[int]] = [set() for _ in by_level]
    for level in reversed(range(len(by_level) - 1)):
        for i, kids in children[level].items():
            if len(kids) > 1 or any(k in splits[level + 1] for k in kids) or len(by_level[level + 1][kids[0]]) < len(by_level[level][i]):
                splits[level].add(i)
    communities: list[Community] = []
    todo: list[tuple[int, int, int | None]] = [
        (0, i, None) for i in sorted(range(len(by_level[0])), key=lambda i: _size_order(by_level[0][i]))
    ] if by_level else []
    while todo:
        level, i, parent = todo.pop(0)
        com = Community(id=len(communities), level=level, members=list(by_level[level][i]), parent=parent)
        communities.append(com)
        if parent is not None:
            communities[parent].children.append(com.id)
        if i in splits[level]:
            kids = sorted(children[level][i], key=lambda j: _size_order(by_level[level + 1][j]))
            todo.extend((level + 1, j, com.id) for j in kids)
    return {c.id: c for c in communities}
