"""Compare two leave-one-manual-out runs of ``train_ranker.py`` question by question.

Each run's results file holds, per held-out manual and system, every question's
evidence found and route (``per_question``) and each fold's models. Given a run of
today's code over today's indexes (``--before``) and one of the new code over the new
indexes (``--after``), this gives for each system the paired difference of evidence
recall pooled over the folds (and per question type, per manual) with a paired
bootstrap interval, the route accuracy of ``auto`` in both, and the weights the fold
models give the tree's features: whether the tree gains weight in the ranker or not.

    python benchmarks/compare_rankings.py --before BEFORE.json --after AFTER.json \
        --out benchmarks/results/tree_retrieval.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arborgraph.query.evaluation import paired_bootstrap  # noqa: E402
from arborgraph.query.router import QUESTION_TYPE_TO_ROUTE  # noqa: E402

SYSTEMS = ("auto", "baseline:hybrid", "tree", "global", "auto:no-ranker")
TREE_FEATURES = ("tree_parent_gap", "tree_inv_rank")


def recalls(run: dict, system: str) -> dict[tuple[str, str], tuple[float, str, str | None]]:
    """(manual, question id) -> (recall, type, route) of ``system`` in ``run``."""
    out = {}
    for manual, systems in run["per_question"].items():
        for qid, (found, total, qtype, route) in systems.get(system, {}).items():
            out[(manual, qid)] = (found / total, qtype, route)
    return out


def difference(before: dict, after: dict, keys: list[tuple[str, str]]) -> dict:
    b = [before[k][0] for k in keys]
    a = [after[k][0] for k in keys]
    diff, low, high = paired_bootstrap(a, b)
    return {"questions": len(keys), "before": round(float(np.mean(b)), 4), "after": round(float(np.mean(a)), 4),
            "diff": diff, "low": low, "high": high}


def route_accuracy(scores: dict, keys: list[tuple[str, str]]) -> float | None:
    routed = [k for k in keys if scores[k][2] is not None]
    if not routed:
        return None
    return round(sum(scores[k][2] == QUESTION_TYPE_TO_ROUTE[scores[k][1]] for k in routed) / len(routed), 4)


def tree_weights(run: dict) -> dict:
    """Per fold, the full model's coefficients of the tree features (standardised)."""
    out = {}
    for manual, models in run.get("fold_models", {}).items():
        full = models["full"]
        coef = dict(zip(full["features"], full.get("coef", [])))
        out[manual] = {f: round(coef[f], 4) for f in TREE_FEATURES if f in coef}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    before_run, after_run = json.loads(args.before.read_text()), json.loads(args.after.read_text())
    result: dict = {"date": dt.datetime.now().isoformat(timespec="seconds"),
                    "before": str(args.before), "after": str(args.after), "systems": {}}
    for system in SYSTEMS:
        before, after = recalls(before_run, system), recalls(after_run, system)
        keys = sorted(set(before) & set(after))
        if not keys:
            continue
        entry = {"overall": difference(before, after, keys)}
        for qtype in sorted({before[k][1] for k in keys}):
            entry[qtype] = difference(before, after, [k for k in keys if before[k][1] == qtype])
        entry["per_manual"] = {m: difference(before, after, [k for k in keys if k[0] == m]) for m in sorted({k[0] for k in keys})}
        if system.startswith("auto"):
            entry["route_accuracy"] = {"before": route_accuracy(before, keys), "after": route_accuracy(after, keys)}
        result["systems"][system] = entry
    result["tree_feature_weights"] = {"before": tree_weights(before_run), "after": tree_weights(after_run)}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for system, entry in result["systems"].items():
        o = entry["overall"]
        print(f"{system:18} {o['before']:.3f} -> {o['after']:.3f}  {o['diff']:+.4f} [{o['low']:+.4f}, {o['high']:+.4f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
