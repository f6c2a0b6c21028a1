"""The tree stage with and without the manual's outline, in one run, on one index.

Reads a built index's chunks and chunk vectors (any build: ``--no-tree`` is enough),
then builds the summary tree of its public scope with the extractive summariser and the
same settings but ``outline``: the clustered tree (RAPTOR's levels over every chunk,
the tree before the outline), the outline tree of headings and folders alone (the
pages' own navigation left out), and the outline tree. For each it reports
the wall time of ``build_tree`` (the tree stage's work: clustering, layout, digests,
naming), its shape, and the structure check's figures (``inspect --structure``): the
share of level 1-3 names that are the manual's own titles and how much of their nodes
those cover, strung titles, sibling repeats, grounding. Alternating order over
``--repeat`` runs keeps a machine's drift from favouring one side.

    python benchmarks/bench_outline_tree.py --index .demo-index --out benchmarks/results/outline_tree.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path
from statistics import median
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _leaves(index: Path) -> tuple[list[Any], Any, dict[str, list[str]], dict[str, str], list[str]]:
    import numpy as np
    import pyarrow.parquet as pq

    from raptor import Leaf

    gen = index / (index / "CURRENT").read_text().strip()
    rows = pq.read_table(gen / "tables" / "chunks.parquet").to_pylist()
    docs = pq.read_table(gen / "tables" / "documents.parquet").to_pylist()
    acl = {d["doc_id"]: d.get("acl") for d in docs}
    keep = [i for i, r in enumerate(rows) if acl.get(r["doc_id"]) is None]  # the public scope
    vectors = np.load(gen / "vectors" / "chunks.npy", mmap_mode="r")[keep]
    navigation = {d["doc_id"]: (tuple(d.get("nav_up") or ()), d.get("nav_next")) for d in docs}
    leaves = [
        Leaf(chunk_id=rows[i]["chunk_id"], doc_id=rows[i]["doc_id"], text=rows[i]["text"],
             heading_path=tuple(rows[i]["heading_path"]), start=rows[i]["start"], end=rows[i]["end"],
             tokens=rows[i]["n_tokens"], nav_up=navigation[rows[i]["doc_id"]][0],
             nav_next=navigation[rows[i]["doc_id"]][1])
        for i in keep
    ]
    paths = {leaf.chunk_id: list(leaf.heading_path) for leaf in leaves}
    texts = {leaf.chunk_id: leaf.text for leaf in leaves}
    titles = sorted({d["title"] for d in docs if d.get("title")})
    return leaves, np.asarray(vectors), paths, texts, titles


VARIANTS = ("clustered", "outline_without_navigation", "outline")


def _build(leaves: list[Any], vectors: Any, outline: bool) -> tuple[Any, float]:
    from ingest import load_token_counter
    from raptor import ExtractiveSummariser, RaptorConfig, build_tree

    count = load_token_counter()

    def embed(texts: Any) -> Any:
        raise RuntimeError("extractive summaries take their children's centroid; nothing is embedded")

    config = RaptorConfig(outline=outline)
    summariser = ExtractiveSummariser(
        embed=embed, count_tokens=count, max_tokens=config.summary_max_tokens, max_sentences_embedded=16,
        sentence_vectors=False,
    )
    began = time.perf_counter()
    tree = build_tree(leaves, vectors, embed=embed, count_tokens=count, summariser=summariser, config=config)
    return tree, time.perf_counter() - began


def _shape(tree: Any, paths: dict[str, list[str]], texts: dict[str, str], titles: list[str]) -> dict[str, Any]:
    from arborgraph.index.structure_check import tree_shape
    from raptor.tables import tree_to_tables

    shape = tree_shape(next(iter(tree_to_tables(tree).values())), texts, titles, paths)
    levels: dict[int, int] = {}
    for node in tree.summaries():
        levels[node.level] = levels.get(node.level, 0) + 1
    top = [tree.node(c) for c in tree.root.children]
    # the nodes a reader moves between pages by: how many are the manual's own (a
    # chapter, a part, a folder) rather than clusters
    above = [n for n in tree.summaries() if len(n.doc_ids) >= 2]
    return {
        "nodes_above_pages": len(above),
        "nodes_above_pages_from_the_outline": round(sum(n.origin == "outline" for n in above) / len(above), 4) if above else None,
        "root_children_from_the_outline": round(sum(n.origin == "outline" for n in top) / len(top), 4) if top else None,
        "summary_nodes": len(tree.summaries()),
        "height": tree.height,
        "nodes_by_level": dict(sorted(levels.items())),
        "root_children": [{"title": n.title, "chunks": len(n.chunk_ids)} for n in top],
        "largest_root_child_share": round(max(len(n.chunk_ids) for n in top) / len(tree.root.chunk_ids), 4) if top else None,
        "structure": shape.model_dump(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=2, help="builds of each tree (alternating)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    leaves, vectors, paths, texts, titles = _leaves(args.index)
    load_before = os.getloadavg()[0]
    seconds: dict[str, list[float]] = {name: [] for name in VARIANTS}
    trees: dict[str, Any] = {}
    unnavigated = [replace(leaf, nav_up=(), nav_next=None) for leaf in leaves]
    _build(leaves[:50], vectors[:50], False)  # imports and the numba cache, paid before timing
    for run in range(args.repeat):
        order = VARIANTS if run % 2 == 0 else tuple(reversed(VARIANTS))
        for name in order:
            given = unnavigated if name == "outline_without_navigation" else leaves
            tree, took = _build(given, vectors, name != "clustered")
            seconds[name].append(round(took, 2))
            trees[name] = tree
    result = {
        "what": "build_tree over one index's public chunks, clustered (outline=False), outline without the "
        "pages' navigation, and outline (default), extractive summaries, the same run",
        "index": str(args.index),
        "chunks": len(leaves),
        "documents": len({leaf.doc_id for leaf in leaves}),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                    "load_1min_before": round(load_before, 2), "load_1min_after": round(os.getloadavg()[0], 2)},
        "seconds": seconds,
        "median_s": {k: round(median(v), 2) for k, v in seconds.items()},
        "outline_over_clustered": round(median(seconds["outline"]) / median(seconds["clustered"]), 3),
        "trees": {name: _shape(tree, paths, texts, titles) for name, tree in trees.items()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps({k: result[k] for k in ("chunks", "median_s", "outline_over_clustered")}))
    for name, shape in result["trees"].items():
        s = shape["structure"]
        print(f"{name}: {shape['summary_nodes']} nodes, height {shape['height']}, manual titles {s['manual_titles']}, "
              f"coverage {s['title_coverage']}, strung {s['strung_titles']}, largest root child {shape['largest_root_child_share']}, "
              f"nodes above pages from the outline {shape['nodes_above_pages_from_the_outline']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
