"""Community titles and reports of two builds of one manual, before and after a change.

Usage::

    python benchmarks/bench_community_titles.py --before /tmp/h3/sqlite --after /tmp/h3/sqlite-after \\
        --out benchmarks/results/community_titles.json

Each index is opened as an anonymous caller and checked as ``arborgraph inspect
--structure`` checks it (the communities' part: titles that are the manual's own
headings, titles repeated within a level, communities with no title, summaries with a
template sentence). Beside the figures: how many communities and reports each level
has, the share of titles that are headings per level, a seeded sample of titles
(the same communities in both builds where their ids match) and of reports, and the
targets of issue #35 item 3 (titles that are the manual's own >= 60 %, repeated within
a level <= 2 %, template sentences in <= 5 % of summaries).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import arborgraph  # noqa: E402
from arborgraph.index import schema as S  # noqa: E402
from arborgraph.index.layout import scoped  # noqa: E402
from arborgraph.index.structure_check import is_manual_title, manual_headings  # noqa: E402
from graphrag import schema as G  # noqa: E402

TARGETS: list[tuple[str, str, float]] = [
    ("manual_titles", ">=", 0.60),
    ("repeated_titles", "<=", 0.02),
    ("template_summaries", "<=", 0.05),
    ("untitled", "<=", 0.0),
]
SAMPLE_TITLES = 8
SAMPLE_REPORTS = 3
SEED = 35


def _tables(kb: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]], set[str]]:
    """The public scope's communities and reports as rows, and the manual's headings."""
    generation = kb.explorer.index.on_disk
    tag = next(s.tag for s in kb.explorer.index.scopes if s.scope == "public")
    communities = generation.table(scoped(G.COMMUNITIES, tag), columns=[G.ID, G.LEVEL, G.MEMBERS]).to_pylist()
    reports = generation.table(scoped(G.COMMUNITY_REPORTS, tag)).to_pylist()
    chunks = generation.table(S.CHUNKS, columns=[S.CHUNK_HEADING_PATH])
    documents = generation.table(S.DOCUMENTS, columns=[S.DOC_TITLE])
    headings = manual_headings(
        (p or [] for p in chunks.column(S.CHUNK_HEADING_PATH).to_pylist()), documents.column(S.DOC_TITLE).to_pylist()
    )
    return communities, reports, headings


def measure(index_dir: Path, sample_ids: list[int] | None = None) -> dict[str, Any]:
    with arborgraph.open(index_dir) as kb:
        structure = kb.explorer.structure().model_dump(mode="json")
        communities, reports, headings = _tables(kb)
        built = {"arborgraph_version": kb.index.manifest.arborgraph_version, "mode": kb.index.mode.label}
    (scope,) = [s for s in structure["scopes"] if s["scope"] == "public"]
    shape = scope["communities"]
    by_id = {r[G.COMMUNITY_ID]: r for r in reports}
    levels: dict[str, dict[str, Any]] = {}
    for level in sorted({c[G.LEVEL] for c in communities}):
        ids = [c[G.ID] for c in communities if c[G.LEVEL] == level]
        titled = [by_id[i] for i in ids if i in by_id]
        levels[str(level)] = {
            "communities": len(ids),
            "reports": len(titled),
            "manual_titles": round(sum(is_manual_title(r[G.TITLE], headings) for r in titled) / len(titled), 4)
            if titled else None,
        }
    size = {c[G.ID]: len(c[G.MEMBERS]) for c in communities}
    rng = random.Random(SEED)
    ids = sample_ids if sample_ids is not None else sorted(rng.sample(sorted(size), SAMPLE_TITLES))
    titles = [
        {"community": i, "members": size.get(i), "title": by_id[i][G.TITLE] if i in by_id else None} for i in ids
    ]
    ranked = sorted((r for r in reports if r[G.LEVEL] == 0), key=lambda r: (-(r[G.RANK] or 0), r[G.COMMUNITY_ID]))
    samples = [
        {"community": r[G.COMMUNITY_ID], "members": size.get(r[G.COMMUNITY_ID]), "title": r[G.TITLE],
         "summary": r[G.SUMMARY]}
        for r in ranked[:SAMPLE_REPORTS]
    ]
    figures = {k: shape[k] for k in ("communities", "untitled", "manual_titles", "repeated_titles",
                                     "template_summaries", "title_words_median", "comma_lists")}
    figures["all_communities"] = len(communities)
    met = {
        f"{name} {op} {bound}": None if figures[name] is None
        else (figures[name] >= bound if op == ">=" else figures[name] <= bound)
        for name, op, bound in TARGETS
    }
    return {
        "index": str(index_dir), "built_by": built, "figures": figures, "levels": levels, "targets": met,
        "sample_titles": titles, "top_reports_level_0": samples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="index built before the change")
    parser.add_argument("--after", type=Path, required=True, help="index built after the change")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "community_titles.json")
    args = parser.parse_args()
    before = measure(args.before)
    after = measure(args.after, [t["community"] for t in before["sample_titles"]])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    result = {
        "issue": "#35 item 3: communities named by their home",
        "measured_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit,
        "before": before,
        "after": after,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for label, run in (("before", before), ("after", after)):
        print(label, json.dumps(run["figures"]), json.dumps(run["targets"]))


if __name__ == "__main__":
    main()
