"""What naming a tree's summaries costs, against the full build of the same index.

The names (:func:`raptor.naming.name_tree`) are the one step the readable tree adds to
a no-LLM build (grouping a summary's sentences by page costs next to nothing). This
times it on built indexes' trees, in rounds alternating between the indexes given, and
sets it against a full build time from a manifest: each index's own, or (``--base``)
that of today's build of the same manual, cold caches included.

    python benchmarks/bench_tree_names.py --index sqlite=IDX --index git=IDX2 [--rounds 3]

Results go under their label into ``benchmarks/results/tree_names.json`` (labels not
given again are kept). Timings on a loaded machine are upper bounds.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "benchmarks" / "results" / "tree_names.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", action="append", required=True, metavar="LABEL=DIR")
    parser.add_argument("--base", action="append", default=[], metavar="LABEL=DIR",
                        help="today's build of LABEL's manual: its full (cold) build time is the one compared")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    import arborgraph
    from raptor.naming import name_tree

    trees, builds = {}, {}
    for item in args.index:
        label, _, path = item.partition("=")
        kb = arborgraph.open(Path(path))
        trees[label] = kb.explorer.tree_view().tree
        builds[label] = kb.index.manifest.timings_s
        kb.close()
    base_builds = {}
    for item in args.base:
        label, _, path = item.partition("=")
        kb = arborgraph.open(Path(path))
        base_builds[label] = kb.index.manifest.timings_s
        kb.close()
    seconds: dict[str, list[float]] = {label: [] for label in trees}
    for _ in range(args.rounds):
        for label, tree in trees.items():
            start = time.perf_counter()
            name_tree(tree)
            seconds[label].append(time.perf_counter() - start)
    result = json.loads(args.out.read_text()) if args.out.exists() else {}
    for label, tree in trees.items():
        naming = statistics.median(seconds[label])
        reference = base_builds.get(label, builds[label])
        total = reference.get("total")
        result[label] = {
            "date": dt.datetime.now().isoformat(timespec="seconds"),
            "load_avg": os.getloadavg(),
            "leaves": len(tree.leaves()),
            "summaries": len(tree.summaries()),
            "naming_s_rounds": [round(s, 3) for s in seconds[label]],
            "naming_s_median": round(naming, 3),
            "build_timings_s": builds[label],
            "compared_build_timings_s": reference,
            "naming_share_of_build": round(naming / total, 4) if total else None,
        }
        print(f"{label}: naming {naming:.2f} s = {result[label]['naming_share_of_build']:.1%} of the {total} s build")
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
