"""The default tree on real pages of the sample manual: the manual's outline below,
clusters above it, each node named and digested in the manual's own words."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
from raptor_corpus import OUTLINE_CONFIG, PAGES, corpus, embedder, outline_tree, token_counter, twenty_pages

from raptor import ExtractiveSummariser, Leaf, Tree, build_tree
from raptor.digest import ALSO
from raptor.retrieve import traverse
from raptor.text import clean_label

def assert_outline_tree(tree: Tree, leaves: list[Leaf]) -> None:
    """What every outline tree keeps: one root over every leaf in reading order, parents
    above their children, outline nodes inside one document and named by one of its
    headings, each leaf under the section its heading path names."""
    assert [n.node_id for n in tree.nodes if not n.parents] == [tree.root_id]
    assert list(tree.root.chunk_ids) == [leaf.chunk_id for leaf in leaves]
    headings = {clean_label(h) for leaf in leaves for h in leaf.heading_path}
    path_of = {leaf.chunk_id: leaf.heading_path for leaf in leaves}
    for node in tree.nodes:
        for child in node.children:
            assert tree.node(child).level < node.level
            assert node.node_id in tree.node(child).parents
        if node.origin == "outline":
            assert node.label == "title" and node.coverage == 1.0 and node.summariser == "outline"
            assert len(node.doc_ids) == 1 or not node.heading_path  # a folder may hold several
            own = node.title.rpartition(": ")[2]
            assert own in headings or not node.heading_path, node.title  # a folder is named by its folder
            for chunk in node.chunk_ids:  # a section holds the chunks under its heading
                assert tuple(path_of[chunk][: len(node.heading_path)]) == node.heading_path
        elif node.origin == "cluster":
            assert node.label in {"title", "keyphrases"}
            assert node.label != "title" or (node.coverage is not None and node.coverage >= 0.5)
    for leaf in tree.leaves():
        assert len(leaf.parents) == 1 and tree.node(leaf.parents[0]).origin == "outline"


def assert_digests_are_the_manuals_sentences(tree: Tree, leaves: list[Leaf]) -> None:
    manual = " ".join(" ".join(leaf.text.split()) for leaf in leaves)
    for node in tree.summaries():
        for line in node.text.splitlines():
            if line.startswith(ALSO) or line == node.title:  # a section with no sentence of its own
                continue
            sentence = line.split(": ", 1)[1] if re.match(r"^[^:]{1,120}: [A-Z\"'`(]", line) else line
            assert sentence in manual, (node.title, line)  # whole, verbatim, never cut
            assert not re.search(r"\b\d+ (entities|chunks|related|pages)\b", line)  # no count templates


def test_four_pages_make_four_page_nodes_under_one_root() -> None:
    c, tree = corpus(), outline_tree()
    assert_outline_tree(tree, c.leaves)
    pages = [tree.node(n) for n in tree.root.children]
    assert [p.title for p in pages] == ["Date And Time Functions", "Transaction", "VACUUM", "UPSERT"]
    assert all(p.origin == "outline" for p in pages)
    assert_digests_are_the_manuals_sentences(tree, c.leaves)
    dates = pages[0]
    # its digest gives its sections' lead sentences under their headings (Overview's
    # first chunk is "... as follows:" and a list: its lead comes from the next one),
    # and names the page-structure part whose first sentence is one example's
    assert dates.text.startswith("Overview: The date() function returns the date as text in this format")
    assert "\nTime Values: The value is usually a string" in dates.text
    assert dates.text.endswith("Also: Examples.")


def test_twenty_pages_are_clustered_above_their_outline() -> None:
    leaves, _, tree = twenty_pages()
    assert_outline_tree(tree, leaves)
    assert_digests_are_the_manuals_sentences(tree, leaves)
    clusters = [n for n in tree.summaries() if n.origin == "cluster"]
    assert clusters and tree.root.origin == "cluster"
    pages = [n for n in tree.summaries() if n.origin == "outline" and len(n.heading_path) == 1]
    assert len(pages) == len(PAGES)
    # no child of the root holds most of the collection
    assert max(len(tree.node(c).chunk_ids) for c in tree.root.children) <= 0.5 * len(leaves)


def test_the_same_input_gives_the_same_tree() -> None:
    leaves, vectors, tree = twenty_pages()
    count = token_counter()
    again = build_tree(
        leaves, vectors, embed=embedder(), count_tokens=count, config=OUTLINE_CONFIG,
        summariser=ExtractiveSummariser(embed=embedder(), count_tokens=count, max_tokens=OUTLINE_CONFIG.summary_max_tokens),
    )
    assert again.nodes == tree.nodes
    assert np.array_equal(again.vectors, tree.vectors)


def test_a_drill_down_walks_the_outline_to_the_section() -> None:
    c, tree = corpus(), outline_tree()
    question = "What does the unixepoch() function return?"
    out = traverse(
        tree, embedder()([question])[0], tree.node_vectors, budget_tokens=800, count_tokens=c.count_tokens,
    )
    overview, first = out[0], next(x for x in out if x.kind == "chunk")
    assert overview.kind == "summary" and "Date And Time Functions" in overview.heading_path[-1] or overview.kind == "chunk"
    assert first.source == "lang_datefunc.md"
    # the trace runs through the page's outline, not through clusters of chunks
    assert any(tree.node(step).origin == "outline" for step in first.trace[0].removeprefix("tree: ").split(" -> ")[:-1])


def test_a_collection_without_outline_clusters_its_chunks() -> None:
    c = corpus()
    one_page = [Leaf(chunk_id=f"flat#{k}", doc_id="flat.txt", text=leaf.text) for k, leaf in enumerate(c.leaves)]
    summariser = ExtractiveSummariser(embed=c.embed, count_tokens=c.count_tokens, max_tokens=OUTLINE_CONFIG.summary_max_tokens)
    tree = build_tree(one_page, c.vectors, embed=c.embed, count_tokens=c.count_tokens, summariser=summariser, config=OUTLINE_CONFIG)
    assert {n.origin for n in tree.summaries()} == {"cluster"}
    assert all(tree.node(c).level == n.level - 1 for n in tree.nodes for c in n.children)


def test_a_folder_of_many_pages_is_clustered_under_the_folder() -> None:
    leaves, vectors, _ = twenty_pages()
    # twenty pages in one folder, and a second folder so that folders count
    docs = sorted({leaf.doc_id for leaf in leaves})
    place = {d: (f"guide/{d}" if d in docs[:2] else f"reference/{d}") for d in docs}
    foldered = [replace(leaf, doc_id=place[leaf.doc_id], chunk_id=f"{place[leaf.doc_id]}#{k}") for k, leaf in enumerate(leaves)]
    count = token_counter()
    tree = build_tree(
        foldered, vectors, embed=embedder(), count_tokens=count, config=OUTLINE_CONFIG,
        summariser=ExtractiveSummariser(embed=embedder(), count_tokens=count, max_tokens=OUTLINE_CONFIG.summary_max_tokens),
    )
    assert_outline_tree(tree, foldered)
    folder = next(n for n in tree.summaries() if n.origin == "outline" and n.title == "reference")
    kinds = [tree.node(c).origin for c in folder.children]
    assert "cluster" in kinds and len(folder.children) <= 15  # 18 pages grouped under their folder
    pages = {n.node_id for n in tree.summaries() if n.origin == "outline" and len(n.heading_path) == 1}
    for page in pages:  # every page of the folder sits below it, once
        node = tree.node(page)
        if node.doc_ids[0].startswith("reference/"):
            assert len(node.parents) >= 1 and all(folder.node_id in _ancestors(tree, p) | {p} for p in node.parents)


def _ancestors(tree: Tree, node_id: str) -> set[str]:
    out: set[str] = set()
    stack = [node_id]
    while stack:
        for parent in tree.node(stack.pop()).parents:
            if parent not in out:
                out.add(parent)
                stack.append(parent)
    return out


def _toc_tree(fan: int) -> tuple[Tree, str]:
    """Twenty real pages, the first one the table of contents of the other nineteen by
    their navigation; the tree of a config whose nodes above the outline hold ``fan``."""
    leaves, vectors, _ = twenty_pages()
    docs = list(dict.fromkeys(leaf.doc_id for leaf in leaves))
    toc = docs[0]
    placed = [replace(leaf, nav_up=() if leaf.doc_id == toc else (toc,)) for leaf in leaves]
    config = OUTLINE_CONFIG.model_copy(update={"max_cluster_tokens": fan * OUTLINE_CONFIG.summary_max_tokens})
    count = token_counter()
    tree = build_tree(
        placed, vectors, embed=embedder(), count_tokens=count, config=config,
        summariser=ExtractiveSummariser(embed=embedder(), count_tokens=count, max_tokens=config.summary_max_tokens),
    )
    return tree, toc


def test_a_pages_table_of_contents_stays_as_written_up_to_twice_the_fan_out() -> None:
    tree, toc = _toc_tree(fan=10)  # nineteen pages under their page: no more than 2 x 10
    assert tree.root.origin == "outline" and tree.root.doc_ids[0] == toc
    children = [tree.node(c) for c in tree.root.children]
    assert sum(1 for c in children if c.origin == "outline" and c.doc_ids[0] != toc) == 19
    assert all(c.origin == "outline" for c in children)
    tree, toc = _toc_tree(fan=8)  # past 2 x 8: grouped under their page, the page still the root
    assert tree.root.origin == "outline" and tree.root.doc_ids[0] == toc
    children = [tree.node(c) for c in tree.root.children]
    assert children[0].doc_ids == (toc,)  # its own text first, then the groups of its pages
    assert any(c.origin == "cluster" for c in children[1:]) and len(children[1:]) <= 8
