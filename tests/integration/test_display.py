"""Rich display: the knowledge base, results, tree nodes, entities, communities and
reports render as HTML cards that carry their content (escaped)."""

from __future__ import annotations

import html
import re

import pytest


def test_html_cards_show_content(sample_kb) -> None:  # type: ignore[no-untyped-def]
    kb_html = sample_kb._repr_html_()
    assert "Arborgraph knowledge base" in kb_html and "lookup, tree, graph, global" in kb_html

    res = sample_kb.query("How does a checkpoint move WAL content?", route="tree")
    res_html = res._repr_html_()
    assert "route <b>tree</b>" in res_html and res.contexts[0].source in res_html

    tree = sample_kb.explorer.tree_view().tree
    root_html = tree.root._repr_html_()
    assert f"level {tree.root.level}" in root_html and str(len(tree.root.chunk_ids)) in root_html
    leaf = tree.leaves()[0]
    assert "leaf chunk" in leaf._repr_html_()

    kg = sample_kb.explorer.graph_view().kg
    entity = max(kg.entities.values(), key=lambda e: len(e.mentions))
    assert entity.name.replace("&", "&amp;").replace("<", "&lt;") in entity._repr_html_()
    community = next(iter(kg.communities.values()))
    assert f"community {community.id}" in community._repr_html_()
    report = next(iter(kg.reports.values()))
    assert "grounded in" in report._repr_html_()


def test_community_detail_card_names_members_and_titles_its_report(sample_kb) -> None:  # type: ignore[no-untyped-def]
    graph = sample_kb.explorer.graph_view()
    kg = graph.kg
    com = graph.community_of("WAL", level=0)
    detail = graph.community(com.id)
    report = kg.reports[com.id]
    card = detail._repr_html_()
    assert f"community {com.id}: {html.escape(report.title)}" in card
    first = kg.entities[max(com.members, key=lambda m: (kg.degree(m), m))]
    assert detail.members[0] == first.name and html.escape(first.name) in card  # names, most connected first
    assert detail.findings == report.findings and detail.level == com.level == 0


def test_unknown_ids_say_what_exists(sample_kb) -> None:  # type: ignore[no-untyped-def]
    graph, tree = sample_kb.explorer.graph_view(), sample_kb.explorer.tree_view()
    top = max(c.level for c in graph.kg.communities.values())
    for call in (graph.community, graph.plot_community):
        # the slice's graph may have one level or several: each is listed
        listed = rf"level 0: 0-\d+\)" if top == 0 else rf"level 0: 0-\d+, .*level {top}: "
        with pytest.raises(KeyError, match=rf"no community 99999 \(ids by level: {listed}"):
            call(99999)
    with pytest.raises(KeyError, match=rf"no tree node 'L9:99': summaries are named like '{tree.tree.root_id}'"):
        tree.node("L9:99")


def test_long_titles_are_shortened_on_the_card() -> None:
    from arborgraph.core.cards import TITLE_CHARS, card

    title = " · ".join(f"Section {i} of a long manual" for i in range(20))
    page = card(title, "summary", [], "body")
    shown = re.search(r"<b>(.*?)</b>", page).group(1)  # type: ignore[union-attr]
    assert len(shown) == TITLE_CHARS and shown.endswith("…") and title.startswith(shown[:-1])


def test_cards_escape_markup() -> None:
    from arborgraph.core.cards import card

    html = card("<script>x</script>", "sub", [("k", "<b>v</b>")], "body <i>")
    assert "<script>" not in html and "&lt;script&gt;" in html and "&lt;b&gt;v" in html


def test_printable_shows_control_characters_as_escapes() -> None:
    from arborgraph.display import printable

    assert printable("wal.md") == "wal.md"
    assert printable("\x1b]0;title\x07x\x1b[2J.md") == "\\x1b]0;title\\x07x\\x1b[2J.md"
    assert printable("a\u202eb\udc80c") == "a\\u202eb\\udc80c"  # bidi override, lone surrogate
    assert printable("line one\n\tline two\r") == "line one\\x0a\\x09line two\\x0d"
    assert printable("line one\n\tline two\r", multiline=True) == "line one\n\tline two\\x0d"
    assert printable("Größe · 表") == "Größe · 表"
