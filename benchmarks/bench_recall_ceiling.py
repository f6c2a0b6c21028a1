"""How far each retriever's evidence reaches: recall against the size of the window.

The quality targets of the tree, graph and router issues are evidence recall at a
1,500-word window. This script asks what a better *ordering* of each system's own
candidates could at most give: for ``auto``, every built route and the flat baselines,
it scores the same questions with the window at 750, 1,500, 3,000, 6,000 and 20,000
words (the harness's own :func:`arborgraph.query.evaluation.score_contexts`, each system asked
for 100 contexts, and the routes for a 40,000-token budget so that nothing is cut before
the window is). If a system's recall at 20,000 words is below a target at 1,500 words,
no reordering, fusion or composition of what that system retrieves can reach it: the
missing evidence is not among its candidates at all.

It also reports an oracle router at 1,500 words: per question the best of the forced
routes, which bounds what any router (including ``auto``) can reach with these routes.

Writes ``benchmarks/results/recall_ceiling.json``.

    python benchmarks/bench_recall_ceiling.py --index IDX [--questions FILE] [--out FILE]

IDX: a default build of the sample manual (``arborgraph build examples/sqlite --index IDX``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arborgraph.query.evaluation import EXPECTED_ROUTE, Question, load_questions, score_contexts  # noqa: E402
from arborgraph.kb import KnowledgeBase  # noqa: E402
from arborgraph.core.results import Context  # noqa: E402

WINDOWS = (750, 1500, 3000, 6000, 20000)
TOP_K = 100
ROUTE_BUDGET_TOKENS = 40_000
TARGET_WINDOW = 1500


def _contexts(kb: KnowledgeBase, system: str, question: str) -> list[Context]:
    if system.startswith("baseline:"):
        return kb.engine.lookup(question, mode=system.split(":", 1)[1], top_k=TOP_K)  # type: ignore[arg-type]
    res = kb.query(question, route=system, top_k=TOP_K, budget_tokens=ROUTE_BUDGET_TOKENS)  # type: ignore[arg-type]
    return res.contexts


def _recalls(contexts: list[Context], q: Question) -> list[float]:
    evidence = [e.text for e in q.evidence]
    return [score_contexts(contexts, evidence, w)[0] / len(evidence) for w in WINDOWS]


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True, help="an index of the sample manual")
    parser.add_argument("--questions", type=Path, default=ROOT / "benchmarks" / "questions" / "sqlite.jsonl")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "recall_ceiling.json")
    args = parser.parse_args(argv)
    if not (args.index / "CURRENT").is_file():
        parser.error(f"{args.index} is not an index (no CURRENT file)")

    kb = KnowledgeBase.open(args.index)
    questions = load_questions(args.questions)
    systems = ["auto", *kb.index.routes, "baseline:bm25", "baseline:dense", "baseline:hybrid"]
    if kb.index.mode.embedding is None:
        systems.remove("baseline:dense")

    started = dt.datetime.now(dt.timezone.utc)
    t0 = time.perf_counter()
    # system -> question id -> recall per window
    per_question: dict[str, dict[str, list[float]]] = {}
    for system in systems:
        per_question[system] = {q.id: _recalls(_contexts(kb, system, q.question), q) for q in questions}

    by_type: dict[str, dict[str, dict[str, float]]] = {}
    for system, rows in per_question.items():
        grouped: dict[str, list[list[float]]] = defaultdict(list)
        for q in questions:
            grouped[q.type].append(rows[q.id])
            grouped["overall"].append(rows[q.id])
        by_type[system] = {
            qtype: {str(w): _mean([r[i] for r in values]) for i, w in enumerate(WINDOWS)}
            for qtype, values in sorted(grouped.items())
        }

    at = WINDOWS.index(TARGET_WINDOW)
    routes = [s for s in systems if s in kb.index.routes]
    oracle: dict[str, list[float]] = defaultdict(list)
    expected: dict[str, list[float]] = defaultdict(list)
    for q in questions:
        best = max(per_question[r][q.id][at] for r in routes)
        oracle[q.type].append(best)
        oracle["overall"].append(best)
        route = EXPECTED_ROUTE[q.type]
        if route in per_question:
            value = per_question[route][q.id][at]
            expected[q.type].append(value)
            expected["overall"].append(value)

    load = os.getloadavg()
    report = {
        "what": "evidence recall of each system against the window size (words); oracle router at 1,500 words",
        "command": "python benchmarks/bench_recall_ceiling.py --index IDX",
        "index": str(args.index),
        "mode": kb.index.mode.label,
        "questions": len(questions),
        "date_utc": started.isoformat(timespec="seconds"),
        "seconds": round(time.perf_counter() - t0, 1),
        "load_average_at_end": [round(x, 2) for x in load],
        "windows_words": list(WINDOWS),
        "top_k": TOP_K,
        "route_budget_tokens": ROUTE_BUDGET_TOKENS,
        "recall_by_window": by_type,
        "oracle_router_1500": {k: _mean(v) for k, v in sorted(oracle.items())},
        "expected_route_1500": {k: _mean(v) for k, v in sorted(expected.items())},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    for system, table in by_type.items():
        print(f"{system:16s}", "  ".join(f"{t}:{'/'.join(f'{v:.2f}' for v in row.values())}" for t, row in table.items()))
    print("oracle router @1500:", report["oracle_router_1500"])
    print("expected route @1500:", report["expected_route_1500"])
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
