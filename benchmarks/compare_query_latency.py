"""Query latency of two checkouts on one index, in alternating rounds.

Each round runs ``bench_build_and_query.py --query-index INDEX`` from each checkout
(a git worktree: its own ``benchmarks/`` puts its own code first on the path), one
after the other, so both sides see the same machine; the figures per route are each
round's p50 and p95 and their medians over the rounds.

    python benchmarks/compare_query_latency.py --index /work/idx/git \\
        --before /tmp/wt_before --after . --rounds 2 --out benchmarks/results/F.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one_run(checkout: Path, index: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "latency.json"
        subprocess.run(
            [sys.executable, str(checkout / "benchmarks" / "bench_build_and_query.py"),
             "--query-index", str(index), "--out", str(out)],
            check=True, stdout=subprocess.DEVNULL,
        )
        return json.loads(out.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--before", type=Path, required=True, help="the earlier checkout (a worktree)")
    parser.add_argument("--after", type=Path, default=ROOT)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    def commit(path: Path) -> str:
        return subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()

    sides = {"before": args.before.resolve(), "after": args.after.resolve()}
    rounds: dict[str, list[dict]] = {name: [] for name in sides}
    loads = []
    for _ in range(args.rounds):
        for name, checkout in sides.items():
            loads.append(round(os.getloadavg()[0], 2))
            rounds[name].append(one_run(checkout, args.index)["queries"])
    summary = {
        name: {
            route: {
                "p50_ms_median": round(statistics.median(r[route]["p50_ms"] for r in runs), 2),
                "p95_ms_median": round(statistics.median(r[route]["p95_ms"] for r in runs), 2),
            }
            for route in runs[0]
        }
        for name, runs in rounds.items()
    }
    result = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "index": str(args.index),
        "commits": {name: commit(path) for name, path in sides.items()},
        "load_avg_1min_before_each_run": loads,
        "summary": summary,
        "rounds": rounds,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
