"""Where one question's time goes: wall time per stage of ``QueryEngine.query``.

Opens INDEX, warms the engine (as the service does), asks the question set once to
settle, then ``--rounds`` times more, timing each stage by wrapping the functions the
engine calls (a few microseconds per call; no sampling profiler, whose overhead falls
unevenly on Python and native code). Stages:

- ``embed``: the question's vector (the ONNX model);
- ``scores``: BM25 and dense scores over the collection;
- ``flat_hits``: the flat hybrid hits every route starts from;
- ``routing``: the router's decision;
- ``route_<name>``: the route's own retriever (tree walk, graph search, ...);
- ``ranking``: the ranking stage (signals, features, model, the ranked contexts);
- ``compose``, ``digest``, ``assemble``: candidates to the budgeted contexts;
- ``highlights``: the extractive answer's sentences;
- ``response``: the result as the service sends it (``QueryResult`` to JSON);
- ``other``: the rest of ``query`` (masks, checks, notes).

Reports mean milliseconds per question for each stage and the whole, with the share of
each. ``--eval-settings`` asks as ``arborgraph eval`` and ``bench_query_vs_hybrid.py`` do
(top 100, a 1,500-word window), else with the engine's defaults. ``--label`` names the run (before/after a change) in the results file, which
keeps every label written to it.

    python benchmarks/profile_query.py --index /work/idx/sqlite --label before
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUESTIONS = ROOT / "benchmarks" / "questions" / "sqlite.jsonl"
RESULTS = ROOT / "benchmarks" / "results" / "query_profile.json"

spent: dict[str, float] = defaultdict(float)
_active: list[str] = []


def timed(stage: str, fn: Any, *, outer: bool = False) -> Any:
    """``fn`` with its wall time added to ``stage`` (not when called inside a stage
    already timed: nested stages count once, in the outer one). An ``outer`` timer
    (the whole question) leaves the stages inside it timed."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if outer:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[stage] += time.perf_counter() - start
        if _active:
            return fn(*args, **kwargs)
        _active.append(stage)
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[stage] += time.perf_counter() - start
            _active.pop()

    return wrapper


def instrument() -> None:
    """Wrap the stages where the engine looks them up (module attributes and methods)."""
    from arborgraph.query import digest, engine, rerank, retrievers

    engine.QueryEngine.embed_query = timed("embed", engine.QueryEngine.embed_query)  # type: ignore[method-assign]
    engine.score_question = timed("scores", engine.score_question)
    retrievers.LookupRetriever.search = timed("flat_hits", retrievers.LookupRetriever.search)  # type: ignore[method-assign]
    engine.QueryEngine._decide = timed("routing", engine.QueryEngine._decide)  # type: ignore[method-assign]
    for name, cls in (
        ("lookup", retrievers.LookupRetriever), ("tree", retrievers.TreeRetriever),
        ("graph", retrievers.GraphRetriever), ("global", retrievers.GlobalRetriever),
    ):
        cls.retrieve = timed(f"route_{name}", cls.retrieve)  # type: ignore[method-assign]
    rerank.rerank = timed("ranking", rerank.rerank)
    engine.compose = timed("compose", engine.compose)
    engine.QueryEngine._digested = timed("digest", engine.QueryEngine._digested)  # type: ignore[method-assign]
    engine.assemble = timed("assemble", engine.assemble)
    digest.highlights = timed("highlights", digest.highlights)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--label", required=True, help="e.g. before / after")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--eval-settings", action="store_true", help="top 100, a 1,500-word window (arborgraph eval's)")
    args = parser.parse_args()
    asking: dict[str, int] = {"top_k": 100, "budget_tokens": 1500 * 4} if args.eval_settings else {}

    import arborgraph

    instrument()
    questions = [json.loads(line)["question"] for line in args.questions.read_text().splitlines() if line.strip()]
    kb = arborgraph.open(args.index)
    kb.engine.warm()
    for question in questions:  # settle: caches of the first questions are not the steady cost
        kb.query(question, **asking).model_dump_json()
    spent.clear()
    routes: dict[str, int] = defaultdict(int)
    whole: list[float] = []
    started = time.perf_counter()
    for _ in range(args.rounds):
        for question in questions:
            began = time.perf_counter()
            result = timed("query", kb.query, outer=True)(question, **asking)
            whole.append((time.perf_counter() - began) * 1000)
            routes[result.route] += 1
            timed("response", result.model_dump_json)()
    wall = time.perf_counter() - started
    asked = args.rounds * len(questions)
    total = spent.pop("query") + spent["response"]
    stages = {name: seconds for name, seconds in spent.items()}
    stages["other"] = total - sum(stages.values())
    run = {
        "when": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
        "index": args.index.name,
        "questions": {"file": args.questions.name, "n": len(questions), "rounds": args.rounds, "routes": dict(routes)},
        "load_avg_1m_at_end": round(os.getloadavg()[0], 2),
        "settings": asking or "the engine's defaults",
        "ms_per_question": round(total / asked * 1000, 2),
        "p95_ms_per_question": round(float(np.percentile(whole, 95)), 2),
        "wall_ms_per_question": round(wall / asked * 1000, 2),
        "stages_ms": {
            name: {"ms": round(seconds / asked * 1000, 2), "share": round(seconds / total, 3)}
            for name, seconds in sorted(stages.items(), key=lambda kv: -kv[1])
        },
    }
    kept = json.loads(args.out.read_text()) if args.out.exists() else {}
    kept[args.label] = run
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(kept, indent=2) + "\n")
    print(json.dumps(run, indent=2))


if __name__ == "__main__":
    main()
