"""Two runs of train_ranker.py compared question by question: the same system's evidence
recall in one run against the other, with paired bootstrap intervals.

    python benchmarks/compare_ranker_runs.py --before RUN_A.json --after RUN_B.json \\
        [--systems auto ranker:hybrid-only graph global] [--out FILE]

Both runs must hold per-question scores (train_ranker.py writes them for its folds and
eval-only manuals). Per held-out manual and pooled over the folds, and per eval-only
manual: recall before, after, and after minus before with its 95 % interval (seeded
resampling of the questions, :func:`arborgraph.query.evaluation.paired_bootstrap`).
Typical use: the same manuals indexed by two versions of the code.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arborgraph.query.evaluation import paired_bootstrap  # noqa: E402


def recalls(rows: list[list[Any]]) -> dict[str, tuple[str, float]]:
    """Question id -> (type, recall) from per-question rows [id, type, found, total]."""
    return {qid: (qtype, found / total if total else 0.0) for qid, qtype, found, total in rows}


def compare(before: dict[str, Any], after: dict[str, Any], system: str) -> dict[str, Any]:
    a, b = recalls(before[system]["per_question"]), recalls(after[system]["per_question"])
    ids = sorted(set(a) & set(b))
    out: dict[str, Any] = {}
    for qtype in [*sorted({a[i][0] for i in ids}), "overall"]:
        mine = [i for i in ids if qtype == "overall" or a[i][0] == qtype]
        diff, low, high = paired_bootstrap([b[i][1] for i in mine], [a[i][1] for i in mine])
        out[qtype] = {
            "questions": len(mine),
            "before": round(sum(a[i][1] for i in mine) / len(mine), 4),
            "after": round(sum(b[i][1] for i in mine) / len(mine), 4),
            "diff": diff, "low": low, "high": high,
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--systems", nargs="*", default=["auto", "ranker:hybrid-only", "lookup", "graph", "global"])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    before, after = json.loads(args.before.read_text()), json.loads(args.after.read_text())
    result: dict[str, Any] = {"before": str(args.before), "after": str(args.after), "folds": {}, "pooled": {}, "eval_only": {}}
    for part in ("folds", "eval_only"):
        for manual in sorted(set(before.get(part, {})) & set(after.get(part, {}))):
            result[part][manual] = {s: compare(before[part][manual], after[part][manual], s) for s in args.systems}
    folds = sorted(result["folds"])
    for system in args.systems:
        merged_before = {"x": {"per_question": [r for m in folds for r in before["folds"][m][system]["per_question"]]}}
        merged_after = {"x": {"per_question": [r for m in folds for r in after["folds"][m][system]["per_question"]]}}
        if folds:
            result["pooled"][system] = compare(merged_before, merged_after, "x")
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    for system, parts in result["pooled"].items():
        o = parts["overall"]
        print(f"pooled {system:20} {o['before']:.4f} -> {o['after']:.4f}  {o['diff']:+.4f} [{o['low']:+.4f}, {o['high']:+.4f}]")
    for manual, systems in result["eval_only"].items():
        o = systems["auto"]["overall"] if "auto" in systems else next(iter(systems.values()))["overall"]
        print(f"eval-only {manual}: auto {o['before']:.4f} -> {o['after']:.4f}  {o['diff']:+.4f} [{o['low']:+.4f}, {o['high']:+.4f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
