"""GDS's hierarchical Leiden ids laid out as the index's community table (pure).

``gds.leiden`` with ``includeIntermediateCommunities`` gives every projected entity one
community id per level, the finest first, each level covering every entity. The index's
table (:class:`graphrag.communities.HierarchicalLeiden`) is laid out the other way up:
level 0 partitions the whole graph, a community's children (one level deeper) partition
it, a community that is not split further is a leaf with no children, groups smaller
than ``min_community_size`` get no community, members are sorted, and ids are handed out
breadth first: level 0 by size (largest first, then smallest member), then each
community's children in that order, parent by parent.

:func:`gds_hierarchy` makes that layout of GDS's levels. GDS repeats a community that
does not split at a finer level; such repeats below a community that never splits again
are left out, so it is a leaf, as in-process (``community_cut(level)`` then is GDS's
partition at that level). A repeat above a later split is kept: children are always one
level below their parent. GDS's finer communities nest in its coarser ones but for a
few (its Leiden may move a refined group to another community from one level to the
next: 5 of 589 on the SQLite manual): such a community is split along the coarser ones,
so that a child always lies inside its parent and level 0 is GDS's final partition
exactly. The ids are GDS's renumbered this way, never its raw ids, so the same
partition gives the same table.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from graphrag.model import Community


class HierarchyError(ValueError):
    """GDS's levels cannot be laid out as a hierarchy (say why in one line)."""


IdPath = tuple[int, ...]  # GDS's ids of one entity from the coarsest level down to one level


def level_groups(levels: Mapping[str, Sequence[int]]) -> list[dict[IdPath, list[str]]]:
    """GDS's groups per level, the coarsest first (the index's level 0): at each level
    the entities grouped by their ids from the coarsest level down to that one (so a
    group lies inside one group of the level above), each group's members sorted;
    :class:`HierarchyError` if the entities have different numbers of levels."""
    depths = {len(ids) for ids in levels.values()}
    if len(depths) > 1:
        raise HierarchyError(f"the entities have different numbers of GDS levels ({sorted(depths)})")
    depth = depths.pop() if depths else 0
    out: list[dict[IdPath, list[str]]] = []
    for down in range(1, depth + 1):
        groups: dict[IdPath, list[str]] = defaultdict(list)
        for entity in sorted(levels):
            groups[tuple(reversed(levels[entity]))[:down]].append(entity)
        out.append(dict(groups))
    return out


def split_communities(levels: Mapping[str, Sequence[int]]) -> int:
    """How many of GDS's finer communities straddle two coarser ones (its Leiden may move
    a refined group out of its community between levels): each is split along them."""
    parents: dict[tuple[int, int], set[int]] = defaultdict(set)
    for ids in levels.values():
        for level in range(len(ids) - 1):
            parents[(level, ids[level])].add(ids[level + 1])
    return sum(1 for coarser in parents.values() if len(coarser) > 1)


def _size_order(group: Sequence[str]) -> tuple[int, str]:
    # as HierarchicalLeiden orders a partition's groups: largest first, then by first member
    return (-len(group), group[0])


def gds_hierarchy(levels: Mapping[str, Sequence[int]], *, min_size: int = 2) -> dict[int, Community]:
    """The index's communities (by id) for GDS's ids per entity, the finest first (see
    the module docstring)."""
    by_level = [{p: g for p, g in groups.items() if len(g) >= min_size} for groups in level_groups(levels)]
    children: list[dict[IdPath, list[IdPath]]] = [defaultdict(list) for _ in by_level]
    for level in range(1, len(by_level)):
        for path in by_level[level]:
            children[level - 1][path[:-1]].append(path)  # the parent is there: it is no smaller
    # a group that never splits again keeps no repeats of itself below it
    splits: list[set[IdPath]] = [set() for _ in by_level]
    for level in reversed(range(len(by_level) - 1)):
        for path, kids in children[level].items():
            lone = kids[0] if len(kids) == 1 else None
            if lone is None or lone in splits[level + 1] or len(by_level[level + 1][lone]) < len(by_level[level][path]):
                splits[level].add(path)
    communities: list[Community] = []
    first = sorted(by_level[0], key=lambda p: _size_order(by_level[0][p])) if by_level else []
    todo: list[tuple[int, IdPath, int | None]] = [(0, path, None) for path in first]
    while todo:
        level, path, parent = todo.pop(0)
        com = Community(id=len(communities), level=level, members=list(by_level[level][path]), parent=parent)
        communities.append(com)
        if parent is not None:
            communities[parent].children.append(com.id)
        if path in splits[level]:
            kids = sorted(children[level][path], key=lambda p: _size_order(by_level[level + 1][p]))
            todo.extend((level + 1, kid, com.id) for kid in kids)
    return {c.id: c for c in communities}
