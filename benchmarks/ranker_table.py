"""Print the README's ranking tables (Markdown) from ``benchmarks/results/ranker.json``.

    python benchmarks/ranker_table.py [RESULTS] [--all]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "ranker.json"
TYPES = ("lookup", "drilldown", "relational", "global")
SHOWN = ("auto", "auto:no-ranker", "ranker:hybrid-only", "lookup", "tree", "graph", "global", "baseline:hybrid")


def diff(system: dict, key: str) -> str:
    d = system.get("vs_hybrid", {}).get(key)
    return "" if d is None else f"{d['diff']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"


def table(title: str, systems: dict) -> str:
    lines = [f"**{title}** (evidence recall at 1,500 words; difference from hybrid with its 95 % interval)", "",
             "| system | " + " | ".join(TYPES) + " | overall | vs hybrid, overall |",
             "|---|" + "---|" * (len(TYPES) + 2)]
    for name in SHOWN:
        if name not in systems:
            continue
        s = systems[name]
        cells = [f"{s['by_type'][t]['evidence_recall']:.3f}" if t in s["by_type"] else "" for t in TYPES]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {s['overall']['evidence_recall']:.3f} | {diff(s, 'overall')} |")
    return "\n".join(lines)


def per_manual(folds: dict) -> str:
    lines = ["| held-out manual | hybrid | auto (ranker) | vs hybrid | ranker, hybrid only | vs hybrid | auto, no ranker | vs hybrid |",
             "|---|---|---|---|---|---|---|---|"]
    for name, systems in folds.items():
        cells = [f"{systems['baseline:hybrid']['overall']['evidence_recall']:.3f}"]
        for sys_name in ("auto", "ranker:hybrid-only", "auto:no-ranker"):
            s = systems[sys_name]
            cells += [f"{s['overall']['evidence_recall']:.3f}", diff(s, "overall")]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--all"]
    data = json.loads(Path(args[0] if args else RESULTS).read_text())
    print(table(f"Pooled over {len(data['folds'])} held-out manuals ({sum(data['questions'][n] for n in data['folds'])} questions)", data["pooled"]))
    print()
    print(per_manual(data["folds"]))
    if "--all" not in sys.argv:
        return 0
    for name, systems in data["folds"].items():
        print()
        print(table(f"Held out: {name} ({data['questions'][name]} questions)", systems))
    for name, systems in data.get("eval_only", {}).items():
        print()
        print(table(f"Evaluation-only manual, never trained on: {name} ({data['questions'][name]} questions)", systems))
    return 0


if __name__ == "__main__":
    sys.exit(main())
