"""The same limits and the same clear refusals everywhere: a question's length, the
``ARBORGRAPH_*`` variables, an input with nothing to index, a build with nothing to do.
The real command line in subprocesses, the library in process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import arborgraph
from arborgraph.core.questions import MAX_QUESTION_CHARS
from conftest import copy_pages

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arborgraph.cli", *args], capture_output=True, text=True, timeout=600, cwd=ROOT,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("ARBORGRAPH_")}, "HF_HUB_OFFLINE": "1", **(env or {})},
    )


def one_line(run: subprocess.CompletedProcess[str]) -> str:
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr[-2000:]
    return lines[0]


def test_one_question_length_limit_for_the_cli_its_batches_and_the_library(sample_index: Path, tmp_path: Path) -> None:
    too_long = "How does WAL mode work? " * (MAX_QUESTION_CHARS // 20)
    assert len(too_long) > MAX_QUESTION_CHARS
    run = cli("query", "--index", str(sample_index), too_long)
    assert run.returncode == 2 and f"the limit is {MAX_QUESTION_CHARS}" in one_line(run)
    batch = tmp_path / "questions.jsonl"
    batch.write_text(json.dumps({"id": "ok", "question": "What is WAL?"}) + "\n" + json.dumps({"id": "long", "question": too_long}) + "\n")
    run = cli("query", "--index", str(sample_index), "--batch", str(batch), "--json")
    assert run.returncode == 2 and "long" in one_line(run) and not run.stdout  # checked whole before any answer
    with pytest.raises(arborgraph.QueryError, match=f"the limit is {MAX_QUESTION_CHARS}"):
        arborgraph.open(sample_index, warm=False).query(too_long)
    assert arborgraph.open(sample_index, warm=False).query(too_long[:MAX_QUESTION_CHARS]).contexts


@pytest.mark.parametrize("command", ["query", "inspect", "build", "serve", "eval"])
def test_a_mistyped_variable_is_an_error_in_every_command(command: str, sample_index: Path, tmp_path: Path) -> None:
    args = {
        "query": ["query", "--index", str(sample_index), "What is WAL?"],
        "inspect": ["inspect", "--index", str(sample_index)],
        "build": ["build", str(tmp_path), "--index", str(tmp_path / "idx")],
        "serve": ["serve", "--index", str(sample_index), "--port", "0"],
        "eval": ["eval", "--index", str(sample_index), str(ROOT / "benchmarks" / "questions" / "sqlite.jsonl")],
    }[command]
    run = cli(*args, env={"ARBORGRAPH_RETRIEVAL__RANKR": "false"})
    assert run.returncode == 2
    assert one_line(run) == "error: ARBORGRAPH_RETRIEVAL__RANKR is not an Arborgraph setting (a typo?); see docs/configuration.md"


def test_known_variables_set_the_query_settings(sample_index: Path) -> None:
    question = "How long does a connection wait on a busy lock?"
    ranked = cli("query", "--index", str(sample_index), question, "--route", "lookup", "--json", "--explain")
    plain = cli("query", "--index", str(sample_index), question, "--route", "lookup", "--json", "--explain",
                env={"ARBORGRAPH_RETRIEVAL__RANKER": "false"})
    assert ranked.returncode == plain.returncode == 0, plain.stderr
    assert "ranker:" in ranked.stdout and "ranker:" not in plain.stdout


def test_documents_with_nothing_to_index_are_a_build_error_unless_asked_for(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "heading.md").write_text("# Only a heading\n")
    index = tmp_path / "idx"
    run = cli("build", str(docs), "--index", str(index), "--quiet")
    assert run.returncode == 2 and "0 chunks" in one_line(run) and "--allow-empty" in run.stderr
    assert not index.exists()  # a first build that found nothing leaves nothing behind
    run = cli("build", str(docs), "--index", str(index), "--quiet", "--allow-empty")
    assert run.returncode == 0 and "0 chunks" in run.stdout


def test_a_rebuild_with_nothing_to_do_writes_no_generation(sample_slice: Path, tmp_path: Path) -> None:
    docs = copy_pages(sample_slice, tmp_path / "docs", ["wal.md", "autoinc.md"])
    index = tmp_path / "idx"
    first = cli("build", str(docs), "--index", str(index), "--quiet", "--no-tree", "--no-graph", "--json")
    assert first.returncode == 0, first.stderr
    generation = json.loads(first.stdout)["generation"]
    again = cli("build", str(docs), "--index", str(index), "--quiet", "--no-tree", "--no-graph")
    assert again.returncode == 0 and again.stdout.startswith(f"unchanged {index} ({generation})")
    assert arborgraph.current_generation(index) == generation
    forced = cli("build", str(docs), "--index", str(index), "--quiet", "--no-tree", "--no-graph", "--force", "--json")
    assert forced.returncode == 0 and json.loads(forced.stdout)["generation"] > generation
    (docs / "wal.md").write_text((docs / "wal.md").read_text() + "\nOne more sentence about checkpoints.\n")
    changed = cli("build", str(docs), "--index", str(index), "--quiet", "--no-tree", "--no-graph")
    assert changed.returncode == 0 and changed.stdout.startswith("built ")
