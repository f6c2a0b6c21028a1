"""Chunk size on the question set: the sample manual built lookup-only at several sizes.

For each ``target_tokens`` (default 160, 220 — the shipped default — and 300; overlap
15 % of the size each time), the bundled SQLite manual is built ``--no-tree --no-graph``
with the default embedder, then the evaluation harness scores the flat hybrid baseline
and the lookup route on ``benchmarks/questions/sqlite.jsonl`` at a 1,500-word window.
Reported per size: evidence recall, full-hit rate and MRR per question type and overall,
the number of chunks, their mean and largest token count, and the build's seconds and
embeddings computed.

Chunks shrink to fit the embedding model's 256-token input with their heading path
(``chunking.max_context_tokens``), so a large target is capped per chunk by that limit;
the mean token count shows how much of the target the chunks reach.

The builds share one embedding cache (keyed by model and text): a chunk that comes out
the same at two sizes is embedded once. ``--seed-cache`` starts that cache from an
existing index's ``cache/embeddings.sqlite``; build seconds then depend on what it held,
so compare ``embeddings_computed`` with them. Writes ``benchmarks/results/chunk_size.json``.

    python benchmarks/bench_chunk_size.py [--sizes 160,220,300] [--seed-cache FILE]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import arborgraph  # noqa: E402
from arborgraph.config import Config  # noqa: E402
from arborgraph.query.evaluation import evaluate, load_questions  # noqa: E402
from arborgraph.pipeline import build_index  # noqa: E402
from arborgraph.index.schema import CHUNK_TOKENS, CHUNKS  # noqa: E402
from ingest.chunking import ChunkingConfig  # noqa: E402

MANUAL = ROOT / "examples" / "sqlite"
QUESTIONS = ROOT / "benchmarks" / "questions" / "sqlite.jsonl"
RESULTS = ROOT / "benchmarks" / "results" / "chunk_size.json"
OVERLAP = 0.15
SYSTEMS = ("baseline:hybrid", "lookup")
CACHE_FILE = "embeddings.sqlite"


def _metrics(m: object) -> dict[str, float]:
    return {"recall": m.evidence_recall, "full_hit": m.full_hit_rate, "mrr": m.mrr}  # type: ignore[attr-defined]


def _chunk_tokens(index: Path) -> dict[str, float]:
    generation = (index / "CURRENT").read_text().strip()
    tokens = pq.read_table(index / generation / "tables" / f"{CHUNKS}.parquet", columns=[CHUNK_TOKENS])
    values = tokens.column(0).to_pylist()
    return {"mean_tokens": round(sum(values) / len(values), 1), "max_tokens": max(values)}


def measure(size: int, work: Path, shared_cache: Path, budget_words: int) -> dict[str, object]:
    index = work / f"idx-{size}"
    (index / "cache").mkdir(parents=True)
    if shared_cache.exists():
        shutil.copy(shared_cache, index / "cache" / CACHE_FILE)
    config = Config(
        chunking=ChunkingConfig(target_tokens=size, overlap=OVERLAP), build_tree=False, build_graph=False
    )
    start = time.perf_counter()
    report = build_index([MANUAL], index, config)
    build_s = time.perf_counter() - start
    # the next size starts from every vector computed so far
    shutil.copy(index / "cache" / CACHE_FILE, shared_cache)
    kb = arborgraph.open(index)
    evaluated = evaluate(kb, load_questions(QUESTIONS), budget_words=budget_words, systems=SYSTEMS)
    systems = {
        name: {
            "overall": _metrics(rep.overall),
            "by_type": {t: _metrics(m) for t, m in rep.by_type.items()},
        }
        for name, rep in evaluated.systems.items()
    }
    return {
        "target_tokens": size,
        "overlap": OVERLAP,
        "chunks": report.chunks,
        **_chunk_tokens(index),
        "build_s": round(build_s, 1),
        "embed_s": report.timings_s.get("embed"),
        "embeddings_computed": report.embeddings_computed,
        "embeddings_cached": report.embeddings_cached,
        "systems": systems,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="160,220,300", help="comma-separated chunking.target_tokens values")
    parser.add_argument("--budget-words", type=int, default=1500)
    parser.add_argument("--seed-cache", type=Path, help="an embeddings.sqlite to start the shared cache from")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.seed_cache is not None and not args.seed_cache.is_file():
        parser.error(f"--seed-cache {args.seed_cache}: no such file")
    work = Path(tempfile.mkdtemp(prefix="arborgraph-chunks-"))
    os.environ.setdefault("NUMBA_CACHE_DIR", str(work / "numba"))
    shared_cache = work / CACHE_FILE
    if args.seed_cache is not None:
        shutil.copy(args.seed_cache, shared_cache)
    try:
        load_before = os.getloadavg()
        runs = [measure(size, work, shared_cache, args.budget_words) for size in sizes]
        result = {
            "date": dt.datetime.now().isoformat(timespec="seconds"),
            "cpus": os.cpu_count(),
            "load_avg_before": load_before,
            "load_avg_at_end": os.getloadavg(),
            "manual": str(MANUAL.relative_to(ROOT)),
            "questions": str(QUESTIONS.relative_to(ROOT)),
            "budget_words": args.budget_words,
            "build": "--no-tree --no-graph, default embedder",
            "seed_cache": str(args.seed_cache) if args.seed_cache else None,
            "sizes": runs,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for run in runs:
        hybrid, lookup = run["systems"]["baseline:hybrid"]["overall"], run["systems"]["lookup"]["overall"]
        print(f"{run['target_tokens']}: {run['chunks']} chunks, hybrid {hybrid}, lookup {lookup}")


if __name__ == "__main__":
    main()
