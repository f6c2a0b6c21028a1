"""build_tree on the real manual slice, and on every degenerate input."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest
from raptor_corpus import CONFIG, built_tree, corpus

from raptor import (
    Cluster,
    ExtractiveSummariser,
    Leaf,
    RaptorConfig,
    Summary,
    Tree,
    build_tree,
)
from arborgraph.core.processes import available_cores
from raptor.build import tree_workers
from raptor.text import PAGE_MARK
from arborgraph.core.leads import split_units


class CountingSummariser:
    """The real extractive summariser, counting calls and the node ids it was asked for."""

    def __init__(self, max_tokens: int = 120) -> None:
        c = corpus()
        self.inner = ExtractiveSummariser(embed=c.embed, count_tokens=c.count_tokens, max_tokens=max_tokens)
        self.name = self.inner.name
        self.asked: list[str] = []

    def summarise(self, cluster: Cluster) -> Summary:
        self.asked.append(cluster.node_id)
        return self.inner.summarise(cluster)


def _build(leaves: Sequence[Leaf], vectors: np.ndarray, config: RaptorConfig = CONFIG, **kw: object) -> tuple[Tree, CountingSummariser]:
    c = corpus()
    summariser = CountingSummariser()
    tree = build_tree(
        leaves, vectors, embed=c.embed, count_tokens=c.count_tokens, summariser=summariser, config=config, **kw  # type: ignore[arg-type]
    )
    return tree, summariser


def assert_valid_tree(tree: Tree, leaves: Sequence[Leaf]) -> None:
    """Structural invariants every built tree must satisfy."""
    ids = [leaf.chunk_id for leaf in leaves]
    roots = [n for n in tree.nodes if not n.parents]
    assert [r.node_id for r in roots] == [tree.root_id]
    assert tree.root.level >= 1 and tree.root.summariser is not None
    assert list(tree.root.chunk_ids) == ids  # the root covers every leaf, in order
    assert [n.node_id for n in tree.leaves()] == ids
    for node in tree.nodes:
        for child in node.children:
            assert tree.node(child).level == node.level - 1
            assert node.node_id in tree.node(child).parents
        for parent in node.parents:
            assert node.node_id in tree.node(parent).children
        if node.level > 0:
            assert node.node_id.startswith(f"L{node.level}:")
            covered = {c for child in node.children for c in tree.node(child).chunk_ids}
            assert set(node.chunk_ids) == covered
            assert node.text and node.title
        else:
            assert node.parents  # every leaf is summarised
    assert tree.node_vectors is not None and tree.node_vectors.shape[0] == len(tree)
    assert np.allclose(np.linalg.norm(tree.node_vectors, axis=1), 1.0, atol=1e-3)


def test_tree_over_the_manual_slice() -> None:
    tree = built_tree()
    c = corpus()
    assert_valid_tree(tree, c.leaves)
    assert tree.height >= 2
    assert np.array_equal(tree.node_vectors[: len(c.leaves)], c.vectors)  # leaf vectors kept as given
    # level-1 clusters are topical: most hold chunks of a single page
    level1 = [tree.node(i) for i in tree.level_ids(1)]
    assert sum(len(n.doc_ids) == 1 for n in level1) >= 0.75 * len(level1)
    assert all(n.summariser == "extractive" for n in tree.summaries())
    assert all(n.doc_ids[0] in {leaf.doc_id for leaf in c.leaves} for n in tree.summaries())
    # summaries are the children's own sentences
    for node in tree.summaries():
        child_units = {u.text for ch in node.children for u in split_units(tree.node(ch).text)}
        sentences = [line for line in node.text.split("\n") if not line.startswith(PAGE_MARK)]
        assert set(sentences) <= child_units, node.node_id
        # grouped under the pages they come from, each page once
        pages = [line for line in node.text.split("\n") if line.startswith(PAGE_MARK)]
        assert pages and len(pages) == len(set(pages)) and node.text.startswith(PAGE_MARK), node.node_id


def test_same_seed_same_tree_and_summariser_called_once_per_summary() -> None:
    c = corpus()
    a, sa = _build(c.leaves, c.vectors)
    b, _ = _build(c.leaves, c.vectors)
    assert a.nodes == b.nodes
    assert np.array_equal(a.node_vectors, b.node_vectors)
    assert sorted(sa.asked) == sorted(n.node_id for n in a.summaries())
    assert len(sa.asked) == len(set(sa.asked))
    other, _ = _build(c.leaves, c.vectors, config=CONFIG.model_copy(update={"seed": CONFIG.seed + 1}))
    assert_valid_tree(other, c.leaves)


def test_summaries_are_drawn_among_their_children() -> None:
    tree = built_tree()
    leaves = tree.leaves()
    assert len({(n.umap_x, n.umap_y) for n in leaves}) > len(leaves) // 2  # the leaves are spread out
    for node in tree.summaries():
        kids = [tree.node(c) for c in node.children]
        assert node.umap_x == pytest.approx(np.mean([k.umap_x for k in kids]))
        assert node.umap_y == pytest.approx(np.mean([k.umap_y for k in kids]))


def test_known_leaf_token_counts_are_not_counted_again() -> None:
    c = corpus()
    leaves, vectors = c.leaves[:40], c.vectors[:40]
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return c.count_tokens(text)

    def build(given: Sequence[Leaf]) -> Tree:
        summariser = ExtractiveSummariser(embed=c.embed, count_tokens=c.count_tokens, max_tokens=120)
        return build_tree(given, vectors, embed=c.embed, count_tokens=count, summariser=summariser, config=CONFIG)

    counting = build([replace(leaf, tokens=None) for leaf in leaves])
    assert {leaf.text for leaf in leaves} <= set(counted)
    counted.clear()
    known = [replace(leaf, tokens=c.count_tokens(leaf.text)) for leaf in leaves]
    assert known == leaves  # Leaf.from_chunk takes the chunker's count
    assert build(known).nodes == counting.nodes
    assert not {leaf.text for leaf in leaves} & set(counted)


def test_progress_is_reported() -> None:
    c = corpus()
    seen: list[tuple[str, int, int | None]] = []
    _build(c.leaves[:12], c.vectors[:12], progress=lambda s, d, t: seen.append((s, d, t)))
    stages = {s for s, _, _ in seen}
    assert {"raptor.cluster", "raptor.summarise", "raptor.embed", "raptor.layout"} <= stages


def test_one_chunk() -> None:
    c = corpus()
    tree, summariser = _build(c.leaves[:1], c.vectors[:1])
    assert_valid_tree(tree, c.leaves[:1])
    assert len(tree) == 2 and tree.root_id == "L1:0" and summariser.asked == ["L1:0"]


def test_two_chunks() -> None:
    c = corpus()
    tree, _ = _build(c.leaves[:2], c.vectors[:2])
    assert_valid_tree(tree, c.leaves[:2])
    assert tree.root.children == tuple(leaf.chunk_id for leaf in c.leaves[:2])


def test_identical_chunks() -> None:
    c = corpus()
    leaf = c.leaves[3]
    leaves = [Leaf(f"same.md#{i}", "same.md", leaf.text, leaf.heading_path) for i in range(9)]
    tree, _ = _build(leaves, np.tile(c.vectors[3:4], (9, 1)))
    assert_valid_tree(tree, leaves)
    lines = tree.root.text.split("\n")
    assert len(lines) == len(set(lines))


def test_one_huge_document_in_one_chunk() -> None:
    c = corpus()
    text = "\n\n".join(leaf.text for leaf in c.leaves)  # the whole slice as one leaf (~10k tokens)
    leaves = [Leaf("all.md#0", "all.md", text, ("Everything",))]
    vectors = c.embed([text])
    tree, _ = _build(leaves, vectors)
    assert_valid_tree(tree, leaves)
    assert c.count_tokens(tree.root.text) <= 120


def test_one_document_with_many_chunks_over_the_budget() -> None:
    c = corpus()
    leaves = [Leaf(f"one.md#{i}", "one.md", leaf.text, leaf.heading_path) for i, leaf in enumerate(c.leaves)]
    config = CONFIG.model_copy(update={"max_cluster_tokens": 800, "summary_max_tokens": 120})
    tree, _ = _build(leaves, c.vectors, config=config)
    assert_valid_tree(tree, leaves)
    assert all(n.doc_ids == ("one.md",) for n in tree.summaries())
    for node in tree.summaries():
        if len(node.children) > 1:
            assert sum(c.count_tokens(tree.node(ch).text) for ch in node.children) <= 800


def test_a_thousand_tiny_chunks() -> None:
    c = corpus()
    # one sentence per chunk, the slice's sentences cycled to 1,000 chunks over 7 documents
    sentences = list(dict.fromkeys(u.text for leaf in c.leaves for u in split_units(leaf.text)))
    texts = [sentences[i % len(sentences)] for i in range(1000)]
    leaves = [Leaf(f"tiny.md#{i}", f"tiny{i % 7}.md", t) for i, t in enumerate(texts)]
    config = CONFIG.model_copy(update={"reducer": "pca"})  # no numba compile in the unit tests
    tree, summariser = _build(leaves, c.embed(texts), config=config)
    assert_valid_tree(tree, leaves)
    assert 10 < len(tree.level_ids(1)) < 200
    assert summariser.inner.sentences_embedded <= 32 * len(tree.level_ids(1))


def test_invalid_inputs_are_rejected() -> None:
    c = corpus()
    with pytest.raises(ValueError, match="no leaves"):
        _build([], np.zeros((0, 384), np.float32))
    with pytest.raises(ValueError, match="shape"):
        _build(c.leaves[:3], c.vectors[:2])
    with pytest.raises(ValueError, match="duplicate"):
        _build([c.leaves[0], c.leaves[0]], c.vectors[:2])
    with pytest.raises(ValueError, match="no text"):
        _build([Leaf("a#0", "a", "   ")], c.vectors[:1])
    with pytest.raises(ValueError, match="collides"):
        _build([Leaf("L1:0", "a", "text")], c.vectors[:1])
    with pytest.raises(ValueError):
        RaptorConfig(max_cluster_tokens=100, summary_max_tokens=80)


@pytest.mark.parametrize("mode", ["auto", "embed"])
def test_summary_vectors_are_child_centroids_or_embedded_text(mode: str) -> None:
    c = corpus()
    leaves, vectors = c.leaves[:40], c.vectors[:40]
    tree, _ = _build(leaves, vectors, config=CONFIG.model_copy(update={"summary_vectors": mode}))
    summaries = tree.summaries()
    assert summaries, "40 leaves made no summary node: the loop below would check nothing"
    for node in summaries:
        row = tree.node_vectors[tree.position(node.node_id)]
        if mode == "auto":  # extractive summaries: the mean of the children's vectors
            mean = np.stack([tree.node_vectors[tree.position(ch)] for ch in node.children]).mean(axis=0)
            expected = mean / np.linalg.norm(mean)
        else:  # named after the build: the extractive summary's text alone
            expected = c.embed([node.text])[0]
        assert np.allclose(row, expected, atol=1e-4)


def test_helper_processes_build_the_same_tree() -> None:
    c = corpus()
    # UMAP forced on: the helper runs the same numba kernels the build's process does
    config = CONFIG.model_copy(update={"reducer": "umap", "workers": 1})
    serial, _ = _build(c.leaves, c.vectors, config=config)
    parallel, summariser = _build(c.leaves, c.vectors, config=config.model_copy(update={"workers": 2}))
    assert parallel.nodes == serial.nodes  # ids, children, titles, texts, layout
    assert np.array_equal(parallel.node_vectors, serial.node_vectors)
    assert len(summariser.asked) == len(parallel.summaries())


def test_small_trees_are_built_in_one_process() -> None:
    assert tree_workers(CONFIG, CONFIG.umap_min_points - 1) == 1
    assert tree_workers(CONFIG, CONFIG.umap_min_points) == available_cores()
    assert tree_workers(CONFIG.model_copy(update={"workers": 3}), 10) == 3
    # a resource setting, not part of the tree's settings (nor of index fingerprints)
    assert "workers" not in CONFIG.model_copy(update={"workers": 3}).model_dump()
