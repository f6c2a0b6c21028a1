"""How readable built indexes' structures are: the structure check over each, one results file.

Usage::

    python benchmarks/bench_structure.py --index today-git=/path/to/index \\
        --index new-git=/path/to/other --out benchmarks/results/structure.json

Each ``--index LABEL=DIR`` is opened and checked (``arborgraph inspect --structure``:
tree-name length, strung page titles, sibling repeats, grounding, co-occurrence share,
page-structure headings among the best-connected entities, community-title shape) as
an anonymous caller. Results go under their label into ``--out``; labels already in the
file and not given again are kept, so runs over different builds accumulate. The
targets of issue #28 are checked and recorded beside each result.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import arborgraph  # noqa: E402

# issue #28's targets, as (metric path, comparison, bound)
TARGETS: list[tuple[str, str, float]] = [
    ("tree.name_words_median", "<=", 6),
    ("tree.strung_titles", "<=", 0.02),
    ("tree.sibling_repeats", "<=", 0.05),
    ("tree.grounding", ">=", 0.80),
    ("graph.co_occurrence", "<=", 0.50),
    ("graph.boilerplate_count", "<=", 2),
    ("communities.title_words_median", "<=", 8),
    ("communities.comma_lists", "<=", 0.10),
]


def _metric(scope: dict[str, Any], path: str) -> float | None:
    part, name = path.split(".")
    section = scope.get(part)
    if section is None:
        return None
    if name == "boilerplate_count":
        return len(section["boilerplate_in_top"])
    return section.get(name)


def targets_met(scope: dict[str, Any]) -> dict[str, bool | None]:
    met: dict[str, bool | None] = {}
    for path, op, bound in TARGETS:
        value = _metric(scope, path)
        met[f"{path} {op} {bound}"] = None if value is None else (value <= bound if op == "<=" else value >= bound)
    return met


def check(index_dir: Path) -> dict[str, Any]:
    with arborgraph.open(index_dir) as kb:
        report = kb.explorer.structure().model_dump(mode="json")
        report["built_by"] = {"arborgraph_version": kb.index.manifest.arborgraph_version, "mode": kb.index.mode.label}
        report["chunks"] = len(kb.index.store.chunk_ids)
    for scope in report["scopes"]:
        scope["targets"] = targets_met(scope)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", action="append", required=True, metavar="LABEL=DIR")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "structure.json")
    args = parser.parse_args()
    data: dict[str, Any] = json.loads(args.out.read_text()) if args.out.exists() else {}
    results = data.setdefault("indexes", {})
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    for item in args.index:
        label, sep, path = item.partition("=")
        if not sep or not label or not path:
            parser.error(f"--index {item!r}: expected LABEL=DIR")
        report = check(Path(path))
        report["checked_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        report["checked_by_commit"] = commit
        results[label] = report
        for scope in report["scopes"]:
            met = scope["targets"]
            print(f"{label} [{scope['scope']}]: {sum(bool(v) for v in met.values())}/{len(met)} targets met")
            for name, ok in met.items():
                print(f"  {'ok ' if ok else '-- ' if ok is None else 'NO '} {name}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
