"""An incremental build's update of the HNSW index against building it afresh.

Usage::

    python benchmarks/bench_ann_update.py --index IDX --sizes 50000,200000 [--changed 0.01] [--out FILE]

The collection is the index's chunk vectors replicated as distinct variants (as
``bench_ann.py`` and ``bench_scale.py`` make them). A change like a rebuild after a few
pages were edited is simulated: ``--changed`` of the rows, in one run from the middle
(a page's chunks sit together), are replaced by new vectors, so the rows after them are
renumbered; half of the run is removed outright and as many new rows are appended.
Both indexes are made with the build's own functions and settings
(:func:`arborgraph.index.vectors.build_ann` and :func:`~arborgraph.index.vectors.update_ann`)
and searched as a query searches them; reported: seconds for each, recall@100 against
exact search on the new rows for each, and the sample questions' latency. Writes
``benchmarks/results/ann_update.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_ann import K, exact_top, variants  # noqa: E402


def changed_rows(vectors: np.ndarray, share: float, seed: int = 11) -> tuple[list[str], np.ndarray]:
    """The ids and vectors after the change: a run of ``share`` of the rows from the
    middle, half replaced by new vectors in place and half removed, with as many new rows
    appended at the end."""
    rng = np.random.default_rng(seed)
    n = len(vectors)
    run = max(2, int(n * share))
    start = n // 2
    replaced, removed = run // 2, run - run // 2
    ids = [f"c{i}" for i in range(n)]
    fresh = vectors[rng.integers(0, n, size=replaced + removed)] + rng.normal(0, 0.05, (replaced + removed, vectors.shape[1]))
    fresh = (fresh / np.linalg.norm(fresh, axis=1, keepdims=True)).astype(np.float32)
    new_ids = ids[:start] + [f"new{i}" for i in range(replaced)] + ids[start + run:] + [f"new{replaced + i}" for i in range(removed)]
    new_vectors = np.concatenate([vectors[:start], fresh[:replaced], vectors[start + run:], fresh[replaced:]])
    return new_ids, new_vectors


def searched(path: Path, vectors: np.ndarray, queries: np.ndarray, truth: list[set[int]], expansion: int) -> dict[str, float]:
    from arborgraph.index.vectors import DenseIndex, load_ann

    dense = DenseIndex(vectors, load_ann(path))
    recalls, latencies = [], []
    for q, want in zip(queries, truth):
        began = time.perf_counter()
        got = dense.nearest(q, K, expansion)
        latencies.append((time.perf_counter() - began) * 1000)
        recalls.append(len(want & set(got.tolist())) / K)
    latencies.sort()
    return {"recall_at_100": round(statistics.mean(recalls), 4), "recall_min": round(min(recalls), 4),
            "p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))], 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True, help="an index of the sample manual (its vectors)")
    parser.add_argument("--sizes", default="50000,200000")
    parser.add_argument("--changed", type=float, default=0.01, help="share of the rows a rebuild changes")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "ann_update.json")
    args = parser.parse_args()
    import arborgraph
    from arborgraph.config import Config
    from arborgraph.index.vectors import build_ann, update_ann

    settings = Config().vectors
    expansion = Config().retrieval.ann_expansion
    kb = arborgraph.open(args.index, warm=False)
    base = np.asarray(kb.index.dense.vectors, dtype=np.float32)
    questions = [json.loads(line)["question"] for line in (ROOT / "benchmarks" / "questions" / "sqlite.jsonl").open()]
    queries = np.stack([kb.engine.embed_query(q) for q in questions]).astype(np.float32)
    results: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "load_1m_before": os.getloadavg()[0]},
        "changed_share": args.changed, "queries": len(queries), "k": K,
        "settings": {**settings.model_dump(), "ann_expansion": expansion}, "sizes": {},
    }
    for size in [int(s) for s in args.sizes.split(",")]:
        vectors = variants(base, size)
        new_ids, new_vectors = changed_rows(vectors, args.changed)
        truth = exact_top(new_vectors, queries, K)
        with tempfile.TemporaryDirectory() as tmp:
            old, fresh, updated = Path(tmp) / "old", Path(tmp) / "fresh", Path(tmp) / "updated"
            build_ann(vectors, old, connectivity=settings.connectivity, expansion_add=settings.expansion_add)
            began = time.perf_counter()
            build_ann(new_vectors, fresh, connectivity=settings.connectivity, expansion_add=settings.expansion_add)
            build_s = time.perf_counter() - began
            began = time.perf_counter()
            counts = update_ann(old, [f"c{i}" for i in range(size)], vectors, new_ids, new_vectors, updated)
            update_s = time.perf_counter() - began
            row = {
                "rows": len(new_ids), "counts": counts,
                "fresh_build": {"seconds": round(build_s, 2), **searched(fresh, new_vectors, queries, truth, expansion)},
                "update": {"seconds": round(update_s, 2), **searched(updated, new_vectors, queries, truth, expansion)},
            }
        results["sizes"][str(size)] = row
        print(size, json.dumps(row), file=sys.stderr, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
