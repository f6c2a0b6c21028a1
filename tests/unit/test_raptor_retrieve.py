"""Tree retrieval: drill-down traversal and collapsed search on the real slice's tree."""

from __future__ import annotations

import re

import numpy as np
import pytest
from raptor_corpus import built_tree, corpus

from raptor import collapsed_search, traverse

QUESTION = "Which modifiers shift a date by a number of days or months, and how is the start of a month computed?"
TRACE = re.compile(r"^tree: (L\d+:\d+ -> )+chunk$")


def _query(text: str = QUESTION) -> np.ndarray:
    vector: np.ndarray = corpus().embed([text])[0]
    return vector


def test_traverse_returns_overview_then_leaves_of_the_right_subtree() -> None:
    tree, c = built_tree(), corpus()
    out = traverse(tree, _query(), tree.node_vectors, beam=2, budget_tokens=1200, count_tokens=c.count_tokens)
    assert out[0].kind == "summary" and out[0].level is not None and out[0].level >= 1
    assert [x.kind for x in out[1:]] == ["chunk"] * (len(out) - 1) and len(out) >= 3
    assert sum(c.count_tokens(x.text) for x in out) <= 1200
    overview = tree.node(out[0].node_id)
    assert overview.doc_ids[0] == "lang_datefunc.md"
    assert out[1].source == "lang_datefunc.md"
    assert out[1].node_id in overview.chunk_ids  # the best detail sits under the overview
    assert TRACE.match(out[1].trace[0]), out[1].trace
    assert out[1].trace[0].startswith(f"tree: {tree.root_id} -> ")
    assert out[0].provenance == list(overview.chunk_ids)
    assert out[0].extra["title"] == overview.title
    assert out[1].node_id in tree.node(out[0].node_id).chunk_ids or out[1].trace[-1].startswith("tree: next to")


def test_max_leaves_keeps_the_head_of_the_same_ranking() -> None:
    tree, c = built_tree(), corpus()
    full = traverse(tree, _query(), tree.node_vectors, budget_tokens=10**6, count_tokens=c.count_tokens)
    head = traverse(tree, _query(), tree.node_vectors, budget_tokens=10**6, count_tokens=c.count_tokens, max_leaves=5)

    assert len(full) > 6 and [x.kind for x in head] == ["summary"] + ["chunk"] * 5
    assert [(x.node_id, x.score, x.trace) for x in head] == [(x.node_id, x.score, x.trace) for x in full[:6]]


def test_best_leaves_come_with_their_reading_order_neighbours() -> None:
    tree, c = built_tree(), corpus()
    out = traverse(tree, _query(), tree.node_vectors, budget_tokens=3000, count_tokens=c.count_tokens, anchors=1, neighbours=1)
    leaves = [n.node_id for n in tree.leaves()]
    anchor, *rest = [x for x in out if x.kind == "chunk"]
    i = leaves.index(anchor.node_id)
    near = {leaves[j] for j in (i - 1, i + 1) if 0 <= j < len(leaves) and tree.node(leaves[j]).doc_ids == tree.node(anchor.node_id).doc_ids}
    assert near and {x.node_id for x in rest[: len(near)]} == near
    assert all(x.trace[-1] == f"tree: next to {anchor.node_id}" for x in rest[: len(near)])
    # after the neighbourhood, the ranking resumes in score order
    tail = [x.score for x in rest[len(near):]]
    assert tail == sorted(tail, reverse=True)
    # neighbours outside the plausible pool stay where their own score puts them
    pooled = traverse(
        tree, _query(), tree.node_vectors, budget_tokens=3000, count_tokens=c.count_tokens,
        anchors=1, neighbours=1, neighbour_pool=1,
    )
    assert not any(t.startswith("tree: next to") for x in pooled for t in x.trace)
    plain = traverse(tree, _query(), tree.node_vectors, budget_tokens=3000, count_tokens=c.count_tokens, anchors=0)
    scores = [x.score for x in plain if x.kind == "chunk"]
    assert scores == sorted(scores, reverse=True)


def test_leaf_token_counts_given_as_an_array_walk_as_counted_ones() -> None:
    tree, c = built_tree(), corpus()
    counted = {leaf.node_id: c.count_tokens(leaf.text) for leaf in tree.leaves()}
    # budgets that fill part way: leaves that do not fit are skipped, smaller ones later taken
    for budget, max_leaves in ((900, None), (2500, 4), (10**6, None)):
        by_node = traverse(tree, _query(), tree.node_vectors, budget_tokens=budget, count_tokens=c.count_tokens, max_leaves=max_leaves)
        by_array = traverse(
            tree, _query(), tree.node_vectors, budget_tokens=budget, count_tokens=c.count_tokens, max_leaves=max_leaves,
            leaf_tokens=np.array([counted[leaf.node_id] for leaf in tree.leaves()]),
        )
        assert [(x.node_id, x.score, x.trace) for x in by_array] == [(x.node_id, x.score, x.trace) for x in by_node]
    # a pooled walk (some leaves ranked) weighs the same leaves as well
    leaves = np.array(tree.level_rows(0), dtype=np.int64)
    pool = leaves[::3]
    pooled = [
        traverse(tree, _query(), tree.node_vectors, beam=1, budget_tokens=900, count_tokens=c.count_tokens, leaf_pool=pool, **given)
        for given in ({}, {"leaf_tokens": np.array([counted[leaf.node_id] for leaf in tree.leaves()])})
    ]
    assert [(x.node_id, x.score, x.trace) for x in pooled[1]] == [(x.node_id, x.score, x.trace) for x in pooled[0]]
    # the array is what is weighed: a leaf made to cost more than the budget is never taken
    best = by_node[1].node_id
    heavy = np.array([10**7 if leaf.node_id == best else counted[leaf.node_id] for leaf in tree.leaves()])
    out = traverse(tree, _query(), tree.node_vectors, budget_tokens=2500, count_tokens=c.count_tokens, leaf_tokens=heavy)
    assert best not in {x.node_id for x in out}


def test_subtree_weight_orders_leaves() -> None:
    tree, c = built_tree(), corpus()
    q = _query()
    # without the subtree prior, leaves come in order of their own similarity
    flat = traverse(tree, q, tree.node_vectors, budget_tokens=10**6, count_tokens=c.count_tokens, subtree_weight=0.0, anchors=0)
    leaf_ids = [x.node_id for x in flat if x.kind == "chunk"]
    sims = {n.node_id: float(tree.node_vectors[tree.position(n.node_id)] @ q) for n in tree.leaves()}
    assert leaf_ids == sorted(sims, key=lambda i: (-sims[i], tree.position(i)))
    # with a dominant prior, every leaf under the beam comes before every leaf outside it
    strong = traverse(tree, q, tree.node_vectors, beam=1, budget_tokens=10**6, count_tokens=c.count_tokens, subtree_weight=100, anchors=0)
    inside = [not x.trace[0].endswith("outside the beam") for x in strong if x.kind == "chunk"]
    assert inside == sorted(inside, reverse=True) and 0 < sum(inside) < len(inside)


def test_traverse_never_returns_summaries_alone() -> None:
    tree, c = built_tree(), corpus()
    leaf_tokens = min(c.count_tokens(n.text) for n in tree.leaves())
    small = traverse(tree, _query(), tree.node_vectors, budget_tokens=leaf_tokens + 5, count_tokens=c.count_tokens)
    assert small and small[-1].kind == "chunk"
    tiny = traverse(tree, _query(), tree.node_vectors, budget_tokens=1, count_tokens=c.count_tokens)
    assert [x.kind for x in tiny] == ["chunk"] and tiny[0].flags == ["over_budget"]


def test_lexical_scores_steer_the_descent() -> None:
    tree, c = built_tree(), corpus()
    target = next(n for n in tree.leaves() if n.doc_ids[0] == "lang_upsert.md")
    lexical = {target.node_id: 50.0}
    for parent in tree.node(target.node_id).parents:
        lexical[parent] = 50.0
    out = traverse(
        tree, _query(), tree.node_vectors, lexical_scores=lexical, beam=1, budget_tokens=3000, count_tokens=c.count_tokens
    )
    assert target.node_id in [x.node_id for x in out]


def test_traverse_validates_its_inputs() -> None:
    tree, c = built_tree(), corpus()
    with pytest.raises(ValueError):
        traverse(tree, _query(), tree.node_vectors[:-1], budget_tokens=100, count_tokens=c.count_tokens)
    with pytest.raises(ValueError):
        traverse(tree, _query(), tree.node_vectors, beam=0, budget_tokens=100, count_tokens=c.count_tokens)


def test_collapsed_search_ranks_all_levels_within_budget() -> None:
    tree, c = built_tree(), corpus()
    sims = tree.node_vectors @ _query()
    scores = {n.node_id: float(s) for n, s in zip(tree.nodes, sims, strict=True)}
    out = collapsed_search(tree, scores, budget_tokens=900, count_tokens=c.count_tokens)
    assert sum(c.count_tokens(x.text) for x in out) <= 900
    assert [x.score for x in out] == sorted((x.score for x in out), reverse=True)
    best = max(scores, key=scores.__getitem__)
    assert out[0].node_id == best
    kinds = {x.kind for x in out}
    assert kinds <= {"chunk", "summary"}
    for x in out:
        assert x.provenance == list(tree.node(x.node_id).chunk_ids)
        assert x.trace[0].startswith("tree:collapsed rank")
    # only scored nodes are considered
    assert collapsed_search(tree, {}, 900, c.count_tokens) == []
    one = tree.leaves()[0].node_id
    assert [x.node_id for x in collapsed_search(tree, {one: 1.0}, 900, c.count_tokens)] == [one]


def test_a_pooled_walk_ranks_only_the_chosen_subtrees_the_pool_and_the_lexical_head() -> None:
    tree, c = built_tree(), corpus()
    q = _query()
    leaves = np.array(tree.level_rows(0), dtype=np.int64)
    exact = traverse(tree, q, tree.node_vectors, beam=1, budget_tokens=10**6, count_tokens=c.count_tokens, anchors=0)
    exact_leaves = [x.node_id for x in exact if x.kind == "chunk"]
    # the pool as an approximate search would give it: the best leaves by cosine
    cosines = tree.node_vectors[leaves] @ (q / np.linalg.norm(q))
    pool = leaves[np.argsort(-cosines, kind="stable")[:5]]
    pooled = traverse(
        tree, q, tree.node_vectors, beam=1, budget_tokens=10**6, count_tokens=c.count_tokens, anchors=0, leaf_pool=pool,
    )
    pooled_leaves = [x.node_id for x in pooled if x.kind == "chunk"]
    # fewer leaves compete, and the head of the ranking stays
    assert 0 < len(pooled_leaves) < len(exact_leaves)
    assert pooled_leaves[:3] == exact_leaves[:3]
    assert {tree.nodes[int(r)].node_id for r in pool} <= set(pooled_leaves)
    # the same overview: the descent over the summaries is exact either way
    assert pooled[0].kind == exact[0].kind == "summary" and pooled[0].node_id == exact[0].node_id


def test_the_integer_keyed_order_is_the_stable_sort_s_order() -> None:
    from raptor.retrieve import _best_first_order

    rng = np.random.default_rng(3)
    exact = rng.standard_normal(5000).astype(np.float32).astype(np.float64)
    tied = np.round(exact.astype(np.float32), 1).astype(np.float32).astype(np.float64)
    signed_zeros = np.where(np.arange(5000) % 3 == 0, -0.0, np.where(np.arange(5000) % 3 == 1, 0.0, exact))
    not_float32 = np.round(exact, 1)  # not held exactly by a float32: sorted as they are
    for scores in (exact, tied, signed_zeros, not_float32, np.zeros(0), np.ones(1)):
        assert np.array_equal(_best_first_order(scores), np.argsort(-scores, kind="stable"))
