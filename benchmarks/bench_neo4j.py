"""Benchmark an index in real Neo4j: export throughput, re-export, GDS Leiden against
leidenalg, and the graph route on the server against the in-memory one.

Usage::

    python benchmarks/bench_neo4j.py --index IDX               # IDX: arborgraph build examples/sqlite --index IDX
    python benchmarks/bench_neo4j.py                           # builds the 20-page slice instead
    python benchmarks/bench_neo4j.py --index IDX --rounds 3 --questions benchmarks/questions/sqlite.jsonl

Starts Neo4j 5.26 with GDS 2.13 (``scripts/neo4j-server``, Neo4j's in-process test
server, a 1 GB heap) in a temporary folder, then per round (after ``--warmup`` rounds
that are not counted: the JVM compiles its hot code in the first ones): empties the database (data,
constraints and indexes: a fresh one), exports the whole index, exports it again
(nothing changes: the cost of the incremental check), and runs GDS's hierarchical Leiden
on the exported entity graph (``arborgraph.neo4j.gds``). Then, once: the index's own
Leiden (leidenalg, hierarchical as the build runs it, and its top level alone) on the
same edges; and every question of ``--questions`` on the graph route, in memory and
with the walk on Neo4j (``graph_backend``), comparing the top-5 contexts and timing both;
and the lookup route on the store (``query --store``, after ``export_search``) against
the in-process lookup route, the same way, with the share of each question's evidence
sentences found in the first 5 and 20 contexts of each.

``nodes_per_s`` is nodes / seconds from the export's start until its last node is
written (connecting, schema, reading the server's state, the diff and sending
included); ``relationships_per_s`` is relationships / seconds of the relationship stage.
GDS's modularity and the index's are computed by one function over the same graph
(``partition_modularity``); the target is GDS >= 0.95 x the index's. The graph-route
target is at least 80 % of the in-memory route's top-5 contexts.

Writes ``benchmarks/results/neo4j.json`` (or ``--out``). Timings depend on the machine's
load, which is recorded with them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "support"))

from bench_neo4j_export import StageClock, build_index  # noqa: E402

from arborgraph import neo4j as X  # noqa: E402
from arborgraph.index.store import open_generation  # noqa: E402

TARGET_MODULARITY_RATIO = 0.95
TARGET_TOP5_SHARED = 0.80


def median(values: list[float]) -> float:
    return round(statistics.median(values), 4)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 4)


def export_round(server: Any, records: X.GraphRecords, batch_size: int, workers: int) -> dict[str, float]:
    server.clear()
    driver = server.driver()
    pid = int((server.directory / "pid").read_text())
    clock = StageClock(pid)
    t0 = time.perf_counter()
    report = X.export_records(records, driver, batch_size=batch_size, workers=workers, progress=clock)
    total = time.perf_counter() - t0
    assert report.nodes.created == len(records.nodes) and report.relationships.created == len(records.rels)
    t1 = time.perf_counter()
    again = X.export_records(records, driver, batch_size=batch_size, workers=workers)
    unchanged = time.perf_counter() - t1
    assert again.statements == 0
    node_phase = clock.end[X.STAGE_NODES] - t0
    rel_stage = clock.seconds(X.STAGE_RELATIONSHIPS)
    return {
        "nodes_s": node_phase,
        "nodes_per_s": len(records.nodes) / node_phase,
        "node_stage_per_s": len(records.nodes) / clock.seconds(X.STAGE_NODES),
        "relationships_s": rel_stage,
        "relationships_per_s": len(records.rels) / rel_stage,
        "export_s": total,
        "records_per_s": (len(records.nodes) + len(records.rels)) / total,
        "client_cpu_s": sum(c["client"] for c in clock.cpu.values()),
        "server_cpu_s": sum(c["server"] for c in clock.cpu.values()),
        "statements": report.statements,
        "unchanged_reexport_s": unchanged,
    }


def gds_round(server: Any, index: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    reports = X.gds_leiden_index(index, server.driver()).reports
    wall = time.perf_counter() - t0
    biggest = max(reports, key=lambda r: r.nodes)
    return {**biggest.as_dict(), "wall_s": round(wall, 3)}


def leidenalg_times(index: Path, rounds: int) -> dict[str, Any]:
    """The index's own Leiden on the same graph: hierarchical (as the build runs it)
    and its top level alone (one leidenalg partition of the whole graph)."""
    import igraph as ig
    import leidenalg

    from arborgraph.index.manifest import index_manifest
    from arborgraph.index.scoped import load_scopes
    from graphrag.build import detect_communities, leiden_edges
    from graphrag.config import GraphConfig

    generation = open_generation(index)
    config = GraphConfig.model_validate(index_manifest(generation).config["graph"])
    kg = max((s.graph for s in load_scopes(generation)), key=lambda g: len(g.entities))
    edges = leiden_edges(kg.relations, config)
    names = sorted({v for a, b, _ in edges for v in (a, b)})
    at = {n: i for i, n in enumerate(names)}
    graph = ig.Graph(n=len(names), edges=[(at[a], at[b]) for a, b, _ in edges], directed=False)
    graph.es["weight"] = [w for _, _, w in edges]
    hierarchical, top = [], []
    top_modularity = 0.0
    for _ in range(rounds):
        t0 = time.perf_counter()
        detect_communities(kg.entities, kg.relations, config)
        hierarchical.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        part = leidenalg.find_partition(
            graph, leidenalg.RBConfigurationVertexPartition, weights="weight",
            resolution_parameter=config.resolution, n_iterations=config.leiden_iterations, seed=config.seed,
        )
        top.append(time.perf_counter() - t0)
        top_modularity = X.partition_modularity(edges, dict(zip(names, part.membership)), config.resolution)
    return {
        "hierarchical_s": median(hierarchical),
        "top_level_s": median(top),
        "top_level_modularity": round(top_modularity, 6),
        "leiden_iterations": config.leiden_iterations,
    }


def graph_route(server: Any, index: Path, questions: list[str]) -> dict[str, Any]:
    import arborgraph

    os.environ["NEO4J_PASSWORD"] = server.password  # the graph_backend section's password_env
    memory_kb = arborgraph.open(index)
    server_kb = memory_kb.with_settings({"graph_backend": {"uri": server.uri}})
    shared, same_order, memory_ms, server_ms = [], 0, [], []
    for q in questions:  # a warm-up of both first: the first query pays for loading
        memory_kb.query(q, route="graph")
        server_kb.query(q, route="graph")
        break
    for q in questions:
        t0 = time.perf_counter()
        mem = memory_kb.query(q, route="graph")
        t1 = time.perf_counter()
        srv = server_kb.query(q, route="graph")
        t2 = time.perf_counter()
        memory_ms.append((t1 - t0) * 1000)
        server_ms.append((t2 - t1) * 1000)
        top_m = [(c.kind, c.node_id) for c in mem.contexts[:5]]
        top_s = [(c.kind, c.node_id) for c in srv.contexts[:5]]
        if top_m:
            shared.append(len(set(top_m) & set(top_s)) / len(top_m))
        same_order += top_m == top_s
    server_kb.close()
    memory_kb.close()
    mean_shared = sum(shared) / len(shared) if shared else float("nan")
    return {
        "questions": len(questions),
        "top5_shared_mean": round(mean_shared, 4),
        "top5_identical": same_order,
        "meets_target": mean_shared >= TARGET_TOP5_SHARED,
        "memory_ms": {"p50": percentile(memory_ms, 0.5), "p95": percentile(memory_ms, 0.95)},
        "neo4j_ms": {"p50": percentile(server_ms, 0.5), "p95": percentile(server_ms, 0.95)},
    }


def _evidence_found(contexts: list[Any], evidence: list[dict[str, str]]) -> float:
    """Share of the question's evidence sentences found in ``contexts`` (whitespace and
    case aside)."""
    if not evidence:
        return float("nan")
    texts = [" ".join(c.text.split()).lower() for c in contexts]
    wanted = [" ".join(e["text"].split()).lower() for e in evidence]
    return sum(any(w in t for t in texts) for w in wanted) / len(wanted)


def store_lookup(server: Any, index: Path, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The lookup route with the store's candidates (``query --store``) against the in-process lookup
    route: the search indexes' export time, top-5 agreement, evidence recall at 5 and 20
    contexts, latency."""
    import arborgraph

    questions = [r["question"] for r in records]
    t0 = time.perf_counter()
    written = X.export_search(index, server.driver())
    export_s = time.perf_counter() - t0
    store = X.Neo4jStore(server.driver())
    kb = arborgraph.open(index)
    kb.query(questions[0], route="lookup")
    kb.query_store(questions[0], store, "lookup")  # warm-ups
    shared, local_ms, store_ms = [], [], []
    recall: dict[str, list[float]] = {"in_process@5": [], "store@5": [], "in_process@20": [], "store@20": []}
    for record in records:
        q = record["question"]
        t0 = time.perf_counter()
        local = kb.query(q, route="lookup", top_k=20)
        t1 = time.perf_counter()
        remote = kb.query_store(q, store, "lookup", top_k=20)
        t2 = time.perf_counter()
        local_ms.append((t1 - t0) * 1000)
        store_ms.append((t2 - t1) * 1000)
        ids = {c.node_id for c in local.contexts[:5]}
        if ids:
            shared.append(len(ids & {c.node_id for c in remote.contexts[:5]}) / len(ids))
        evidence = record.get("evidence") or []
        if evidence:
            for k in (5, 20):
                recall[f"in_process@{k}"].append(_evidence_found(local.contexts[:k], evidence))
                recall[f"store@{k}"].append(_evidence_found(remote.contexts[:k], evidence))
    kb.close()
    return {
        "embeddings_written": written.embeddings,
        "search_export_s": round(export_s, 3),
        "top5_shared_with_in_process_lookup": round(sum(shared) / len(shared), 4) if shared else None,
        "evidence_recall": {k: round(sum(v) / len(v), 4) for k, v in recall.items() if v},
        "questions_with_evidence": len(recall["store@5"]),
        "in_process_lookup_ms": {"p50": percentile(local_ms, 0.5), "p95": percentile(local_ms, 0.95)},
        "store_lookup_ms": {"p50": percentile(store_ms, 0.5), "p95": percentile(store_ms, 0.95)},
        "note": "the lookup route of each, the store's ranking its flat hits among the store's candidates; 20 contexts asked of each",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, help="an index directory (default: build the 20-page slice)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1, help="rounds run first and not counted (the JVM's JIT warms up)")
    parser.add_argument("--batch-size", type=int, default=X.DEFAULT_BATCH)
    parser.add_argument("--workers", type=int, default=X.DEFAULT_WORKERS)
    parser.add_argument("--questions", type=Path, default=ROOT / "benchmarks" / "questions" / "sqlite.jsonl")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "neo4j.json")
    args = parser.parse_args()

    from neo4j_server import start_neo4j

    asked = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    questions = [r["question"] for r in asked]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        index = args.index or build_index(workdir / "index")
        records = X.index_records(open_generation(index))
        t0 = time.perf_counter()
        server = start_neo4j(workdir / "neo4j")
        start_s = time.perf_counter() - t0
        try:
            with server.driver().session() as session:
                versions = {
                    "neo4j": session.run("CALL dbms.components() YIELD versions RETURN versions[0] AS v").single()["v"],
                    "gds": session.run("RETURN gds.version() AS v").single()["v"],
                }
            exports, gds = [], []
            for _ in range(args.warmup):
                export_round(server, records, args.batch_size, args.workers)
                gds_round(server, index)
            for _ in range(args.rounds):
                exports.append(export_round(server, records, args.batch_size, args.workers))
                gds.append(gds_round(server, index))
            route = graph_route(server, index, questions)
            store = store_lookup(server, index, asked)
        finally:
            server.stop()
    leiden = leidenalg_times(index, args.rounds)
    load_after = os.getloadavg()

    import neo4j

    ratio = median([g["modularity_ratio"] for g in gds])
    result = {
        "benchmark": "an index in real Neo4j (in-process test server, scripts/neo4j-server): export, re-export, GDS Leiden, graph route",
        "index": str(args.index) if args.index else "built from the 20-page slice of examples/sqlite",
        "nodes": len(records.nodes),
        "relationships": len(records.rels),
        "nodes_by_label": dict(Counter(n.label for n in records.nodes)),
        "relationships_by_type": dict(Counter(r.type for r in records.rels)),
        "export": {
            "rounds": [{k: round(float(v), 4) for k, v in r.items()} for r in exports],
            "median": {k: median([float(r[k]) for r in exports]) for k in exports[0]},
        },
        "gds_leiden": {
            "rounds": gds,
            "median_gds_seconds": median([g["gds_seconds"] for g in gds]),
            "gds_modularity": gds[-1]["gds_modularity"],
            "index_modularity": gds[-1]["index_modularity"],
            "modularity_ratio": ratio,
            "target_ratio": TARGET_MODULARITY_RATIO,
            "meets_target": ratio >= TARGET_MODULARITY_RATIO,
            "leidenalg": leiden,
        },
        "store_lookup": store,
        "graph_route": {**route, "questions_file": str(args.questions.resolve().relative_to(ROOT)), "target_top5_shared": TARGET_TOP5_SHARED},
        "settings": {
            "rounds": args.rounds,
            "warmup_rounds": args.warmup,
            "batch_size": args.batch_size,
            "workers": args.workers,
            "server": versions,
            "server_start_s": round(start_s, 2),
            "neo4j_driver": neo4j.__version__,
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
    m = result["export"]["median"]
    print(f"{result['nodes']} nodes, {result['relationships']} relationships: {m['nodes_per_s']:.0f} nodes/s, "
          f"{m['relationships_per_s']:.0f} relationships/s, export {m['export_s']:.2f} s, unchanged re-export "
          f"{m['unchanged_reexport_s']:.2f} s")
    g = result["gds_leiden"]
    print(f"GDS Leiden {g['median_gds_seconds']:.2f} s, modularity {g['gds_modularity']:.4f} vs the index's "
          f"{g['index_modularity']:.4f} (ratio {ratio:.3f}); leidenalg {leiden['hierarchical_s']:.2f} s hierarchical")
    print(f"graph route: top-5 shared {route['top5_shared_mean']:.2%}, p95 {route['neo4j_ms']['p95']} ms on Neo4j vs "
          f"{route['memory_ms']['p95']} ms in memory -> {args.out}")


if __name__ == "__main__":
    main()
