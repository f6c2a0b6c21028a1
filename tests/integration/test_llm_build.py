"""LLM-mode builds end to end, through the real ``openai`` client against the loopback
stand-in of the OpenAI API (tests/support/llm_server.py). These are contract tests: the
stand-in answers every JSON-schema request either with a small valid instance built
from the schema (``schema_reply``, quoting words of the prompt) or with
``llm_server.manual_reply`` (entities, relations and reports made from the prompt, so
the graph has communities), so the whole pipeline runs as with a model."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import arborgraph
from arborgraph.cli import app
from arborgraph.config import load_config
from arborgraph.core.errors import BuildError
from arborgraph.pipeline import build_index
from conftest import copy_pages
from llm_server import manual_reply

PAGES = ["wal.md", "c3ref_busy_timeout.md", "autoinc.md"]


def _words(body: dict[str, Any]) -> list[str]:
    text = " ".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user")
    return re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", text)


def _instance(schema: dict[str, Any], defs: dict[str, Any], words: list[str], depth: int = 0) -> Any:
    if "$ref" in schema:
        return _instance(defs[schema["$ref"].split("/")[-1]], defs, words, depth)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return _instance(options[0], defs, words, depth)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "object")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: _instance(sub, defs, words, depth + 1) for name, sub in props.items()}
    if kind == "array":
        count = max(schema.get("minItems", 0), 1 if depth < 3 else 0)
        return [_instance(schema.get("items", {}), defs, words, depth + 1) for _ in range(count)]
    if kind == "string":
        return " ".join(words[depth : depth + 3]) or "text"
    if kind in ("integer", "number"):
        return max(schema.get("minimum", 1), 1)
    if kind == "boolean":
        return False
    return None


def schema_reply(body: dict[str, Any]) -> str:
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema")
    if schema is None:
        return "A short answer."
    return json.dumps(_instance(schema, schema.get("$defs", {}), _words(body)))


@pytest.fixture()
def docs(tmp_path: Path, sample_slice: Path) -> Path:
    return copy_pages(sample_slice, tmp_path / "docs", PAGES)


def test_llm_build_is_accounted_cached_and_labelled(tmp_path: Path, docs: Path, llm_server) -> None:  # type: ignore[no-untyped-def]
    llm_server.set_reply(schema_reply)
    cfg = load_config(overrides={"llm": {"model": "stand-in-model", "base_url": llm_server.base_url, "api_key": "k"}})
    report = build_index([docs], tmp_path / "idx", cfg)
    usage = report.stages["llm"]
    kb = arborgraph.open(tmp_path / "idx")
    info = kb.info()
    assert info["mode"]["llm_model"] == "stand-in-model" and "LLM mode (stand-in-model)" in info["mode"]["label"]
    assert info["llm_calls"] == usage["llm_calls"] == llm_server.count("/v1/chat/completions")
    assert info["llm_tokens_in"] > 0 and info["llm_tokens_out"] > 0
    summaries = report.stages["tree"]["summaries"]
    communities = report.stages["graph"]["communities"]
    bound = summaries + report.chunks * 2 + communities  # one gleaning pass per chunk
    assert 0 < usage["llm_calls"] <= bound
    assert report.stages["tree"]["summariser"] == "llm" and report.stages["graph"]["extractor"] == "llm"
    res = kb.query("How does a checkpoint work?", route="tree")
    assert res.mode.llm_model == "stand-in-model"
    shown = CliRunner().invoke(app, ["inspect", "--index", str(tmp_path / "idx")])
    assert shown.exit_code == 0
    assert f"llm: {usage['llm_calls']} calls, 0 cache hits, {info['llm_tokens_in']} tokens in" in shown.stdout

    # a rebuild over unchanged input, from the cache alone (a fresh index given the
    # cache) and in place, makes no call
    (tmp_path / "idx2").mkdir()
    shutil.copytree(tmp_path / "idx" / "cache", tmp_path / "idx2" / "cache")
    before = llm_server.count()
    from_cache = build_index([docs], tmp_path / "idx2", cfg)
    assert llm_server.count() == before
    assert from_cache.stages["llm"]["llm_calls"] == 0
    assert from_cache.stages["llm"]["llm_cache_hits"] == usage["llm_calls"]
    assert build_index([docs], tmp_path / "idx", cfg).unchanged  # nothing to do, nothing asked
    in_place = build_index([docs], tmp_path / "idx", cfg, force=True)
    assert llm_server.count() == before
    assert in_place.stages["tree"]["reused"] == 1 and in_place.stages["graph"]["reused"] == 1


def test_answer_cites_contexts_through_the_llm(tmp_path: Path, docs: Path, llm_server) -> None:  # type: ignore[no-untyped-def]
    build_index([docs], tmp_path / "idx", load_config(overrides={"build_tree": False, "build_graph": False}))
    kb = arborgraph.open(tmp_path / "idx", {"llm": {"model": "stand-in-model", "base_url": llm_server.base_url, "api_key": "k"}})
    llm_server.set_reply(lambda body: "Checkpoints move WAL content into the database [1].")
    res = kb.query("What does a checkpoint do?", route="lookup", answer=True)
    assert res.answer == "Checkpoints move WAL content into the database [1]."
    prompt = llm_server.requests[-1].body["messages"][1]["content"]
    assert prompt.count("<source ") == len(res.contexts)
    assert res.contexts[0].text.splitlines()[0] in prompt


def test_one_questions_llm_settings_answer_that_question(sample_kb, llm_server) -> None:  # type: ignore[no-untyped-def]
    """An index opened without an LLM answers a question whose own settings name one
    (issue #37: the engine's settings were used, and the question was refused); the
    next question without them is refused again, and a second endpoint is not the first."""
    from arborgraph.core.errors import QueryError

    llm_server.set_reply(lambda body: "WAL is a journal mode [1].")
    own = {"llm": {"model": "stand-in-model", "base_url": llm_server.base_url, "api_key": "k"}}
    before = llm_server.count()
    res = sample_kb.query("What is WAL?", route="lookup", answer=True, settings=own)
    assert res.answer == "WAL is a journal mode [1]." and llm_server.count() == before + 1
    with pytest.raises(QueryError, match="need an LLM"):
        sample_kb.query("What is WAL?", route="lookup", answer=True)
    assert llm_server.count() == before + 1  # the question without them made no call
    other = {"llm": {**own["llm"], "model": "another-model"}}
    sample_kb.query("What is a checkpoint?", route="lookup", answer=True, settings=other)
    assert llm_server.requests[-1].body["model"] == "another-model"


def test_answers_starting_together_open_the_chat_model_once(sample_kb, llm_server, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Two answers starting at once each opened the model and its cache (a local model
    loaded twice; once its cache said "database is locked")."""
    import threading
    import time

    from arborgraph.llm import factory

    opened = []
    real_open = factory.open_provider

    def slow_open(*args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(threading.get_ident())
        time.sleep(0.2)  # as a model loading: the other answers arrive meanwhile
        return real_open(*args, **kwargs)

    monkeypatch.setattr(factory, "open_provider", slow_open)
    llm_server.set_reply(lambda body: "WAL is a journal mode [1].")
    own = {"llm": {"model": "model-opened-once", "base_url": llm_server.base_url, "api_key": "k"}}
    answers: list[str | None] = []
    start = threading.Barrier(4)

    def ask() -> None:
        start.wait()
        answers.append(sample_kb.query("What is WAL?", route="lookup", answer=True, settings=own).answer)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert answers == ["WAL is a journal mode [1]."] * 4
    assert len(opened) == 1


def test_answer_without_llm_is_a_clear_error(sample_kb) -> None:  # type: ignore[no-untyped-def]
    from arborgraph.core.errors import QueryError

    res = sample_kb.query("What is WAL?", route="lookup")
    assert res.answer is None
    with pytest.raises(QueryError, match="need an LLM"):
        sample_kb.query("What is WAL?", route="lookup", answer=True)


def test_contextual_prefixes_are_indexed_but_not_shown(tmp_path: Path, docs: Path, llm_server) -> None:  # type: ignore[no-untyped-def]
    import pyarrow.parquet as pq

    llm_server.set_reply(lambda body: "This chunk is from the SQLite manual, about ZQXJ locking.")
    cfg = load_config(overrides={
        "build_tree": False, "build_graph": False, "contextual_prefixes": True,
        "llm": {"model": "stand-in-model", "base_url": llm_server.base_url, "api_key": "k"},
    })
    report = build_index([docs], tmp_path / "idx", cfg)
    assert report.stages["llm"]["llm_by_stage"]["contextual_prefix"]["calls"] == report.chunks
    kb = arborgraph.open(tmp_path / "idx")
    gen = (tmp_path / "idx" / "CURRENT").read_text().strip()
    table = pq.read_table(tmp_path / "idx" / gen / "tables" / "chunks.parquet")
    assert set(table.column("context_prefix").to_pylist()) == {"This chunk is from the SQLite manual, about ZQXJ locking."}
    res = kb.query("ZQXJ", route="lookup")  # a word only the prefixes contain
    assert res.contexts and all("ZQXJ" not in c.text for c in res.contexts)
    # the user's mistake: a BuildError (exit 2 in the CLI) naming the fix, and nothing committed
    with pytest.raises(BuildError, match=r"^contextual_prefixes needs an LLM: pass --llm-model \(or set llm\.model\)$"):
        build_index([docs], tmp_path / "idx3", load_config(overrides={"contextual_prefixes": True}))
    assert not (tmp_path / "idx3" / "CURRENT").exists()


SYSTEM_PROMPTS = {
    "raptor.summary": "You write summaries for a navigable summary tree",
    "graphrag.extract": "You extract a knowledge graph",
    "graphrag.report": "You write a short report about one community",
}


def _stage_of(body: dict[str, Any]) -> str:
    system = str(body["messages"][0]["content"])
    return next(stage for stage, start in SYSTEM_PROMPTS.items() if system.startswith(start))


def _tables(index: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    gen = index / (index / "CURRENT").read_text().strip() / "tables"
    names = ("raptor_nodes.s0", "entities.s0", "relationships.s0", "communities.s0", "community_reports.s0",
             "graph_extractions.s0")
    return {name: pq.read_table(gen / f"{name}.parquet").to_pylist() for name in names}


def test_llm_build_stages_call_concurrently_with_serial_results(tmp_path: Path, docs: Path, llm_server) -> None:  # type: ignore[no-untyped-def]
    """Extraction, each tree level's summaries and each community level's reports are
    sent up to ``llm.concurrency`` at once; the index equals a one-at-a-time build's."""
    llm_server.set_reply(manual_reply)
    llm_server.set_delay(0.03)  # a slow model, so that calls sent together overlap

    def config(concurrency: int) -> Any:
        return load_config(overrides={
            "llm": {"model": "stand-in-model", "base_url": llm_server.base_url, "api_key": "k",
                    "concurrency": concurrency},
            # the clustered tree: over these few pages the outline tree has one LLM
            # summary (its root), and summaries of one level are what run side by side
            "tree": {"outline": False}})

    build_index([docs], tmp_path / "wide", config(4))
    wide_requests = llm_server.requests
    peak: dict[str, int] = {}
    for request in wide_requests:
        stage = _stage_of(request.body)
        peak[stage] = max(peak.get(stage, 0), request.in_flight)
    assert llm_server.max_in_flight <= 4
    assert peak["graphrag.extract"] > 1 and peak["raptor.summary"] > 1, peak
    assert peak["graphrag.report"] > 1, peak

    llm_server.set_delay(0.0)
    build_index([docs], tmp_path / "serial", config(1))
    serial_requests = llm_server.requests[len(wide_requests):]
    assert max(r.in_flight for r in serial_requests) == 1
    assert len(serial_requests) == len(wide_requests)
    assert _tables(tmp_path / "wide") == _tables(tmp_path / "serial")


def test_failed_call_stops_the_build_naming_the_item(tmp_path: Path, docs: Path, llm_server) -> None:  # type: ignore[no-untyped-def]
    """A call that fails for good (no retries left) stops the build with an error naming
    its item; no generation is published, and the next run completes from the cache."""
    from arborgraph.core.errors import LLMError
    from llm_server import Fault

    llm_server.set_reply(manual_reply)
    llm_server.add_faults(Fault(status=500))  # the build's first chat call
    cfg = load_config(overrides={"llm": {"model": "stand-in-model", "base_url": llm_server.base_url,
                                         "api_key": "k", "max_retries": 0, "concurrency": 2}})
    with pytest.raises(LLMError, match=r"^(summary for the cluster of '.+' and \d+ more|chunk \S+#\d+): .*HTTP 500"):
        build_index([docs], tmp_path / "idx", cfg)
    assert not (tmp_path / "idx" / "CURRENT").exists()
    report = build_index([docs], tmp_path / "idx", cfg)
    assert report.stages["llm"]["llm_failures"] == 0 and (tmp_path / "idx" / "CURRENT").exists()
