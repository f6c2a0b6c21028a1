"""A second index of the same documents, with the user-level shared embedding cache.

The same pages of the bundled SQLite manual are built (``arborgraph build --no-tree
--no-graph --json``, each in its own process, as a user runs it) three times with one
empty ``$XDG_CACHE_HOME``:

0. into a fresh folder with ``--no-shared-cache``: the cost of embedding without it;
1. into a fresh folder, the shared cache empty: embeds everything and fills it;
2. into another fresh folder: every vector from the shared cache.

For each: the embedding stage's seconds, the build's wall time, and where the vectors
came from (computed, the index's own cache, the shared cache); then the shared cache
file's size and rows. Lookup-only builds keep the figures on embedding (a tree's
summaries go through the same caches). The machine's 1-minute load average is recorded
before and after: on a busy machine every time stretches.

Writes benchmarks/results/embedding_cache.json.

    python benchmarks/bench_embedding_cache.py                  # 40 pages
    python benchmarks/bench_embedding_cache.py --pages 0        # the whole manual
    python benchmarks/bench_embedding_cache.py --pages 5 --output /tmp/ec.json   # smoke run
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MANUAL = ROOT / "examples" / "sqlite"


def build(docs: Path, index: Path, env: dict[str, str], *flags: str) -> dict[str, Any]:
    start = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "arborgraph.cli", "build", str(docs), "--index", str(index),
         "--no-tree", "--no-graph", "--json", *flags],
        capture_output=True, text=True, env=env,
    )
    if run.returncode != 0:
        raise SystemExit(run.stderr[-3000:])
    report = json.loads(run.stdout)
    return {
        "wall_s": round(time.perf_counter() - start, 2),
        "embed_s": report["timings_s"].get("embed"),
        "total_s": report["timings_s"].get("total"),
        "chunks": report["chunks"],
        "computed": report["embeddings_computed"],
        "from_index_cache": report["embeddings_from_index_cache"],
        "from_shared_cache": report["embeddings_from_shared_cache"],
        "shared_cache_used": report["shared_embedding_cache"] is not None,
        "warnings": report["warnings"],
    }


def shared_file_facts(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"exists": False}
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
    size = path.stat().st_size
    return {"exists": True, "bytes": size, "mb": round(size / 2**20, 3), "rows": rows,
            "bytes_per_vector": round(size / rows, 1) if rows else None,
            "mode": oct(path.stat().st_mode & 0o777), "folder_mode": oct(path.parent.stat().st_mode & 0o777)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=40, help="the first N pages by name; 0: the whole manual")
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "results" / "embedding_cache.json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="arborgraph-embcache-"))
    try:
        docs = work / "docs"
        docs.mkdir()
        pages = sorted(MANUAL.glob("*.md"))
        for page in pages[: args.pages] if args.pages else pages:
            shutil.copy(page, docs / page.name)
        user_cache = work / "user-cache"  # an empty shared cache, not the user's own
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": str(user_cache)}
        shared = user_cache / "arborgraph" / "embeddings" / "vectors.sqlite"
        load_before = os.getloadavg()[0]
        without = build(docs, work / "idx-off", env, "--no-shared-cache")
        after_off = shared_file_facts(shared)
        first = build(docs, work / "idx-1", env)
        second = build(docs, work / "idx-2", env)
        load_after = os.getloadavg()[0]
        result = {
            "benchmark": "bench_embedding_cache",
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": {"cpus": os.cpu_count(), "load_avg_1m_before": round(load_before, 2),
                        "load_avg_1m_after": round(load_after, 2)},
            "documents": {"source": "examples/sqlite", "pages": len(list(docs.iterdir())),
                          "chosen": "the first pages by name" if args.pages else "all"},
            "build": "arborgraph build DOCS --index NEW_FOLDER --no-tree --no-graph --json (one process each)",
            "builds": {
                "0_no_shared_cache": without,
                "1_first_folder_empty_shared_cache": first,
                "2_second_folder": second,
            },
            "shared_cache_after_build_0": after_off,
            "shared_cache_file": shared_file_facts(shared),
            "second_build_embed_share_of_first": round(second["embed_s"] / first["embed_s"], 4) if first["embed_s"] else None,
            "filling_overhead_embed_s": round(first["embed_s"] - without["embed_s"], 2),
        }
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(result, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
