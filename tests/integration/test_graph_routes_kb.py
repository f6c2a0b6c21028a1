"""The graph and global routes through the knowledge base: work done once per question."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest


class CountingEmbedder:
    """The shipped embedder, counting the texts of each call (handed to ``open``)."""

    def __init__(self) -> None:
        from arborgraph.models.embedding import EmbeddingConfig, load_embedder

        self.inner = load_embedder(EmbeddingConfig())
        self.name, self.dim = self.inner.name, self.inner.dim
        self.calls: list[int] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        return self.inner.encode(texts)


@pytest.mark.parametrize("route", ["graph", "global"])
def test_route_embeds_the_question_once(sample_index: Path, route: str) -> None:
    from arborgraph.kb import KnowledgeBase

    embedder = CountingEmbedder()
    with KnowledgeBase.open(sample_index, embedder=embedder) as kb:
        res = kb.query("How do sqlite3_busy_timeout and the busy handler work together?", route=route)
    assert res.route == route and res.contexts and not res.mode.lexical_fallback
    assert embedder.calls == [1]  # the query vector is shared with the graph search


@pytest.mark.parametrize("route", ["graph", "global"])
def test_budget_counts_the_same_tokens_as_the_tokenizer(sample_kb: Any, route: str) -> None:
    kb = sample_kb
    res = kb.query("How does WAL mode change locking and checkpoints?", route=route, budget_tokens=900)
    assert any(c.kind == "chunk" for c in res.contexts)
    # stored counts stand in for the tokenizer on whole chunks only, and agree with it
    assert all(kb.engine.tokens(c) == kb.engine.count_tokens(c.text) for c in res.contexts)
    assert sum(kb.engine.count_tokens(c.text) for c in res.contexts) <= 900


def test_global_route_keeps_the_page_leads_global_search_put_into_the_window(sample_index: Path) -> None:
    import arborgraph

    kb = arborgraph.open(sample_index, {"retrieval": {"ranker": False}})  # the global route's own composition
    q = "What are the different ways SQLite stores and types the values in a table?"
    res = kb.query(q, route="global", top_k=100, budget_tokens=6000)
    chunks = [c for c in res.contexts if c.kind == "chunk"]
    leads = [i for i, c in enumerate(chunks) if "page lead" in c.trace]
    assert leads
    # the lookup ranking leads and the page lead follows it inside the 1,500-word
    # window: fusing with the lookup ranking again would push the lead out
    flat = [c.node_id for c in kb.engine.lookup(q, top_k=100)]
    before = [c.node_id for c in chunks[: leads[0]]]
    assert before == flat[: len(before)]
    assert sum(len(c.text.split()) for c in res.contexts[: res.contexts.index(chunks[leads[0]])]) < 1500


def test_graph_and_global_search_settings_come_from_the_root_config(sample_index: Path) -> None:
    import arborgraph
    from arborgraph.config import load_config

    question = "How does sqlite3_busy_timeout() relate to sqlite3_busy_handler()?"
    kb = arborgraph.open(sample_index)
    assert any(c.kind == "relation" for c in kb.query(question, route="graph").contexts)
    assert any(c.kind == "community_report" for c in kb.query(question, route="global").contexts)
    # the sections load from the environment like any other, and reach the searches
    settings = load_config(environ={
        "ARBORGRAPH_GRAPH_SEARCH__MAX_RELATIONS": "0", "ARBORGRAPH_GLOBAL_SEARCH__MAX_REPORTS": "0",
    })
    limited = kb.with_settings({"graph_search": settings.graph_search, "global_search": settings.global_search})
    assert not any(c.kind == "relation" for c in limited.query(question, route="graph").contexts)
    res = limited.query(question, route="global")
    assert not any(c.kind == "community_report" for c in res.contexts)
    assert any("global route found nothing (no community report matches the question)" in n for n in res.notes)


def test_a_question_about_the_whole_manual_leads_with_the_tree_root_and_main_reports(sample_kb: Any) -> None:
    kb = sample_kb
    res = kb.query("What are the main themes of this documentation?")
    assert res.route == "global" and "asks about the manual as a whole" in res.routing.reason
    first, *rest = res.contexts
    roots = {scope.tree.root_id for scope in kb.index.scopes if scope.scope in kb.explorer.readable_scopes(None)}
    assert first.kind == "summary" and first.node_id in roots
    reports = [c for c in rest if c.kind == "community_report"]
    # the most important reports of the top level, not one report matching "themes"
    assert len(reports) >= 2 and all(c.level == reports[0].level for c in reports)
    assert [c.kind for c in res.contexts[: 1 + len(reports)]] == ["summary"] + ["community_report"] * len(reports)
    assert any(c.kind == "chunk" for c in res.contexts)
    # a question about one theme across the manual is not given the digest
    other = kb.query("Give an overview of all the ways SQLite can be extended.", route="global")
    assert not any(c.kind == "summary" for c in other.contexts)
