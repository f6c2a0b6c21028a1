"""GDS's Leiden ids per level laid out as the index's community table (pure)."""

from __future__ import annotations

import pytest

from arborgraph.neo4j.hierarchy import HierarchyError, gds_hierarchy, level_groups, split_communities


def test_levels_come_coarsest_first_with_sorted_members() -> None:
    levels = {"b": [1, 9], "a": [1, 9], "c": [2, 9]}
    assert level_groups(levels) == [{(9,): ["a", "b", "c"]}, {(9, 1): ["a", "b"], (9, 2): ["c"]}]
    with pytest.raises(HierarchyError):
        level_groups({"a": [1], "b": [1, 2]})


def test_layout_is_the_in_process_one() -> None:
    # finest first: {a,b} {c,d} {e,f} {g,h,i} | {a,b,c,d} {e,f} {g,h,i} | {a..f} {g,h,i}
    levels = {
        "a": [10, 20, 30], "b": [10, 20, 30], "c": [11, 20, 30], "d": [11, 20, 30],
        "e": [12, 21, 30], "f": [12, 21, 30], "g": [13, 22, 31], "h": [13, 22, 31], "i": [13, 22, 31],
    }
    coms = gds_hierarchy(levels)
    shape = [(c.id, c.level, c.members, c.parent, c.children) for c in coms.values()]
    assert shape == [
        # level 0 by size, then first member; {g,h,i} never splits again: a leaf, not repeated
        (0, 0, ["a", "b", "c", "d", "e", "f"], None, [2, 3]),
        (1, 0, ["g", "h", "i"], None, []),
        (2, 1, ["a", "b", "c", "d"], 0, [4, 5]),
        # {e,f} is a repeat above no split: it stays a leaf one level below its parent
        (3, 1, ["e", "f"], 0, []),
        (4, 2, ["a", "b"], 2, []),
        (5, 2, ["c", "d"], 2, []),
    ]
    # GDS's raw ids do not matter: the same partition under other ids gives the same table
    renamed = {e: [i + 100 * (k + 1) for k, i in enumerate(ids)] for e, ids in levels.items()}
    assert gds_hierarchy(renamed) == coms


def test_small_groups_get_no_community_and_a_parent_that_lost_members_keeps_its_child() -> None:
    levels = {"a": [1, 5], "b": [1, 5], "c": [2, 5], "d": [3, 6]}  # {c} and {d} are too small
    coms = gds_hierarchy(levels, min_size=2)
    assert [(c.level, c.members, c.parent) for c in coms.values()] == [(0, ["a", "b", "c"], None), (1, ["a", "b"], 0)]
    assert gds_hierarchy({}) == {}


def test_a_finer_community_across_two_coarser_ones_is_split_along_them() -> None:
    # GDS's finer {a,b,c,d} straddles its coarser {a,b,e,f} and {c,d,g,h}
    levels = {"a": [1, 5], "b": [1, 5], "c": [1, 6], "d": [1, 6], "e": [2, 5], "f": [2, 5], "g": [3, 6], "h": [3, 6]}
    assert split_communities(levels) == 1
    coms = gds_hierarchy(levels)
    assert [(c.level, c.members, c.parent) for c in coms.values()] == [
        (0, ["a", "b", "e", "f"], None), (0, ["c", "d", "g", "h"], None),
        (1, ["a", "b"], 0), (1, ["e", "f"], 0), (1, ["c", "d"], 1), (1, ["g", "h"], 1),
    ]


def test_the_edges_digest_ignores_order_orientation_and_the_last_bits_of_a_sum() -> None:
    from arborgraph.neo4j.gds import edges_digest

    edges = [("a", "b", 0.1 + 0.2), ("b", "c", 2.0)]
    assert edges_digest(edges) == edges_digest([("c", "b", 2.0), ("b", "a", 0.3)])
    assert edges_digest(edges) != edges_digest([("a", "b", 0.3), ("b", "c", 2.5)])
