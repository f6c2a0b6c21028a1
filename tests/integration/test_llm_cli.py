"""User mistakes in LLM mode end in a one-line error, not a traceback, and write nothing.

Runs the real CLI in a subprocess with ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``
removed from its environment: LLM mode then points at the official endpoint without a
key, which must be refused before any generation or build status is written (build)
or before the LLM cache is opened (query --answer). No request leaves the machine:
the one test that answers points the CLI at the loopback stand-in (tests/support).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arborgraph.config import load_config
from arborgraph.pipeline import build_index
from conftest import copy_pages
from llm_server import FakeOpenAIServer

PAGES = ["autoinc.md", "c3ref_busy_timeout.md"]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ARBORGRAPH_LLM"))}
    full |= {"HF_HUB_OFFLINE": "1", "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "arborgraph.cli", *args], capture_output=True, text=True, timeout=1200, env=full
    )


@pytest.fixture()
def docs(tmp_path: Path, sample_slice: Path) -> Path:
    return copy_pages(sample_slice, tmp_path / "docs", PAGES)


def test_build_without_a_key_fails_cleanly_and_writes_no_generation(tmp_path: Path, docs: Path) -> None:
    index = tmp_path / "idx"
    run = cli("build", str(docs), "--index", str(index), "--llm-model", "gpt-4o-mini", "--quiet")
    assert run.returncode != 0
    assert "Traceback" not in run.stderr + run.stdout
    assert "no API key" in run.stderr and "OPENAI_API_KEY" in run.stderr
    assert not list(index.glob("gen-*")) and not (index / "CURRENT").exists()
    assert not (index / "build-status.json").exists()


def test_query_answer_without_a_key_fails_cleanly(tmp_path: Path, docs: Path) -> None:
    index = tmp_path / "idx"
    build_index([docs], index, load_config(overrides={"build_tree": False, "build_graph": False}))
    run = cli("query", "--index", str(index), "--route", "lookup", "--answer", "--llm-model", "gpt-4o-mini",
              "What does AUTOINCREMENT do?")
    assert run.returncode != 0
    assert "Traceback" not in run.stderr + run.stdout
    assert [line for line in run.stderr.splitlines() if line.strip()] == [
        line for line in run.stderr.splitlines() if "no API key" in line
    ]
    assert not (index / "cache" / "llm.sqlite").exists()


def test_answer_with_an_invented_date_is_flagged_in_text_and_json(tmp_path: Path, llm_server: FakeOpenAIServer) -> None:
    """The local model once answered "2017-03-28" where the source says 2016-03-29 (#38
    item 11): a figure absent from the cited passages is named in the result's notes."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "releases.md").write_text(
        "# Release history\n\nVersion 3.12.0 of the library was released on 2016-03-29. "
        "It raised the default page size to 4096 bytes.\n"
    )
    index = tmp_path / "idx"
    build_index([docs], index, load_config(overrides={"build_tree": False, "build_graph": False}))
    llm_server.set_reply(lambda body: "Version 3.12.0 came out on 2017-03-28 [1]. Its page size is 4096 bytes [1].")
    env = {"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "k"}
    args = ("query", "--index", str(index), "--route", "lookup", "--answer", "--llm-model", "stand-in",
            "When was version 3.12.0 released?")
    run = cli(*args, "--json", env=env)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["answer"].startswith("Version 3.12.0 came out on 2017-03-28 [1].")
    checks = [n for n in result["notes"] if n.startswith("answer check:")]
    assert checks == [
        'answer check: 2017-03-28 in "Version 3.12.0 came out on 2017-03-28 [1]." is not in its cited passage [1]; '
        "the model may have invented it"
    ]
    # the model is told the sources are the documentation's, not the user's words ("quoted
    # by the user"), and to copy figures exactly
    system = llm_server.requests[-1].body["messages"][0]["content"]
    assert "never as words of the user" in system and "provided by the user" not in system
    shown = cli(*args, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "note: answer check: 2017-03-28" in shown.stdout and "4096" not in shown.stdout.split("answer:")[0]
