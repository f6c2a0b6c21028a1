"""In-place rebuild after changing one page vs the full build, and process-pool speed-up.

1. Full build of the bundled SQLite manual (cold: a fresh index, empty caches), then
   one page is edited and the same command rebuilds in place; both timed in this run.
   ``graph_update`` compares the graph stage of the two builds and lists what the
   update reused and redid (chunks extracted, communities kept, reports redone).
2. The stages other than embedding that the executor spreads (loading, chunking and
   the graph stage with its rule extraction; Leiden and reports stay serial) timed with ``--executor serial`` and ``--executor process`` on a
   warm embedding cache (and no parse cache: every file is parsed).

Writes benchmarks/results/incremental.json.

    python benchmarks/bench_incremental.py
    python benchmarks/bench_incremental.py --pages 12 --output /tmp/incr.json   # smoke run
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANUAL = ROOT / "examples" / "sqlite"
EDITED_PAGE = "lang_vacuum.md"
EDIT = "\n\n## Benchmark edit\n\nThe benchmark appended this paragraph to one page of the manual.\n"


def build(docs: Path, index: Path, *flags: str) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "arborgraph.cli", "build", str(docs), "--index", str(index), "--json", *flags],
        capture_output=True, text=True, env=env,
    )
    if run.returncode != 0:
        raise SystemExit(run.stderr[-3000:])
    report = json.loads(run.stdout)
    return {"wall_s": round(time.perf_counter() - start, 2), "timings_s": report["timings_s"],
            "stages": report["stages"], "embeddings_computed": report["embeddings_computed"]}


def graph_update(full: dict, incremental: dict) -> dict:
    """The graph stage of the full build and of the one-page update, side by side."""
    full_s, update_s = full["timings_s"].get("graph"), incremental["timings_s"].get("graph")
    stats = incremental["stages"].get("graph", {})
    keys = ("updated", "reused", "refits", "chunks_extracted", "chunks_reused", "communities_kept",
            "communities_new", "communities_removed", "reports_reused", "reports_redone", "communities", "reports")
    return {
        "graph_s_full_build": full_s,
        "graph_s_update": update_s,
        "graph_update_share_of_full": round(update_s / full_s, 3) if full_s and update_s is not None else None,
        **{k: stats.get(k) for k in keys},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=0, help="only this many pages (smoke run); 0: all")
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "results" / "incremental.json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="arborgraph-incr-"))
    os.environ["NUMBA_CACHE_DIR"] = str(work / "numba")
    docs = work / "docs"
    if args.pages:
        docs.mkdir()
        others = sorted(p.name for p in MANUAL.glob("*.md") if p.name != EDITED_PAGE)
        for name in [EDITED_PAGE, *others[: args.pages - 1]]:
            shutil.copy(MANUAL / name, docs / name)
    else:
        shutil.copytree(MANUAL, docs)
    index = work / "index"
    full = build(docs, index)
    with (docs / EDITED_PAGE).open("a", encoding="utf-8") as handle:
        handle.write(EDIT)
    incremental = build(docs, index)

    pool = {}
    for spec in ("serial", "process"):
        target = work / f"pool-{spec}"
        (target / "cache").mkdir(parents=True)
        # warm embeddings only: the parse cache would take the parsing out of the load
        # stage this comparison times
        for part in (index / "cache").glob("embeddings.sqlite*"):
            shutil.copy(part, target / "cache" / part.name)
        result = build(docs, target, "--no-tree", "--executor", spec)
        t = result["timings_s"]
        # a pool chunks documents while they load, so load counts on both sides
        pool[spec] = {"load_s": t.get("load"), "chunk_s": t.get("chunk"), "graph_s": t.get("graph"),
                      "load_chunk_graph_s": round(t.get("load", 0) + t.get("chunk", 0) + t.get("graph", 0), 2),
                      "executor": result["stages"]["executor"]}
    result = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "load_avg_at_end": os.getloadavg(),
        "pages": len(list(docs.glob("*.md"))),
        "full_build": full,
        "after_editing_one_page": incremental,
        "incremental_share_of_full": round(incremental["wall_s"] / full["wall_s"], 3),
        "graph_update": graph_update(full, incremental),
        "executor_comparison": pool,
        "process_pool_speedup_non_embedding": round(
            pool["serial"]["load_chunk_graph_s"] / max(pool["process"]["load_chunk_graph_s"], 1e-9), 2
        ),
    }
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("incremental_share_of_full", "process_pool_speedup_non_embedding", "graph_update")}))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
