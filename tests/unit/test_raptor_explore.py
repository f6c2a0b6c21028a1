"""TreeView: navigation, outline, HTML card, networkx export and offline plots."""

from __future__ import annotations

import itertools
import re

import networkx as nx
from raptor_corpus import built_tree, outline_tree

from raptor import TreeView, figure_html
from raptor.explore import naming_level


def test_navigation() -> None:
    tree = built_tree()
    view = TreeView(tree)
    levels = view.levels
    assert list(levels) == list(range(tree.height + 1))
    assert levels[tree.height] == [tree.root_id]
    assert sum(len(ids) for ids in levels.values()) == len(tree)
    leaf = levels[0][5]
    path = view.path_to_root(leaf)
    assert path[0] == leaf and path[-1] == tree.root_id and len(path) == tree.height + 1
    for child, parent in itertools.pairwise(path):
        assert child in view.children(parent) and parent in view.parents(child)
    sub = view.subtree(path[1])
    assert sub[0] == path[1] and leaf in sub
    assert {i for i in sub if view.node(i).level == 0} == set(view.node(path[1]).chunk_ids)
    assert view.subtree(tree.root_id)[0] == tree.root_id and len(set(view.subtree(tree.root_id))) == len(tree)


def test_outline_and_html() -> None:
    tree = built_tree()
    view = TreeView(tree)
    outline = view.outline(depth=1).splitlines()
    assert outline[0].startswith(f"[L{tree.height} cluster · keyphrases] {tree.root_id}:")
    assert len(outline) == 1 + len(tree.root.children)
    assert all(line.startswith("  [") for line in outline[1:])
    deep = view.outline(depth=tree.height)
    assert deep.count("[chunk]") >= len(tree.leaves())
    pages = TreeView(outline_tree()).outline(depth=1).splitlines()[1:]  # the manual's own pages, said so
    assert pages[0] == "  [L2 outline] L2:0: Date And Time Functions (22 chunks)", pages
    card = view._repr_html_()
    assert card.startswith("<div") and tree.root_id in card and "<table" in card
    assert tree.node(tree.root.children[0]).title.split(":")[0] in card
    assert "nodes" in repr(view)


def test_networkx_export() -> None:
    tree = built_tree()
    g = TreeView(tree).to_networkx()
    assert g.number_of_nodes() == len(tree)
    assert g.number_of_edges() == sum(len(n.children) for n in tree.nodes)
    assert nx.is_directed_acyclic_graph(g)
    assert g.nodes[tree.root_id]["level"] == tree.height
    assert nx.descendants(g, tree.root_id) == {n.node_id for n in tree.nodes} - {tree.root_id}


def test_plots_highlight_a_path_and_write_offline_html() -> None:
    tree = built_tree()
    view = TreeView(tree)
    path = view.path_to_root(tree.leaves()[0].node_id)
    layout = view.plot_layout(highlight=path)
    # one trace per named cluster (and the summaries above them), every node in one
    named = naming_level({level: len(ids) for level, ids in view.levels.items()})
    assert [t.name for t in layout.data][-1] == "summaries above them"
    assert len(layout.data) == len(view.levels[named]) + 1
    drawn = [t.split(": ", 1)[0] for trace in layout.data for t in trace.text]
    assert sorted(drawn) == sorted(n.node_id for n in tree.nodes)
    assert len(layout.layout.annotations) == len(view.levels[named])  # each cluster named
    ringed = [t.split(": ", 1)[0] for trace in layout.data for t, w in zip(trace.text, trace.marker.line.width) if w > 0]
    assert sorted(ringed) == sorted(path)
    sunburst = view.plot_sunburst(highlight=path)
    ids = list(sunburst.data[0].ids)
    assert sorted(ids) == sorted(n.node_id for n in tree.nodes)
    colours = dict(zip(ids, sunburst.data[0].marker.colors))
    marked = {colours[i] for i in path}
    assert len(marked) == 1 and marked.isdisjoint(colours[i] for i in ids if i not in path)
    page = figure_html(sunburst)
    assert "<html>" in page and "plotly" in page.lower()
    # plotly.js is inlined: no script tag loads anything (the bundle itself mentions URLs)
    tags = re.findall(r"<script[^>]*>", page)
    assert tags and all("src=" not in tag for tag in tags)
    assert len(page) > 1_000_000


def test_the_layout_names_clusters_of_the_lowest_level_a_legend_can_hold() -> None:
    assert naming_level({0: 362, 1: 47, 2: 8, 3: 1}) == 2  # the 20-page slice
    assert naming_level({0: 4856, 1: 622, 2: 101, 3: 15, 4: 3, 5: 1}) == 3  # the whole manual
    assert naming_level({0: 30, 1: 40, 2: 1}) == 1  # no level small enough: the highest of several nodes
    assert naming_level({0: 5, 1: 1}) == 1  # a root alone over the chunks
    assert naming_level({0: 3}) == 0
