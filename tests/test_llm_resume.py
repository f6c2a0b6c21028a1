"""A build killed with SIGKILL resumes and asks only for the missing replies.

Contract test against the loopback OpenAI stand-in (tests/llm_server.py): a real
subprocess runs a batch of chat calls through OpenAIChatModel and is killed mid-way;
a second run over the same cache must call exactly the requests the first run did not
store, and a third run must call nothing.

Run as a script, this file is that subprocess: ``python test_llm_resume.py BASE_URL CACHE N``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import llm_server as stand_in
from llm_server import CHAT_PATH, FakeOpenAIServer

from arborgraph.llm import LLMCache, LLMConfig, LLMUsage
from arborgraph.llm.provider import OpenAIChatModel

# The fixture, bound here so these tests run whether or not conftest.py provides it.
llm_server = stand_in.llm_server

REPO_ROOT = Path(__file__).resolve().parents[1]
N_CALLS = 40


def prompts(n: int) -> list[list[dict[str, str]]]:
    return [[{"role": "user", "content": f"summarise section {i}"}] for i in range(n)]


def run_build(base_url: str, cache_path: Path, n: int, api_key: str) -> tuple[list[str], LLMUsage]:
    """The 'build': n summaries through the cached provider, two at a time."""
    usage = LLMUsage()
    config = LLMConfig(model="m", base_url=base_url, api_key=api_key, concurrency=2)
    with LLMCache(cache_path) as cache:
        replies = OpenAIChatModel(config, cache, usage, environ={}).chat_many(
            prompts(n), stage="summary"
        )
    return replies, usage


def test_sigkilled_build_resumes_with_only_the_missing_calls(
    llm_server: FakeOpenAIServer,
    tmp_path: Path,
) -> None:
    cache_path = tmp_path / "llm.sqlite"
    llm_server.set_delay(0.05)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    child = subprocess.Popen(
        [sys.executable, __file__, llm_server.base_url, str(cache_path), str(N_CALLS)], env=env
    )
    try:
        deadline = time.monotonic() + 120
        while llm_server.count(CHAT_PATH) < 10:
            assert child.poll() is None, "the build ended before it could be killed"
            assert time.monotonic() < deadline, "the build never got going"
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    assert child.returncode == -signal.SIGKILL

    with LLMCache(cache_path) as cache:
        stored = len(cache)
    assert 0 < stored < N_CALLS

    replies, usage = run_build(llm_server.base_url, cache_path, N_CALLS, api_key="sk-second-run")

    assert replies == [f"echo: summarise section {i}" for i in range(N_CALLS)]
    second = [r for r in llm_server.requests if r.authorization == "Bearer sk-second-run"]
    asked = [r.body["messages"][0]["content"] for r in second]
    assert len(asked) == len(set(asked)) == N_CALLS - stored
    assert usage.to_dict()["llm_calls"] == N_CALLS - stored
    assert usage.to_dict()["llm_cache_hits"] == stored

    before = llm_server.count()
    _, usage = run_build(llm_server.base_url, cache_path, N_CALLS, api_key="sk-third-run")
    assert llm_server.count() == before
    assert usage.to_dict()["llm_calls"] == 0
    assert usage.to_dict()["llm_cache_hits"] == N_CALLS


if __name__ == "__main__":
    run_build(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), api_key="sk-first-run")
