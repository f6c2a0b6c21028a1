"""A fresh install the README's way, before and after, in one run: time, size, packages, first query.

Each side is a detached git worktree (before: by default the commit this branch started
from; after: HEAD) under ``--root`` (default ``/work/venvs/bench-install``). In each,
``scripts/setup EXTRAS`` (what ``scripts/demo`` runs, with ``all``; ``scripts/test`` runs it
with ``test``) creates ``.venv`` from nothing, with an empty pip cache of its own, so
every wheel comes from the package index as on a fresh machine or CI run. Measured:

- ``install_s``: wall time of ``scripts/setup``;
- ``venv_bytes``: disk usage of ``.venv`` (``du``); ``package_data_bytes``: what the
  editable install reads from the checkout instead (``arborgraph/data``, which a wheel
  would carry inside the venv), so the two add up to a wheel install's footprint;
- ``packages``: ``pip list`` count, and whether torch / transformers / sentence-transformers are in;
- ``build_s``: a first ``arborgraph build`` of 20 pages of the sample manual, lookup only,
  with an empty user cache (before: includes exporting the model to ONNX once);
- ``first_query_s``: wall time of a fresh ``arborgraph query`` process until its answer,
  ``--repeats`` times (the first right after the build), and their median.

Sides run one after the other on a shared machine: the 1-minute load average is recorded
at each step. Writes ``benchmarks/results/install.json``.

    python benchmarks/bench_install.py [--before REF] [--extras all] [--repeats 3]
    python benchmarks/bench_install.py --sides after --extras plain --out benchmarks/results/install_plain.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from before_after import ROOT, checkout, default_before, resolve  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "install.json"
PAGES = [
    "wal.md", "lockingv3.md", "lang_transaction.md", "isolation.md", "tempfiles.md",
    "c3ref_busy_timeout.md", "c3ref_busy_handler.md", "c3ref_wal_autocheckpoint.md",
    "c3ref_wal_checkpoint_v2.md", "foreignkeys.md", "autoinc.md", "lang_vacuum.md",
    "pgszchng2016.md", "limits.md", "datatype3.md", "withoutrowid.md", "stricttables.md",
    "lang_createtable.md", "rowidtable.md", "fasterthanfs.md",
]
QUESTION = "Which setting limits how long a connection waits on a locked database?"
HEAVY = ("torch", "transformers", "sentence-transformers")


def load() -> float:
    return round(os.getloadavg()[0], 2)


def clean_environment(scratch: Path) -> dict[str, str]:
    """The caller's environment without its virtualenv, with caches of this side's own."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PIP_CACHE_DIR")}
    venv_bin = str(Path(sys.prefix) / "bin")
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin and "/.venv/" not in p + "/")
    env.update({
        "PIP_CACHE_DIR": str(scratch / "pip-cache"),
        "XDG_CACHE_HOME": str(scratch / "user-cache"),
        "NUMBA_CACHE_DIR": str(scratch / "numba-cache"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    })
    return env


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed in {cwd} (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return round(seconds, 2), done.stdout


def disk_bytes(path: Path) -> int:
    return int(subprocess.run(["du", "-s", "--block-size=1", str(path)], capture_output=True, text=True, check=True).stdout.split()[0])


def largest(venv: Path, count: int = 15) -> dict[str, float]:
    """The ``count`` largest entries of the venv's site-packages, in MB."""
    (site,) = (venv / "lib").glob("python*/site-packages")
    sizes = {entry.name: disk_bytes(entry) for entry in site.iterdir()}
    return {name: round(size / 1e6, 1) for name, size in sorted(sizes.items(), key=lambda kv: -kv[1])[:count]}


def install(tree: Path, extras: str, env: dict[str, str]) -> float:
    """``scripts/setup EXTRAS``, or with ``plain`` the bare ``pip install .`` (a wheel, no extras)."""
    if extras != "plain":
        return timed(["bash", "scripts/setup", extras], tree, env)[0]
    start = time.perf_counter()
    timed(["python3", "-m", "venv", ".venv"], tree, env)
    timed([".venv/bin/python", "-m", "pip", "install", "--quiet", "--upgrade", "pip"], tree, env)
    timed([".venv/bin/python", "-m", "pip", "install", "--quiet", "."], tree, env)
    return round(time.perf_counter() - start, 2)


def measure(tree: Path, scratch: Path, extras: str, repeats: int) -> dict[str, Any]:
    env = clean_environment(scratch)
    result: dict[str, Any] = {"commit": resolve_in(tree), "load_before_install": load()}
    result["install_s"] = install(tree, extras, env)
    result["load_after_install"] = load()
    venv = tree / ".venv"
    result["venv_bytes"] = disk_bytes(venv)
    result["package_data_bytes"] = 0 if extras == "plain" else disk_bytes(tree / "arborgraph" / "data")
    result["largest_in_site_packages_mb"] = largest(venv)
    _, listing = timed([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"], tree, env)
    names = {item["name"].lower() for item in json.loads(listing)}
    result["packages"] = len(names)
    result["heavy_packages_present"] = sorted(name for name in HEAVY if name in names)
    cli = str(venv / "bin" / "arborgraph")
    pages = scratch / "pages"
    pages.mkdir(exist_ok=True)
    for page in PAGES:
        shutil.copyfile(tree / "examples" / "sqlite" / page, pages / page)
    index = scratch / "index"
    result["build_s"], _ = timed([cli, "build", str(pages), "--index", str(index), "--no-tree", "--no-graph", "--quiet"], tree, env)
    queries = []
    for _ in range(repeats):
        seconds, answer = timed([cli, "query", "--index", str(index), "--route", "lookup", "--top-k", "3", QUESTION], tree, env)
        if "busy" not in answer.lower():
            raise SystemExit(f"the query in {tree} did not find the busy-timeout page:\n{answer[:2000]}")
        queries.append(seconds)
    result["first_query_s_each"] = queries
    result["first_query_s_median"] = round(statistics.median(queries), 2)
    result["load_after_queries"] = load()
    return result


def resolve_in(tree: Path) -> str:
    return subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--before", default=None, help="commit of the before side (default: where this branch left main)")
    parser.add_argument("--after", default="HEAD")
    parser.add_argument(
        "--extras", default="all",
        help="extras passed to scripts/setup (scripts/demo uses all); 'plain': a bare `pip install .`, no extras",
    )
    parser.add_argument("--sides", default="before,after", help="which sides to measure")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--root", type=Path, default=Path("/work/venvs/bench-install"))
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    commits = {"before": resolve(args.before) if args.before else default_before(), "after": resolve(args.after)}
    commits = {side: commit for side, commit in commits.items() if side in args.sides.split(",")}
    if args.root.exists():
        raise SystemExit(f"{args.root} exists: remove it (or pass another --root)")
    args.root.mkdir(parents=True)
    sides: dict[str, Any] = {}
    try:
        for side, commit in commits.items():
            scratch = args.root / f"{side}-scratch"
            scratch.mkdir()
            with checkout(commit, args.root / side) as tree:
                print(f"{side}: installing {commit[:12]} with scripts/setup {args.extras}", flush=True)
                sides[side] = measure(tree, scratch, args.extras, args.repeats)
                print(side, json.dumps(sides[side]), flush=True)
            shutil.rmtree(scratch)
    finally:
        if args.root.exists() and not any(args.root.iterdir()):
            args.root.rmdir()
    report: dict[str, Any] = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "extras": args.extras,
        "method": (
            "each side: a detached git worktree, `bash scripts/setup EXTRAS` (or, for 'plain', `python3 -m venv` "
            "and `pip install .`) from no .venv with an empty pip cache (wheels from the configured package "
            "index), then a 20-page lookup-only build and fresh `arborgraph query` processes, with an empty "
            "user cache and numba cache of its own; sides run one after the other on a shared 2-core machine "
            "(load averages recorded)"
        ),
        **sides,
    }
    if "before" in sides and "after" in sides:
        before, after = sides["before"], sides["after"]
        report["ratios_after_over_before"] = {
            key: round(after[key] / before[key], 3)
            for key in ("install_s", "venv_bytes", "packages", "build_s", "first_query_s_median")
        }
        report["targets"] = {
            "venv_at_most_500_MB": after["venv_bytes"] <= 500 * 10**6,
            "install_at_most_half": after["install_s"] <= 0.5 * before["install_s"],
            "first_query_no_worse": after["first_query_s_median"] <= before["first_query_s_median"],
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in report.items() if k in ("ratios_after_over_before", "targets")}))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
