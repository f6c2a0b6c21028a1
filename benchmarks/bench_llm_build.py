"""An LLM-mode build of 10 sample-manual pages: calls within the bound, cached rebuild,
and wall time at concurrency 8 vs 1.

The loopback OpenAI stand-in (tests/support/llm_server.py) answers with canned replies made
from the prompt (``manual_reply``: summaries, extraction entities and relations,
reports citing the listed chunk ids), each after ``DELAY_S``; embeddings come from the
stand-in too, so no local model is loaded. Three builds:

1. fresh index, ``llm.concurrency`` 8: chat calls, cache hits and tokens per stage,
   and the bound ``summary nodes + chunks x (1 + gleanings) + communities``;
2. the same index again, unchanged input: must make 0 chat calls;
3. a fresh index at ``llm.concurrency`` 1: the same calls, one at a time.

The bound counts chat calls only (embedding requests are reported apart). Writes
``benchmarks/results/llm_build.json``; exits non-zero when the bound is exceeded or
the rebuild makes a call.

    python benchmarks/bench_llm_build.py
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "support"))

from llm_server import CHAT_PATH, EMBEDDINGS_PATH, FakeOpenAIServer, manual_reply  # noqa: E402

from arborgraph.config import load_config  # noqa: E402
from arborgraph.index.build_report import BuildReport  # noqa: E402
from arborgraph.pipeline import build_index  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "llm_build.json"
MANUAL = ROOT / "examples" / "sqlite"
PAGES = [
    "wal.md", "lockingv3.md", "lang_transaction.md", "isolation.md", "c3ref_busy_timeout.md",
    "c3ref_busy_handler.md", "c3ref_wal_autocheckpoint.md", "foreignkeys.md", "autoinc.md", "lang_vacuum.md",
]
DELAY_S = 0.05
GLEANINGS = 1  # LLMExtractorConfig.gleaning: one "did you miss any?" turn per chunk


def build(server: FakeOpenAIServer, docs: Path, index: Path, concurrency: int) -> tuple[BuildReport, float, int, int]:
    """(report, wall seconds, chat requests, embedding requests) of one build."""
    cfg = load_config(overrides={"llm": {
        "model": "stand-in-model", "embedding_model": "stand-in-embed", "base_url": server.base_url,
        "api_key": "bench", "concurrency": concurrency,
    }})
    chat0, emb0 = server.count(CHAT_PATH), server.count(EMBEDDINGS_PATH)
    start = time.perf_counter()
    report = build_index([docs], index, cfg)
    wall = time.perf_counter() - start
    return report, wall, server.count(CHAT_PATH) - chat0, server.count(EMBEDDINGS_PATH) - emb0


def stage_table(report: BuildReport) -> dict[str, Any]:
    return {
        stage: {k: usage[k] for k in ("calls", "cache_hits", "tokens_in", "tokens_out", "repairs", "retries")}
        for stage, usage in report.stages["llm"]["llm_by_stage"].items()
    }


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-llm-build-") as tmp, FakeOpenAIServer() as server:
        docs = Path(tmp) / "docs"
        docs.mkdir()
        for page in PAGES:
            shutil.copy(MANUAL / page, docs / page)
        server.set_reply(manual_reply)
        server.set_delay(DELAY_S)

        fresh, wall8, chat8, emb8 = build(server, docs, Path(tmp) / "idx", 8)
        peak8 = server.max_in_flight
        rebuild, rebuild_wall, rebuild_chat, rebuild_emb = build(server, docs, Path(tmp) / "idx", 8)
        serial, wall1, chat1, _ = build(server, docs, Path(tmp) / "idx-serial", 1)

    usage = fresh.stages["llm"]
    by_stage = stage_table(fresh)
    summaries = fresh.stages["tree"]["summaries"]
    communities = fresh.stages["graph"]["communities"]
    bound = summaries + fresh.chunks * (1 + GLEANINGS) + communities
    chat_calls = sum(s["calls"] for name, s in by_stage.items() if name != "embedding")
    result = {
        "benchmark": "bench_llm_build",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load_avg": os.getloadavg()},
        "pages": len(PAGES),
        "server_delay_s": DELAY_S,
        "chunks": fresh.chunks,
        "summary_nodes": summaries,
        "gleanings_per_chunk": GLEANINGS,
        "communities": communities,
        "reports": fresh.stages["graph"]["reports"],
        "bound": bound,
        "bound_formula": "summary_nodes + chunks * (1 + gleanings_per_chunk) + communities (chat calls only)",
        "chat_calls": chat_calls,
        "chat_requests_seen_by_server": chat8,
        "within_bound": chat_calls <= bound,
        "tokens_in": sum(s["tokens_in"] for name, s in by_stage.items() if name != "embedding"),
        "tokens_out": sum(s["tokens_out"] for name, s in by_stage.items() if name != "embedding"),
        "by_stage": by_stage,
        "embedding_requests": emb8,
        "report_totals": {k: v for k, v in usage.items() if k != "llm_by_stage"},
        "rebuild": {
            "chat_calls": rebuild_chat, "embedding_requests": rebuild_emb,
            "llm_calls_reported": rebuild.stages["llm"]["llm_calls"], "wall_s": round(rebuild_wall, 2),
        },
        "concurrency_8": {"wall_s": round(wall8, 2), "max_in_flight": peak8, "chat_calls": chat8},
        "concurrency_1": {"wall_s": round(wall1, 2), "chat_calls": chat1},
        "speedup_8_vs_1": round(wall1 / wall8, 2),
        "same_calls_at_both": chat1 == chat8 and stage_table(serial) == by_stage,
        "note": (
            "Canned replies from the loopback stand-in (tests/support/llm_server.py manual_reply), not a model: "
            "call counts and the cache behaviour are the pipeline's; tokens are the stand-in's word counts."
        ),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in (
        "chunks", "summary_nodes", "communities", "bound", "chat_calls", "within_bound", "tokens_in", "tokens_out",
        "rebuild", "concurrency_8", "concurrency_1", "speedup_8_vs_1", "same_calls_at_both")}, indent=2))
    ok = result["within_bound"] and rebuild_chat == 0 and result["same_calls_at_both"]
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
