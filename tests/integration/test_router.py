"""The query router: the shipped model, route restriction, the spread stage."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from arborgraph.query.router import (
    SPREAD_FEATURES,
    RouterModel,
    SpreadStage,
    default_model,
    route_question,
    spread_features,
)

ALL_ROUTES = ("lookup", "tree", "graph", "global")


def test_spread_features_count_pages_and_sections() -> None:
    hits = [("a.md", ["A", "x"])] * 6 + [("b.md", ["B"]), ("c.md", ["C"]), ("a.md", ["A", "y"]), ("d.md", [])]
    hits += [(f"p{i}.md", []) for i in range(10)]

    spread = spread_features(hits)

    assert spread == {
        "docs_at_10": 0.4,  # a, b, c, d
        "docs_at_20": 14 / 20,
        "top_doc_share_at_10": 0.7,  # seven of the top ten come from a.md
        "sections_at_10": 0.5,  # (a, A>x), (b, B), (c, C), (a, A>y), (d, -)
    }
    assert spread_features([]) == dict.fromkeys(SPREAD_FEATURES, 0.0)


@pytest.mark.parametrize(
    ("question", "route"),
    [
        ("What is the default value of the cache_size pragma?", "lookup"),
        ("Give an overview of all the ways SQLite can be extended.", "global"),
    ],
)
def test_shipped_model_routes_clear_questions(question: str, route: str) -> None:
    decision = route_question(question, available=ALL_ROUTES)

    assert decision.route == route
    assert decision.reason.startswith("looks like")
    assert sum(decision.scores.values()) == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize(
    "question",
    [
        "What are the main themes of the manual?",
        "Summarize the manual.",
        "What is this documentation about?",
        "Give me an overview of the git documentation.",
        "What does this manual cover?",
    ],
)
def test_questions_about_the_whole_manual_go_to_the_global_route(question: str) -> None:
    decision = route_question(question, available=ALL_ROUTES)

    assert decision.route == "global"
    assert "asks about the manual as a whole" in decision.reason


def test_naming_the_manual_does_not_make_a_fact_question_global() -> None:
    decision = route_question("Where does the manual give the default listen port?", available=ALL_ROUTES)

    assert decision.route == "lookup"


@pytest.mark.parametrize(
    "question",
    ["Which pragma sets which journal mode?", "What are the main themes of the manual?", "How does WAL work?",
     "Explain the WAL mode in detail", "How does the busy timeout relate to locking?"],
)
def test_a_reason_names_each_cue_once(question: str) -> None:
    reason = route_question(question, available=ALL_ROUTES).reason
    readings = reason[reason.index("(") + 1 : reason.rindex(")")].split(", ")
    quoted = [w for phrase in re.findall(r"'([^']*)'", reason) for w in phrase.split()]
    cues = [r.removesuffix(" cue") for r in readings if r.endswith(" cue")]

    assert len(quoted) == len(set(quoted)), reason
    # no cue said again as a quoted word ("explain cue, starts with 'explain'")
    assert not {w for c in cues for w in c.split()} & set(quoted), reason
    # a reading is never a bare function word ('the', 'does', 'this')
    assert not [r for r in readings if r in ("'the'", "'does'", "'this'", "'which'", "'a'")], reason


def test_routes_the_index_lacks_are_never_chosen() -> None:
    question = "Give an overview of all the ways SQLite can be extended."

    decision = route_question(question, available=("lookup", "tree"))

    assert decision.route in ("lookup", "tree")
    assert set(decision.scores) == {"lookup", "tree"}
    # the overview it looked like is not built: the reason says so, not "looks like a fact"
    assert decision.reason.startswith("global not built (the question looks like an overview question")
    assert f"best available: {decision.route}" in decision.reason
    assert route_question(question, available=()).route == "lookup"


def test_an_index_with_one_route_says_it_had_no_choice() -> None:
    decision = route_question("Give an overview of all the ways SQLite can be extended.", available=("lookup",))

    assert decision.route == "lookup" and decision.confidence == 1.0
    assert decision.reason == "this index has only the lookup route (built with --no-tree --no-graph)"
    assert "looks like" not in decision.reason


def _with_stage(model: RouterModel, spread_weight: float) -> RouterModel:
    """The shipped wording model plus a stage that trusts it fully and pushes
    'global' up by ``spread_weight`` per unit of docs_at_10."""
    n = len(model.classes)
    coef = np.zeros((n, n + len(SPREAD_FEATURES)))
    coef[:, :n] = np.eye(n)
    coef[model.classes.index("global"), n + SPREAD_FEATURES.index("docs_at_10")] = spread_weight
    stage = SpreadStage(
        features=[f"logp:{c}" for c in model.classes] + list(SPREAD_FEATURES),
        coef=coef,
        intercept=np.zeros(n),
    )
    return RouterModel(model.classes, model.vocabulary, model.coef, model.intercept, model.meta, stage)


def test_spread_stage_survives_json_and_moves_the_decision() -> None:
    model = RouterModel.from_json(json.loads(json.dumps(_with_stage(default_model(), 12.0).to_json())))
    question = "How does the query planner use an index?"
    text_only = model.probabilities(question)
    concentrated = model.probabilities(question, spread_features([("a.md", [])] * 20))
    scattered = model.probabilities(question, spread_features([(f"p{i}.md", []) for i in range(20)]))

    # identity on log-probabilities: with no spread signal the stage changes nothing
    no_signal = dict(spread_features([("a.md", [])] * 20), docs_at_10=0.0)
    assert model.probabilities(question, no_signal) == pytest.approx(text_only, abs=1e-9)
    assert scattered["global"] > concentrated["global"] > 0
    assert text_only == default_model().probabilities(question)
    decision = route_question(question, available=ALL_ROUTES, model=model, hits=[(f"p{i}.md", []) for i in range(20)])
    assert decision.route == "global" and "top hits span 10 of 10 pages" in decision.reason


# Contract tests for the LLM router: a real loopback HTTP server speaking the OpenAI API
# (tests/support/llm_server.py) stands in for the endpoint, reached through the real client.
def _chat(llm_server, tmp_path):  # type: ignore[no-untyped-def]
    from arborgraph.llm import LLMCache, LLMConfig, LLMUsage
    from arborgraph.llm.provider import OpenAIChatModel

    config = LLMConfig(model="stand-in", base_url=llm_server.base_url, api_key="k", max_retries=0)
    return OpenAIChatModel(config, LLMCache(tmp_path / "llm.sqlite"), LLMUsage())


def test_llm_router_decides_and_the_classifier_orders_the_rest(sample_kb, llm_server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    question = "What is the default value of the cache_size pragma?"
    llm_server.set_reply(lambda body: json.dumps({"route": "graph", "confidence": 0.4, "reason": "two things relate"}))
    chat = _chat(llm_server, tmp_path)

    res = sample_kb.query(question, llm=chat, llm_router=True)

    assert res.route == "graph" and res.routing.reason == "LLM router: two things relate"
    # not confident: fused with the runner-up, which the classifier picks (lookup here)
    assert res.routing.fused_with == route_question(question, available=sample_kb.index.routes).route == "lookup"
    assert sum(res.routing.scores.values()) == pytest.approx(1.0, abs=1e-3)
    body = llm_server.requests[-1].body
    assert body["messages"][1]["content"] == f"<question>\n{question}\n</question>"
    assert "graph: relational" in body["messages"][0]["content"]
    # cached: the same question again makes no call
    sample_kb.query(question, llm=chat, llm_router=True)
    assert llm_server.count() == 1


def test_llm_router_failure_falls_back_to_the_classifier(sample_kb, llm_server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from llm_server import Fault

    llm_server.add_faults(Fault(status=500), Fault(status=500))
    question = "Give an overview of all the ways SQLite can be extended."

    res = sample_kb.query(question, llm=_chat(llm_server, tmp_path), llm_router=True)

    assert res.route == route_question(question, available=sample_kb.index.routes).route
    assert "LLM router failed" in res.routing.reason and res.contexts
