"""update_tree on the real manual slice: edits, additions, removals, drift."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from test_raptor_build import CountingSummariser, assert_valid_tree
from raptor_corpus import CONFIG, MANUAL, OUTLINE_CONFIG, SLICE, built_tree, corpus, outline_tree

from raptor import Cluster, ExtractiveSummariser, Leaf, RaptorConfig, Summary, Tree, build_tree
from raptor.build import ChunkTree, tree_from_chunks
from raptor.naming import MAX_WORDS
from raptor.tables import tree_from_tables, tree_to_tables
from raptor.update import TreeUpdate, update_tree


def assert_update_invariants(tree: Tree, leaves: Sequence[Leaf]) -> None:
    """Everything build_tree guarantees, plus leaf-ordered coverage of every summary."""
    assert_valid_tree(tree, leaves)
    order = {leaf.chunk_id: i for i, leaf in enumerate(leaves)}
    docs = {leaf.chunk_id: leaf.doc_id for leaf in leaves}
    assert len({n.node_id for n in tree.nodes}) == len(tree.nodes)
    levels = [n.level for n in tree.nodes]
    assert levels == sorted(levels)  # leaves first, then level by level
    for node in tree.summaries():
        assert [order[c] for c in node.chunk_ids] == sorted(order[c] for c in node.chunk_ids)
        assert set(node.doc_ids) == {docs[c] for c in node.chunk_ids}
        assert node.children and all(c in tree for c in node.children)
    assert tree.root.cluster == -1
    back = tree_from_tables(tree_to_tables(tree), tree.vectors)
    assert back.nodes == tree.nodes and back.root_id == tree.root_id
    assert np.array_equal(back.node_vectors, tree.node_vectors)


def ancestors(tree: Tree, node_id: str) -> set[str]:
    out: set[str] = set()
    todo = list(tree.node(node_id).parents)
    while todo:
        p = todo.pop()
        if p not in out:
            out.add(p)
            todo.extend(tree.node(p).parents)
    return out


def untouched_are_identical(before: Tree, after: Tree, redone: set[str]) -> int:
    """Every summary of ``after`` not redone has the title, text and vector bytes it had."""
    kept = 0
    for node in after.summaries():
        if node.node_id in redone:
            continue
        old = before.node(node.node_id)
        assert (node.title, node.text, node.summariser) == (old.title, old.text, old.summariser)
        assert after.node_vectors[after.position(node.node_id)].tobytes() == before.node_vectors[before.position(node.node_id)].tobytes()
        kept += 1
    return kept


def run(leaves: Sequence[Leaf], vectors: np.ndarray, config: RaptorConfig = CONFIG, **kw: object) -> tuple[Tree, TreeUpdate, CountingSummariser]:
    c = corpus()
    summariser = CountingSummariser(max_tokens=config.summary_max_tokens)
    tree, stats = update_tree(
        built_tree(), leaves, vectors, embed=c.embed, count_tokens=c.count_tokens,
        summariser=summariser, config=config, **kw,  # type: ignore[arg-type]
    )
    assert stats.summariser_calls == len(summariser.asked)
    return tree, stats, summariser


@functools.cache
def extra_page() -> tuple[list[Leaf], np.ndarray]:
    """A page outside the slice (DELETE), chunked and embedded like the slice."""
    from ingest import ChunkingConfig, Document, chunk_document, iter_collection

    c = corpus()
    chunks = []
    for item in iter_collection([MANUAL / "lang_delete.md"], load_timeout_s=None):
        assert isinstance(item, Document)
        chunks.extend(chunk_document(item, ChunkingConfig.model_validate({}), c.count_tokens))
    return [Leaf.from_chunk(ch) for ch in chunks], c.embed([ch.context_text() for ch in chunks])


def test_tree_from_chunks_builds_their_leaves_and_updates_a_previous_tree() -> None:
    from ingest import ChunkingConfig, Document, chunk_document, iter_collection

    c = corpus()
    chunks = []
    for item in iter_collection([MANUAL / name for name in SLICE], load_timeout_s=None):
        assert isinstance(item, Document)
        chunks.extend(chunk_document(item, ChunkingConfig.model_validate({}), c.count_tokens))

    def from_chunks(config: RaptorConfig, previous: Tree | None) -> ChunkTree:
        summariser = ExtractiveSummariser(embed=c.embed, count_tokens=c.count_tokens, max_tokens=config.summary_max_tokens)
        return tree_from_chunks(
            chunks, c.vectors, embed=c.embed, count_tokens=c.count_tokens, summariser=summariser,
            config=config, previous=previous,
        )

    fresh = from_chunks(CONFIG, None)
    assert fresh.tree.nodes == built_tree().nodes and not fresh.updated
    assert fresh.summaries_redone == len(fresh.tree.summaries())
    for config, previous in ((CONFIG, built_tree()), (OUTLINE_CONFIG, outline_tree())):
        again = from_chunks(config, previous)  # clustered: updated in place; outline: built again
        assert again.tree.nodes == previous.nodes and again.updated and again.summaries_redone == 0


def test_unchanged_input_redoes_nothing() -> None:
    c = corpus()
    tree, stats, summariser = run(c.leaves, c.vectors)
    assert summariser.asked == [] and stats.summaries_redone == 0 and not stats.full_rebuild
    assert tree.nodes == built_tree().nodes
    assert np.array_equal(tree.node_vectors, built_tree().node_vectors)


def edited_slice() -> tuple[list[Leaf], np.ndarray, Leaf]:
    c = corpus()
    i = next(k for k, leaf in enumerate(c.leaves) if leaf.doc_id == "lang_vacuum.md" and len(leaf.text) > 400)
    edited = replace(c.leaves[i], text=c.leaves[i].text + "\n\nThe VACUUM command now also rebuilds every index of an attached schema in a single pass.")
    vectors = c.vectors.copy()
    vectors[i] = c.embed([edited.text])[0]
    return [*c.leaves[:i], edited, *c.leaves[i + 1 :]], vectors, edited


class RevisingSummariser(CountingSummariser):
    """The extractive summariser with a digest of its input in the title, so any change
    below a summary changes the summary (as an LLM's rewrite would)."""

    def summarise(self, cluster: Cluster) -> Summary:
        out = super().summarise(cluster)
        digest = hashlib.sha256("\x00".join(m.text for m in cluster.members).encode()).hexdigest()[:8]
        return Summary(title=f"{out.title} [{digest}]", text=out.text)


def test_one_edited_chunk_redoes_its_path_to_the_root() -> None:
    leaves, vectors, edited = edited_slice()
    before = built_tree()
    c = corpus()
    summariser = RevisingSummariser(max_tokens=CONFIG.summary_max_tokens)
    # the summariser's own titles kept, as an LLM's are: a changed title changes the summary
    config = CONFIG.model_copy(update={"naming": "summariser"})
    tree, stats = update_tree(
        before, leaves, vectors, embed=c.embed, count_tokens=c.count_tokens, summariser=summariser, config=config
    )
    assert_update_invariants(tree, leaves)
    assert (stats.leaves_changed, stats.leaves_added, stats.leaves_removed) == (1, 0, 0)
    assert not stats.full_rebuild and stats.summaries_removed == 0
    path = ancestors(before, edited.chunk_id) | ancestors(tree, edited.chunk_id)
    assert tree.root_id in path and len(path) >= tree.height
    assert sorted(summariser.asked) == sorted(path) == sorted(stats.redone_ids)  # once each, only the path
    assert stats.summariser_calls == stats.summaries_redone == len(path)
    kept = untouched_are_identical(before, tree, set(path))
    assert kept == stats.summaries_kept == len(tree.summaries()) - len(path) > 0


def test_redo_stops_where_a_summary_comes_out_unchanged() -> None:
    # the extractive summariser may keep a cluster's sentences despite an edited member:
    # then nothing above it has changed input and it is left alone
    leaves, vectors, edited = edited_slice()
    before = built_tree()
    tree, stats, summariser = run(leaves, vectors)
    assert_update_invariants(tree, leaves)
    redone = set(summariser.asked)
    assert set(tree.node(edited.chunk_id).parents) <= redone
    assert redone <= ancestors(before, edited.chunk_id) | ancestors(tree, edited.chunk_id)
    for node in tree.summaries():
        below = [c for c in node.children if c in redone or c == edited.chunk_id]
        changed_below = [c for c in below if tree.node(c).text != before.node(c).text or tree.node(c).title != before.node(c).title]
        assert (node.node_id in redone) == bool(changed_below)
    untouched_are_identical(before, tree, redone)


def test_added_page_joins_clusters_and_redoes_summaries_above_it() -> None:
    c = corpus()
    before = built_tree()
    page, page_vectors = extra_page()
    leaves = [*c.leaves, *page]
    vectors = np.vstack([c.vectors, page_vectors])
    tree, stats, summariser = run(leaves, vectors, drift_threshold=1.0)
    assert_update_invariants(tree, leaves)
    assert stats.leaves_added == len(page) and not stats.full_rebuild
    new_ids = {leaf.chunk_id for leaf in page}
    touched = set().union(*(ancestors(tree, cid) for cid in new_ids))
    redone = set(summariser.asked)
    assert redone == touched  # every summary above a new leaf, and only those
    for cid in new_ids:
        assert all(tree.node(p).level == 1 for p in tree.node(cid).parents)
    assert untouched_are_identical(before, tree, redone) == stats.summaries_kept > 0
    # the new page's leaves sit in clusters with related text, not spread over every cluster
    homes = {p for cid in new_ids for p in tree.node(cid).parents}
    assert len(homes) < len(tree.level_ids(1))


def test_full_clusters_make_a_new_level1_summary_with_a_fresh_id() -> None:
    c = corpus()
    before = built_tree()
    page, page_vectors = extra_page()
    tight = CONFIG.model_copy(update={"max_cluster_tokens": 400})  # every old cluster is full
    leaves = [*c.leaves, *page]
    tree, stats, _ = run(leaves, np.vstack([c.vectors, page_vectors]), config=tight, drift_threshold=1.0)
    assert_update_invariants(tree, leaves)
    fresh = [i for i in tree.level_ids(1) if i not in before]
    assert fresh and all(int(i.split(":")[1]) >= len(before.level_ids(1)) for i in fresh)
    for node_id in fresh:
        node = tree.node(node_id)
        assert set(node.chunk_ids) <= {leaf.chunk_id for leaf in page}
        assert [tree.node(p).level for p in node.parents] == [2] or tree.root_id in node.parents
    # new and redone summaries are named as a build names them, apart from their siblings
    for node_id in stats.redone_ids:
        node = tree.node(node_id)
        assert 1 <= len(node.title.split()) <= MAX_WORDS and " · " not in node.title, node.title
    for parent in tree.summaries():
        names = [tree.node(ch).title.lower() for ch in parent.children if tree.node(ch).level > 0]
        assert len(names) == len(set(names)), names


def test_removed_page_disappears_and_empty_summaries_go() -> None:
    c = corpus()
    before = built_tree()
    gone = {leaf.chunk_id for leaf in c.leaves if leaf.doc_id == "lang_upsert.md"}
    keep = [k for k, leaf in enumerate(c.leaves) if leaf.chunk_id not in gone]
    leaves = [c.leaves[k] for k in keep]
    tree, stats, summariser = run(leaves, c.vectors[keep], drift_threshold=1.0)
    assert_update_invariants(tree, leaves)
    assert stats.leaves_removed == len(gone) and not stats.full_rebuild
    for node in tree.nodes:
        assert not gone & ({node.node_id} | set(node.chunk_ids) | set(node.children) | set(node.parents))
        assert "lang_upsert.md" not in node.doc_ids
    emptied = {n.node_id for n in before.summaries() if set(n.chunk_ids) <= gone}
    assert emptied and set(stats.removed_ids) == emptied and stats.summaries_removed == len(emptied)
    assert all(i not in tree for i in emptied)
    partly = {n.node_id for n in before.summaries() if set(n.chunk_ids) & gone} - emptied
    assert partly <= set(summariser.asked)
    untouched_are_identical(before, tree, set(summariser.asked))


def test_drift_past_the_threshold_rebuilds() -> None:
    c = corpus()
    gone = {"lang_upsert.md", "lang_vacuum.md"}
    keep = [k for k, leaf in enumerate(c.leaves) if leaf.doc_id not in gone]
    leaves = [c.leaves[k] for k in keep]
    tree, stats, summariser = run(leaves, c.vectors[keep])
    assert stats.full_rebuild and stats.drift > 0.25
    assert stats.summariser_calls == stats.summaries_redone == len(tree.summaries())
    assert_update_invariants(tree, leaves)
    # the same update under a looser threshold stays incremental
    _, loose, _ = run(leaves, c.vectors[keep], drift_threshold=0.9)
    assert not loose.full_rebuild


def test_update_is_deterministic() -> None:
    c = corpus()
    page, page_vectors = extra_page()
    leaves = [*c.leaves[3:], *page]
    vectors = np.vstack([c.vectors[3:], page_vectors])
    a, sa, _ = run(leaves, vectors, drift_threshold=1.0)
    b, sb, _ = run(leaves, vectors, drift_threshold=1.0)
    assert a.nodes == b.nodes and sa == sb
    assert a.node_vectors.tobytes() == b.node_vectors.tobytes()


def test_a_full_single_cluster_root_gets_a_new_root_above_it() -> None:
    # a tree small enough to be one level-1 root; the added page overflows that cluster
    c = corpus()
    small = c.leaves[:4]
    config = CONFIG.model_copy(update={"max_cluster_tokens": 1000})
    summariser = CountingSummariser(max_tokens=CONFIG.summary_max_tokens)
    before = build_tree(
        small, c.vectors[:4], embed=c.embed, count_tokens=c.count_tokens, summariser=summariser, config=config
    )
    assert before.height == 1
    page = [k for k, leaf in enumerate(c.leaves) if leaf.doc_id == "lang_upsert.md"]
    leaves = [*small, *(c.leaves[k] for k in page)]
    assert sum(c.count_tokens(leaf.text) for leaf in leaves) > config.max_cluster_tokens
    tree, stats = update_tree(
        before, leaves, np.vstack([c.vectors[:4], c.vectors[page]]), embed=c.embed, count_tokens=c.count_tokens,
        summariser=summariser, config=config, drift_threshold=100.0,
    )
    assert_update_invariants(tree, leaves)
    assert not stats.full_rebuild and tree.height == 2
    assert before.root_id in tree.root.children and len(tree.root.children) >= 2
    assert all(n.node_id.startswith("L1:") for n in (tree.node(i) for i in tree.root.children))
