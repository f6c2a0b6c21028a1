"""Digests and the extractive answer through the real query path, on the sample manual's index."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from arborgraph.query.digest import MODEL_FILE, load_model

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "arborgraph" / "data" / "result.schema.json").read_text())
QUESTION = "How does WAL mode work, and what happens at a checkpoint?"


@pytest.fixture(scope="module")
def tree_plan(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The shipped sentence model with a digest plan for the tree route."""
    data = json.loads(MODEL_FILE.read_text())
    path = tmp_path_factory.mktemp("digest") / "model.json"
    path.write_text(json.dumps(data | {"plans": {"tree": {"whole_first": 1, "passages": 12}}}))
    return str(path)


def test_a_planned_route_answers_with_the_manuals_sentences(sample_kb, tree_plan: str) -> None:  # type: ignore[no-untyped-def]
    planned = {"retrieval": {"digest_model": tree_plan}}
    res = sample_kb.query(QUESTION, route="tree", settings=planned)
    whole = sample_kb.query(QUESTION, route="tree", settings={"retrieval": {"digest": False}})
    digests = [c for c in res.contexts if c.kind == "digest"]
    assert digests and not [c for c in whole.contexts if c.kind == "digest"]
    assert res.contexts[0].node_id == whole.contexts[0].node_id  # the plan keeps the first whole
    store = sample_kb.index.store
    for d in digests:
        (passage,) = d.provenance
        text = store.texts[store.row_of[passage]]
        for piece in d.text.removeprefix("… ").split(" … "):
            assert piece in text  # whole sentences of the passage it names
    # sentences from more passages in no more room
    passages = {c.provenance[0] if c.kind == "digest" else c.node_id for c in res.contexts}
    assert len(passages) >= len(whole.contexts)
    words = lambda r: sum(len(c.text.split()) for c in r.contexts)  # noqa: E731
    assert words(res) <= words(whole) * 1.1
    # the same question on a route without a plan keeps whole passages
    assert all(c.kind != "digest" for c in sample_kb.query(QUESTION, route="lookup", settings=planned).contexts)


def test_the_shipped_model_plans_only_routes_where_digests_gained(sample_kb) -> None:  # type: ignore[no-untyped-def]
    """benchmarks/train_sentence_scorer.py ships a plan only where its leave-one-manual-out
    gain's interval is above 0 (none in benchmarks/results/sentence_scorer.json)."""
    plans = load_model().plans
    for route in sample_kb.index.routes:
        res = sample_kb.query(QUESTION, route=route)
        assert any(c.kind == "digest" for c in res.contexts) == (route in plans), route


def test_every_result_carries_an_extractive_answer_citing_its_contexts(sample_kb) -> None:  # type: ignore[no-untyped-def]
    res = sample_kb.query("What does the busy_timeout pragma do?")
    assert 1 <= len(res.highlights) <= 3
    for h in res.highlights:
        ctx = res.contexts[h.context - 1]
        assert h.text in ctx.text
        assert h.node_id in ([ctx.node_id] if ctx.kind == "chunk" else ctx.provenance)
    scores = [h.score for h in res.highlights]
    assert scores == sorted(scores, reverse=True)
    assert "busy" in res.highlights[0].text.lower() or "timeout" in res.highlights[0].text.lower()
    jsonschema.validate(res.to_dict(), SCHEMA)
    assert "highlight [" in res.explain()
