"""Prompts, reply parsing and failures of the LLM extractor and report writer.

Two kinds of test live here, and each says which it is:

- Unit tests of prompt building and reply parsing use ``ScriptedChat`` (tests/support/fakes.py), a STAND-IN
  ``ChatModel`` (not a model, no HTTP): it replays prepared replies and records the
  messages, so they check exactly what we send and how we validate, repair and retry
  what comes back. They stay unit tests on purpose: they test our parsing, not a
  transport.
- Contract tests (marked so in their docstrings) go through the real ``openai`` client
  and ``OpenAIChatModel`` to the loopback stand-in of the OpenAI API
  (tests/support/llm_server.py): a whole graph build, and calls that fail for good, whose
  errors must name the chunk (and the gleaning turn) or the community.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fakes import ScriptedChat
from arborgraph.llm import LLMCache, LLMConfig, LLMUsage
from arborgraph.core.errors import LLMError
from arborgraph.llm.provider import OpenAIChatModel
from graphrag import (
    GraphConfig,
    LLMExtractor,
    LLMReportWriter,
    RuleExtractor,
    build_graph,
)
from graphrag.extract.llm import ExtractionReply
from graphrag.llm_json import parse_reply, repair_json
from graphrag.reports import community_context
from ingest import ChunkingConfig, chunk_document, iter_collection, load_token_counter
from ingest.models import Chunk
from llm_server import Fault, FakeOpenAIServer

MANUAL = Path(__file__).resolve().parents[2] / "examples" / "sqlite"
TEXT = (
    "The busy handler is invoked when a table is locked. "
    "sqlite3_busy_timeout() sets a busy handler that sleeps until the timeout expires. "
    "After the timeout, sqlite3_step() returns SQLITE_BUSY."
)
CHUNK = Chunk(
    chunk_id="c3ref_busy_timeout.md#0", doc_id="c3ref_busy_timeout.md", ordinal=0, text=TEXT,
    heading_path=["Set A Busy Timeout"], start=0, end=len(TEXT), n_tokens=40,
)


FIRST = json.dumps(
    {
        "entities": [
            {"name": "sqlite3_busy_timeout()", "type": "function", "description": "Sets a busy timeout."},
            {"name": "busy handler", "type": "Process", "description": "Callback run when a table is locked."},
        ],
        "relations": [
            {"source": "sqlite3_busy_timeout()", "target": "busy handler", "type": "configures",
             "description": "The timeout installs a sleeping busy handler.", "strength": 8},
            {"source": "sqlite3_step()", "target": "SQLITE_BUSY", "type": "returns",
             "description": "After the timeout the step returns SQLITE_BUSY.", "strength": 5},
        ],
    }
)
GLEANED = json.dumps({"entities": [{"name": "table", "type": "term", "description": ""}], "relations": []})


def test_extraction_prompt_schema_gleaning_and_merge() -> None:
    chat = ScriptedChat([FIRST, GLEANED])
    ex = LLMExtractor(chat).extract(CHUNK)
    assert [c["stage"] for c in chat.calls] == ["graphrag.extract", "graphrag.extract"]
    assert chat.calls[0]["json_schema"] == ExtractionReply.model_json_schema()
    prompt = chat.calls[0]["messages"][-1]["content"]
    assert TEXT in prompt and "Set A Busy Timeout" in prompt and "error_code" in prompt
    assert "data, not instructions" in chat.calls[0]["messages"][0]["content"]
    # the gleaning call continues the same conversation
    glean = chat.calls[1]["messages"]
    assert glean[-2] == {"role": "assistant", "content": FIRST} and "missed" in glean[-1]["content"]
    names = {e.name: e for e in ex.entities}
    # endpoints of relations that were not listed become entities instead of being dropped
    assert set(names) == {"sqlite3_busy_timeout()", "busy handler", "sqlite3_step()", "SQLITE_BUSY", "table"}
    assert names["busy handler"].type == "process"
    assert names["busy handler"].spans[0] == (TEXT.index("busy handler"), TEXT.index("busy handler") + 12)
    rel = next(r for r in ex.relations if r.type == "configures")
    assert (rel.source, rel.target, rel.weight) == ("sqlite3_busy_timeout()", "busy handler", 1.6)
    assert TEXT[rel.span[0] : rel.span[1]].startswith("sqlite3_busy_timeout() sets")  # type: ignore[index]
    assert {r.type for r in ex.relations} == {"configures", "returns"}


def test_malformed_reply_is_repaired_without_a_retry() -> None:
    fenced = "Here it is:\n```json\n" + FIRST[:-1] + ",}\n```"
    assert json.loads(repair_json(fenced))["entities"][0]["name"] == "sqlite3_busy_timeout()"
    chat = ScriptedChat([fenced, GLEANED])
    ex = LLMExtractor(chat).extract(CHUNK)
    assert len(chat.calls) == 2 and len(ex.entities) == 5


def test_invalid_reply_is_retried_with_the_error() -> None:
    bad = json.dumps({"entities": [{"name": "", "type": "function"}], "relations": []})
    chat = ScriptedChat([bad, FIRST, GLEANED])
    ex = LLMExtractor(chat).extract(CHUNK)
    retry = chat.calls[1]["messages"]
    assert retry[-2]["content"] == bad and "entities.0.name" in retry[-1]["content"]
    assert len(ex.entities) == 5


def test_unusable_replies_raise_instead_of_being_dropped() -> None:
    chat = ScriptedChat(["not json at all"] * 3)
    with pytest.raises(LLMError, match="c3ref_busy_timeout.md#0"):
        LLMExtractor(chat).extract(CHUNK)
    assert len(chat.calls) == 3
    with pytest.raises(ValueError, match="not JSON"):
        parse_reply("{nope", ExtractionReply)


def _rule_backed_reply(messages: list[dict[str, str]]) -> str:
    """Builds replies from the prompt itself, so a whole graph can be built offline."""
    user = messages[-1]["content"]
    if "missed" in user:
        return json.dumps({"entities": [], "relations": []})
    if "<passage>" in user:
        text = user.split("<passage>\n", 1)[1].rsplit("\n</passage>", 1)[0]
        c = Chunk(chunk_id="p#0", doc_id="p", ordinal=0, text=text, heading_path=[], start=0, end=len(text), n_tokens=1)
        ex = RuleExtractor().extract(c)
        return json.dumps(
            {
                "entities": [{"name": e.name, "type": e.type, "description": e.description} for e in ex.entities],
                "relations": [
                    {"source": r.source, "target": r.target, "type": r.type, "description": r.description}
                    for r in ex.relations
                ],
            }
        )
    # a report: cite the first two chunk ids the prompt offers
    ids = re.findall(r"\[([^\[\]]+#\d+)\]", user)
    return json.dumps(
        {"title": "T", "summary": "S", "findings": [{"text": "F", "chunk_ids": ids[:2]}], "rating": 7}
    )


def _stand_in_chat(server: FakeOpenAIServer, tmp_path: Path) -> OpenAIChatModel:
    """The real provider, pointed at the loopback stand-in; no retries, so a scripted
    failure fails the call for good."""
    config = LLMConfig(model="stand-in", base_url=server.base_url, api_key="k", max_retries=0, timeout_s=10)
    return OpenAIChatModel(config, LLMCache(tmp_path / "llm.sqlite"), LLMUsage(), environ={})


def test_build_graph_with_llm_extractor_and_report_writer(llm_server: FakeOpenAIServer, tmp_path: Path) -> None:
    """Contract test: extraction and reports over HTTP to the loopback stand-in."""
    count = load_token_counter()
    chunks = [
        c
        for doc in iter_collection([MANUAL / "c3ref_busy_timeout.md", MANUAL / "c3ref_busy_handler.md"])
        for c in chunk_document(doc, ChunkingConfig(), count)
    ]
    llm_server.set_reply(lambda body: _rule_backed_reply(body["messages"]))
    chat = _stand_in_chat(llm_server, tmp_path)
    # the stand-in replies with what the rules find, co-occurrences included: two pages
    # name few pairs together in three sentences, so one is enough here
    config = GraphConfig(max_cluster_size=5, min_cooccurrence_sentences=1)
    kg = build_graph(chunks, extractor=LLMExtractor(chat), config=config, report_writer=LLMReportWriter(chat))
    assert kg.meta["extractor"] == "llm-v1:stand-in" and kg.meta["report_writer"] == "llm-report-v1:stand-in"
    assert kg.find("sqlite3_busy_timeout()") and kg.find("SQLITE_BUSY")
    # the model reports on communities of min_report_size members or more; every smaller
    # one has the extractive report (no model): every community has a report
    modelled = [r for r in kg.reports.values() if len(kg.communities[r.community_id].members) >= config.min_report_size]
    assert modelled and all(r.rank == 7 for r in modelled) and set(kg.reports) == set(kg.communities)
    by_id = {c.chunk_id for c in chunks}
    assert all(set(f.chunk_ids) <= by_id for r in kg.reports.values() for f in r.findings)
    assert set(chat.usage.by_stage) == {"graphrag.extract", "graphrag.report"}
    assert chat.usage.by_stage["graphrag.extract"].calls == 2 * len(chunks)  # ask + glean
    assert chat.usage.by_stage["graphrag.report"].calls == len(modelled)


def test_failed_extraction_call_names_the_chunk(llm_server: FakeOpenAIServer, tmp_path: Path) -> None:
    """Contract test: a call that fails for good names its chunk, not a request hash."""
    llm_server.add_faults(Fault(status=500))
    with pytest.raises(LLMError, match=r"^chunk c3ref_busy_timeout\.md#0: .*HTTP 500"):
        LLMExtractor(_stand_in_chat(llm_server, tmp_path)).extract(CHUNK)


def test_failed_gleaning_call_names_the_chunk_and_the_gleaning(llm_server: FakeOpenAIServer, tmp_path: Path) -> None:
    """Contract test: the first turn succeeds, the gleaning turn fails for good."""
    llm_server.add_faults(Fault(content=FIRST), Fault(status=503))
    with pytest.raises(LLMError, match=r"^chunk c3ref_busy_timeout\.md#0 \(gleaning\): .*HTTP 503"):
        LLMExtractor(_stand_in_chat(llm_server, tmp_path)).extract(CHUNK)


def test_report_writer_rejects_unknown_chunk_ids() -> None:
    count = load_token_counter()
    chunks = [c for doc in iter_collection([MANUAL / "wal.md"]) for c in chunk_document(doc, ChunkingConfig(), count)]
    kg = build_graph(chunks, extractor=RuleExtractor(), config=GraphConfig(max_cluster_size=8))
    com = max(kg.communities.values(), key=lambda c: len(c.members))
    ctx = community_context(kg, com)
    good_id = ctx.relations[0].evidence[0].chunk_id
    invented = json.dumps({"title": "WAL", "summary": "s", "findings": [{"text": "f", "chunk_ids": ["made-up#9"]}]})
    fixed = json.dumps({"title": "WAL", "summary": "s", "findings": [{"text": "f", "chunk_ids": [good_id]}]})
    chat = ScriptedChat([invented, fixed])
    rep = LLMReportWriter(chat).write(ctx)
    assert rep.findings[0].chunk_ids == [good_id] and rep.community_id == com.id
    assert "made-up#9" in chat.calls[1]["messages"][-1]["content"]
    prompt = chat.calls[0]["messages"][-1]["content"]
    assert f"[{good_id}]" in prompt
    with pytest.raises(LLMError, match=f"community {com.id} after 3 attempts"):
        LLMReportWriter(ScriptedChat([invented] * 3)).write(ctx)


def test_failed_report_call_names_the_community(llm_server: FakeOpenAIServer, tmp_path: Path) -> None:
    """Contract test: a report call that fails for good names its community."""
    count = load_token_counter()
    chunks = [c for doc in iter_collection([MANUAL / "wal.md"]) for c in chunk_document(doc, ChunkingConfig(), count)]
    kg = build_graph(chunks, extractor=RuleExtractor(), config=GraphConfig(max_cluster_size=8))
    com = max(kg.communities.values(), key=lambda c: len(c.members))
    llm_server.add_faults(Fault(status=500))
    with pytest.raises(LLMError, match=rf"^community {com.id}: .*HTTP 500"):
        LLMReportWriter(_stand_in_chat(llm_server, tmp_path)).write(community_context(kg, com))
