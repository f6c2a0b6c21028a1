"""Tally a blind rating of structure sheets: mean rating per index and per field, and
the difference between two indexes with a 95 % bootstrap interval.

The sheets come from ``structure_sample.py`` (items of two indexes of one manual shuffled
together, the key in a separate file); the rater writes ``ratings.json`` as
``{manual: {item id: {"name": n, "summary": n, "note": "..."}}}`` without seeing the key.
The two indexes' items are different nodes, so the interval resamples each side's items
on its own (an unpaired bootstrap of the difference of means). With more than one
manual, ``all manuals`` pools their items, each side's over all manuals.

    python benchmarks/tally_structure_rating.py --ratings DIR/ratings.json \
        --key git=DIR/git_key.json --key frr=DIR/frr_key.json --before-contains old \
        --out DIR/summary.json
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from statistics import mean
from typing import Any

FIELDS = ("name", "summary")


def item_sources(key: dict[str, Any]) -> dict[str, str]:
    """Item id -> the index it came from, for the keys of ``structure_sample.py`` (item ->
    index path) and of ``structure_sample_communities.py`` ({"items": {item: {"label"}}})."""
    if "items" in key:
        return {item: entry["label"] for item, entry in key["items"].items()}
    return {item: index if isinstance(index, str) else str(index) for item, index in key.items()}


def bootstrap_difference(before: list[float], after: list[float], *, rounds: int = 10000, seed: int = 0) -> tuple[float, float]:
    """A 95 % interval of mean(after) - mean(before), each side resampled on its own."""
    rng = random.Random(seed)
    diffs = sorted(
        mean(rng.choices(after, k=len(after))) - mean(rng.choices(before, k=len(before))) for _ in range(rounds)
    )
    return round(diffs[int(0.025 * rounds)], 3), round(diffs[int(0.975 * rounds) - 1], 3)


def tally(
    ratings: dict[str, Any], keys: dict[str, dict[str, Any]], before_contains: str, fields: tuple[str, ...] = FIELDS
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    pooled: dict[str, dict[str, list[float]]] = {}
    for manual, key in keys.items():
        rated = ratings[manual]
        sides: dict[str, dict[str, list[float]]] = {}
        for item, index in item_sources(key).items():
            if item not in rated:
                raise SystemExit(f"{manual}: {item} has no rating")
            side = "before" if before_contains in index else "after"
            for field in fields:
                if rated[item].get(field) is not None:
                    sides.setdefault(side, {}).setdefault(field, []).append(float(rated[item][field]))
        out[manual] = _entry(sides, fields)
        for side, values in sides.items():
            for field, marks in values.items():
                pooled.setdefault(side, {}).setdefault(field, []).extend(marks)
    if len(keys) > 1:
        out["all manuals"] = _entry(pooled, fields)
    return out


def _entry(sides: dict[str, dict[str, list[float]]], fields: tuple[str, ...]) -> dict[str, Any]:
    entry: dict[str, Any] = {"items": {s: len(v[fields[0]]) for s, v in sides.items()}}
    for field in fields:
        b, a = sides["before"][field], sides["after"][field]
        entry[field] = {
            "before": round(mean(b), 2), "after": round(mean(a), 2), "difference": round(mean(a) - mean(b), 2),
            "interval_95": bootstrap_difference(b, a),
        }
    return entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ratings", type=Path, required=True)
    parser.add_argument("--key", action="append", required=True, help="MANUAL=key.json")
    parser.add_argument("--before-contains", required=True, help="a key's index path holding this is the before side")
    parser.add_argument("--fields", default=",".join(FIELDS), help="the rated fields (communities: title,summary)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    fields = tuple(f for f in args.fields.split(",") if f)
    keys = {}
    for spec in args.key:
        manual, _, path = spec.partition("=")
        keys[manual] = json.loads(Path(path).read_text())
    result = tally(json.loads(args.ratings.read_text()), keys, args.before_contains, fields)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for manual, entry in result.items():
        for field in fields:
            f = entry[field]
            print(f"{manual} {field}: {f['before']} -> {f['after']} ({f['difference']:+.2f}, {f['interval_95']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
