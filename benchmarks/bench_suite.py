"""The whole test suite the way CI runs it: a fresh clone of HEAD, then ``.ci/run``.

The clone goes beside this checkout (``--root``, default its parent folder), where
``shared/`` sits as it does for CI; it is made from nothing, so ``scripts/setup`` creates
its venv, numba's cache starts empty and nothing a developer installed by hand in the
checkout helps. Measured:

- ``wall_s``: ``.ci/run`` from start to exit, set-up included;
- ``pytest_s`` and the counts: pytest's own summary line;
- ``setup_s``: the rest (``wall_s - pytest_s``: mostly ``scripts/setup``);
- ``user_s`` / ``system_s``: the CPU of ``.ci/run`` and everything it started;
- ``slowest``: pytest's ``--durations`` report (given through ``PYTEST_ADDOPTS``, since
  ``.ci/run`` takes no arguments), the ``--slowest`` longest phases;
- ``probe_s``: CPU seconds of a fixed pure-Python loop, before and after, to tell a slow
  stretch of this (virtual) machine from a slower suite; the 1-minute load average too.

Writes ``benchmarks/results/suite.json``.

    python benchmarks/bench_suite.py [--root DIR] [--keep] [--slowest 15]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import resource
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "suite.json"
SUMMARY = re.compile(r"=+ (?P<counts>.*?) in (?P<seconds>[\d.]+)s")
DURATION = re.compile(r"^(?P<seconds>[\d.]+)s (?P<phase>setup|call|teardown)\s+(?P<test>\S+)$", re.MULTILINE)


def probe() -> float:
    """CPU seconds of a fixed loop (about 1.5 s on this machine when it runs at speed)."""
    start = time.process_time()
    total = 0
    for i in range(10**7):
        total += i
    return round(time.process_time() - start, 2)


def children_cpu() -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime, usage.ru_stime


def run_suite(clone: Path, slowest: int) -> dict[str, Any]:
    env = {**os.environ, "CI": "true", "PYTEST_ADDOPTS": f"--durations={slowest}"}
    env.pop("NUMBA_CACHE_DIR", None)  # the clone's own, empty, as on CI
    user0, sys0 = children_cpu()
    start = time.monotonic()
    done = subprocess.run(["bash", ".ci/run"], cwd=clone, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True)
    wall = time.monotonic() - start
    user1, sys1 = children_cpu()
    found = list(SUMMARY.finditer(done.stdout))
    summary = found[-1] if found else None
    counts = {}
    if summary:
        for part in summary.group("counts").split(", "):
            number, _, what = part.partition(" ")
            counts[what] = int(number)
    pytest_s = float(summary.group("seconds")) if summary else None
    return {
        "exit_code": done.returncode,
        "wall_s": round(wall, 1),
        "pytest_s": pytest_s,
        "setup_s": round(wall - pytest_s, 1) if pytest_s is not None else None,
        "user_s": round(user1 - user0, 1),
        "system_s": round(sys1 - sys0, 1),
        "counts": counts,
        "slowest": [
            {"seconds": float(m.group("seconds")), "phase": m.group("phase"), "test": m.group("test")}
            for m in DURATION.finditer(done.stdout)
        ],
        # pytest's short summary: which tests failed, and the first line of why
        "failures": [line for line in done.stdout.splitlines() if line.startswith(("FAILED ", "ERROR "))],
        "tail": done.stdout.splitlines()[-3:] + done.stderr.splitlines()[-3:],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT.parent, help="where the fresh clone goes")
    parser.add_argument("--keep", action="store_true", help="keep the clone afterwards")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--slowest", type=int, default=15, help="how many of the longest test phases to record")
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    clone = args.root / f"bench-suite-{commit[:8]}"
    shutil.rmtree(clone, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    before = {"probe_s": probe(), "load_1min": round(os.getloadavg()[0], 2)}
    try:
        result = run_suite(clone, args.slowest)
    finally:
        if not args.keep:
            shutil.rmtree(clone, ignore_errors=True)
    after = {"probe_s": probe(), "load_1min": round(os.getloadavg()[0], 2)}
    record = {
        "what": "a fresh clone of HEAD beside shared/, then bash .ci/run with CI=true",
        "commit": commit,
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "cores": os.cpu_count(),
        "machine_before": before,
        "machine_after": after,
        **result,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: record[k] for k in ("exit_code", "wall_s", "pytest_s", "setup_s", "user_s", "counts")}))


if __name__ == "__main__":
    main()
