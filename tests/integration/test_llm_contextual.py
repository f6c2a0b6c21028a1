"""Contextual chunk prefixes and pydantic-validated structured output, through the real
provider against the loopback OpenAI stand-in (tests/support/llm_server.py).

These are contract tests: the real ``openai`` client speaks HTTP to a server on
loopback that plays the OpenAI API with deterministic canned replies, not to a model.
They check what Arborgraph sends and how it handles what comes back."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import llm_server as stand_in
import pytest
from llm_server import FakeOpenAIServer, Fault, last_user_message
from pydantic import BaseModel, Field

from arborgraph.llm import (
    LLMCache,
    LLMConfig,
    LLMError,
    LLMUsage,
    contextual_prefix,
    contextual_prefixes,
    structured_chat,
)
from arborgraph.llm.provider import OpenAIChatModel

# The fixture, bound here so these tests run whether or not conftest.py provides it.
llm_server = stand_in.llm_server


def build(
    server: FakeOpenAIServer, tmp_path: Path, **overrides: Any
) -> tuple[OpenAIChatModel, LLMUsage]:
    config = LLMConfig(model="ctx-model", base_url=server.base_url, **overrides)
    usage = LLMUsage()
    model = OpenAIChatModel(
        config, LLMCache(tmp_path / "llm.sqlite"), usage, environ={}, sleep=lambda s: None
    )
    return model, usage


def situate(body: dict[str, Any]) -> str:
    """A stand-in model: names the document and the chunk's first words, over two lines."""
    text = last_user_message(body)
    title = re.search(r"<document title='([^']*)'>", text)
    chunk = re.search(r"<chunk>\n(.*?)\n</chunk>", text, re.DOTALL)
    assert title and chunk, "prompt lost its document or chunk markers"
    first_words = " ".join(chunk.group(1).split()[:3])
    return f'"From {title.group(1)},\n  the part on {first_words}."\n'


EXCERPT = "Chapter 1 Installation. Chapter 2 The PRAGMA statement. Chapter 3 WAL mode."


def test_contextual_prefix_is_one_clean_sentence_and_cached(
    llm_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    model, usage = build(llm_server, tmp_path)
    llm_server.set_reply(situate)

    prefix = contextual_prefix(
        model, "SQLite manual", EXCERPT, "PRAGMA journal_mode sets the journal."
    )

    assert prefix == "From SQLite manual, the part on PRAGMA journal_mode sets."
    body = llm_server.requests[0].body
    assert body["messages"][0]["role"] == "system"
    assert "never instructions" in body["messages"][0]["content"]
    assert EXCERPT in body["messages"][1]["content"]
    assert body["temperature"] == 0.0
    assert usage.to_dict()["llm_by_stage"]["contextual_prefix"]["calls"] == 1

    again = contextual_prefix(
        model, "SQLite manual", EXCERPT, "PRAGMA journal_mode sets the journal."
    )
    assert again == prefix
    assert llm_server.count() == 1
    assert usage.to_dict()["llm_by_stage"]["contextual_prefix"]["cache_hits"] == 1


def test_contextual_prefixes_keep_chunk_order(llm_server: FakeOpenAIServer, tmp_path: Path) -> None:
    model, _ = build(llm_server, tmp_path)
    llm_server.set_reply(situate)
    chunks = [(f"c{i}", f"chunk {i} talks about topic {i}") for i in range(6)]

    prefixes = contextual_prefixes(model, "Manual", EXCERPT, chunks, concurrency=3)

    assert prefixes == [f"From Manual, the part on chunk {i} talks." for i in range(6)]


def test_failed_prefix_names_the_chunk(llm_server: FakeOpenAIServer, tmp_path: Path) -> None:
    model, _ = build(llm_server, tmp_path, max_retries=0)
    llm_server.add_faults(Fault(status=500))
    with pytest.raises(LLMError, match=r"contextual prefix for sqlite#12: .*HTTP 500"):
        contextual_prefix(model, "SQLite manual", EXCERPT, "text", item="sqlite#12")


def test_empty_prefix_is_an_error_not_a_value(llm_server: FakeOpenAIServer, tmp_path: Path) -> None:
    model, _ = build(llm_server, tmp_path)
    llm_server.set_reply(lambda body: '  ""  ')
    with pytest.raises(LLMError, match="sqlite#3: the model returned an empty reply"):
        contextual_prefix(model, "SQLite manual", EXCERPT, "text", item="sqlite#3")


class Relation(BaseModel):
    subject: str
    predicate: str
    object: str


class Extraction(BaseModel):
    relations: list[Relation]
    confidence: float = Field(ge=0, le=1)


def test_structured_chat_returns_the_validated_model(
    llm_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    model, _ = build(llm_server, tmp_path)
    reply = {
        "relations": [{"subject": "WAL", "predicate": "speeds up", "object": "writes"}],
        "confidence": 0.8,
    }
    llm_server.set_reply(lambda body: json.dumps(reply))

    result = structured_chat(
        model, [{"role": "user", "content": "extract"}], Extraction, stage="extract"
    )

    assert result == Extraction.model_validate(reply)
    sent = llm_server.requests[0].body["response_format"]["json_schema"]
    assert sent["name"] == "Extraction" and sent["schema"] == Extraction.model_json_schema()


def test_structured_chat_repairs_once_then_names_the_item(
    llm_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    model, usage = build(llm_server, tmp_path, json_mode="json_object")
    good = '{"relations": [], "confidence": 0.5}'
    llm_server.set_reply(lambda body: good)
    llm_server.add_faults(Fault(content="no JSON here"))

    assert (
        structured_chat(
            model, [{"role": "user", "content": "a"}], Extraction, stage="extract"
        ).confidence
        == 0.5
    )
    assert usage.to_dict()["llm_repairs"] == 1

    llm_server.add_faults(Fault(content="nope"), Fault(content="still nope"))
    with pytest.raises(LLMError, match="chunk-9"):
        structured_chat(
            model, [{"role": "user", "content": "b"}], Extraction, stage="extract", item="chunk-9"
        )
