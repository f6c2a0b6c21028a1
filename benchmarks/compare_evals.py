"""Compare two ``arborgraph eval --output`` reports of the same questions, system by system.

For each system both reports hold (auto, each route, the flat baselines), the paired
difference of evidence recall (after minus before) with its paired bootstrap interval,
overall and per question type: whether a change to the index moved retrieval, and by
more than chance.

    arborgraph eval --index BEFORE_INDEX questions.jsonl --output before.json
    arborgraph eval --index AFTER_INDEX questions.jsonl --output after.json
    python benchmarks/compare_evals.py before.json after.json --out benchmarks/results/NAME.json

``--pair BEFORE AFTER`` (repeated) compares several question sets at once, pooled (a
question is known by its set's index and its id) and set by set; the reciprocal rank
of the first evidence (MRR) and the router's accuracy (``route_ok``, auto) are compared
the same way.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arborgraph.query.evaluation import paired_bootstrap  # noqa: E402


def _recalls(system: dict[str, Any], measure: str = "recall", prefix: str = "") -> dict[str, tuple[str, float]]:
    def value(q: dict[str, Any]) -> float:
        if measure == "route":
            return float(bool(q["route_ok"]))
        if measure == "mrr":
            return 1.0 / q["first_hit_rank"] if q["first_hit_rank"] else 0.0
        return q["found"] / q["total"]

    return {f"{prefix}{q['id']}": (q["type"], value(q)) for q in system["per_question"]}


def compare(befores: list[dict[str, Any]], afters: list[dict[str, Any]], measure: str = "recall") -> dict[str, Any]:
    """Per system: ``measure`` (recall, or mrr) before and after over the questions of
    every pair of reports, and the paired difference with its interval."""
    out: dict[str, Any] = {}
    names = set.intersection(*(set(r["systems"]) for r in [*befores, *afters]))
    if measure == "route":  # only the router's own system says whether it chose well
        names = {n for n in names if all(q.get("route_ok") is not None for q in afters[0]["systems"][n]["per_question"])}
    for name in sorted(names):
        a: dict[str, tuple[str, float]] = {}
        b: dict[str, tuple[str, float]] = {}
        for before, after in zip(befores, afters, strict=True):
            prefix = f"{after['index']}/" if len(afters) > 1 else ""
            a |= _recalls(after["systems"][name], measure, prefix)
            b |= _recalls(before["systems"][name], measure, prefix)
        ids = sorted(set(a) & set(b))
        row: dict[str, Any] = {}
        for qtype in [*sorted({a[i][0] for i in ids}), "overall"]:
            picked = [i for i in ids if qtype == "overall" or a[i][0] == qtype]
            diff, low, high = paired_bootstrap([a[i][1] for i in picked], [b[i][1] for i in picked])
            row[qtype] = {
                "questions": len(picked),
                "before": round(sum(b[i][1] for i in picked) / len(picked), 4),
                "after": round(sum(a[i][1] for i in picked) / len(picked), 4),
                "diff": diff, "low": low, "high": high,
            }
        out[name] = row
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, nargs="?")
    parser.add_argument("after", type=Path, nargs="?")
    parser.add_argument("--pair", type=Path, nargs=2, action="append", default=[], metavar=("BEFORE", "AFTER"),
                        help="another pair of reports (repeat): compared pooled and one by one")
    parser.add_argument("--what", default="", help="what changed between the two indexes")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    pairs = ([(args.before, args.after)] if args.before and args.after else []) + [tuple(p) for p in args.pair]
    if not pairs:
        parser.error("give BEFORE AFTER, or --pair BEFORE AFTER")
    befores = [json.loads(b.read_text(encoding="utf-8")) for b, _ in pairs]
    afters = [json.loads(a.read_text(encoding="utf-8")) for _, a in pairs]
    result: dict[str, Any] = {
        "what": args.what,
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "before": [{"index": r["index"], "questions": r["questions"]} for r in befores],
        "after": [{"index": r["index"], "questions": r["questions"]} for r in afters],
        "systems": compare(befores, afters),
    }
    if len(pairs) > 1:
        result["mrr"] = compare(befores, afters, "mrr")
        result["route_accuracy"] = compare(befores, afters, "route")
        result["by_set"] = {a["index"]: compare([b], [a]) for b, a in zip(befores, afters, strict=True)}
    else:
        result["before"], result["after"] = result["before"][0], result["after"][0]
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for label, systems in (("recall", result["systems"]), ("mrr", result.get("mrr", {})),
                           ("route", result.get("route_accuracy", {}))):
        for name, row in systems.items():
            o = row["overall"]
            print(f"{label:6s} {name:24s} {o['before']:.3f} -> {o['after']:.3f}  {o['diff']:+.3f} [{o['low']:+.3f}, {o['high']:+.3f}]")


if __name__ == "__main__":
    main()
