"""Names of the tree's summary nodes (raptor.naming), on a real build of a manual slice."""

from __future__ import annotations

import dataclasses
import re

from raptor_corpus import CONFIG, built_tree, corpus

from raptor import ExtractiveSummariser, Leaf, Tree, build_tree
from raptor.naming import MAX_WORDS, name_tree, named
from raptor.tree import Node

_WORD = re.compile(r"[A-Za-z0-9][\w'+#.-]*[\w+#]|[A-Za-z0-9]")
_FUNCTION_WORDS = {"a", "an", "and", "the", "of", "in", "on", "for", "to", "with", "by", "or"}


def _content(name: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(name) if w.lower() not in _FUNCTION_WORDS]


def test_every_summary_has_a_short_grounded_name_distinct_among_its_siblings() -> None:
    tree = built_tree()
    leaf_text = {leaf.node_id: leaf.text.lower() for leaf in tree.leaves()}
    page_titles = {leaf.heading_path[0] for leaf in tree.leaves() if leaf.heading_path}
    for node in tree.summaries():
        words = _WORD.findall(node.title)
        assert 1 <= len(words) <= MAX_WORDS, node.title
        assert " · " not in node.title and "›" not in node.title
        assert sum(t in node.title for t in page_titles if len(t.split()) >= 2) <= 1, node.title
        # grounded: its words are the node's own chunks' words
        text = " ".join(leaf_text[c] for c in node.chunk_ids)
        content = _content(node.title)
        assert sum(w in text for w in content) >= 0.8 * len(content), node.title
    for parent in tree.summaries():
        names = [tree.node(c).title.lower() for c in parent.children if tree.node(c).level > 0]
        assert len(names) == len(set(names)), names


def test_names_are_deterministic_and_replace_only_the_titles() -> None:
    tree = built_tree()
    assert name_tree(tree) == name_tree(tree)
    c = corpus()
    again = build_tree(
        c.leaves, c.vectors, embed=c.embed, count_tokens=c.count_tokens, config=CONFIG,
        summariser=ExtractiveSummariser(embed=c.embed, count_tokens=c.count_tokens, max_tokens=CONFIG.summary_max_tokens),
    )
    assert [n.title for n in again.nodes] == [n.title for n in tree.nodes]


def test_a_page_of_its_own_is_named_by_its_heading() -> None:
    tree = built_tree()
    # a summary whose chunks all sit under one section is named after that section
    for node in tree.summaries():
        paths = {tree.node(c).heading_path for c in node.chunk_ids}
        if len(paths) == 1 and len(node.chunk_ids) >= 2:
            heading = next(iter(paths))[-1]
            assert node.title.lower().endswith(re.sub(r"^[\d.]+\s*", "", heading).lower()), (node.title, heading)
            break
    else:
        raise AssertionError("no summary of a single section in the slice")


def test_a_recurring_section_heading_is_named_with_its_parent() -> None:
    # five pages, each with an "Examples" section: alone, that heading says nothing
    c = corpus()
    pages = ["lang_datefunc.md", "lang_transaction.md", "lang_vacuum.md", "lang_upsert.md"]
    leaves = []
    for page in pages:
        own = [leaf for leaf in c.leaves if leaf.doc_id == page][:2]
        for leaf in own:
            leaves.append(dataclasses.replace(leaf, heading_path=(leaf.heading_path[0], "Examples")))
    nodes = [Node(leaf.chunk_id, 0, "", leaf.text, parents=(f"L1:{i // 2}",), chunk_ids=(leaf.chunk_id,),
                  doc_ids=(leaf.doc_id,), heading_path=leaf.heading_path) for i, leaf in enumerate(leaves)]
    summaries = [
        Node(f"L1:{k}", 1, "draft", "text", children=(leaves[2 * k].chunk_id, leaves[2 * k + 1].chunk_id),
             parents=("L2:0",), chunk_ids=(leaves[2 * k].chunk_id, leaves[2 * k + 1].chunk_id),
             doc_ids=(leaves[2 * k].doc_id,))
        for k in range(len(pages))
    ]
    root = Node("L2:0", 2, "draft", "text", children=tuple(s.node_id for s in summaries),
                chunk_ids=tuple(leaf.chunk_id for leaf in leaves))
    names = name_tree(Tree(nodes=(*nodes, *summaries, root), root_id="L2:0"))
    for k, page in enumerate(pages):
        name = names[f"L1:{k}"]
        assert name.lower() != "examples", name
        if name.endswith("Examples"):
            assert name.startswith(leaves[2 * k].heading_path[0]), name


def test_renaming_some_nodes_keeps_the_others_and_avoids_their_names() -> None:
    tree = built_tree()
    parent = next(n for n in tree.summaries() if len(n.children) >= 2 and tree.node(n.children[0]).level >= 1)
    first, second = parent.children[:2]
    # the second child is made to look exactly like the first: it must not take its name
    clone = dataclasses.replace(tree.node(second), chunk_ids=tree.node(first).chunk_ids)
    nodes = tuple(clone if n.node_id == second else n for n in tree.nodes)
    changed = Tree(nodes=nodes, root_id=tree.root_id, vectors=tree.vectors)
    renamed = named(changed, CONFIG, "extractive", only={second})
    assert renamed.node(first).title == tree.node(first).title
    assert renamed.node(second).title.lower() != tree.node(first).title.lower()
    unchanged = [n.node_id for n in tree.summaries() if n.node_id != second]
    assert all(renamed.node(i).title == tree.node(i).title for i in unchanged)


def test_an_llm_summariser_keeps_its_own_titles() -> None:
    tree = built_tree()
    assert named(tree, CONFIG, "llm:some-model") is tree
    forced = named(tree, CONFIG.model_copy(update={"naming": "keyphrases"}), "llm:some-model")
    assert [n.title for n in forced.summaries()] == [n.title for n in tree.summaries()]


def test_leaves_keep_their_heading_path_titles() -> None:
    tree = built_tree()
    for leaf in tree.leaves():
        assert leaf.title == " > ".join(leaf.heading_path)
    assert isinstance(tree.leaves()[0], Node) and not isinstance(tree.leaves()[0], Leaf)


def _one_node_tree(leaves: list[Leaf], other: list[Leaf] | None = None) -> Tree:
    """A summary ``L1:0`` over ``leaves``, beside one over ``other`` (default: a page of
    the sample manual), under a root: what the first one's name sees."""
    other = other or [leaf for leaf in corpus().leaves if leaf.doc_id == "lang_vacuum.md"][:8]
    groups = {"L1:0": leaves, "L1:1": other}
    nodes = [Node(leaf.chunk_id, 0, "", leaf.text, parents=(parent,), chunk_ids=(leaf.chunk_id,),
                  doc_ids=(leaf.doc_id,), heading_path=leaf.heading_path)
             for parent, group in groups.items() for leaf in group]
    summaries = [
        Node(parent, 1, "draft", "text", children=tuple(leaf.chunk_id for leaf in group), parents=("L2:0",),
             chunk_ids=tuple(leaf.chunk_id for leaf in group), doc_ids=tuple(dict.fromkeys(leaf.doc_id for leaf in group)))
        for parent, group in groups.items()
    ]
    root = Node("L2:0", 2, "draft", "text", children=("L1:0", "L1:1"), chunk_ids=tuple(n.node_id for n in nodes))
    return Tree(nodes=(*nodes, *summaries, root), root_id="L2:0")


def test_a_name_covers_the_node_not_a_part_of_it() -> None:
    # a node over the pages on branching, switching and rebasing, and two chunks on
    # "git reset": a name precise for a third of it ("Git reset") misleads; a
    # table-of-contents entry names its bulk
    pages = {
        "git-branch": ["A branch is a movable pointer to a commit; creating a branch is cheap.",
                       "Deleting a merged branch removes its name, and its commits stay reachable."],
        "git-switch": ["Switching to another branch updates the working tree to match that branch.",
                       "With --create, a new branch is made at the start point and switched to."],
        "git-rebase": ["Rebasing a branch replays its commits on another base, one commit at a time.",
                       "An interactive rebase lets you edit, reorder or squash the commits of a branch."],
        "git-reset": ["The git reset command moves the current head; git reset --hard also resets the index.",
                      "With git reset --soft, the index and working tree are left alone by git reset."],
    }
    leaves = [Leaf(f"{page}#{i}", page, text, (page, "Description")) for page, texts in pages.items()
              for i, text in enumerate(texts)]
    name = name_tree(_one_node_tree(leaves))["L1:0"]
    assert "reset" not in name.lower(), name
    assert "branch" in name.lower(), name


def test_a_lone_word_heading_takes_its_manual_pages_name() -> None:
    # "Commands" under "rndc - name server control utility": "rndc: Commands"
    texts = [
        "The reload command reloads the configuration file and zones of the rndc server.",
        "The stop command stops the server, making sure any recent changes are saved by rndc.",
        "The status command displays the status of the server as rndc sees it.",
        "These commands need the rndc key that the server was given.",
    ]
    path = ("Manual Pages", "rndc - name server control utility", "Commands")
    leaves = [Leaf(f"c{i}", "manpages.html", t, path) for i, t in enumerate(texts)]
    assert name_tree(_one_node_tree(leaves))["L1:0"] == "rndc: Commands"
