"""How fast a build embeds, and what would make it faster: the shipped model's rate.

Embeds the chunk texts of an index (``--index``, e.g. a build of the bundled SQLite
manual; the first ``--chunks`` of them, taken round-robin over its documents so that
long and short pages mix) with the shipped ONNX embedder, as a build runs it and as it
could be run instead:

- ``build default``: what ``arborgraph build`` does (one text per run, a worker thread
  per core);
- ``one core``: the same on one thread (how the rate scales with cores);
- ``batches of 32``: length-sorted, padded batches of 32 texts, the model's own threads
  on every core (batching's gain, if any);
- ``two processes``: two processes of one thread each, half the texts each (a second
  process instead of a second thread).

Every setting gives the same vectors (``EmbeddingConfig``: the ONNX vectors depend on
neither batch size nor threads); the check is made here, row for row. Each setting is
warmed up, then timed ``--rounds`` times, settings interleaved so that the machine's
drift hits them alike; reported: texts per second (median of the rounds) and the
speed-up over the build's default. Writes ``benchmarks/results/embed_rate.json``.

    python benchmarks/bench_embed_rate.py --index /work/idx/sqlite
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_embedding import _round_robin  # noqa: E402  (this folder: the script's own)

RESULTS = ROOT / "benchmarks" / "results" / "embed_rate.json"


def chunk_texts(index: Path, n: int) -> list[str]:
    """The first ``n`` chunk texts of ``index``, round-robin over its documents."""
    import arborgraph

    kb = arborgraph.open(index)
    store = kb.index.store
    by_doc: dict[str, list[int]] = {}
    for row, doc in enumerate(store.doc_ids):
        by_doc.setdefault(doc, []).append(row)
    per_doc = [[store.texts[row] for row in rows] for _, rows in sorted(by_doc.items())]
    return _round_robin(per_doc, n, "chunks")


def embedder(batch_size: int | None, threads: int | None) -> Any:
    from arborgraph.models.embedding import EmbeddingConfig, load_embedder

    return load_embedder(EmbeddingConfig(batch_size=batch_size, threads=threads))


_worker_embedder: list[Any] = []  # one per worker process, loaded when it starts


def _load_worker() -> None:
    _worker_embedder.append(embedder(None, 1))


def _encode_half(texts: list[str]) -> np.ndarray:
    return _worker_embedder[0].encode(texts)


def two_processes(pool: Any, texts: list[str]) -> np.ndarray:
    half = len(texts) // 2
    first, second = pool.map(_encode_half, [texts[:half], texts[half:]])
    return np.vstack([first, second])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True, help="an index whose chunk texts are embedded")
    parser.add_argument("--chunks", type=int, default=800)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    texts = chunk_texts(args.index, args.chunks)
    cores = len(os.sched_getaffinity(0))
    warm = texts[:16]
    single = {
        "build default": embedder(None, None),
        "one core": embedder(None, 1),
        "batches of 32": embedder(32, None),
    }
    for e in single.values():
        e.encode(warm)
    # spawned, not forked: a forked child would inherit this process's onnxruntime threads
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2, initializer=_load_worker) as pool:
        pool.map(_encode_half, [warm] * 4)
        runs: dict[str, list[float]] = {name: [] for name in [*single, "two processes"]}
        vectors: dict[str, np.ndarray] = {}
        load = []
        for _ in range(args.rounds):
            load.append(round(os.getloadavg()[0], 2))
            for name, e in single.items():
                began = time.perf_counter()
                vectors[name] = e.encode(texts)
                runs[name].append(len(texts) / (time.perf_counter() - began))
            began = time.perf_counter()
            vectors["two processes"] = two_processes(pool, texts)
            runs["two processes"].append(len(texts) / (time.perf_counter() - began))
    reference = vectors["build default"]
    base = statistics.median(runs["build default"])
    settings = {
        name: {
            "texts_per_s": round(statistics.median(rates), 1),
            "each_round": [round(r, 1) for r in rates],
            "speedup_vs_build_default": round(statistics.median(rates) / base, 2),
            "max_abs_difference_from_build_default": float(np.abs(vectors[name] - reference).max()),
        }
        for name, rates in runs.items()
    }
    lengths = [len(t.split()) for t in texts]
    result = {
        "when": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
        "index": str(args.index),
        "texts": len(texts),
        "words_per_text": {"mean": round(statistics.mean(lengths), 1), "max": max(lengths)},
        "cores": cores,
        "rounds": args.rounds,
        "load_avg_1m_each_round": load,
        "settings": settings,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
