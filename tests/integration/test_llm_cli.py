"""User mistakes in LLM mode end in a one-line error, not a traceback, and write nothing.

Runs the real CLI in a subprocess with ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``
removed from its environment: LLM mode then points at the official endpoint without a
key, which must be refused before any generation or build status is written (build)
or before the LLM cache is opened (query --answer). No request leaves the machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from arborgraph.config import load_config
from arborgraph.pipeline import build_index
from conftest import copy_pages

PAGES = ["autoinc.md", "c3ref_busy_timeout.md"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ARBORGRAPH_LLM"))}
    env |= {"HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "arborgraph.cli", *args], capture_output=True, text=True, timeout=1200, env=env
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
