"""What a one-off ``arborgraph query`` costs: start-up, opening the index, the answer.

Each command runs in its own process, as a user types it, ``--runs`` times (default 5):
``arborgraph --help``, then ``arborgraph query --index IDX "QUESTION" --route R`` for
every route (auto, lookup, tree, graph, global), with ``python -c pass`` as the floor no
command can go under. The commands take turns (one round runs each once), so a burst of
load elsewhere stretches every command, not one. For each command: wall seconds (min,
median, max) and the process's CPU seconds (user + system, min and median: less
sensitive to other work than wall time), and a fingerprint of its answer (the route and
the contexts' ids and scores, from ``--json``): two runs of the script on different code
that answered alike have the same fingerprints. Then a ``-X importtime`` run of the
lookup query and of ``--help``: import time per top-level package and the slowest
first-level imports; and which heavy packages the lookup query imported.

The machine's load averages are recorded before and after: on a busy machine (2 cores
here, shared with other work) every time stretches, which is why the minimum is quoted.

The index is the bundled sample manual's, built (``arborgraph build examples/sqlite
--index IDX --no-shared-cache``, about 10 minutes on 2 cores) only when ``--index``
holds none. Each run is stored in the results file under ``--label`` (``before``,
``after``...), the others kept.

    python benchmarks/bench_cli_query.py --index IDX --label before
    python benchmarks/bench_cli_query.py --index IDX --label after --runs 7
    python benchmarks/bench_cli_query.py --runs 1 --output /tmp/cli.json       # smoke run (builds)
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MANUAL = ROOT / "examples" / "sqlite"
DEFAULT_INDEX = ROOT / "benchmarks" / "results" / "tmp" / "cli-query-index"
BIN = Path(sys.executable).parent
# the commands run from here, not from a checkout: ``python -c`` would import the package
# of the current directory before one ``PYTHONPATH`` names
NEUTRAL = "/"
QUESTIONS = {
    "auto": "How long does a connection wait on a locked database before SQLITE_BUSY?",
    "lookup": "What is the default page size of a new database?",
    "tree": "Explain how write-ahead logging works in SQLite.",
    "graph": "How does the busy timeout relate to the busy handler?",
    "global": "What are the main themes of this manual?",
}
# packages a one-off question should not need to import (heavy, and no route uses them
# to answer: builds, plots and training do)
HEAVY = ("numba", "llvmlite", "scipy", "sklearn", "umap", "pynndescent", "bm25s", "pandas", "matplotlib",
         "torch", "leidenalg", "igraph", "networkx", "yaml", "tqdm")


def arborgraph_bin() -> str:
    found = BIN / "arborgraph"
    return str(found) if found.exists() else "arborgraph"


def build_if_missing(index: Path) -> dict[str, Any] | None:
    if (index / "CURRENT").exists():
        return None
    start = time.perf_counter()
    run = subprocess.run(
        [arborgraph_bin(), "build", str(MANUAL), "--index", str(index), "--no-shared-cache", "--quiet"],
        capture_output=True, text=True,
    )
    if run.returncode != 0:
        raise SystemExit(run.stderr[-3000:])
    return {"built": True, "wall_s": round(time.perf_counter() - start, 1)}


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of one process, and its stdout."""
    before = os.times()
    start = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=NEUTRAL)
    wall = time.perf_counter() - start
    after = os.times()
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({run.returncode}): {run.stderr[-2000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu, run.stdout


def fingerprint(stdout: str) -> dict[str, Any]:
    """The route and a hash of the contexts' ids and scores of a ``--json`` answer."""
    res = json.loads(stdout)
    ranked = [(c.get("node_id"), c.get("kind"), round(float(c.get("score", 0.0)), 6)) for c in res.get("contexts", [])]
    digest = hashlib.sha256(json.dumps(ranked).encode()).hexdigest()[:16]
    return {"route": res.get("route"), "contexts": len(ranked), "top": ranked[0][0] if ranked else None, "sha": digest}


def commands(index: Path) -> dict[str, list[str]]:
    exe = arborgraph_bin()
    cmds = {"python -c pass": [sys.executable, "-c", "pass"], "arborgraph --help": [exe, "--help"]}
    for route, question in QUESTIONS.items():
        cmds[f"query --route {route}"] = [exe, "query", "--index", str(index), question, "--route", route, "--json"]
    return cmds


def importtime(cmd: list[str]) -> dict[str, Any]:
    """``-X importtime`` of one command: milliseconds per top-level package (self time
    summed) and the slowest first-level imports (cumulative)."""
    run = subprocess.run([sys.executable, "-X", "importtime", *cmd], capture_output=True, text=True, cwd=NEUTRAL)
    per_package: dict[str, int] = {}
    first_level: list[tuple[int, str]] = []
    for line in run.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        head, cum, name = line.split("|", 2)
        self_us, cum_us = int(head.split(":")[1]), int(cum)
        depth = (len(name) - len(name.lstrip(" "))) // 2
        package = name.strip().split(".")[0]
        per_package[package] = per_package.get(package, 0) + self_us
        if depth == 0:
            first_level.append((cum_us, name.strip()))
    total = sum(per_package.values())
    return {
        "total_import_ms": round(total / 1000, 1),
        "by_package_ms": {k: round(v / 1000, 1) for k, v in sorted(per_package.items(), key=lambda kv: -kv[1])[:20]},
        "slowest_first_level_ms": {n: round(c / 1000, 1) for c, n in sorted(first_level, reverse=True)[:15]},
        "heavy_imported": sorted(p for p in per_package if p in HEAVY),
    }


def code_measured() -> dict[str, Any]:
    """Which checkout the commands ran (``PYTHONPATH`` may name another worktree): its
    commit, and the files that differ from it there."""
    where = subprocess.run([sys.executable, "-c", "import arborgraph; print(arborgraph.__file__)"],
                           capture_output=True, text=True, check=True, cwd=NEUTRAL).stdout.strip()
    tree = Path(where).resolve().parents[1]

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True).stdout.strip()

    return {"checkout": str(tree), "commit": git("rev-parse", "--short", "HEAD"),
            "changed_files": git("status", "--porcelain", "--untracked-files=no").splitlines()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, default=DEFAULT_INDEX, help="the sample manual's index (built when missing)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--label", default="after", help="the key this run is stored under in the results file")
    parser.add_argument("--note", default="", help="a sentence stored with the run")
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "results" / "cli_query.json")
    args = parser.parse_args()
    index = args.index.resolve()
    built = build_if_missing(index)
    cmds = commands(index)
    load_before = os.getloadavg()
    walls: dict[str, list[float]] = {name: [] for name in cmds}
    cpus: dict[str, list[float]] = {name: [] for name in cmds}
    answers: dict[str, set[str]] = {name: set() for name in cmds}
    prints: dict[str, dict[str, Any]] = {}
    for _ in range(args.runs):
        for name, cmd in cmds.items():
            wall, cpu, stdout = timed(cmd)
            walls[name].append(wall)
            cpus[name].append(cpu)
            if name.startswith("query"):
                prints[name] = fingerprint(stdout)
                answers[name].add(prints[name]["sha"])
    load_after = os.getloadavg()
    timings = {
        name: {
            "wall_min_s": round(min(walls[name]), 3),
            "wall_median_s": round(statistics.median(walls[name]), 3),
            "wall_max_s": round(max(walls[name]), 3),
            "cpu_min_s": round(min(cpus[name]), 3),
            "cpu_median_s": round(statistics.median(cpus[name]), 3),
            **({"answer": prints[name], "same_answer_every_run": len(answers[name]) == 1} if name in prints else {}),
        }
        for name in cmds
    }
    run = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "code": code_measured(),
        "note": args.note,
        "machine": {"cpus": os.cpu_count(), "load_avg_before": [round(x, 2) for x in load_before],
                    "load_avg_after": [round(x, 2) for x in load_after]},
        "runs": args.runs,
        "index_built_by_this_run": built,
        "commands": timings,
        "importtime": {
            "query --route lookup": importtime(cmds["query --route lookup"]),
            "arborgraph --help": importtime(cmds["arborgraph --help"]),
        },
    }
    results: dict[str, Any] = {}
    if args.output.exists():
        results = json.loads(args.output.read_text())
    results.update({
        "benchmark": "bench_cli_query",
        "what": ("separate processes, as a user runs them: `arborgraph --help` and `arborgraph query --index IDX "
                 "QUESTION --route R --json` per route on the sample manual's index (examples/sqlite, default "
                 "build); rounds take turns over the commands; wall and CPU seconds per command; min is the "
                 "figure to quote on a shared machine (see the load averages)"),
        "questions": QUESTIONS,
    })
    runs = results.setdefault("runs", {})
    runs[args.label] = run
    # whether every run stored answered each question as this one did
    run["same_answers_as"] = {
        label: all(
            other["commands"].get(name, {}).get("answer", {}).get("sha") == timing["answer"]["sha"]
            for name, timing in timings.items() if "answer" in timing
        )
        for label, other in runs.items() if label != args.label
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(run, indent=2))


if __name__ == "__main__":
    main()
