"""Every route on the Neo4j store (``query --store``) against the same index in process.

Usage::

    python benchmarks/bench_store.py --index IDX --questions QUESTIONS.jsonl --label NAME

Starts Neo4j 5.26 (``scripts/neo4j-server``) in a temporary folder, exports the index
with its search indexes (``export_index`` + ``export_search``, as ``arborgraph
export-neo4j --search`` does), then asks every question of ``--questions`` twice per
system, as ``arborgraph eval`` does (100 contexts, the word window the cut): ``auto``
in process (``kb.query``) and on the store (``kb.query_store``). Scored like ``arborgraph
eval``: the share of each question's evidence strings in the first ``--budget-words``
words, by type, with the paired bootstrap interval of store minus in process; the
routes each picked. Latency: every question once more with the default settings on
``auto`` and on each route the index has, after a warm-up, in process and on the store
(p50/p95 in ms).

Writes ``benchmarks/results/store_<label>.json``. The target (issue #40): the store's
recall within 0.02 of in process, the tree, graph and global routes used, and its p95 at
most twice the in-process p95.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "support"))

from arborgraph import neo4j as X  # noqa: E402
from arborgraph.query.evaluation import load_questions, paired_bootstrap, score_contexts  # noqa: E402

TOP_K = 100  # as arborgraph eval asks: the word window, not the number of contexts, is the cut


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--label", required=True)
    parser.add_argument("--budget-words", type=int, default=1500)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    import arborgraph
    from neo4j_server import start_neo4j

    questions = load_questions(args.questions)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        server = start_neo4j(Path(tmp) / "neo4j")
        try:
            t0 = time.perf_counter()
            exported = X.export_index(args.index, server.driver())
            export_s = time.perf_counter() - t0
            search = X.export_search(args.index, server.driver())
            search_s = time.perf_counter() - t0 - export_s
            store = X.Neo4jStore(server.driver())
            kb = arborgraph.open(args.index)
            budget_tokens = args.budget_words * 4
            recall: dict[str, list[float]] = {"in_process": [], "store": []}
            routes: dict[str, Counter[str]] = {"in_process": Counter(), "store": Counter()}
            by_type: dict[str, dict[str, list[float]]] = {}
            same_route = 0
            for q in questions:
                evidence = [e.text for e in q.evidence]
                local = kb.query(q.question, top_k=TOP_K, budget_tokens=budget_tokens)
                remote = kb.query_store(q.question, store, top_k=TOP_K, budget_tokens=budget_tokens)
                for name, res in (("in_process", local), ("store", remote)):
                    found, _ = score_contexts(res.contexts, evidence, args.budget_words)
                    recall[name].append(found / len(evidence))
                    routes[name][res.route] += 1
                    by_type.setdefault(q.type, {"in_process": [], "store": []})[name].append(found / len(evidence))
                same_route += local.route == remote.route
            diff, low, high = paired_bootstrap(recall["store"], recall["in_process"])
            # latency with the default settings, after a warm-up of each, per route
            per_route: dict[str, dict[str, list[float]]] = {}
            for route in ("auto", *kb.index.routes):
                kb.query(questions[0].question, route)
                kb.query_store(questions[0].question, store, route)
                local_ms, store_ms = [], []
                for q in questions:
                    t0 = time.perf_counter()
                    kb.query(q.question, route)
                    t1 = time.perf_counter()
                    kb.query_store(q.question, store, route)
                    t2 = time.perf_counter()
                    local_ms.append((t1 - t0) * 1000)
                    store_ms.append((t2 - t1) * 1000)
                per_route[route] = {"in_process": local_ms, "store": store_ms}
            kb.close()
        finally:
            server.stop()
    n = len(questions)
    result: dict[str, Any] = {
        "benchmark": "every route on the Neo4j store (query --store) against the same index in process",
        "index": str(args.index),
        "questions_file": str(args.questions),
        "questions": n,
        "budget_words": args.budget_words,
        "export_s": round(export_s, 2),
        "search_export_s": round(search_s, 2),
        "exported_nodes": exported.nodes.created,
        "embeddings_written": search.embeddings,
        "evidence_recall": {name: round(sum(v) / n, 4) for name, v in recall.items()},
        "store_minus_in_process": {"diff": diff, "interval_95": [low, high]},
        "by_type": {
            t: {name: round(sum(v) / len(v), 4) for name, v in d.items()} | {"questions": len(d["store"])}
            for t, d in sorted(by_type.items())
        },
        "routes": {name: dict(sorted(c.items())) for name, c in routes.items()},
        "same_route_share": round(same_route / n, 4),
        "latency_ms": {
            name: {"p50": percentile(per_route["auto"][name], 0.5), "p95": percentile(per_route["auto"][name], 0.95)}
            for name in ("in_process", "store")
        },
        "latency_ms_by_route": {
            route: {
                name: {"p50": percentile(ms, 0.5), "p95": percentile(ms, 0.95)} for name, ms in times.items()
            } | {"p95_ratio": round(percentile(times["store"], 0.95) / percentile(times["in_process"], 0.95), 2)}
            for route, times in per_route.items()
        },
        "targets": {"recall_within": 0.02, "store_p95_at_most_x_in_process": 2.0},
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_avg_before": [round(x, 2) for x in load_before],
            "load_avg_after": [round(x, 2) for x in os.getloadavg()],
        },
    }
    result["latency_ms"]["p95_ratio"] = round(result["latency_ms"]["store"]["p95"] / result["latency_ms"]["in_process"]["p95"], 2)
    out = args.out or ROOT / "benchmarks" / "results" / f"store_{args.label}.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("evidence_recall", "store_minus_in_process", "routes", "latency_ms")}))


if __name__ == "__main__":
    main()
