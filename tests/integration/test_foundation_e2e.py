"""End to end through the real CLI and API: build, query, batch contract, inspect, errors,
atomic rebuilds after a crash, and the lexical fallback when the model is missing."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import arborgraph
from arborgraph.core.errors import NoUsableDocuments
from arborgraph.pipeline import build_index
from arborgraph.config import load_config
from arborgraph.core.errors import EmbedderMismatch
from arborgraph.models.embedding import load_embedder
from arborgraph.core.model_files import packaged_model_dir
from arborgraph.kb import KnowledgeBase
from arborgraph.index.store import open_generation


def cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "arborgraph.cli", *args],
        capture_output=True, text=True, timeout=timeout, env=env,
    )


def test_query_json_contract(sample_index: Path) -> None:
    run = cli("query", "--index", str(sample_index), "--route", "lookup", "--json",
              "--top-k", "5", "What is the default busy timeout behaviour?")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["id"] is None  # the batch lines' shape, id included
    assert data["route"] == "lookup"
    assert 1 <= len(data["contexts"]) <= 5
    for ctx in data["contexts"]:
        assert {"text", "source", "kind", "score", "node_id"} <= ctx.keys()
        assert ctx["kind"] == "chunk" and ctx["source"].endswith(".md")
    scores = [c["score"] for c in data["contexts"]]
    assert scores == sorted(scores, reverse=True)


def test_batch_jsonl_contract(sample_index: Path, tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps({"id": "a", "question": "How does a checkpoint move WAL frames into the database?"}) + "\n"
        + json.dumps({"id": 7, "question": "What does AUTOINCREMENT guarantee about rowids?"}) + "\n"
        + json.dumps({"id": None, "question": "How does a checkpoint move WAL frames into the database?"}) + "\n"
    )
    run = cli("query", "--index", str(sample_index), "--batch", str(questions), "--json", "--route", "lookup")
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    assert [line["id"] for line in lines] == ["a", 7, None]
    assert all(list(line)[:1] == ["id"] for line in lines)
    # the contract, not the ranking, is tested here: each answer is about its question
    assert "wal" in lines[0]["contexts"][0]["source"]
    assert "wal.md" in [c["source"] for c in lines[0]["contexts"]]
    assert "autoinc.md" in [c["source"] for c in lines[1]["contexts"][:3]]


def test_bad_batch_file_is_a_clear_error(sample_index: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "question": "ok"}\nnot json\n')
    run = cli("query", "--index", str(sample_index), "--batch", str(bad), "--json")
    assert run.returncode == 2
    assert "bad.jsonl:2" in run.stderr and "Traceback" not in run.stderr
    # a question that cannot be asked is found before any answer is written
    bad.write_text('{"id": 1, "question": "What is WAL?"}\n{"id": 2, "question": "  "}\n')
    run = cli("query", "--index", str(sample_index), "--batch", str(bad), "--json")
    assert run.returncode == 2 and run.stdout == ""
    assert "bad.jsonl:2" in run.stderr and "empty" in run.stderr and "Traceback" not in run.stderr


def test_inspect_reports_manifest_and_counts(sample_index: Path) -> None:
    run = cli("inspect", "--index", str(sample_index), "--json")
    assert run.returncode == 0, run.stderr
    info = json.loads(run.stdout)
    assert info["counts"]["documents"] == 20
    assert info["counts"]["chunks"] > 100
    assert info["mode"]["llm_model"] is None
    assert info["mode"]["embedding"].startswith("all-MiniLM-L6-v2")
    assert "tables/chunks.parquet" in info["tables"]
    # the manifest's substance, not only its counts
    assert info["config"]["chunking"]["target_tokens"] > 0 and "embedding" in info["config"]
    assert len(info["documents"]) == 20
    wal = info["documents"]["wal.md"]
    assert wal["format"] == "markdown" and wal["title"]
    assert len(wal["content_hash"]) == 64
    assert info["skipped"] == [] and isinstance(info["warnings"], list)
    assert [s["scope"] for s in info["scopes"]] == ["public"]


def test_not_an_index_and_missing_index(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    for target in (tmp_path, tmp_path / "missing"):
        run = cli("query", "--index", str(target), "anything")
        assert run.returncode == 2
        assert "error:" in run.stderr and "Traceback" not in run.stderr
        assert len(run.stderr.strip().splitlines()) == 1


def test_collection_without_usable_documents_exits_2(tmp_path: Path, sample_slice: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "empty.md").write_text("")
    (docs / "blob.bin").write_bytes(bytes(range(256)) * 8)
    run = cli("build", str(docs), "--index", str(tmp_path / "idx"), "--quiet")
    assert run.returncode == 2
    assert "no usable document" in run.stderr
    # a first build that found nothing leaves no directory (nor cache) behind
    assert not (tmp_path / "idx").exists()
    (tmp_path / "made").mkdir()
    with pytest.raises(NoUsableDocuments):
        build_index([docs], tmp_path / "made")
    assert list((tmp_path / "made").iterdir()) == []
    # an existing index keeps its cache (and everything else) through a failed build
    build_index([sample_slice / "wal.md"], tmp_path / "made", load_config(overrides={"build_tree": False, "build_graph": False}))
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "made").rglob("*"))
    with pytest.raises(NoUsableDocuments):
        build_index([docs], tmp_path / "made")
    assert (tmp_path / "made" / "cache" / "embeddings.sqlite").exists()
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "made").rglob("*")) == before


def test_index_path_that_is_a_file_is_a_clear_error(tmp_path: Path, sample_slice: Path) -> None:
    target = tmp_path / "afile"
    target.write_text("not a directory")
    for index in (target, target / "sub"):
        run = cli("build", str(sample_slice / "wal.md"), "--index", str(index), "--quiet")
        assert run.returncode == 2, run.stderr
        assert "is a file, not a directory" in run.stderr and "Traceback" not in run.stderr
        assert len(run.stderr.strip().splitlines()) == 1
    assert target.read_text() == "not a directory"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_build_report_lists_skipped_files(tmp_path: Path, sample_slice: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "wal.md").write_text((sample_slice / "wal.md").read_text())
    (docs / "copy-of-wal.md").write_text((sample_slice / "wal.md").read_text())
    (docs / "empty.txt").write_text("")
    run = cli("build", str(docs), "--index", str(tmp_path / "idx"), "--json", "--no-tree", "--no-graph")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    reasons = {Path(s["path"]).name: s["reason"] for s in report["skipped"]}
    assert "empty.txt" in reasons
    assert any("duplicate" in r for r in reasons.values())
    assert report["documents"] == 1
    # inspect shows the same report from the manifest, later
    run = cli("inspect", "--index", str(tmp_path / "idx"), "--json")
    info = json.loads(run.stdout)
    assert {Path(s["path"]).name for s in info["skipped"]} == set(reasons)
    assert len(info["documents"]) == 1 and not set(info["documents"]) & set(reasons)
    run = cli("inspect", "--index", str(tmp_path / "idx"))
    assert run.returncode == 0, run.stderr
    assert f"{len(reasons)} file(s) skipped" in run.stdout and "scopes: public" in run.stdout


def test_unbuilt_route_is_an_error_not_a_fallback(tmp_path: Path, sample_slice: Path) -> None:
    index = tmp_path / "idx"
    cfg = load_config(overrides={"build_tree": False, "build_graph": False})
    build_index([sample_slice / "wal.md"], index, cfg)
    run = cli("query", "--index", str(index), "--route", "tree", "what is WAL?")
    assert run.returncode == 2
    assert "no 'tree' route" in run.stderr


def test_failed_build_leaves_previous_index_intact(tmp_path: Path, sample_slice: Path) -> None:
    index = tmp_path / "idx"
    cfg = load_config(overrides={"build_tree": False, "build_graph": False})
    build_index([sample_slice / "wal.md"], index, cfg)
    before = arborgraph.open(index).query("What is a checkpoint?", route="lookup").to_dict()

    def broken_embedder(config):  # a stage that dies mid-build
        raise RuntimeError("simulated crash in the embedding stage")

    with pytest.raises(RuntimeError, match="simulated crash"):
        build_index([sample_slice], index, cfg, embedder_factory=broken_embedder)
    after = arborgraph.open(index)
    assert after.info()["counts"]["documents"] == 1
    assert after.query("What is a checkpoint?", route="lookup").to_dict() == before
    assert len([p for p in index.iterdir() if p.name.startswith("gen-")]) == 1


def test_killed_build_leaves_previous_index_intact_and_rebuild_works(tmp_path: Path, sample_slice: Path) -> None:
    index = tmp_path / "idx"
    first = cli("build", str(sample_slice / "wal.md"), "--index", str(index), "--quiet", "--no-tree", "--no-graph")
    assert first.returncode == 0, first.stderr
    live = open_generation(index).path
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "arborgraph.cli", "build", str(sample_slice), "--index", str(index), "--quiet"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 120
    while time.time() < deadline and len([p for p in index.iterdir() if p.name.startswith("gen-")]) < 2:
        time.sleep(0.05)
    time.sleep(0.5)  # let it write part of the new generation
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert open_generation(index).path == live
    assert arborgraph.open(index).info()["counts"]["documents"] == 1
    # a smaller build than the killed one: what is shown is that the folder takes one
    again = cli("build", str(sample_slice / "wal.md"), str(sample_slice / "autoinc.md"), "--index", str(index),
                "--quiet", "--no-tree", "--no-graph")
    assert again.returncode == 0, again.stderr
    assert arborgraph.open(index).info()["counts"]["documents"] == 2


def test_lexical_fallback_when_model_is_missing(tmp_path: Path, sample_slice: Path) -> None:
    index = tmp_path / "idx"
    cfg = load_config(overrides={
        "build_tree": False, "build_graph": False,
        "embedding": {"model": str(tmp_path / "no-such-model")},
    })
    report = build_index([sample_slice / "wal.md", sample_slice / "autoinc.md"], index, cfg)
    assert report.embedding is None and report.embedding_fallback
    kb = arborgraph.open(index)
    assert kb.info()["mode"]["lexical_fallback"] is True
    res = kb.query("How does AUTOINCREMENT choose a new rowid?", route="lookup")
    assert res.contexts and res.contexts[0].source == "autoinc.md"
    assert any("lexical fallback" in n for n in res.notes)
    assert all("lexical_fallback" in c.flags for c in res.contexts)


def test_open_with_a_given_query_embedder(tmp_path: Path, sample_slice: Path) -> None:
    cfg = load_config(overrides={"build_tree": False, "build_graph": False})
    index = tmp_path / "idx"
    build_index([sample_slice / "wal.md", sample_slice / "autoinc.md"], index, cfg)
    model = load_embedder(cfg.embedding)
    seen: list[str] = []

    class Recording:  # the real model, noting what the knowledge base asks it to embed
        name, dim = model.name, model.dim

        def encode(self, texts: list[str]):  # type: ignore[no-untyped-def]
            seen.extend(texts)
            return model.encode(texts)

    question = "How does AUTOINCREMENT choose a new rowid?"
    res = KnowledgeBase.open(index, embedder=Recording()).query(question, route="lookup")
    assert seen == [question]
    assert res.mode.lexical_fallback is False and res.contexts[0].source == "autoinc.md"

    class OtherModel(Recording):
        name = "another-model/int4"

    # vectors of another model cannot be compared with the index's: refused, naming both
    with pytest.raises(EmbedderMismatch, match=f"embedded with {model.name}, but .* with another-model/int4"):
        KnowledgeBase.open(index, embedder=OtherModel()).query(question, route="lookup")


def test_lexical_fallback_when_model_fails_at_query_time(tmp_path: Path, sample_slice: Path) -> None:
    # the shipped model's files in another directory: the same embedder name and vectors,
    # but a model directory this test can empty after the build
    model = tmp_path / "all-MiniLM-L6-v2"
    shutil.copytree(packaged_model_dir(), model, copy_function=os.symlink)
    cfg = load_config(overrides={
        "build_tree": False, "build_graph": False, "embedding": {"model": str(model)},
    })
    index = tmp_path / "idx"
    report = build_index([sample_slice / "wal.md", sample_slice / "autoinc.md"], index, cfg)
    assert report.embedding is not None and report.embedding_fallback is None
    question = "How does AUTOINCREMENT choose a new rowid?"
    working = arborgraph.open(index).query(question, route="lookup")
    assert working.mode.lexical_fallback is False
    shutil.rmtree(model)
    model.mkdir()
    kb = arborgraph.open(index)
    res = kb.query(question, route="lookup")
    assert res.contexts and res.contexts[0].source == "autoinc.md"
    assert all("lexical_fallback" in c.flags for c in res.contexts)
    assert any("lexical fallback" in n and "lacks" in n for n in res.notes)
    assert res.mode.lexical_fallback is True
    assert res.to_dict()["mode"]["lexical_fallback"] is True
