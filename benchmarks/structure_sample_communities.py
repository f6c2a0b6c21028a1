"""A seeded sample of communities for a blind rating of their names and reports.

    python benchmarks/structure_sample_communities.py --index today=IDX_A --index new=IDX_B \\
        --n 20 --seed 0 --out-dir /tmp/rating

From every index, ``--n`` community reports are drawn (seeded, from those sorted by
community id); all of them are then shuffled together and numbered. ``sheet.md`` is
what the rater sees: per item its title and its summary, with a place for two marks
(1-5; 5 = as useful as a good table-of-contents entry, for the title; as useful as a
good overview paragraph, for the summary), and nothing that says which index it came
from. ``key.json`` maps each item to its index label and community, for scoring after
the rating. The rater should be someone who did not write either version.
``--every-community`` draws from all communities (those without a report too) and reads
the tables directly, so indexes of an earlier schema can be drawn from.
``--index new=DIR+recompute`` draws from DIR with its community names and extractive
reports written again by the code checked out (the stored graph kept; the same
communities as ``--index today=DIR``). ``--changed-only`` (with ``--every-community``
and indexes of the same communities) draws only from the communities whose title or
summary differ between the indexes: a change that touches a few communities is rated
on those, where a draw from all would hold one or two of them.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import arborgraph  # noqa: E402


RECOMPUTE = "+recompute"


def draw(index: Path, n: int, seed: int, recompute: bool = False) -> list[dict[str, Any]]:
    """``n`` reports of ``index``'s public graph, as rater-facing items; with
    ``recompute``, its names and extractive reports are written again with this
    checkout's code first (:mod:`benchmarks.restructure`)."""
    with arborgraph.open(index) as kb:
        kg = kb.explorer.graph_view().kg
        if recompute:
            from benchmarks.restructure import leaf_headings, rewritten_reports

            rewritten_reports(kg, leaf_headings(kb.explorer.tree_view().tree))
        reports = [kg.reports[c] for c in sorted(kg.reports)]
        picked = random.Random(seed).sample(reports, min(n, len(reports)))
        return [
            {
                "community": r.community_id,
                "level": r.level,
                "members": len(kg.communities[r.community_id].members),
                "title": r.title,
                "summary": r.summary,
            }
            for r in picked
        ]


def draw_every(index: Path, n: int, seed: int, among: set[int] | None = None) -> list[dict[str, Any]]:
    """``n`` communities of ``index``'s public graph drawn from all of them (or from the
    ids in ``among``), not only those with a report: what a reader of the explorer
    meets, a community without a title or report included ("(no title)", "(no
    report)"). Read from the tables, so an index of an older schema (built by an
    earlier version) is drawn from too."""
    items = every_community(index)
    if among is not None:
        items = [it for it in items if it["community"] in among]
    return random.Random(seed).sample(items, min(n, len(items)))


def every_community(index: Path) -> list[dict[str, Any]]:
    """Every community of ``index``'s public graph as a rater-facing item, by id."""
    import pyarrow.parquet as pq

    from graphrag import schema as G

    gen = index / (index / "CURRENT").read_text().strip() / "tables"
    coms = pq.read_table(gen / f"{G.COMMUNITIES}.s0.parquet").to_pylist()
    reports = {r[G.COMMUNITY_ID]: r for r in pq.read_table(gen / f"{G.COMMUNITY_REPORTS}.s0.parquet").to_pylist()}
    coms.sort(key=lambda c: c[G.ID])
    return [
        {
            "community": c[G.ID],
            "level": c[G.LEVEL],
            "members": len(c[G.MEMBERS]),
            "title": (reports.get(c[G.ID]) or {}).get(G.TITLE) or "(no title)",
            "summary": (reports.get(c[G.ID]) or {}).get(G.SUMMARY) or "(no report)",
        }
        for c in coms
    ]


def changed_communities(indexes: list[Path]) -> set[int]:
    """The ids of the communities whose title or summary is not the same in all of
    ``indexes``."""
    seen = [{it["community"]: (it["title"], it["summary"]) for it in every_community(index)} for index in indexes]
    return {c for c in seen[0] if any(other.get(c) != seen[0][c] for other in seen[1:])}


def sheet(items: list[dict[str, Any]]) -> str:
    lines = [
        "# Community names and summaries: blind rating",
        "",
        "Rate each title and each summary from 1 to 5: 5 = as useful as a good table-of-contents",
        "entry (title) or a good overview paragraph (summary) for someone exploring the manual.",
        "",
    ]
    for item in items:
        lines += [
            f"## {item['item']}",
            "",
            f"**Title:** {item['title']}",
            "",
            f"**Summary:** {item['summary']}",
            "",
            "title: _  summary: _",
            "",
        ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", action="append", required=True, metavar="LABEL=DIR")
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--every-community", action="store_true",
                        help="draw from every community, untitled and unreported ones too (see draw_every)")
    parser.add_argument("--changed-only", action="store_true",
                        help="with --every-community: only communities whose title or summary differ between the indexes")
    args = parser.parse_args()
    if args.changed_only and not args.every_community:
        parser.error("--changed-only needs --every-community")
    among = changed_communities([Path(spec.partition("=")[2]) for spec in args.index]) if args.changed_only else None
    items: list[dict[str, Any]] = []
    for spec in args.index:
        label, _, path = spec.partition("=")
        if not path:
            parser.error(f"--index takes LABEL=DIR, not {spec!r}")
        fresh = path.endswith(RECOMPUTE)
        drawn = (
            draw_every(Path(path), args.n, args.seed, among) if args.every_community
            else draw(Path(path.removesuffix(RECOMPUTE)), args.n, args.seed, fresh)
        )
        for item in drawn:
            items.append({"label": label, **item})
    random.Random(args.seed).shuffle(items)
    for i, item in enumerate(items, 1):
        item["item"] = f"C{i:02d}"
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "sheet.md").write_text(sheet(items), encoding="utf-8")
    key = {
        "seed": args.seed,
        "indexes": dict(spec.partition("=")[::2] for spec in args.index),
        "items": {it["item"]: {k: it[k] for k in ("label", "community", "level", "members")} for it in items},
    }
    (args.out_dir / "key.json").write_text(json.dumps(key, indent=1) + "\n", encoding="utf-8")
    print(f"{len(items)} items -> {args.out_dir / 'sheet.md'} (key: {args.out_dir / 'key.json'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
