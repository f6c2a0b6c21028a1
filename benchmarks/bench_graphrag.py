"""Benchmark the GraphRAG build on the bundled SQLite manual, and its retrieval.

Usage::

    python benchmarks/bench_graphrag.py                       # build stages + BM25-based eval
    python benchmarks/bench_graphrag.py --index IDX/gen-N     # + hybrid baseline from an index
    python benchmarks/bench_graphrag.py --no-eval             # build stages only

Times each stage of the rule-based build on one core (term learning, extraction,
resolution, hierarchical Leiden, extractive reports; Leiden is also re-run to check
that the same seed gives the same communities). The evaluation scores
``graph_search`` on the relational and ``global_search`` on the global questions of
``benchmarks/questions/sqlite.jsonl`` with the harness of ``arborgraph.query.evaluation``
(evidence recall and full-hit rate at a word budget) against flat baselines: BM25
always; hybrid (BM25 + dense, RRF) when ``--index`` points at an index generation
whose ``tables/chunks.parquet`` and ``vectors/chunks.npy`` match the manual's chunks.
Writes ``benchmarks/results/graphrag.json``. Timings depend on the machine's load,
which is recorded with them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arborgraph.query.evaluation import load_questions, score_contexts  # noqa: E402
from arborgraph.core.lexical import LexicalIndex  # noqa: E402
from arborgraph.core.results import Context  # noqa: E402
from graphrag import (  # noqa: E402
    GraphConfig,
    KnowledgeGraph,
    RuleExtractor,
    global_search,
    graph_search,
)
from graphrag.build import detect_communities  # noqa: E402
from graphrag.reports import ExtractiveReportWriter, write_reports  # noqa: E402
from graphrag.resolution import resolve  # noqa: E402
from ingest import ChunkingConfig, Document, chunk_document, iter_collection, load_token_counter  # noqa: E402
from ingest.models import Chunk  # noqa: E402


def load_chunks(manual: Path) -> list[Chunk]:
    count = load_token_counter()
    chunks: list[Chunk] = []
    for item in iter_collection([manual]):
        if isinstance(item, Document):
            chunks.extend(chunk_document(item, ChunkingConfig(), count))
    return chunks


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, round(time.perf_counter() - t, 3)


def build(chunks: list[Chunk], config: GraphConfig) -> tuple[KnowledgeGraph, dict[str, Any]]:
    ex = RuleExtractor()
    _, t_fit = timed(lambda: ex.fit(chunks))
    extractions, t_extract = timed(lambda: [ex.extract(c) for c in chunks])
    (entities, relations), t_resolve = timed(lambda: resolve(extractions, config))
    communities, t_leiden = timed(lambda: detect_communities(entities, relations, config))
    again, t_leiden2 = timed(lambda: detect_communities(entities, relations, config))
    same = [(c.level, c.members) for c in again.values()] == [(c.level, c.members) for c in communities.values()]
    kg = KnowledgeGraph(entities, relations, communities, meta={"extractor": ex.name})
    _, t_reports = timed(lambda: write_reports(kg, ExtractiveReportWriter(), min_size=config.min_report_size))
    sizes = [len(c.members) for c in communities.values()]
    stats = {
        "chunks": len(chunks),
        "terms_learned": len(ex.vocabulary_.terms_),
        "mentions": sum(len(e.spans) for x in extractions for e in x.entities),
        "entities": len(entities),
        "relations": len(relations),
        "typed_relations": sum(1 for r in relations.values() if r.type != "co_occurs"),
        "communities": len(communities),
        "levels": sorted({c.level for c in communities.values()}),
        "largest_community": max(sizes, default=0),
        "leaf_communities_over_max": sum(
            1 for c in communities.values() if not c.children and len(c.members) > config.max_cluster_size
        ),
        "reports": len(kg.reports),
    }
    times = {
        "term_learning_s": t_fit,
        "extraction_s": t_extract,
        "extraction_ms_per_chunk": round(1000 * t_extract / max(1, len(chunks)), 3),
        "resolution_s": t_resolve,
        "leiden_s": t_leiden,
        "leiden_rerun_s": t_leiden2,
        "leiden_same_partition_on_rerun": same,
        "reports_s": t_reports,
        "total_build_s": round(t_fit + t_extract + t_resolve + t_leiden + t_reports, 3),
    }
    return kg, {"stats": stats, "times": times}


class Baselines:
    """Flat rankings of the manual's chunks: BM25, and hybrid when vectors are given."""

    def __init__(self, chunks: list[Chunk], vectors: np.ndarray | None, embedder: Any | None) -> None:
        self.ids = [c.chunk_id for c in chunks]
        self.lexical = LexicalIndex.build([c.context_text() for c in chunks])
        self.vectors = vectors
        self.embedder = embedder
        self._qvec: dict[str, np.ndarray] = {}

    def qvec(self, q: str) -> np.ndarray:
        if q not in self._qvec:
            self._qvec[q] = np.asarray(self.embedder.encode([q]), dtype=np.float32)[0]  # type: ignore[union-attr]
        return self._qvec[q]

    def rank(self, q: str, mode: str, depth: int = 100) -> list[str]:
        bm = self.lexical.scores(q)
        rb = list(np.argsort(-bm, kind="stable")[:depth])
        if mode == "bm25" or self.vectors is None:
            return [self.ids[i] for i in rb]
        dn = self.vectors @ self.qvec(q)
        rd = list(np.argsort(-dn, kind="stable")[:depth])
        fused: dict[int, float] = {}
        for ranking in (rb, rd):
            for r, i in enumerate(ranking, start=1):
                fused[i] = fused.get(i, 0.0) + 1.0 / (60 + r)
        return [self.ids[i] for i in sorted(fused, key=lambda i: (-fused[i], i))]


def evaluate(
    name: str,
    questions: Sequence[Any],
    fn: Callable[[str], Sequence[Context]],
    budget: int,
) -> dict[str, Any]:
    recall, full, lat, empty = [], [], [], 0
    for q in questions:
        t = time.perf_counter()
        ctxs = fn(q.question)
        lat.append(time.perf_counter() - t)
        empty += not ctxs
        found, _ = score_contexts(ctxs, [e.text for e in q.evidence], budget)
        recall.append(found / len(q.evidence))
        full.append(found == len(q.evidence))
    return {
        "system": name,
        "questions": len(questions),
        "evidence_recall": round(statistics.mean(recall), 4),
        "full_hit_rate": round(statistics.mean(full), 4),
        "empty_results": empty,
        "latency_ms_p50": round(1000 * statistics.median(lat), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--manual", type=Path, default=ROOT / "examples" / "sqlite")
    ap.add_argument("--questions", type=Path, default=ROOT / "benchmarks" / "questions" / "sqlite.jsonl")
    ap.add_argument("--index", type=Path, default=None, help="index generation with vectors for a hybrid baseline")
    ap.add_argument("--embedding-backend", default="onnx", help="the pipeline the index was built with")
    ap.add_argument("--budget-words", type=int, default=1500)
    ap.add_argument("--no-eval", action="store_true")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "graphrag.json")
    args = ap.parse_args()

    load_before = os.getloadavg()
    chunks, t_chunk = timed(lambda: load_chunks(args.manual))
    config = GraphConfig()
    kg, result = build(chunks, config)
    result["times"]["load_and_chunk_s"] = t_chunk
    result["config"] = json.loads(config.model_dump_json())

    if not args.no_eval:
        by_id = {c.chunk_id: c for c in chunks}
        vectors = embedder = None
        if args.index is not None:
            import pyarrow.parquet as pq

            from arborgraph.models.embedding import EmbeddingConfig, load_embedder

            ids = pq.read_table(args.index / "tables" / "chunks.parquet", columns=["chunk_id"]).column(0).to_pylist()
            if ids != [c.chunk_id for c in chunks]:
                raise SystemExit("--index chunks do not match the manual's chunks")
            vectors = np.load(args.index / "vectors" / "chunks.npy")
            # queries must go through the pipeline that embedded the index's chunks
            embedder = load_embedder(EmbeddingConfig(backend=args.embedding_backend))
        base = Baselines(chunks, vectors, embedder)
        row = {c.chunk_id: i for i, c in enumerate(chunks)}

        def chunk_vectors(cids: Sequence[str]) -> np.ndarray:
            return vectors[[row[c] for c in cids]]  # type: ignore[index]

        def flat(mode: str) -> Callable[[str], list[Context]]:
            return lambda q: [
                Context(text=by_id[c].text, source=by_id[c].doc_id, node_id=c) for c in base.rank(q, mode)[:40]
            ]

        questions = load_questions(args.questions)
        evals: dict[str, list[dict[str, Any]]] = {}
        for qtype, search in (("relational", graph_search), ("global", global_search)):
            qs = [q for q in questions if q.type == qtype]
            modes = ["bm25"] + (["hybrid"] if vectors is not None else [])
            rows = [evaluate(f"{m} baseline", qs, flat(m), args.budget_words) for m in modes]
            rows.append(evaluate(f"{search.__name__} alone", qs, lambda q, s=search: s(kg, q, chunk_text=by_id).contexts, args.budget_words))
            for m in modes:
                extra: dict[str, Any] = {}
                if m == "hybrid":
                    extra = {"embedder": embedder, "chunk_vectors": chunk_vectors}
                rows.append(
                    evaluate(
                        f"{search.__name__} with {m} candidates",
                        qs,
                        lambda q, s=search, m=m, extra=extra: s(
                            kg, q, chunk_text=by_id, candidate_chunks=base.rank(q, m), **extra
                        ).contexts,
                        args.budget_words,
                    )
                )
            evals[qtype] = rows
        result["retrieval"] = {"budget_words": args.budget_words, "by_question_type": evals}

    result["machine"] = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "note": "build stages are single-threaded Python / leidenalg",
    }
    from importlib.metadata import version

    result["versions"] = {p: version(p) for p in ("leidenalg", "igraph", "numpy")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
