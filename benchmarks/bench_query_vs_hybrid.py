"""Query latency against the flat hybrid baseline a user would build instead, in one run.

Usage::

    python benchmarks/bench_query_vs_hybrid.py --index IDX --questions Q.jsonl [--index IDX2 --questions Q2.jsonl ...]

For each index, in a fresh process: the time to ``open()`` it and to answer its first
question, then every question three ways, interleaved so that the machine's drift hits
them alike, the whole set ``--rounds`` times (default 3): ``baseline:hybrid`` (``kb.engine.lookup(mode="hybrid")``, what ``arborgraph eval``
scores as the reference), the ``lookup`` route and ``auto``, all with ``arborgraph
eval``'s settings (top 100, a 1,500-word window). Reports each one's mean, p50 and p95
and the ratios the engine is judged by: auto p95 and lookup p95 over hybrid's mean, and
the first question over hybrid's mean. Writes ``benchmarks/results/query_vs_hybrid.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import json, sys, time
began = time.perf_counter()
import arborgraph
kb = arborgraph.open(sys.argv[1])
opened = time.perf_counter() - began
questions = [json.loads(line)["question"] for line in open(sys.argv[2]) if line.strip()]
TOP_K, BUDGET = 100, 1500 * 4  # arborgraph eval's
t = time.perf_counter(); kb.query(questions[0], top_k=TOP_K, budget_tokens=BUDGET); first = (time.perf_counter() - t) * 1000
runs = {
    "baseline:hybrid": lambda q: kb.engine.lookup(q, mode="hybrid", top_k=TOP_K),
    "lookup": lambda q: kb.query(q, route="lookup", top_k=TOP_K, budget_tokens=BUDGET),
    "auto": lambda q: kb.query(q, top_k=TOP_K, budget_tokens=BUDGET),
}
times = {name: [] for name in runs}
for _ in range(int(sys.argv[3])):
    for q in questions:
        for name, run in runs.items():
            t = time.perf_counter(); run(q); times[name].append((time.perf_counter() - t) * 1000)
def summary(xs):
    xs = sorted(xs)
    return {"mean_ms": round(sum(xs) / len(xs), 2), "p50_ms": round(xs[len(xs) // 2], 2),
            "p95_ms": round(xs[int(0.95 * (len(xs) - 1))], 2)}
out = {name: summary(xs) for name, xs in times.items()}
hybrid = out["baseline:hybrid"]["mean_ms"]
print(json.dumps({
    "chunks": len(kb.index.store.chunk_ids), "questions": len(questions), "rounds": int(sys.argv[3]),
    "open_s": round(opened, 2),
    "first_query_ms": round(first, 1), "systems": out,
    "auto_p95_over_hybrid_mean": round(out["auto"]["p95_ms"] / hybrid, 2),
    "lookup_p95_over_hybrid_mean": round(out["lookup"]["p95_ms"] / hybrid, 2),
    "first_query_over_hybrid_mean": round(first / hybrid, 2),
}))
"""


def measure(index: Path, questions: Path, rounds: int) -> dict[str, Any]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    load = os.getloadavg()[0]
    done = subprocess.run([sys.executable, "-c", PROBE, str(index), str(questions), str(rounds)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return {"index": str(index), "questions_file": str(questions), "load_1m_before": round(load, 2),
            **json.loads(done.stdout.strip().splitlines()[-1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, action="append", required=True)
    parser.add_argument("--questions", type=Path, action="append", required=True)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "query_vs_hybrid.json")
    parser.add_argument("--rounds", type=int, default=3,
                        help="times the question set is asked (a p95 over one pass of 40-64 questions is its 3rd largest)")
    args = parser.parse_args()
    if len(args.index) != len(args.questions):
        parser.error("give one --questions per --index")
    rows = []
    for index, questions in zip(args.index, args.questions):
        rows.append(measure(index, questions, args.rounds))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    results = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip(),
        "indexes": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
