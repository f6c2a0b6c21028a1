"""Process pool vs one process for the per-document stages other than embedding.

Stages timed, each as the build runs it: ``pool_start`` (process mode only: making
the pool; its workers start while loading runs, and their start-up CPU is counted in
``load``), ``load`` (the loader's sandbox process parses the files; on the pool,
documents are chunked there meanwhile, as in a build), ``chunk`` (what is left to
chunk in the parent: everything when serial), ``fit`` (the rule extractor learns its
term vocabulary from every chunk: on the pool, the term statistics are counted on the
workers and merged in the parent), ``extract`` (rule extraction per chunk, results
rebuilt in the parent) and ``pool_close`` (process mode only: shutting the pool down,
as a build does at its end). Not timed: embedding, and the steps over a whole scope
that run once in the parent whatever the executor (contradictions, BM25, entity
resolution, Leiden, reports, the RAPTOR tree).

Each round runs in a fresh interpreter (so every process round pays the fork server's
start-up), serial and process rounds alternate, and per stage the script records wall
seconds and CPU seconds: the parent (RUSAGE_SELF), reaped children (RUSAGE_CHILDREN:
the loader sandbox) and the pool (fork server and each worker, read with psutil while
they run; a worker's CPU in a stage is its busy time). CPU totals are the fair measure
of overhead on a shared machine; wall speedups only on a quiet one (the load average
at start and end is recorded). Every process round must produce the same chunks and
extractions as the serial one (compared by digest). ``wall_speedup_all_paired`` divides
each serial round's wall by that of the pool round run right after it (every stage
but embedding), so load that comes and goes between rounds sways it less.

Writes benchmarks/results/pool.json.

    python benchmarks/bench_pool.py [--docs DIR] [--limit-docs N] [--rounds 3] [--workers 2]
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MANUAL = ROOT / "examples" / "sqlite"
STAGES = ("pool_start", "load", "chunk", "fit", "extract", "pool_close")


class _Meter:
    """Wall and CPU seconds of each stage of one round, parent and every other process."""

    def __init__(self) -> None:
        self.stages: dict[str, dict[str, Any]] = {}
        self.pool_pids: list[int] = []

    def _pool_cpu(self) -> dict[int, float]:
        import psutil

        out: dict[int, float] = {}
        for pid in self.pool_pids:
            try:
                t = psutil.Process(pid).cpu_times()
                out[pid] = t.user + t.system
            except psutil.NoSuchProcess:  # exited (the pool closing): its last CPU is not seen
                pass
        return out

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        self_0 = resource.getrusage(resource.RUSAGE_SELF)
        kids_0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        pool_0 = self._pool_cpu()
        wall_0 = time.perf_counter()
        yield
        wall = time.perf_counter() - wall_0
        self_1 = resource.getrusage(resource.RUSAGE_SELF)
        kids_1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        pool_1 = self._pool_cpu()
        per_process = {pid: pool_1.get(pid, pool_0.get(pid, 0.0)) - pool_0.get(pid, 0.0) for pid in self.pool_pids}
        parent = self_1.ru_utime + self_1.ru_stime - self_0.ru_utime - self_0.ru_stime
        children = kids_1.ru_utime + kids_1.ru_stime - kids_0.ru_utime - kids_0.ru_stime
        pool = sum(per_process.values())
        self.stages[name] = {
            "wall_s": round(wall, 3),
            "cpu_parent_s": round(parent, 3),
            "cpu_children_s": round(children, 3),
            "cpu_pool_s": round(pool, 3),
            "cpu_total_s": round(parent + children + pool, 3),
            "cpu_per_pool_process_s": [round(v, 3) for v in per_process.values()],
        }


def one_round(mode: str, docs_dir: Path, workers: int) -> dict[str, Any]:
    """One measured pass over the stages in this process; ``mode`` serial or process."""
    from arborgraph.config import Config
    from arborgraph.pipeline.executor import ProcessExecutor, SerialExecutor, extract_many_on, fit_many_on
    from arborgraph.pipeline import chunk_remaining, load_documents
    from arborgraph.core.protocols import no_progress
    from graphrag import RuleExtractor
    from ingest import load_token_counter

    config = Config()
    meter = _Meter()
    executor: Any = SerialExecutor()
    if mode == "process":
        import multiprocessing.forkserver as fs

        with meter.stage("pool_start"):  # the build makes the pool first, then loads
            executor = ProcessExecutor(workers)
    try:
        with meter.stage("load"):
            docs, _, chunked, _ = load_documents([docs_dir], config, no_progress, executor=executor)
            if mode == "process":
                # known before the stage ends: their CPU since birth (start-up, chunking
                # while loading) counts here
                meter.pool_pids = [
                    fs._forkserver._forkserver_pid,  # type: ignore[attr-defined]
                    *sorted(executor._pool._processes),
                ]
        with meter.stage("chunk"):  # as arborgraph.pipeline.build_index does
            chunks = chunk_remaining(docs, chunked, config, load_token_counter())
        extractor = RuleExtractor()
        gc.disable()  # as arborgraph.pipeline.structures.run_graph_stage runs the graph stage
        parallel = executor.workers > 1
        with meter.stage("fit"):  # as graphrag.update.update_graph with the hooks structures passes
            if parallel:
                fit_many_on(executor)(extractor, chunks)
            else:
                extractor.fit(chunks)
        with meter.stage("extract"):
            if parallel:
                found = extract_many_on(executor)(extractor, chunks)
            else:
                found = [extractor.extract(c) for c in chunks]
        gc.enable()
    finally:
        if mode == "process":
            with meter.stage("pool_close"):  # a build closes its pool at the end
                executor.close()
        else:
            executor.close()
    digest = hashlib.sha256()
    for c in chunks:
        digest.update(c.model_dump_json().encode())
    for f in found:
        digest.update(repr(f).encode())
    return {
        "mode": mode, "documents": len(docs), "chunks": len(chunks),
        "digest": digest.hexdigest(), "stages": meter.stages,
    }


def _summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Per stage, the median over rounds of each measure, plus the totals."""
    out: dict[str, Any] = {}
    for stage in STAGES:
        runs = [r["stages"][stage] for r in rounds if stage in r["stages"]]
        if runs:
            out[stage] = {
                key: round(statistics.median(run[key] for run in runs), 3)
                for key in ("wall_s", "cpu_parent_s", "cpu_children_s", "cpu_pool_s", "cpu_total_s")
            }
            out[stage]["cpu_per_pool_process_s"] = [run["cpu_per_pool_process_s"] for run in runs]
    totals = [
        {key: sum(s[key] for s in r["stages"].values()) for key in ("wall_s", "cpu_total_s")} for r in rounds
    ]
    out["total"] = {key: round(statistics.median(t[key] for t in totals), 3) for key in ("wall_s", "cpu_total_s")}
    return out


def _sum(summary: dict[str, Any], key: str, stages: tuple[str, ...]) -> float:
    return sum(summary[s][key] for s in stages if s in summary)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=Path, default=MANUAL, help="a folder of documents (default: the sample manual)")
    parser.add_argument("--limit-docs", type=int, default=None, help="only the first N files (sorted)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "pool.json")
    parser.add_argument("--round", choices=("serial", "process"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.round:  # a child: one round, JSON on stdout
        print(json.dumps(one_round(args.round, args.docs, args.workers)))
        return

    work = Path(tempfile.mkdtemp(prefix="arborgraph-pool-"))
    try:
        docs = args.docs
        if args.limit_docs is not None:
            files = sorted(p for p in args.docs.rglob("*") if p.is_file() and not p.name.startswith("."))
            docs = work / "docs"
            for path in files[: args.limit_docs]:
                target = docs / path.relative_to(args.docs)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, target)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "NUMBA_CACHE_DIR": str(work / "numba")}
        load_start = os.getloadavg()
        rounds: dict[str, list[dict[str, Any]]] = {"serial": [], "process": []}
        for _ in range(args.rounds):
            for mode in ("serial", "process"):
                run = subprocess.run(
                    [sys.executable, __file__, "--round", mode, "--docs", str(docs), "--workers", str(args.workers)],
                    capture_output=True, text=True, env=env, cwd=ROOT,
                )
                if run.returncode != 0:
                    raise SystemExit(run.stderr[-3000:])
                rounds[mode].append(json.loads(run.stdout))
        load_end = os.getloadavg()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    digests = {r["digest"] for rs in rounds.values() for r in rs}
    if len(digests) != 1:
        raise SystemExit("the process pool produced other chunks or extractions than the serial run")
    serial, process = _summary(rounds["serial"]), _summary(rounds["process"])
    groups = {  # the pool is made before loading in a build, so its start counts there
        "load_plus_chunk": (("load", "chunk"), ("pool_start", "load", "chunk")),
        "fit": (("fit",), ("fit",)),
        "extract": (("extract",), ("extract",)),
        # without fit, as results before its counting ran on the pool were compared;
        # all_with_fit is every stage but embedding (the target)
        "per_document_stages": (
            ("load", "chunk", "extract"), ("pool_start", "load", "chunk", "extract", "pool_close")
        ),
        "all_with_fit": (STAGES, STAGES),
    }
    speedup = {
        name: round(_sum(serial, "wall_s", s) / max(_sum(process, "wall_s", p), 1e-9), 2)
        for name, (s, p) in groups.items()
    }
    # each serial round against the pool round run right after it: both saw about the
    # same machine, so on a shared one this varies less than the ratio of medians
    paired = [
        sum(s["stages"][k]["wall_s"] for k in STAGES if k in s["stages"])
        / max(sum(p["stages"][k]["wall_s"] for k in STAGES if k in p["stages"]), 1e-9)
        for s, p in zip(rounds["serial"], rounds["process"])
    ]
    cpu_ratio = {
        name: round(_sum(process, "cpu_total_s", p) / max(_sum(serial, "cpu_total_s", s), 1e-9), 3)
        for name, (s, p) in groups.items()
    }
    result = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "workers": args.workers,
        "docs": str(args.docs.relative_to(ROOT) if args.docs.is_relative_to(ROOT) else args.docs),
        "limit_docs": args.limit_docs,
        "documents": rounds["serial"][0]["documents"],
        "chunks": rounds["serial"][0]["chunks"],
        "rounds": args.rounds,
        "load_avg_at_start": [round(x, 2) for x in load_start],
        "load_avg_at_end": [round(x, 2) for x in load_end],
        "identical_output": True,
        "serial": serial,
        "process": process,
        "wall_speedup": speedup,
        "wall_speedup_all_paired_median": round(statistics.median(paired), 2),
        "wall_speedup_all_paired": [round(x, 2) for x in paired],
        "cpu_ratio_process_over_serial": cpu_ratio,
        # CPU seconds per wall second of the pool's rounds: near 2 when the pool had both
        # cores; near 1 means other work held one and the walls say little
        "process_cores_busy": round(
            _sum(process, "cpu_total_s", STAGES) / max(_sum(process, "wall_s", STAGES), 1e-9), 2
        ),
        "raw_rounds": rounds,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    keys = (
        "documents", "chunks", "wall_speedup", "wall_speedup_all_paired_median", "cpu_ratio_process_over_serial",
        "process_cores_busy",
        "load_avg_at_start", "load_avg_at_end",
    )
    print(json.dumps({k: result[k] for k in keys}))


if __name__ == "__main__":
    main()
