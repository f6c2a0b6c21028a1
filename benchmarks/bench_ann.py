"""Approximate nearest-neighbour libraries against exact search, on chunk vectors.

Usage::

    python benchmarks/bench_ann.py --index IDX --sizes 50000,200000 [--out FILE]

The collection is the index's chunk vectors replicated as distinct variants (each a
small seeded perturbation of a real vector, renormalised: a cosine of about 0.9 to its
source), as ``bench_scale.py`` builds its large indexes; the queries are the embedded
questions of ``benchmarks/questions/sqlite.jsonl`` (the sample manual's own). For each
library and setting: recall@100 against exact inner-product search, single-query
latency (p50, p95, one thread), build time, the index's size on disk, and whether two
builds with the same seed give the same bytes. Writes ``benchmarks/results/ann.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

K = 100


def variants(base: np.ndarray, n: int, seed: int = 7, noise: float = 0.025) -> np.ndarray:
    """``n`` unit vectors: ``base`` first, then seeded perturbations of its rows."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, base.shape[1]), dtype=np.float32)
    out[: min(n, len(base))] = base[:n]
    at = len(base)
    while at < n:
        take = min(len(base), n - at)
        block = base[:take] + rng.normal(0.0, noise, size=(take, base.shape[1])).astype(np.float32)
        out[at : at + take] = block / np.linalg.norm(block, axis=1, keepdims=True)
        at += take
    return out


def exact_top(vectors: np.ndarray, queries: np.ndarray, k: int) -> list[set[int]]:
    out = []
    for q in queries:
        sims = vectors @ q
        top = np.argpartition(-sims, k)[:k]
        out.append(set(top.tolist()))
    return out


def measure(name: str, build: Callable[[np.ndarray, Path], Any], search: Callable[[Any, np.ndarray, int], np.ndarray],
            vectors: np.ndarray, queries: np.ndarray, truth: list[set[int]], work: Path) -> dict[str, Any]:
    began = time.perf_counter()
    first = work / f"{name}.a"
    index = build(vectors, first)
    build_s = time.perf_counter() - began
    second = work / f"{name}.b"
    build(vectors, second)
    same = first.exists() and second.exists() and first.read_bytes() == second.read_bytes()
    latencies, recalls = [], []
    search(index, queries[0], K)  # warm
    for q, want in zip(queries, truth):
        t = time.perf_counter()
        got = search(index, q, K)
        latencies.append((time.perf_counter() - t) * 1000)
        recalls.append(len(want & set(int(i) for i in got[:K])) / K)
    latencies.sort()
    return {
        "recall_at_100": round(statistics.mean(recalls), 4),
        "recall_min": round(min(recalls), 4),
        "p50_ms": round(latencies[len(latencies) // 2], 3),
        "p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))], 3),
        "build_s": round(build_s, 2),
        "file_mb": round(first.stat().st_size / 2**20, 1) if first.exists() else None,
        "same_bytes_twice": same,
    }


def candidates() -> dict[str, tuple[Callable[..., Any], Callable[..., Any]]]:
    out: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {}

    def exact_build(v: np.ndarray, path: Path) -> Any:
        with path.open("wb") as handle:
            np.save(handle, v)
        return v

    out["exact"] = (exact_build, lambda v, q, k: np.argpartition(-(v @ q), k)[:k])

    try:
        import faiss

        faiss.omp_set_num_threads(1)

        def faiss_hnsw(m: int, ef_search: int) -> tuple[Callable[..., Any], Callable[..., Any]]:
            def build(v: np.ndarray, path: Path) -> Any:
                index = faiss.IndexHNSWFlat(v.shape[1], m, faiss.METRIC_INNER_PRODUCT)
                index.hnsw.efConstruction = 80
                index.add(v)
                faiss.write_index(index, str(path))
                index.hnsw.efSearch = ef_search
                return index

            return build, lambda ix, q, k: ix.search(q.reshape(1, -1), k)[1][0]

        def faiss_ivf(sq8: bool, nprobe: int) -> tuple[Callable[..., Any], Callable[..., Any]]:
            def build(v: np.ndarray, path: Path) -> Any:
                nlist = int(4 * np.sqrt(len(v)))
                quantizer = faiss.IndexFlatIP(v.shape[1])
                if sq8:
                    index = faiss.IndexIVFScalarQuantizer(quantizer, v.shape[1], nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
                else:
                    index = faiss.IndexIVFFlat(quantizer, v.shape[1], nlist, faiss.METRIC_INNER_PRODUCT)
                index.cp.seed = 1234
                rng = np.random.default_rng(0)
                train = v[rng.choice(len(v), size=min(len(v), 64 * nlist), replace=False)]
                index.train(train)
                index.add(v)
                faiss.write_index(index, str(path))
                index.nprobe = nprobe
                return index

            return build, lambda ix, q, k: ix.search(q.reshape(1, -1), k)[1][0]

        out["faiss-hnsw32-ef128"] = faiss_hnsw(32, 128)
        out["faiss-hnsw32-ef256"] = faiss_hnsw(32, 256)
        out["faiss-ivf-flat-np16"] = faiss_ivf(False, 16)
        out["faiss-ivf-flat-np32"] = faiss_ivf(False, 32)
        out["faiss-ivf-sq8-np32"] = faiss_ivf(True, 32)
        out["faiss-ivf-flat-np64"] = faiss_ivf(False, 64)
    except ImportError:
        pass
    try:
        from usearch.index import Index as UIndex

        def usearch_(dtype: str, ef: int) -> tuple[Callable[..., Any], Callable[..., Any]]:
            def build(v: np.ndarray, path: Path) -> Any:
                index = UIndex(ndim=v.shape[1], metric="ip", dtype=dtype, connectivity=16, expansion_add=128, expansion_search=ef)
                index.add(np.arange(len(v)), v, threads=1)
                index.save(str(path))
                return index

            return build, lambda ix, q, k: ix.search(q, k, threads=1).keys

        out["usearch-f16-ef128"] = usearch_("f16", 128)
        out["usearch-f16-ef256"] = usearch_("f16", 256)
        out["usearch-f16-ef512"] = usearch_("f16", 512)
        out["usearch-i8-ef128"] = usearch_("i8", 128)
    except ImportError:
        pass
    try:
        import hnswlib

        def hnsw_build(v: np.ndarray, path: Path) -> Any:
            index = hnswlib.Index(space="ip", dim=v.shape[1])
            index.init_index(max_elements=len(v), ef_construction=128, M=16, random_seed=100)
            index.set_num_threads(1)
            index.add_items(v, np.arange(len(v)))
            index.save_index(str(path))
            index.set_ef(128)
            return index

        out["hnswlib-m16-ef128"] = (hnsw_build, lambda ix, q, k: ix.knn_query(q, k=k)[0][0])
    except ImportError:
        pass
    try:
        import pynndescent

        def nnd_build(v: np.ndarray, path: Path) -> Any:
            index = pynndescent.NNDescent(v, metric="dot", n_neighbors=30, random_state=0, n_jobs=1)
            index.prepare()
            return index

        out["pynndescent-eps0.1"] = (nnd_build, lambda ix, q, k: ix.query(q.reshape(1, -1), k=k, epsilon=0.1)[0][0])
    except ImportError:
        pass
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--sizes", default="50000,200000")
    parser.add_argument("--only", default="", help="comma-separated candidate names (default: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "ann.json")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import arborgraph

    kb = arborgraph.open(args.index, warm=False)
    base = kb.index.dense.vectors if kb.index.dense is not None else None
    if base is None:
        parser.error("the index has no vectors")
    questions = [json.loads(line)["question"] for line in (ROOT / "benchmarks" / "questions" / "sqlite.jsonl").open()]
    queries = np.stack([kb.engine.embed_query(q) for q in questions]).astype(np.float32)
    chosen = candidates()
    if args.only:
        chosen = {k: v for k, v in chosen.items() if k in args.only.split(",")}
    results: dict[str, Any] = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "load_1m": os.getloadavg()[0]},
        "queries": len(queries), "k": K, "sizes": {},
    }
    for size in [int(s) for s in args.sizes.split(",")]:
        vectors = variants(base, size)
        truth = exact_top(vectors, queries, K)
        per: dict[str, Any] = {}
        with tempfile.TemporaryDirectory() as tmp:
            for name, (build, search) in chosen.items():
                per[name] = measure(name, build, search, vectors, queries, truth, Path(tmp))
                print(size, name, per[name], file=sys.stderr, flush=True)
        results["sizes"][str(size)] = per
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
