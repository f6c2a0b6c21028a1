"""Rich display: the knowledge base, results, tree nodes, entities, communities and
reports render as HTML cards that carry their content (escaped)."""

from __future__ import annotations


def test_html_cards_show_content(sample_kb) -> None:  # type: ignore[no-untyped-def]
    kb_html = sample_kb._repr_html_()
    assert "Arborgraph knowledge base" in kb_html and "lookup, tree, graph, global" in kb_html

    res = sample_kb.query("How does a checkpoint move WAL content?", route="tree")
    res_html = res._repr_html_()
    assert "route <b>tree</b>" in res_html and res.contexts[0].source in res_html

    tree = sample_kb.tree.tree
    root_html = tree.root._repr_html_()
    assert f"level {tree.root.level}" in root_html and str(len(tree.root.chunk_ids)) in root_html
    leaf = tree.leaves()[0]
    assert "leaf chunk" in leaf._repr_html_()

    kg = sample_kb.graph.kg
    entity = max(kg.entities.values(), key=lambda e: len(e.mentions))
    assert entity.name.replace("&", "&amp;").replace("<", "&lt;") in entity._repr_html_()
    community = next(iter(kg.communities.values()))
    assert f"community {community.id}" in community._repr_html_()
    report = next(iter(kg.reports.values()))
    assert "grounded in" in report._repr_html_()


def test_cards_escape_markup() -> None:
    from arborgraph.cards import card

    html = card("<script>x</script>", "sub", [("k", "<b>v</b>")], "body <i>")
    assert "<script>" not in html and "&lt;script&gt;" in html and "&lt;b&gt;v" in html
