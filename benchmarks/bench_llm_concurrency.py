"""Concurrency of the OpenAI-compatible provider against a slow loopback endpoint.

The loopback OpenAI stand-in (tests/support/llm_server.py) answers every chat call after
200 ms. 100 distinct calls go through ``OpenAIChatModel.chat_many`` at concurrency 8
over a fresh cache; the target is at most 4 s (the ideal is 13 waves x 0.2 s = 2.6 s).
Also measured: a rerun over the filled cache (must send zero requests) and 10 calls at
concurrency 1 (the per-call overhead of client, HTTP and cache). Writes
``benchmarks/results/llm_concurrency.json``; exits non-zero when over the limit.

    python benchmarks/bench_llm_concurrency.py
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "support"))

from llm_server import CHAT_PATH, FakeOpenAIServer  # noqa: E402

from arborgraph.llm import LLMCache, LLMConfig, LLMUsage  # noqa: E402
from arborgraph.llm.provider import OpenAIChatModel  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "llm_concurrency.json"
CALLS = 100
CONCURRENCY = 8
DELAY_S = 0.2
LIMIT_S = 4.0
SERIAL_CALLS = 10


def prompts(n: int, tag: str) -> list[list[dict[str, str]]]:
    return [[{"role": "user", "content": f"{tag} question {i}"}] for i in range(n)]


def timed_run(
    server: FakeOpenAIServer,
    cache_path: Path,
    requests: list[list[dict[str, str]]],
    concurrency: int,
) -> tuple[float, LLMUsage, list[str]]:
    config = LLMConfig(model="bench-model", base_url=server.base_url, concurrency=concurrency)
    usage = LLMUsage()
    with LLMCache(cache_path) as cache:
        model = OpenAIChatModel(config, cache, usage, environ={})
        start = time.perf_counter()
        replies = model.chat_many(requests, stage="bench")
        elapsed = time.perf_counter() - start
    return elapsed, usage, replies


def main() -> None:
    with FakeOpenAIServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.set_delay(DELAY_S)
        cache_path = Path(tmp) / "llm.sqlite"

        wall, usage, replies = timed_run(server, cache_path, prompts(CALLS, "main"), CONCURRENCY)
        requests_main = server.count(CHAT_PATH)
        max_in_flight = server.max_in_flight
        assert replies == [f"echo: main question {i}" for i in range(CALLS)]

        rerun_wall, rerun_usage, _ = timed_run(
            server, cache_path, prompts(CALLS, "main"), CONCURRENCY
        )
        rerun_requests = server.count(CHAT_PATH) - requests_main

        serial_wall, _, _ = timed_run(server, cache_path, prompts(SERIAL_CALLS, "serial"), 1)

    ideal = -(-CALLS // CONCURRENCY) * DELAY_S
    result = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "endpoint": "loopback OpenAI stand-in (tests/support/llm_server.py), real openai client",
        "server_delay_s": DELAY_S,
        "calls": CALLS,
        "concurrency": CONCURRENCY,
        "wall_s": round(wall, 3),
        "ideal_s": round(ideal, 3),
        "overhead_vs_ideal": round(wall / ideal, 3),
        "limit_s": LIMIT_S,
        "within_limit": wall <= LIMIT_S,
        "server_requests": requests_main,
        "server_max_in_flight": max_in_flight,
        "usage": usage.to_dict(),
        "cached_rerun": {
            "wall_s": round(rerun_wall, 3),
            "server_requests": rerun_requests,
            "llm_calls": rerun_usage.to_dict()["llm_calls"],
            "llm_cache_hits": rerun_usage.to_dict()["llm_cache_hits"],
        },
        "serial": {
            "calls": SERIAL_CALLS,
            "wall_s": round(serial_wall, 3),
            "per_call_overhead_s": round(serial_wall / SERIAL_CALLS - DELAY_S, 4),
        },
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    if not result["within_limit"]:
        sys.exit(f"{CALLS} calls at concurrency {CONCURRENCY} took {wall:.2f} s > {LIMIT_S} s")


if __name__ == "__main__":
    main()
