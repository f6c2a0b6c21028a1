"""Benchmark the RAPTOR tree: UMAP's numba compile cost, clustering, and a full build.

Usage::

    python benchmarks/bench_raptor.py                      # numba/UMAP + clustering only
    python benchmarks/bench_raptor.py --index IDX/gen-000001 --build [--save DIR]
    python benchmarks/bench_raptor.py --skip-numba --skip-cluster --index IDX/gen-000001 --build --workers 1,2 --rounds 3
    python benchmarks/bench_raptor.py --skip-numba --eval-index IDX --tree DIR


``--index`` points at an index generation (``tables/chunks.parquet`` and
``vectors/chunks.npy``) whose chunks are reused; ``--build`` then builds the whole
tree with the extractive summariser and the index's own embedding pipeline, once per
``--workers`` setting per round (alternating), and checks every build gave the same tree.
``--update-index`` (a generation with a saved tree, ``raptor_nodes.s0.parquet`` and
``tree.s0.npy``) rewrites one page (a sentence appended to each of its chunks) and
times ``update_tree`` against the saved tree, and with ``--compare-build`` also a
full ``build_tree`` over the same leaves.
``--eval-index`` (an index directory a ``KnowledgeBase`` opens) with ``--tree`` (a
tree saved by ``--save``) scores ``traverse`` against the index's flat hybrid lookup
on the question set, per question type, with the project's evaluation rule (evidence
strings within the first 1,500 words).
Writes ``benchmarks/results/raptor.json`` (or ``--out``). Timings depend on the
machine's load, which is recorded with them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from raptor import Leaf, RaptorConfig, Tree

# Runs in a fresh interpreter: time the first and second UMAP fit in one process.
_UMAP_PROBE = r"""
import json, sys, time
import numpy as np
t0 = time.perf_counter()
import umap
t_import = time.perf_counter() - t0
rng = np.random.default_rng(0)
X = rng.normal(size=(int(sys.argv[1]), 384)).astype(np.float32)
X /= np.linalg.norm(X, axis=1, keepdims=True)
fits = []
for seed in (0, 1):
    t = time.perf_counter()
    umap.UMAP(n_components=10, n_neighbors=15, metric="cosine", min_dist=0.0, random_state=seed, n_jobs=1).fit_transform(X)
    fits.append(time.perf_counter() - t)
print(json.dumps({"import_s": t_import, "first_fit_s": fits[0], "second_fit_s": fits[1]}))
"""


def umap_probe(n_points: int, cache_dir: str | None) -> dict[str, float]:
    env = dict(os.environ)
    env.pop("NUMBA_CACHE_DIR", None)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    out = subprocess.run(
        [sys.executable, "-c", _UMAP_PROBE, str(n_points)], env=env, capture_output=True, text=True, check=True
    )
    return {k: round(v, 2) for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items()}


def bench_numba(n_points: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as cache:
        return {
            "n_points": n_points,
            "no_cache_dir": umap_probe(n_points, None),
            "cold_cache_dir": umap_probe(n_points, cache),
            "warm_cache_dir": umap_probe(n_points, cache),
        }


def bench_pca_path(n_points: int) -> dict[str, float]:
    from raptor.cluster import RaptorClusterer

    rng = np.random.default_rng(0)
    X = rng.normal(size=(n_points, 384)).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    t = time.perf_counter()
    RaptorClusterer(reducer="pca", random_state=0).fit(X)
    return {"n_points": n_points, "fit_s": round(time.perf_counter() - t, 2)}


def load_index(gen: Path, limit: int | None) -> tuple[list[Leaf], np.ndarray]:
    import pyarrow.parquet as pq

    table = pq.read_table(gen / "tables" / "chunks.parquet").to_pylist()
    vectors = np.load(gen / "vectors" / "chunks.npy")
    if limit:
        table, vectors = table[:limit], vectors[:limit]
    # with the chunker's token counts, as the index's tree stage passes them
    leaves = [
        Leaf(r["chunk_id"], r["doc_id"], r["text"], tuple(r["heading_path"]), r["start"], r["end"], r.get("n_tokens"))
        for r in table
    ]
    return leaves, vectors


def bench_cluster(vectors: np.ndarray) -> dict[str, object]:
    from raptor.cluster import RaptorClusterer

    out: dict[str, object] = {"n_points": len(vectors)}
    for reducer in ("pca", "umap"):
        t = time.perf_counter()
        c = RaptorClusterer(reducer=reducer, random_state=0, max_cluster_size=3000).fit(vectors)
        out[reducer] = {"fit_s": round(time.perf_counter() - t, 2), "clusters": c.n_clusters_}
    return out


def bench_build(
    gen: Path, limit: int | None, save: Path | None, workers: list[int | None], rounds: int
) -> dict[str, object]:
    """Full tree builds, ``rounds`` x every ``workers`` setting alternating (None: the
    default, sized to the machine); every build must give the same tree."""
    from arborgraph.models.embedding import EmbeddingConfig, load_embedder
    from ingest import load_token_counter
    from raptor import ExtractiveSummariser, TreeView, build_tree, tree_to_tables
    from raptor.build import tree_workers
    from raptor.pool import TreePool

    leaves, vectors = load_index(gen, limit)
    manifest = json.loads((gen / "manifest.json").read_text())
    onnx = "/onnx" in (manifest["mode"].get("embedding") or "")
    embedder = load_embedder(EmbeddingConfig(backend="onnx" if onnx else "sentence-transformers"))
    count = load_token_counter()
    # imported before the first build, so that no build pays it (a tree stage pays it once)
    import sklearn.mixture  # noqa: F401
    import umap.umap_  # noqa: F401

    # CPU seconds of the helper processes (not children of this one, so not in its rusage)
    helper_cpu = [0.0, 0.0]
    close = TreePool.close

    def counting_close(pool: TreePool) -> None:
        close(pool)
        helper_cpu[0] += pool.helper_cpu_s
        helper_cpu[1] += pool.waited_s

    TreePool.close = counting_close  # type: ignore[method-assign]

    def build_once(config: RaptorConfig) -> tuple[Tree, dict[str, object], ExtractiveSummariser]:
        # as the index builds it (arborgraph.pipeline.structures.run_tree_stage)
        summariser = ExtractiveSummariser(
            embed=embedder.encode, count_tokens=count, max_tokens=config.summary_max_tokens,
            max_sentences_embedded=16, sentence_vectors=False,
        )
        stage_time: dict[str, float] = {}
        last = [time.perf_counter()]

        def progress(stage: str, done: int, total: int | None) -> None:
            now = time.perf_counter()
            stage_time[stage] = stage_time.get(stage, 0.0) + now - last[0]
            last[0] = now

        helper_cpu[:] = [0.0, 0.0]
        t, cpu = time.perf_counter(), time.process_time()
        tree = build_tree(
            leaves, vectors, embed=embedder.encode, count_tokens=count, summariser=summariser, config=config,
            progress=progress,
        )
        total, cpu = time.perf_counter() - t, time.process_time() - cpu
        return tree, {
            "workers": tree_workers(config, len(leaves)),
            "total_s": round(total, 1),
            # CPU seconds of this process and of the helpers' jobs (the machine is shared:
            # wall time includes waiting)
            "cpu_s": round(cpu, 1),
            "helper_cpu_s": round(helper_cpu[0], 1),
            # wall seconds this process waited for helpers' results with nothing else to do
            "waited_for_helpers_s": round(helper_cpu[1], 1),
            # time spent before each progress report of that stage, summed
            "stage_s": {k: round(v, 1) for k, v in stage_time.items()},
        }, summariser

    runs: list[dict[str, object]] = []
    first: Tree | None = None
    identical = True
    for _ in range(rounds):
        for w in workers:
            config = RaptorConfig(workers=w)
            tree, run, summariser = build_once(config)
            runs.append(run)
            if first is None:
                first = tree
                stats = TreeView(tree).stats()
            else:
                identical = identical and tree.nodes == first.nodes and np.array_equal(tree.node_vectors, first.node_vectors)
    assert first is not None
    if save is not None:
        import pyarrow.parquet as pq

        save.mkdir(parents=True, exist_ok=True)
        for name, table in tree_to_tables(first).items():
            pq.write_table(table, save / f"{name}.parquet")
        np.save(save / "raptor_vectors.npy", first.node_vectors)
    by_workers: dict[str, list[float]] = {}
    for run in runs:
        by_workers.setdefault(str(run["workers"]), []).append(float(run["total_s"]))  # type: ignore[arg-type]
    medians = {w: round(float(np.median(v)), 1) for w, v in by_workers.items()}
    out: dict[str, object] = {
        "leaves": len(leaves),
        "embedding": embedder.name,
        "config": RaptorConfig().model_dump(),
        "rounds": rounds,
        "runs": runs,
        "median_total_s": medians,
        # every build (any workers setting) gave the same nodes (ids, children, texts, layout) and vectors
        "identical_trees": identical,
        "summary_nodes": len(first.summaries()),
        "per_level": stats["per_level"],
        "nodes_with_several_parents": stats["nodes_with_several_parents"],
    }
    if "1" in medians and len(medians) > 1:
        out["speedup_vs_one_process"] = {w: round(medians["1"] / m, 2) for w, m in medians.items() if w != "1"}
    return out


def bench_update(gen: Path, page: str | None, compare_build: bool) -> dict[str, object]:
    """update_tree after one page changed, against the tree saved with the index."""
    import pyarrow.parquet as pq

    from arborgraph.models.embedding import EmbeddingConfig, load_embedder
    from ingest import load_token_counter
    from raptor import ExtractiveSummariser, build_tree, tree_from_tables
    from raptor.schema import NODES_TABLE
    from raptor.update import update_tree

    leaves, vectors = load_index(gen, None)
    previous = tree_from_tables(
        {NODES_TABLE: pq.read_table(gen / "tables" / f"{NODES_TABLE}.s0.parquet")}, np.load(gen / "vectors" / "tree.s0.npy")
    )
    if [n.node_id for n in previous.leaves()] != [leaf.chunk_id for leaf in leaves]:
        raise SystemExit("the saved tree's leaves are not the generation's chunks")
    manifest = json.loads((gen / "manifest.json").read_text())
    onnx = "/onnx" in (manifest["mode"].get("embedding") or "")
    embedder = load_embedder(EmbeddingConfig(backend="onnx" if onnx else "sentence-transformers"))
    count = load_token_counter()
    config = RaptorConfig.model_validate(manifest.get("config", {}).get("tree", {}))
    docs = [leaf.doc_id for leaf in leaves]
    # default page: the median-sized document by chunk count, a typical edit
    sizes = sorted({d: docs.count(d) for d in set(docs)}.items(), key=lambda kv: (kv[1], kv[0]))
    page = page or sizes[len(sizes) // 2][0]
    rows = [i for i, d in enumerate(docs) if d == page]
    note = " This paragraph was revised in the new edition of the manual."
    leaves = [replace(leaf, text=leaf.text + note) if i in rows else leaf for i, leaf in enumerate(leaves)]
    vectors = vectors.copy()
    vectors[rows] = embedder.encode([" > ".join(leaves[i].heading_path) + "\n" + leaves[i].text for i in rows])

    def summariser() -> ExtractiveSummariser:  # as the index builds it
        return ExtractiveSummariser(
            embed=embedder.encode, count_tokens=count, max_tokens=config.summary_max_tokens,
            max_sentences_embedded=16, sentence_vectors=False,
        )

    t = time.perf_counter()
    tree, stats = update_tree(
        previous, leaves, vectors, embed=embedder.encode, count_tokens=count, summariser=summariser(), config=config
    )
    out: dict[str, object] = {
        "leaves": len(leaves),
        "page": page,
        "page_chunks": len(rows),
        "embedding": embedder.name,
        "update_s": round(time.perf_counter() - t, 2),
        "stats": {k: v for k, v in asdict(stats).items() if not k.endswith("_ids")},
        "previous_summaries": len(previous.summaries()),
        "height": tree.height,
    }
    if compare_build:
        t = time.perf_counter()
        rebuilt = build_tree(leaves, vectors, embed=embedder.encode, count_tokens=count, summariser=summariser(), config=config)
        out["build_s"] = round(time.perf_counter() - t, 1)
        out["build_summaries"] = len(rebuilt.summaries())
    return out


def load_tree(directory: Path) -> Tree:
    import pyarrow.parquet as pq

    from raptor import tree_from_tables
    from raptor.schema import NODES_TABLE

    table = pq.read_table(directory / f"{NODES_TABLE}.parquet")
    return tree_from_tables({NODES_TABLE: table}, np.load(directory / "raptor_vectors.npy"))


def bench_eval(index_dir: Path, tree_dir: Path, questions: Path, budget_words: int, beams: list[int]) -> dict[str, object]:
    import arborgraph
    from arborgraph.query.evaluation import load_questions, score_contexts
    from arborgraph.core.lexical import LexicalIndex
    from ingest import load_token_counter
    from raptor import traverse

    kb = arborgraph.open(index_dir)
    tree = load_tree(tree_dir)
    count = load_token_counter()
    summaries = tree.summaries()
    summary_lexical = LexicalIndex.build([f"{n.title}\n{n.text}" for n in summaries])
    leaves = tree.leaves()

    def lexical_scores(question: str) -> dict[str, float]:
        chunk_scores = kb.index.lexical.scores(question)
        out = {}
        for leaf in leaves:
            row = kb.index.store.row_of.get(leaf.node_id)
            if row is not None and chunk_scores[row] > 0:
                out[leaf.node_id] = float(chunk_scores[row])
        for node, value in zip(summaries, summary_lexical.scores(question)):
            if value > 0:
                out[node.node_id] = float(value)
        return out

    systems: dict[str, object] = {
        "flat_hybrid": lambda q, v, lx: kb.query(q, route="lookup", top_k=50, budget_tokens=budget_words * 4).contexts
    }
    for beam in beams:
        systems[f"traverse_beam{beam}"] = lambda q, v, lx, beam=beam: traverse(
            tree, v, tree.node_vectors, lexical_scores=lx, beam=beam, budget_tokens=budget_words * 4, count_tokens=count
        )
    per_type: dict[str, dict[str, list[float]]] = {}
    for question in load_questions(questions):
        vector, lexical = kb.engine.embed_query(question.question), lexical_scores(question.question)
        evidence = [e.text for e in question.evidence]
        for name, run in systems.items():
            found, _ = score_contexts(run(question.question, vector, lexical), evidence, budget_words)  # type: ignore[operator]
            stats = per_type.setdefault(question.type, {}).setdefault(name, [])
            stats.append(found / len(evidence))
    return {
        "questions": str(questions.relative_to(ROOT)) if questions.is_relative_to(ROOT) else str(questions),
        "budget_words": budget_words,
        "tree_leaves": len(leaves),
        "metrics": {
            qtype: {
                name: {
                    "n": len(r),
                    "evidence_recall": round(float(np.mean(r)), 3),
                    "full_hit_rate": round(float(np.mean([x == 1.0 for x in r])), 3),
                }
                for name, r in by_system.items()
            }
            for qtype, by_system in per_type.items()
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", type=Path, help="an index generation directory to take chunks from")
    ap.add_argument("--build", action="store_true", help="build the full tree over the index's chunks")
    ap.add_argument("--limit", type=int, help="use only the first N chunks")
    ap.add_argument("--save", type=Path, help="write the built tree (parquet + npy) here")
    ap.add_argument("--workers", default="auto", help="with --build: comma-separated process counts to compare ('auto': sized to the machine)")
    ap.add_argument("--rounds", type=int, default=1, help="with --build: builds per --workers setting (alternating)")
    ap.add_argument("--skip-cluster", action="store_true", help="with --index: skip the level-0 clustering timings")
    ap.add_argument("--skip-numba", action="store_true")
    ap.add_argument("--eval-index", type=Path, help="index directory for the retrieval comparison")
    ap.add_argument("--update-index", type=Path, help="a generation with a saved tree: time update_tree after one page changed")
    ap.add_argument("--page", help="the doc_id to change with --update-index (default: a median-sized page)")
    ap.add_argument("--compare-build", action="store_true", help="with --update-index, also time a full build")
    ap.add_argument("--tree", type=Path, help="a tree saved with --save, for --eval-index")
    ap.add_argument("--questions", type=Path, default=ROOT / "benchmarks" / "questions" / "sqlite.jsonl")
    ap.add_argument("--beams", default="3,50", help="beam widths to evaluate")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "raptor.json")
    args = ap.parse_args()

    machine: dict[str, object] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    import umap

    results: dict[str, object] = {"versions": {"umap-learn": umap.__version__}}
    if not args.skip_numba:
        results["umap_numba"] = bench_numba(300)
        results["pca_path"] = bench_pca_path(300)
    if args.index is not None:
        if not args.skip_cluster:
            _, vectors = load_index(args.index, args.limit)
            results["cluster_level0"] = bench_cluster(vectors)
        if args.build:
            workers = [None if w == "auto" else int(w) for w in args.workers.split(",")]
            results["build"] = bench_build(args.index, args.limit, args.save, workers, args.rounds)
    if args.update_index is not None:
        results["update"] = bench_update(args.update_index, args.page, args.compare_build)
    if args.eval_index is not None:
        tree_dir = args.tree or args.save
        if tree_dir is None:
            ap.error("--eval-index needs --tree (or --build --save)")
        beams = [int(b) for b in args.beams.split(",")]
        results["retrieval"] = bench_eval(args.eval_index, tree_dir, args.questions, 1500, beams)
    machine["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    # timings depend on the load: every part run now carries this run's machine record
    for part in results.values():
        if isinstance(part, dict) and part is not results["versions"]:
            part["machine"] = machine
    # parts not run this time keep their previous results
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    previous.update(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(previous, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
