"""Build time per stage, build peak memory, and query latency per route.

Builds an index over a manual (default: the Python 3.11 HTML docs from Debian's
``python3.11-doc``, ~6,000+ chunks; or any directory given with --docs) in a child
process whose peak RSS is sampled: a first lookup + tree build with cold embeddings
and an empty numba cache (what a user's first build costs, against the cold lookup-only
build), then with the embeddings cached: lookup only, lookup + tree (twice: the first
compiles umap-learn's numba code into a fresh numba cache, the second reuses it),
lookup + graph, and everything, so each structure's cost is measured against the
lookup-only build in one run. Then times queries on every route (p50/p95 over the question set,
after a warm-up). Writes benchmarks/results/build_and_query.json.

    python benchmarks/bench_build_and_query.py [--docs DIR] [--limit-docs N]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DOCS = Path("/usr/share/doc/python3.11/html")
QUESTIONS = ROOT / "benchmarks" / "questions"


def run_sampled(cmd: list[str], env: dict[str, str]) -> tuple[str, float, int]:
    """Run ``cmd``, sampling its peak RSS with its children's: (stdout, wall s, peak bytes).

    Exits with the command's stderr tail if it fails."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    ps = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            rss = ps.memory_info().rss + sum(c.memory_info().rss for c in ps.children(recursive=True))
            peak = max(peak, rss)
        except psutil.Error:
            pass
        time.sleep(0.2)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:5])} failed ({proc.returncode}): {err[-2000:]}")
    return out, time.perf_counter() - start, peak


def run_build(docs: Path, index: Path, flags: list[str], env: dict[str, str]) -> dict:
    """Run one CLI build, sampling the child's peak RSS (children included)."""
    cmd = [sys.executable, "-m", "arborgraph.cli", "build", str(docs), "--index", str(index), "--json", *flags]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out, wall, peak = run_sampled(cmd, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    report = json.loads(out)
    return {
        "flags": flags,
        "wall_s": round(wall, 2),
        # CPU seconds of the build process: on a shared machine, wall time mostly
        # measures the other jobs
        "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
        "peak_rss_mb": round(peak / 2**20, 1),
        "documents": report["documents"],
        "chunks": report["chunks"],
        "timings_s": report["timings_s"],
        "stages": report["stages"],
        "embeddings_computed": report["embeddings_computed"],
        "embeddings_cached": report["embeddings_cached"],
    }


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return round(ordered[k], 2)


def time_queries(index: Path, questions: list[str]) -> dict:
    sys.path.insert(0, str(ROOT))
    import arborgraph

    kb = arborgraph.open(index)
    results = {}
    for route in ["lookup", *[r for r in ("tree", "graph", "global") if r in kb.index.routes], "auto"]:
        for q in questions[:3]:  # warm-up: model load, lazy structures
            kb.query(q, route=route)
        times = []
        for q in questions:
            start = time.perf_counter()
            kb.query(q, route=route)
            times.append((time.perf_counter() - start) * 1000)
        results[route] = {"n": len(times), "p50_ms": percentile(times, 50), "p95_ms": percentile(times, 95)}
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    parser.add_argument("--limit-docs", type=int, default=0, help="copy only the first N files")
    parser.add_argument("--keep", type=Path, help="keep the full index here")
    parser.add_argument("--out", type=Path, help="results file (default: build_and_query.json, or query_latency.json with --query-index)")
    parser.add_argument("--query-index", type=Path, help="only time queries on this existing index")
    args = parser.parse_args()
    if args.query_index:
        questions = [json.loads(line)["question"] for name in ("sqlite_router.jsonl", "python_router.jsonl")
                     for line in (QUESTIONS / name).read_text().splitlines() if line.strip()]
        import arborgraph

        result = {
            "date": dt.datetime.now().isoformat(timespec="seconds"),
            "index": str(args.query_index),
            "chunks": arborgraph.open(args.query_index).info()["counts"]["chunks"],
            "load_avg_at_start": os.getloadavg(),
            "queries": time_queries(args.query_index, questions),
        }
        out = args.out or ROOT / "benchmarks" / "results" / "query_latency.json"
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(result, indent=2))
        return
    if not args.docs.exists():
        raise SystemExit(f"{args.docs} not found (apt-get install python3.11-doc, or pass --docs)")

    work = Path(tempfile.mkdtemp(prefix="arborgraph-bench-"))
    # manual pages only: Sphinx output also holds _sources/ (the same text again as
    # reST), _static/ and search indexes, which a user would not index
    docs = work / "docs"
    files = sorted(
        p for p in args.docs.rglob("*")
        if p.is_file() and p.suffix in (".html", ".md")
        and not any(part.startswith("_") for part in p.relative_to(args.docs).parts)
        and p.name not in ("genindex.html", "search.html", "py-modindex.html")
        and not p.name.startswith("genindex-")
    )
    for f in files[: args.limit_docs or None]:
        target = docs / f.relative_to(args.docs)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, target)
    # The user-level embedding cache of this run's own (XDG_CACHE_HOME): the machine's
    # would hold these pages' vectors from any earlier build, and no build would be cold
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NUMBA_CACHE_DIR": str(work / "numba"), "XDG_CACHE_HOME": str(work / "user-cache")}
    # First a warm-up build that fills the embedding cache, so the three measured builds
    # compare structure costs on equal terms; the cold embedding time is reported too.
    cold = run_build(docs, work / "warm", ["--no-tree", "--no-graph"], env)
    # A user's first build: cold embeddings and an empty numba cache together, so the
    # UMAP compile can overlap embedding (the build warms numba in the background).
    first = run_build(docs, work / "first", ["--no-graph"], {
        **env, "NUMBA_CACHE_DIR": str(work / "numba-first"), "XDG_CACHE_HOME": str(work / "user-cache-first"),
    })
    shared_cache = work / "warm" / "cache"
    builds = {}
    # The first tree build compiles umap-learn's numba code into the (fresh) numba cache,
    # as the first build after installing does; the repeat shows every later build.
    for name, flags in (("lookup", ["--no-tree", "--no-graph"]), ("lookup+tree", ["--no-graph"]),
                        ("lookup+tree:warm-numba", ["--no-graph"]), ("lookup+graph", ["--no-tree"]), ("all", [])):
        index = work / name
        index.mkdir()
        shutil.copytree(shared_cache, index / "cache")
        builds[name] = run_build(docs, index, flags, env)
    base = builds["lookup"]["wall_s"] + cold["timings_s"].get("embed", 0) - builds["lookup"]["timings_s"].get("embed", 0)
    questions = [json.loads(line)["question"] for name in ("sqlite_router.jsonl", "python_router.jsonl")
                 for line in (QUESTIONS / name).read_text().splitlines() if line.strip()]
    queries = time_queries(work / "all", questions)
    result = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_avg_at_start": os.getloadavg()},
        "docs": str(args.docs), "limit_docs": args.limit_docs,
        "cold_lookup_build": cold,
        "builds": builds,
        "lookup_build_with_cold_embeddings_s": round(base, 2),
        "first_build_lookup_tree": first,
        # both builds cold (embeddings; numba for the tree): what a first build costs
        "tree_adds_vs_lookup_first_build": round((first["wall_s"] - cold["wall_s"]) / cold["wall_s"], 3),
        "tree_adds_vs_lookup": round((builds["lookup+tree"]["wall_s"] - builds["lookup"]["wall_s"]) / base, 3),
        # with the numba cache the first tree build left (every build after the first)
        "tree_adds_vs_lookup_warm_numba": round(
            (builds["lookup+tree:warm-numba"]["wall_s"] - builds["lookup"]["wall_s"]) / base, 3),
        "numba_first_use_s": round(builds["lookup+tree"]["wall_s"] - builds["lookup+tree:warm-numba"]["wall_s"], 2),
        "graph_adds_vs_lookup": round((builds["lookup+graph"]["wall_s"] - builds["lookup"]["wall_s"]) / base, 3),
        # the whole build (tree and graph, numba's cache warm) against the flat lookup
        # build, both with cold embeddings: the "full build / flat baseline"
        "full_build_vs_lookup": round((base + builds["all"]["wall_s"] - builds["lookup"]["wall_s"]) / base, 3),
        "embedding_chunks_per_s": round(cold["chunks"] / cold["timings_s"]["embed"], 1) if cold["timings_s"].get("embed") else None,
        # the same ratios in CPU seconds, against the cold (embedding) lookup build
        "tree_adds_vs_lookup_cpu": round((builds["lookup+tree"]["cpu_s"] - builds["lookup"]["cpu_s"]) / cold["cpu_s"], 3),
        "tree_adds_vs_lookup_warm_numba_cpu": round(
            (builds["lookup+tree:warm-numba"]["cpu_s"] - builds["lookup"]["cpu_s"]) / cold["cpu_s"], 3),
        "graph_adds_vs_lookup_cpu": round((builds["lookup+graph"]["cpu_s"] - builds["lookup"]["cpu_s"]) / cold["cpu_s"], 3),
        "queries": queries,
    }
    out = args.out or ROOT / "benchmarks" / "results" / "build_and_query.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    keys = ("tree_adds_vs_lookup_first_build", "tree_adds_vs_lookup", "tree_adds_vs_lookup_cpu", "tree_adds_vs_lookup_warm_numba",
            "tree_adds_vs_lookup_warm_numba_cpu", "numba_first_use_s", "graph_adds_vs_lookup", "graph_adds_vs_lookup_cpu", "queries")
    print(json.dumps({k: result[k] for k in keys}, indent=2))
    if args.keep:
        shutil.copytree(work / "all", args.keep, dirs_exist_ok=True)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
