"""How queries scale with the collection: indexes of 20,000 to 1,000,000 chunks.

Usage::

    python benchmarks/bench_scale.py --sizes 20000,200000,1000000 --work DIR --out FILE

Each size is the bundled SQLite manual's pages replicated as distinct variants (each
copy of a page ends with its own edition line, so every copy is a document of its own)
and built as any build is, tree and graph included. So that embedding does not dominate,
a variant's chunk is given its original's vector (the real model's, computed once per
distinct text) with a small seeded perturbation (a cosine of about 0.9 to it); texts
with no original (the tree's summaries) are embedded by the real model. Queries are the
sample question set's, asked in a fresh process after ``open()``: the first one's time,
then every question on ``auto`` and on ``lookup``, and the process's peak RSS; three
such processes in turn (``--repeats``), each figure their median. Writes
``{"sizes": [{"chunks", "build_s", "open_s", "first_query_ms", "auto_p95_ms",
"lookup_p95_ms", "query_rss_mb", ...}, ...]}`` (the RSS split into private memory
and the index files' pages mapped from the page cache, which the kernel can reclaim;
on an index with an approximate dense search, how far the tree walk over a pool of
leaves agrees with the walk over every leaf). With ``--lookup-only`` the indexes
have no tree and no graph (``"structures": false`` in their rows): the lookup path and
the ANN index alone, at sizes whose full build would take hours on a small machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import statistics
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SAMPLE = ROOT / "examples" / "sqlite"
QUESTIONS = ROOT / "benchmarks" / "questions" / "sqlite.jsonl"
EDITION = re.compile(r"\s*Edition \d+ of this page\.\s*")
NOISE = 0.025


class VariantEmbedder:
    """The real embedder for texts it has not seen (once each); a variant of a seen text
    (the same text but for its edition line) gets the original's vector, perturbed."""

    def __init__(self) -> None:
        from arborgraph.models.embedding import EmbeddingConfig, load_embedder

        self.inner = load_embedder(EmbeddingConfig())
        self.name, self.dim = self.inner.name, self.inner.dim
        self.memo: dict[str, np.ndarray] = {}
        self.real = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        keys = [EDITION.sub(" ", t).strip() for t in texts]
        missing = sorted({k for k in keys if k not in self.memo})
        if missing:
            for key, vector in zip(missing, self.inner.encode(missing)):
                self.memo[key] = vector
            self.real += len(missing)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, (text, key) in enumerate(zip(texts, keys)):
            base = self.memo[key]
            if text.strip() == key:
                out[i] = base
                continue
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            noisy = base + np.random.default_rng(seed).normal(0.0, NOISE, size=self.dim).astype(np.float32)
            out[i] = noisy / np.linalg.norm(noisy)
        return out


def write_variants(target: Path, copies: int) -> int:
    """``copies`` copies of every sample page under ``target`` (copy 0 is the page itself)."""
    pages = sorted(SAMPLE.glob("*.md"))
    target.mkdir(parents=True, exist_ok=True)
    for n in range(copies):
        folder = target / f"edition{n:04d}"
        folder.mkdir(exist_ok=True)
        for page in pages:
            text = page.read_text(encoding="utf-8")
            if n:
                text = text.rstrip() + f"\n\nEdition {n} of this page.\n"
            (folder / page.name).write_text(text, encoding="utf-8")
    return len(pages) * copies


def index_dir(work: Path, size: int, structures: bool) -> Path:
    return work / (f"index-{size}" if structures else f"index-{size}-lookup-only")


def build(size: int, work: Path, embedder: VariantEmbedder, base_chunks: int, structures: bool) -> dict[str, Any]:
    from arborgraph.config import load_config
    from arborgraph.pipeline import build_index

    copies = max(1, round(size / base_chunks))
    docs = work / f"docs-{size}"
    index = index_dir(work, size, structures)
    if index.exists() and (index / "CURRENT").exists():
        manifest = json.loads((index / open(index / "CURRENT").read().strip() / "manifest.json").read_text())
        return {"copies": copies, "build_s": manifest["timings_s"].get("total"), "reused_build": True,
                "timings_s": manifest["timings_s"]}
    write_variants(docs, copies)
    began = time.perf_counter()
    real_before = embedder.real
    config = load_config(environ={}, overrides={} if structures else {"build_tree": False, "build_graph": False})
    report = build_index([docs], index, config, embedder_factory=lambda config: (embedder, None))
    return {
        "copies": copies, "build_s": round(time.perf_counter() - began, 1), "timings_s": report.timings_s,
        "texts_embedded_for_real": embedder.real - real_before, "reused_build": False,
    }


PROBE = r"""
import json, sys, time
def status_mb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024, 1)
def peak_rss_mb():
    # this process's own peak (VmHWM): ru_maxrss would carry over the parent's, the
    # builder's, from before exec
    return status_mb("VmHWM")
began = time.perf_counter()
import arborgraph
kb = arborgraph.open(sys.argv[1])
opened = time.perf_counter() - began
questions = [json.loads(l)["question"] for l in open(sys.argv[2])]
t = time.perf_counter(); kb.query(questions[0]); first = (time.perf_counter() - t) * 1000
times = {"auto": [], "lookup": []}
for route in ("lookup", "auto"):
    for q in questions:
        t = time.perf_counter(); kb.query(q, route=route); times[route].append((time.perf_counter() - t) * 1000)
def p95(xs): xs = sorted(xs); return xs[int(0.95 * (len(xs) - 1))]
# the memory figures before the agreement check below, whose exact walk reads every leaf
rss = {"query_rss_mb": peak_rss_mb(), "query_rss_anon_mb": status_mb("RssAnon"), "query_rss_file_mb": status_mb("RssFile")}
# On an index whose dense search is approximate the tree walk ranks a pool of leaves,
# not all of them: how far its answers agree with the walk over every leaf (the same
# questions, the route alone; the exact walk forced by the pool's one switch)
agreement = {}
if kb.index.dense is not None and kb.index.dense.approximate and "tree" in kb.index.routes:
    from arborgraph.query import retrievers
    pooled, pool_of = {}, retrievers._leaf_pool
    for exact in (False, True):
        if exact:
            retrievers._leaf_pool = lambda *args: None
        try:
            for q in questions:
                t = time.perf_counter(); found = kb.query(q, route="tree", top_k=10); ms = (time.perf_counter() - t) * 1000
                pooled.setdefault(q, []).append(([c.node_id for c in found.contexts], ms))
        finally:
            retrievers._leaf_pool = pool_of
    overlap = [len(set(a[0]) & set(b[0])) / max(len(b[0]), 1) for a, b in pooled.values()]
    agreement = {"tree_pooled_vs_exact_top10_overlap": round(sum(overlap) / len(overlap), 3),
                 "tree_pooled_vs_exact_same_top10": sum(a[0] == b[0] for a, b in pooled.values()),
                 "tree_pooled_mean_ms": round(sum(a[1] for a, _ in pooled.values()) / len(pooled), 1),
                 "tree_exact_mean_ms": round(sum(b[1] for _, b in pooled.values()) / len(pooled), 1),
                 "questions": len(pooled)}
print(json.dumps({**rss, **agreement, "chunks": len(kb.index.store.chunk_ids), "open_s": round(opened, 2), "first_query_ms": round(first, 1),
                  "auto_p95_ms": round(p95(times["auto"]), 1), "auto_mean_ms": round(sum(times["auto"]) / len(times["auto"]), 1),
                  "lookup_p95_ms": round(p95(times["lookup"]), 1), "lookup_mean_ms": round(sum(times["lookup"]) / len(times["lookup"]), 1)}))
"""


def probe(index: Path) -> dict[str, Any]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE, str(index), str(QUESTIONS)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure_queries(index: Path, repeats: int) -> dict[str, Any]:
    """The probe in ``repeats`` fresh processes, one after the other: each figure is the
    median of the runs (a p95 over 64 questions moved by 20 ms between runs on a quiet
    machine), every run's figures kept under ``runs``."""
    runs = [probe(index) for _ in range(repeats)]
    row: dict[str, Any] = {}
    for key, value in runs[0].items():
        values = [run[key] for run in runs]
        row[key] = statistics.median(values) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    row["runs"] = runs
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20000,200000,1000000")
    parser.add_argument("--work", type=Path, required=True, help="folder for the generated pages and indexes (kept)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "scale.json")
    parser.add_argument("--repeats", type=int, default=3, help="fresh query processes per size (figures: their medians)")
    parser.add_argument("--lookup-only", action="store_true",
                        help="build no tree and no graph (the rows say so): lookup and the ANN index alone, at sizes "
                             "whose full build would take hours on a small machine")
    args = parser.parse_args()
    structures = not args.lookup_only
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args.work.mkdir(parents=True, exist_ok=True)
    embedder = VariantEmbedder()
    base_chunks = 4856  # the sample manual's chunks with the default chunking
    results: dict[str, Any] = json.loads(args.out.read_text()) if args.out.exists() else {}
    results.update({
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip(),
    })
    by_size = {(row["size"], row.get("structures", True)): row for row in results.get("sizes", [])}
    for size in [int(s) for s in args.sizes.split(",")]:
        load_before = os.getloadavg()[0]
        row = {"size": size, "structures": structures, **build(size, args.work, embedder, base_chunks, structures)}
        row.update(measure_queries(index_dir(args.work, size, structures), args.repeats))
        row["load_1m_before"] = round(load_before, 2)
        row["measured_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        by_size[(size, structures)] = row
        print(json.dumps(row), file=sys.stderr, flush=True)
        results["sizes"] = [by_size[s] for s in sorted(by_size)]
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
