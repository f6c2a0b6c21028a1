"""Stored names beside recomputed ones, for a seeded sample of an index's tree nodes
and communities: a quick look at what a naming change does on a training manual.

    python benchmarks/rename_sample.py --index IDX [--n 25] [--seed 0] [--summaries]
        [--communities]

The stored ones are what the index was built with; the new ones are recomputed from
the same stored tree and graph with the code checked out (:mod:`benchmarks.restructure`).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import arborgraph  # noqa: E402
from benchmarks.restructure import leaf_headings, resummarised_tree, rewritten_reports  # noqa: E402


def _metrics(kb: object, tree: object) -> dict[str, object]:
    """The structure check's tree and community metrics of the stored names and of the
    recomputed ones (:mod:`arborgraph.index.structure_check`)."""
    from arborgraph.index.structure_check import community_shape, tree_shape
    from graphrag.tables import graph_to_tables
    from raptor.tables import tree_to_tables

    leaves = tree.leaves()  # type: ignore[attr-defined]
    chunk_text = {leaf.node_id: leaf.text for leaf in leaves}
    titles = sorted({info.title for info in kb.index.store.docs.values() if info.title})  # type: ignore[attr-defined]
    fresh = resummarised_tree(tree, kb.engine.count_tokens)  # type: ignore[attr-defined]
    out: dict[str, object] = {}
    kg = kb.explorer.graph_view().kg  # type: ignore[attr-defined]
    for label, t in (("stored", tree), ("recomputed", fresh)):
        shape = tree_shape(next(iter(tree_to_tables(t).values())), chunk_text, titles)
        if label == "recomputed":
            rewritten_reports(kg, leaf_headings(tree))
        tables = graph_to_tables(kg)
        comm = community_shape(tables["communities"], tables["community_reports"], tables["entities"])
        out[label] = {"tree": shape.model_dump(), "communities": comm.model_dump()}
    return out


def _heading_shares(tree: object, node: object, top: int = 4) -> str:
    """The sections holding most of ``node``'s chunks, with their shares."""
    from collections import Counter

    counts: Counter[str] = Counter()
    for cid in node.chunk_ids:  # type: ignore[attr-defined]
        path = tree.node(cid).heading_path  # type: ignore[attr-defined]
        for depth in range(1, len(path) + 1):
            counts[" > ".join(path[:depth])] += 1
    size = len(node.chunk_ids)  # type: ignore[attr-defined]
    deep = sorted(counts.items(), key=lambda kv: (-kv[1], -kv[0].count(" > ")))[:top]
    return "; ".join(f"{k[-60:]} {v / size:.0%}" for k, v in deep)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--n", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--summaries", action="store_true", help="print the new summaries too")
    parser.add_argument("--headings", action="store_true", help="print the headings most of each node is under")
    parser.add_argument("--out", type=Path, default=None, help="with --metrics: the results file (default: stdout)")
    parser.add_argument("--min-level", type=int, default=1, help="only summaries of this level or higher")
    parser.add_argument("--communities", action="store_true", help="communities instead of tree nodes")
    parser.add_argument("--metrics", action="store_true", help="the structure check's tree-name and community-title"
                        " metrics, stored against recomputed, instead of a sample")
    args = parser.parse_args(argv)
    with arborgraph.open(args.index) as kb:
        tree = kb.explorer.tree_view().tree
        rng = random.Random(args.seed)
        if args.metrics:
            text = json.dumps({"index": str(args.index), **_metrics(kb, tree)}, indent=1) + "\n"
            if args.out is None:
                sys.stdout.write(text)
            else:
                args.out.write_text(text, encoding="utf-8")
            return 0
        if args.communities:
            kg = kb.explorer.graph_view().kg
            old = {c: (r.title, r.summary) for c, r in kg.reports.items()}
            new = rewritten_reports(kg, leaf_headings(tree))
            for cid in sorted(rng.sample(sorted(new), min(args.n, len(new)))):
                members = len(kg.communities[cid].members)
                print(f"C{cid} ({members} members)\n  old: {old.get(cid, ('-', ''))[0]}\n  new: {new[cid].title}")
                if args.summaries:
                    print(f"  summary: {new[cid].summary}\n")
            return 0
        fresh = resummarised_tree(tree, kb.engine.count_tokens)
        ids = sorted(n.node_id for n in tree.summaries() if n.level >= args.min_level)
        for node_id in sorted(rng.sample(ids, min(args.n, len(ids)))):
            before, after = tree.node(node_id), fresh.node(node_id)
            parent = fresh.node(after.parents[0]).title if after.parents else "-"
            pages = ", ".join(after.doc_ids[:4]) + (f" +{len(after.doc_ids) - 4}" if len(after.doc_ids) > 4 else "")
            print(f"{node_id} ({len(after.chunk_ids)} chunks; {pages}) under: {parent}")
            print(f"  {before.title}  ->  {after.title}")
            if args.headings:
                print("  under: " + _heading_shares(tree, after))
            if args.summaries:
                print("  " + after.text.replace("\n", "\n  ") + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
