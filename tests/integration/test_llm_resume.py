"""A build killed with SIGKILL resumes and asks only for the missing replies.

Contract test against the loopback OpenAI stand-in (tests/support/llm_server.py), through the
real ``openai`` client: a subprocess runs a real LLM-mode ``build_index`` over three
pages of the sample manual (summaries, extraction with gleaning, community reports)
and is killed mid-way. The previous good index must be untouched; a second build over
the same index must make exactly (a fresh build's chat calls) - (replies the killed
build had cached) chat calls, and a third must make none.

Run as a script, this file is that subprocess: ``python test_llm_resume.py BASE_URL DOCS INDEX``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import llm_server as stand_in
from llm_server import CHAT_PATH, FakeOpenAIServer, manual_reply

import arborgraph
from arborgraph.config import Config, load_config
from arborgraph.llm import LLMCache
from arborgraph.pipeline import build_index
from conftest import copy_pages

# The fixture, bound here so these tests run whether or not conftest.py provides it.
llm_server = stand_in.llm_server

REPO_ROOT = Path(__file__).resolve().parents[2]
PAGES = ["autoinc.md", "c3ref_busy_timeout.md", "c3ref_wal_autocheckpoint.md"]


def llm_config(base_url: str, api_key: str, *, chat: bool = True) -> Config:
    """LLM mode on the stand-in; embeddings from the stand-in too (no local model to load)."""
    llm = {"embedding_model": "stand-in-embed", "base_url": base_url, "api_key": api_key, "concurrency": 2}
    if chat:
        llm["model"] = "stand-in-model"
    return load_config(overrides={"llm": llm})


def chat_calls(server: FakeOpenAIServer, api_key: str) -> int:
    return sum(1 for r in server.requests if r.path == CHAT_PATH and r.authorization == f"Bearer {api_key}")


def test_sigkilled_build_resumes_with_only_the_missing_calls(
    llm_server: FakeOpenAIServer, tmp_path: Path, sample_slice: Path
) -> None:
    llm_server.set_reply(manual_reply)
    docs = copy_pages(sample_slice, tmp_path / "docs", PAGES)
    # what a fresh LLM build of these pages asks for
    fresh = build_index([docs], tmp_path / "fresh", llm_config(llm_server.base_url, "sk-fresh"))
    total = chat_calls(llm_server, "sk-fresh")
    assert total == fresh.stages["llm"]["llm_by_stage"]["raptor.summary"]["calls"] + sum(
        fresh.stages["llm"]["llm_by_stage"][s]["calls"] for s in ("graphrag.extract", "graphrag.report")
    )
    assert total > 20

    # a previous good index of the same pages, without a chat model
    index = tmp_path / "idx"
    build_index([docs], index, llm_config(llm_server.base_url, "sk-before", chat=False))
    good = (index / "CURRENT").read_text().strip()
    good_files = {p.relative_to(index): p.read_bytes() for p in (index / good).rglob("*") if p.is_file()}

    llm_server.set_delay(0.05)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "tests"), str(REPO_ROOT / "tests" / "support"), os.environ.get("PYTHONPATH", "")]),
    }
    child = subprocess.Popen([sys.executable, __file__, llm_server.base_url, str(docs), str(index)], env=env)
    try:
        deadline = time.monotonic() + 120
        while chat_calls(llm_server, "sk-killed") < total // 3:
            assert child.poll() is None, "the build ended before it could be killed"
            assert time.monotonic() < deadline, "the build never got going"
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    assert child.returncode == -signal.SIGKILL
    llm_server.set_delay(0.0)

    # nothing half-written replaced the previous index
    assert (index / "CURRENT").read_text().strip() == good
    assert {p.relative_to(index): p.read_bytes() for p in (index / good).rglob("*") if p.is_file()} == good_files
    info = arborgraph.open(index).info()
    assert info["generation"] == good and info["counts"]["chunks"] == fresh.chunks
    with LLMCache(index / "cache" / "llm.sqlite") as cache:
        cached = cache.count("chat")
    assert 0 < cached < total

    resumed = build_index([docs], index, llm_config(llm_server.base_url, "sk-resumed"))
    assert chat_calls(llm_server, "sk-resumed") == total - cached
    assert resumed.stages["llm"]["llm_calls"] == total - cached  # chat only: embeddings are all cached
    assert resumed.stages["llm"]["llm_by_stage"]["raptor.summary"]["cache_hits"] > 0
    assert (index / "CURRENT").read_text().strip() != good

    again = build_index([docs], index, llm_config(llm_server.base_url, "sk-again"))
    assert chat_calls(llm_server, "sk-again") == 0 and again.stages["llm"]["llm_calls"] == 0
    # queries embed the question with the index's OpenAI-compatible embedder
    with arborgraph.open(index) as kb:
        res = kb.query("What does AUTOINCREMENT do?", route="lookup")
    assert kb.index.mode.embedding == "openai/stand-in-embed" and res.contexts
    assert not any("lexical fallback" in n for n in res.notes), res.notes


if __name__ == "__main__":
    base_url, docs_dir, index_dir = sys.argv[1:4]
    build_index([Path(docs_dir)], Path(index_dir), llm_config(base_url, "sk-killed"))
