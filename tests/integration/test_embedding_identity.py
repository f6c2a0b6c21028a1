"""An index records exactly which embedder made its vectors; a query with another one is
refused, and a rebuild embeds every chunk again and says so.

The "old" index here is embedded by the real model under the name the int8 pipeline had
(what every index built before the float model shipped records), so its vectors differ
from today's only by the name, which is what the checks compare.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import arborgraph
from arborgraph.config import Config, load_config
from arborgraph.core.errors import EmbedderMismatch
from arborgraph.core.model_files import packaged_model_dir, read_manifest
from arborgraph.core.protocols import Embedder
from arborgraph.models.embedding import load_embedder
from arborgraph.pipeline import build_index

OLD_NAME = "all-MiniLM-L6-v2/onnx-int8"
QUESTION = "How does AUTOINCREMENT choose a new rowid?"
PAGES = ("wal.md", "autoinc.md")


class Renamed:
    """The real model under another name."""

    def __init__(self, model: Embedder, name: str) -> None:
        self.model, self.name, self.dim = model, name, model.dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.model.encode(texts)


def lookup_only() -> Config:
    return load_config(overrides={"build_tree": False, "build_graph": False})


def build_old_index(sample_slice: Path, index: Path) -> None:
    config = lookup_only()
    model = load_embedder(config.embedding)
    report = build_index(
        [sample_slice / page for page in PAGES], index, config,
        embedder_factory=lambda _: (Renamed(model, OLD_NAME), None),
    )
    assert report.embedding == OLD_NAME


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "300"}
    return subprocess.run([sys.executable, "-m", "arborgraph.cli", *args], capture_output=True, text=True, env=env)


def test_the_manifest_records_the_embedding_identity(sample_index: Path) -> None:
    manifest = json.loads(next(sample_index.glob("gen-*/manifest.json")).read_text())
    identity = manifest["mode"]["embedding_identity"]
    digest = read_manifest(packaged_model_dir()).files["model.onnx"].sha256
    assert identity["name"] == manifest["mode"]["embedding"]
    assert identity["model_sha256"] == digest and digest[:12] in identity["name"]
    assert {k: identity[k] for k in ("model", "backend", "precision", "dim", "pooling", "max_seq_length")} == {
        "model": "all-MiniLM-L6-v2", "backend": "onnx", "precision": "fp16-weights", "dim": 384,
        "pooling": "mean", "max_seq_length": 256,
    }
    assert identity["runtime"]["onnxruntime"]


def test_a_query_with_another_embedder_is_refused_naming_both(tmp_path: Path, sample_slice: Path) -> None:
    index = tmp_path / "idx"
    build_old_index(sample_slice, index)
    today = load_embedder(lookup_only().embedding).name
    kb = arborgraph.open(index)
    with pytest.raises(EmbedderMismatch) as caught:
        kb.query(QUESTION, route="lookup")
    message = str(caught.value)
    assert "\n" not in message
    assert f"embedded with {OLD_NAME}" in message and f"embeds questions with {today}" in message
    assert f"rebuild the index (arborgraph build DOCUMENTS --index {index})" in message
    # over the CLI: that line and exit status 2, no traceback
    run = cli("query", "--index", str(index), "--route", "lookup", QUESTION)
    assert run.returncode == 2, run.stdout + run.stderr
    assert OLD_NAME in run.stderr and today in run.stderr and "Traceback" not in run.stderr


def test_a_rebuild_embeds_every_chunk_again_and_says_so(tmp_path: Path, sample_slice: Path) -> None:
    index = tmp_path / "idx"
    build_old_index(sample_slice, index)
    chunks = arborgraph.open(index).info()["counts"]["chunks"]
    pages = [str(sample_slice / page) for page in PAGES]
    run = cli("build", *pages, "--index", str(index), "--no-tree", "--no-graph")
    assert run.returncode == 0, run.stderr
    assert f"re-embedded: the index was embedded with {OLD_NAME}; every chunk was embedded again" in run.stdout
    # the cache holds every chunk's vector under the old name: none of them was reused
    assert f"({chunks} computed, 0 from cache)" in run.stdout
    kb = arborgraph.open(index)
    assert kb.index.manifest.report.embedding_replaced == OLD_NAME
    assert kb.index.mode.embedding == load_embedder(lookup_only().embedding).name
    res = kb.query(QUESTION, route="lookup")
    assert res.mode.lexical_fallback is False and res.contexts[0].source == "autoinc.md"
    # the next rebuild writes no generation; a forced one has nothing to embed again, and
    # says nothing of it
    run = cli("build", *pages, "--index", str(index), "--no-tree", "--no-graph")
    assert run.returncode == 0 and run.stdout.startswith("unchanged "), run.stdout
    run = cli("build", *pages, "--index", str(index), "--no-tree", "--no-graph", "--force")
    assert run.returncode == 0, run.stderr
    assert "re-embedded" not in run.stdout and f"(0 computed, {chunks} from cache)" in run.stdout
