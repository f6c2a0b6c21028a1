"""Compare two ``arborgraph eval --output`` reports of the same questions, system by system.

For each system both reports hold (auto, each route, the flat baselines), the paired
difference of evidence recall (after minus before) with its paired bootstrap interval,
overall and per question type: whether a change to the index moved retrieval, and by
more than chance.

    arborgraph eval --index BEFORE_INDEX questions.jsonl --output before.json
    arborgraph eval --index AFTER_INDEX questions.jsonl --output after.json
    python benchmarks/compare_evals.py before.json after.json --out benchmarks/results/NAME.json
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


def _recalls(system: dict[str, Any]) -> dict[str, tuple[str, float]]:
    return {str(q["id"]): (q["type"], q["found"] / q["total"]) for q in system["per_question"]}


def compare(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Per system: recall before and after, and the paired difference with its interval."""
    out: dict[str, Any] = {}
    for name in sorted(set(before["systems"]) & set(after["systems"])):
        a, b = _recalls(after["systems"][name]), _recalls(before["systems"][name])
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
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--what", default="", help="what changed between the two indexes")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    before = json.loads(args.before.read_text(encoding="utf-8"))
    after = json.loads(args.after.read_text(encoding="utf-8"))
    result = {
        "what": args.what,
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "before": {"index": before["index"], "questions": before["questions"]},
        "after": {"index": after["index"], "questions": after["questions"]},
        "systems": compare(before, after),
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for name, row in result["systems"].items():
        o = row["overall"]
        print(f"{name:24s} {o['before']:.3f} -> {o['after']:.3f}  {o['diff']:+.3f} [{o['low']:+.3f}, {o['high']:+.3f}]")


if __name__ == "__main__":
    main()
