"""What checking a cache database at open costs (issue 16, item 10).

``ingest.cache_db.CacheDB`` runs ``PRAGMA quick_check(1)`` when a build opens
``cache/embeddings.sqlite`` or ``cache/parsed.sqlite``, so a truncated or overwritten
cache is found before the build relies on it. This times that open against a plain
``sqlite3.connect`` plus the same set-up statements, on embedding caches of several
sizes (384-dim float32 vectors, as all-MiniLM-L6-v2 stores them; random values,
seeded). The page cache is warm (dropping it needs root), as in a rebuild soon after a
build: the figures are CPU work, not disk reads.

Writes benchmarks/results/cache_check.json.

    python benchmarks/bench_cache_check.py [--sizes 10000 40000 80000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ingest.cache_db import CacheDB  # noqa: E402

SETUP = (
    "PRAGMA journal_mode=WAL",
    "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, dim INTEGER, data BLOB)",
)
DIM = 384
SEED = 16


def fill(path: Path, rows: int) -> None:
    rng = np.random.default_rng(SEED)
    db = sqlite3.connect(str(path))
    for statement in SETUP:
        db.execute(statement)
    for start in range(0, rows, 5000):
        batch = rng.standard_normal((min(5000, rows - start), DIM), dtype=np.float32)
        with db:
            db.executemany(
                "INSERT INTO vectors VALUES (?, ?, ?)",
                [(f"{start + i:064d}", DIM, v.tobytes()) for i, v in enumerate(batch)],
            )
    db.close()


def time_plain(path: Path) -> float:
    started = time.perf_counter()
    db = sqlite3.connect(str(path), timeout=60)
    for statement in SETUP:
        db.execute(statement)
    db.close()
    return time.perf_counter() - started


def time_checked(path: Path) -> float:
    started = time.perf_counter()
    cache = CacheDB(path, SETUP)
    elapsed = time.perf_counter() - started
    assert not cache.warnings
    cache.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 40_000, 80_000])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        for rows in args.sizes:
            path = Path(scratch) / f"embeddings-{rows}.sqlite"
            fill(path, rows)
            plain, checked = [], []
            for _ in range(args.rounds):  # alternated, so load that comes and goes hits both
                plain.append(time_plain(path))
                checked.append(time_checked(path))
            results.append(
                {
                    "vectors": rows,
                    "megabytes": round(path.stat().st_size / 2**20, 1),
                    "plain_open_s_median": round(statistics.median(plain), 4),
                    "checked_open_s_median": round(statistics.median(checked), 4),
                    "check_cost_s_median": round(statistics.median(checked) - statistics.median(plain), 4),
                    "rounds": args.rounds,
                }
            )
            print(json.dumps(results[-1]))
    out = {
        "what": "opening an embedding cache with CacheDB's quick_check vs a plain connect (warm page cache)",
        "measured_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "load_average": os.getloadavg(),
        "cpu_count": os.cpu_count(),
        "dim": DIM,
        "seed": SEED,
        "results": results,
    }
    target = ROOT / "benchmarks" / "results" / "cache_check.json"
    target.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
