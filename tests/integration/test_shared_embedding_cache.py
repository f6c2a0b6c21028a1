"""The user-level embedding cache index folders share (issue 38, item 9).

Real builds of real pages of the sample manual with the shipped model; each test has a
``$XDG_CACHE_HOME`` of its own (tests/conftest.py), so the shared cache starts empty.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from arborgraph.config import Config, load_config
from arborgraph.core.embedding_identity import EmbeddingIdentity
from arborgraph.core.model_files import load_onnx_model_dir, packaged_model_dir
from arborgraph.index import layout
from arborgraph.index import schema as S
from arborgraph.index.build_report import BuildReport
from arborgraph.models.embedding import EmbeddingConfig, OnnxEmbedder, load_embedder
from arborgraph.pipeline import build_index
from arborgraph.pipeline.shared_embedding_cache import default_shared_cache_dir, model_key
from conftest import copy_pages

PAGES = ["isolation.md", "autoinc.md", "c3ref_busy_handler.md"]


def lookup_only(**embedding: Any) -> Config:
    return load_config(overrides={"build_tree": False, "build_graph": False, "embedding": embedding})


def shared_file() -> Path:
    return Path(os.environ["XDG_CACHE_HOME"]) / "arborgraph" / "embeddings" / "vectors.sqlite"


def shared_rows(path: Path | None = None) -> int:
    with sqlite3.connect(path or shared_file()) as db:
        return int(db.execute("SELECT count(*) FROM vectors").fetchone()[0])


def used_bytes() -> int:
    with sqlite3.connect(shared_file()) as db:
        size, pages, free = (db.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_size", "page_count", "freelist_count"))
    return int(size * (pages - free))


def chunk_vectors(index: Path) -> bytes:
    generation = index / (index / layout.CURRENT).read_text().strip()
    return (generation / layout.vectors_file(S.CHUNK_VECTORS)).read_bytes()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "300"}
    return subprocess.run([sys.executable, "-m", "arborgraph.cli", *args], capture_output=True, text=True, env=env)


@pytest.fixture
def docs(tmp_path: Path, sample_slice: Path) -> Path:
    return copy_pages(sample_slice, tmp_path / "docs", PAGES)


# -- a second folder -------------------------------------------------------------------


def test_a_second_folder_of_the_same_documents_computes_no_vector(tmp_path: Path, docs: Path) -> None:
    """With the tree (whose summaries are embedded too) and the graph, as a user builds."""
    first = build_index([docs], tmp_path / "one")
    assert first.embeddings_computed == first.chunks > 0
    assert (first.embeddings_from_index_cache, first.embeddings_from_shared_cache) == (0, 0)
    assert first.shared_embedding_cache == str(shared_file()) and first.shared_embedding_cache_note is None

    second = build_index([docs], tmp_path / "two")
    assert second.embeddings_computed == 0
    assert second.embeddings_from_shared_cache == second.embeddings_cached == second.chunks
    assert second.embeddings_from_index_cache == 0 and not second.warnings
    # the same bytes as computed, and the same tree (its summaries' vectors came from there too)
    assert chunk_vectors(tmp_path / "two") == chunk_vectors(tmp_path / "one")
    assert second.stages["tree"]["summaries"] == first.stages["tree"]["summaries"]

    # the new folder's own cache took them too: its next build needs neither model nor shared cache
    again = build_index([docs], tmp_path / "two", lookup_only(shared_cache=False), force=True)
    assert (again.embeddings_computed, again.embeddings_from_index_cache) == (0, again.chunks)


def test_vectors_from_the_shared_cache_are_the_models_bytes(tmp_path: Path, docs: Path) -> None:
    build_index([docs], tmp_path / "one", lookup_only())
    build_index([docs], tmp_path / "two", lookup_only())
    generation = tmp_path / "two" / (tmp_path / "two" / layout.CURRENT).read_text().strip()
    served = np.load(generation / layout.vectors_file(S.CHUNK_VECTORS))
    # the texts the build embedded: each chunk's heading path, then its text
    chunks = pq.read_table(generation / "tables" / "chunks.parquet").to_pylist()
    texts = [" > ".join(c["heading_path"]) + "\n" + c["text"] if c["heading_path"] else c["text"] for c in chunks]
    computed = load_embedder(EmbeddingConfig()).encode(texts)
    assert served.dtype == np.float32 and served.tobytes() == computed.tobytes()


def test_the_file_and_its_folder_are_the_users_alone(tmp_path: Path, docs: Path) -> None:
    build_index([docs], tmp_path / "one", lookup_only())
    path = shared_file()
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    for made in path.parent.iterdir():
        assert stat.S_IMODE(made.stat().st_mode) == 0o600, made.name
    # a folder someone widened is narrowed again on the next build
    os.chmod(path.parent, 0o755)
    os.chmod(path, 0o644)
    build_index([docs], tmp_path / "two", lookup_only())
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700 and stat.S_IMODE(path.stat().st_mode) == 0o600


# -- keyed by the model's identity -------------------------------------------------------


def test_another_model_identity_never_gets_these_vectors(tmp_path: Path, docs: Path) -> None:
    first = build_index([docs], tmp_path / "one", lookup_only())
    n = first.chunks

    # another length limit: other vectors (and another name)
    shorter = build_index([docs], tmp_path / "len128", lookup_only(max_seq_length=128))
    assert (shorter.embeddings_computed, shorter.embeddings_from_shared_cache) == (n, 0)

    # the same model file and the same name, but another tokenizer file: other vectors
    files = load_onnx_model_dir(packaged_model_dir())
    tokenizer = json.loads(files.tokenizer_path.read_text())
    tokenizer["normalizer"] = {"type": "Sequence", "normalizers": [tokenizer["normalizer"], {"type": "Strip", "strip_left": True, "strip_right": True}]}
    other_tokenizer = tmp_path / "tokenizer.json"
    other_tokenizer.write_text(json.dumps(tokenizer))
    shipped = OnnxEmbedder.from_model_dir(files)
    retokenized = OnnxEmbedder(
        files.model_path, other_tokenizer, files.manifest.pipeline, precision=files.manifest.precision,
        model_name=files.manifest.model, model_sha256=shipped.model_sha256,
    )
    assert retokenized.name == shipped.name and model_key(retokenized) != model_key(shipped)
    other = build_index([docs], tmp_path / "tok", lookup_only(), embedder_factory=lambda c: (retokenized, None))
    assert (other.embeddings_computed, other.embeddings_from_shared_cache) == (n, 0)

    # a name alone pins nothing: an embedder with no model digest is not shared at all
    rows = shared_rows()
    anonymous = build_index([docs], tmp_path / "anon", lookup_only(), embedder_factory=lambda c: (Anonymous(shipped), None))
    assert anonymous.embeddings_computed == n and anonymous.shared_embedding_cache is None
    assert "declares no model file digest" in (anonymous.shared_embedding_cache_note or "")
    assert shared_rows() == rows

    # and the shipped model still finds its own
    again = build_index([docs], tmp_path / "again", lookup_only())
    assert (again.embeddings_computed, again.embeddings_from_shared_cache) == (0, n)


class Anonymous:
    """The shipped model under its own name, declaring no identity (as an embedder a
    caller plugs in does)."""

    def __init__(self, model: OnnxEmbedder) -> None:
        self.model, self.name, self.dim = model, model.name, model.dim

    def encode(self, texts: Any) -> np.ndarray:
        return self.model.encode(texts)


def test_the_key_holds_every_fact_that_changes_a_vector() -> None:
    shipped = load_embedder(EmbeddingConfig())
    assert model_key(shipped) == model_key(load_embedder(EmbeddingConfig(threads=1, batch_size=4)))
    identity = shipped.identity  # type: ignore[attr-defined]
    assert isinstance(identity, EmbeddingIdentity) and identity.model_sha256

    class Declared(Anonymous):
        def __init__(self, model: OnnxEmbedder, **facts: Any) -> None:
            super().__init__(model)
            self.identity = identity.model_copy(update=facts)
            self.tokenizer_path = model.tokenizer_path

    keys = {
        model_key(Declared(shipped, **facts))  # type: ignore[arg-type]
        for facts in ({}, {"model_sha256": "0" * 64}, {"precision": "fp32"}, {"pooling": "cls"},
                      {"max_seq_length": 128}, {"lowercase": not identity.lowercase}, {"dim": 768})
    }
    assert len(keys) == 7
    # the runtime's versions are recorded, not compared
    assert model_key(Declared(shipped, runtime={"onnxruntime": "0.0"})) == model_key(shipped)  # type: ignore[arg-type]


# -- turned off ----------------------------------------------------------------------------


def test_turned_off_by_setting_or_flag_it_is_neither_read_nor_written(tmp_path: Path, docs: Path) -> None:
    first = build_index([docs], tmp_path / "one", lookup_only())
    n = first.chunks
    before = hashlib.sha256(shared_file().read_bytes()).hexdigest()

    off = build_index([docs], tmp_path / "two", lookup_only(shared_cache=False))
    assert (off.embeddings_computed, off.embeddings_from_shared_cache) == (n, 0)
    assert off.shared_embedding_cache is None and off.shared_embedding_cache_note == "off (embedding.shared_cache = false)"

    run = cli("build", str(docs), "--index", str(tmp_path / "three"), "--no-tree", "--no-graph", "--no-shared-cache", "--json")
    assert run.returncode == 0, run.stderr
    report = BuildReport.model_validate_json(run.stdout)
    assert (report.embeddings_computed, report.embeddings_from_shared_cache, report.shared_embedding_cache) == (n, 0, None)
    assert hashlib.sha256(shared_file().read_bytes()).hexdigest() == before
    assert not shared_file().with_name("vectors.sqlite-wal").exists()

    # on, the CLI says where the vectors came from
    run = cli("build", str(docs), "--index", str(tmp_path / "four"), "--no-tree", "--no-graph", "-q")
    assert run.returncode == 0, run.stderr
    assert f"(0 computed, {n} from cache, {n} of them from the shared cache)" in run.stdout


def test_the_shared_cache_settings_are_not_the_indexs(tmp_path: Path, docs: Path) -> None:
    """Turning it off, moving or resizing it changes no index: the next build is unchanged."""
    index = tmp_path / "idx"
    build_index([docs], index, lookup_only())
    manifest = json.loads(next(index.glob("gen-*/manifest.json")).read_text())
    assert not {"shared_cache", "shared_cache_max_mb", "shared_cache_dir"} & set(manifest["config"]["embedding"])
    assert not {"shared_embedding_cache", "embeddings_from_shared_cache"} & set(manifest["report"])
    other = lookup_only(shared_cache=False, shared_cache_max_mb=5, shared_cache_dir=str(tmp_path / "elsewhere"))
    assert build_index([docs], index, other).unchanged


# -- bounded ---------------------------------------------------------------------------------


def test_the_size_limit_evicts_the_least_recently_used(tmp_path: Path, sample_slice: Path) -> None:
    a = copy_pages(sample_slice, tmp_path / "a", ["limits.md", "c3ref_wal_checkpoint_v2.md"])
    b = copy_pages(sample_slice, tmp_path / "b", ["withoutrowid.md", "lang_vacuum.md"])
    c = copy_pages(sample_slice, tmp_path / "c", ["stricttables.md"])
    counts = {name: build_index([docs], tmp_path / f"{name}1", lookup_only()).chunks for name, docs in (("a", a), ("b", b))}
    assert build_index([a], tmp_path / "a2", lookup_only()).embeddings_computed == 0  # a is now the more recent
    limit = used_bytes()
    assert shared_rows() == counts["a"] + counts["b"]

    bounded = lookup_only(shared_cache_max_mb=limit / 2**20)
    new = build_index([c], tmp_path / "c1", bounded)
    assert new.embeddings_computed == new.chunks > 0 and not new.warnings
    assert shared_file().stat().st_size <= limit and used_bytes() <= limit * 0.9
    assert shared_rows() < counts["a"] + counts["b"] + new.chunks
    # b, used longest ago, made room; a (read since) and c (just written) stayed
    assert build_index([a], tmp_path / "a3", bounded).embeddings_computed == 0
    assert build_index([c], tmp_path / "c2", bounded).embeddings_computed == 0
    assert build_index([b], tmp_path / "b2", bounded).embeddings_computed > 0


# -- never fails a build ------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["a file in the way", "read-only folder"])
def test_an_unusable_cache_folder_is_skipped_with_a_warning(tmp_path: Path, docs: Path, how: str) -> None:
    folder = tmp_path / "cache-home"
    if how == "a file in the way":
        folder.write_text("not a folder\n")
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only folders")
        (folder / "arborgraph" / "embeddings").mkdir(parents=True)
        os.chmod(folder / "arborgraph" / "embeddings", 0o500)
    os.environ["XDG_CACHE_HOME"] = str(folder)  # restored by the fixture's monkeypatch
    report = build_index([docs], tmp_path / "idx", lookup_only())
    assert report.embeddings_computed == report.chunks > 0 and report.shared_embedding_cache is None
    [warning] = [w for w in report.warnings if "shared embedding cache" in w]
    assert str(folder / "arborgraph" / "embeddings" / "vectors.sqlite") in warning and "skipped" in warning
    run = cli("build", str(docs), "--index", str(tmp_path / "cli"), "--no-tree", "--no-graph", "-q")
    assert run.returncode == 0, run.stderr
    assert "shared embedding cache" in run.stdout and "skipped" in run.stdout


def test_a_damaged_file_is_moved_aside_and_started_afresh(tmp_path: Path, docs: Path) -> None:
    first = build_index([docs], tmp_path / "one", lookup_only())
    path = shared_file()
    path.write_bytes(random.Random(38).randbytes(path.stat().st_size))
    second = build_index([docs], tmp_path / "two", lookup_only())
    assert second.embeddings_computed == first.chunks
    assert any("cache vectors.sqlite was damaged" in w for w in second.warnings), second.warnings
    assert list(path.parent.glob("vectors.sqlite.corrupt-*"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and shared_rows() == first.chunks
    assert build_index([docs], tmp_path / "three", lookup_only()).embeddings_computed == 0


def test_two_builds_at_once_both_work(tmp_path: Path, docs: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "arborgraph.cli", "build", str(docs), "--index", str(tmp_path / name),
             "--no-tree", "--no-graph", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        for name in ("one", "two")
    ]
    reports = []
    for run in runs:
        out, errors = run.communicate()
        assert run.returncode == 0, errors
        reports.append(BuildReport.model_validate_json(out))
    for report in reports:
        assert report.embeddings_computed + report.embeddings_from_shared_cache == report.chunks
        assert not report.warnings
    assert shared_rows() == reports[0].chunks
    assert build_index([docs], tmp_path / "three", lookup_only()).embeddings_computed == 0


# -- where it lives ---------------------------------------------------------------------------


def test_the_folder_follows_xdg_cache_home_when_called(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_shared_cache_dir() == tmp_path / "arborgraph" / "embeddings"
    home = Path.home()
    for ignored in ("", "relative/cache"):
        assert default_shared_cache_dir({"XDG_CACHE_HOME": ignored}) == home / ".cache" / "arborgraph" / "embeddings"
