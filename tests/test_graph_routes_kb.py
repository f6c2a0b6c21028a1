"""The graph and global routes through the knowledge base: work done once per question."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.mark.parametrize("route", ["graph", "global"])
def test_route_embeds_the_question_once(sample_kb: Any, route: str) -> None:
    kb = sample_kb
    kb.query("warm up: which pragma sets the WAL checkpoint interval?", route=route)
    if kb._embedder is None:
        pytest.skip("no embedding model on this machine")
    calls: list[int] = []
    real = kb._embedder.encode

    def counting(texts, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(len(texts))
        return real(texts, *args, **kwargs)

    kb._embedder.encode = counting
    try:
        res = kb.query("How do sqlite3_busy_timeout and the busy handler work together?", route=route)
    finally:
        del kb._embedder.encode
    assert res.route == route and res.contexts
    assert calls == [1]  # the query vector is shared with the graph search


@pytest.mark.parametrize("route", ["graph", "global"])
def test_budget_counts_the_same_tokens_as_the_tokenizer(sample_kb: Any, route: str) -> None:
    kb = sample_kb
    res = kb.query("How does WAL mode change locking and checkpoints?", route=route, budget_tokens=900)
    assert any(c.kind == "chunk" for c in res.contexts)
    # stored counts stand in for the tokenizer on whole chunks only, and agree with it
    assert all(kb._tokens(c) == kb.count_tokens(c.text) for c in res.contexts)
    assert sum(kb.count_tokens(c.text) for c in res.contexts) <= 900
