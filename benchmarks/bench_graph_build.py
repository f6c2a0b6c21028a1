"""What the readable graph costs a build: today's code against this branch's, in one run.

    python benchmarks/bench_graph_build.py [--docs examples/sqlite] [--rounds 2] \\
        [--before REF] [--after REF] [--out benchmarks/results/graph_build.json]

Each side is a detached checkout of its commit (``before``: where this branch left
main; ``after``: HEAD) running its own code; each build is a full, cold ``arborgraph
build`` of ``--docs`` into a fresh index (no embedding cache), in the order before,
after, after, before, ... so that a trend in the machine's load falls on both sides.
Recorded per build: wall and CPU seconds, every stage's time and the graph stage's
counts. The summary gives each side's median full build and graph stage, and the
graph stage's added time as a share of today's full build (issue #28's bound: the new
structure stages may add at most 25 %). On a shared machine the wall times measure
the other jobs too: compare within one run, and repeat on a quiet machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from before_after import ROOT, checkout, default_before, resolve  # noqa: E402
from bench_build_and_query import run_build  # noqa: E402


def build(code: Path, docs: Path, index: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(code), "HF_HUB_OFFLINE": "1"}
    cwd = os.getcwd()
    os.chdir(code)  # "python -m" puts the working directory first on the path
    try:
        return run_build(docs, index, ["--quiet"], env)
    finally:
        os.chdir(cwd)


def summary(builds: list[dict[str, Any]]) -> dict[str, Any]:
    def median(side: str, get: Any) -> float:
        return round(statistics.median(get(b) for b in builds if b["side"] == side), 2)

    out: dict[str, Any] = {}
    for side in ("before", "after"):
        out[side] = {
            "full_wall_s": median(side, lambda b: b["wall_s"]),
            "full_cpu_s": median(side, lambda b: b["cpu_s"]),
            "graph_stage_s": median(side, lambda b: b["timings_s"].get("graph", 0.0)),
        }
    added = out["after"]["graph_stage_s"] - out["before"]["graph_stage_s"]
    out["graph_stage_added_s"] = round(added, 2)
    out["graph_stage_added_share_of_full_build"] = round(added / out["before"]["full_wall_s"], 4)
    out["full_build_ratio"] = round(out["after"]["full_wall_s"] / out["before"]["full_wall_s"], 4)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=ROOT / "examples" / "sqlite")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--before", default=None, help="default: where this branch left main")
    parser.add_argument("--after", default="HEAD")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "graph_build.json")
    args = parser.parse_args()
    commits = {"before": resolve(args.before) if args.before else default_before(), "after": resolve(args.after)}
    order = [s for r in range(args.rounds) for s in (("before", "after") if r % 2 == 0 else ("after", "before"))]
    builds: list[dict[str, Any]] = []
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-graph-build-") as scratch:
        base = Path(scratch)
        with checkout(commits["before"], base / "before") as before, checkout(commits["after"], base / "after") as after:
            code = {"before": before, "after": after}
            for i, side in enumerate(order):
                result = build(code[side], args.docs.resolve(), base / f"idx-{i}-{side}")
                result["side"] = side
                result["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
                builds.append(result)
                print(f"{side}: {result['wall_s']} s wall, graph {result['timings_s'].get('graph')} s", flush=True)
    data = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "docs": str(args.docs),
        "commits": commits,
        "load_avg_at_start": [round(x, 2) for x in load_start],
        "summary": summary(builds),
        "builds": builds,
    }
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(json.dumps(data["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
