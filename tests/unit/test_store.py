"""The on-disk index: atomic generations, verification, refusal of damaged indexes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from arborgraph.index.schema import SCHEMA_VERSION
from arborgraph.core.errors import IndexBusy, IndexUnusable
from arborgraph.index.layout import CURRENT
from arborgraph.index.store import GenerationWriter, open_generation


def _write(index: Path, rows: int) -> Path:
    writer = GenerationWriter(index)
    writer.write_table("chunks", pa.table({"chunk_id": [f"c{i}" for i in range(rows)]}))
    writer.write_vectors("chunks", np.ones((rows, 4), dtype=np.float32))
    return writer.commit({"counts": {"chunks": rows}})


def test_commit_then_open_round_trips(tmp_path: Path) -> None:
    _write(tmp_path / "idx", 3)
    gen = open_generation(tmp_path / "idx")
    assert gen.manifest.schema_version == SCHEMA_VERSION
    assert gen.table("chunks").num_rows == 3
    assert gen.vectors("chunks").shape == (3, 4)


def test_interrupted_build_leaves_previous_generation_live(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    first = _write(index, 3)
    # a second build dies after writing part of its generation (no commit)
    writer = GenerationWriter(index)
    writer.write_table("chunks", pa.table({"chunk_id": ["x"]}))
    del writer
    gen = open_generation(index)
    assert gen.path == first
    assert gen.table("chunks").num_rows == 3
    # the next build cleans the abandoned generation and commits a new one
    third = _write(index, 5)
    assert open_generation(index).table("chunks").num_rows == 5
    assert sorted(p.name for p in index.iterdir() if p.name.startswith("gen-")) == [first.name, third.name]


def test_old_generations_are_pruned(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    for n in range(4):
        _write(index, n + 1)
    assert len([p for p in index.iterdir() if p.name.startswith("gen-")]) == 2


def test_not_an_index(tmp_path: Path) -> None:
    (tmp_path / "somefile").write_text("hello")
    with pytest.raises(IndexUnusable, match="not an Arborgraph index"):
        open_generation(tmp_path)
    with pytest.raises(IndexUnusable, match="no such directory"):
        open_generation(tmp_path / "missing")
    with pytest.raises(IndexUnusable, match="refusing to write"):
        GenerationWriter(tmp_path)


def test_truncated_file_is_refused(tmp_path: Path) -> None:
    gen = _write(tmp_path / "idx", 50)
    target = gen / "vectors" / "chunks.npy"
    target.write_bytes(target.read_bytes()[:-16])
    with pytest.raises(IndexUnusable, match="wrong size"):
        open_generation(tmp_path / "idx")


def test_tampered_file_is_refused(tmp_path: Path) -> None:
    gen = _write(tmp_path / "idx", 50)
    target = gen / "vectors" / "chunks.npy"
    data = bytearray(target.read_bytes())
    data[-1] ^= 0xFF
    target.write_bytes(bytes(data))
    with pytest.raises(IndexUnusable, match="checksum"):
        open_generation(tmp_path / "idx")


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    gen = _write(tmp_path / "idx", 2)
    manifest = json.loads((gen / "manifest.json").read_text())
    manifest["schema_version"] = SCHEMA_VERSION + 1
    (gen / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexUnusable, match="newer than this Arborgraph supports"):
        open_generation(tmp_path / "idx")


def test_missing_manifest_is_refused(tmp_path: Path) -> None:
    gen = _write(tmp_path / "idx", 2)
    (gen / "manifest.json").unlink()
    with pytest.raises(IndexUnusable, match="no manifest"):
        open_generation(tmp_path / "idx")
    (tmp_path / "idx" / CURRENT).write_text("../../etc\n")
    with pytest.raises(IndexUnusable, match="not a generation"):
        open_generation(tmp_path / "idx")


def test_a_pinned_generation_outlives_pruning_until_released(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    first = _write(index, 1)
    pinned = open_generation(index, pin=True)
    for n in range(3):
        _write(index, n + 2)
    assert first.is_dir() and pinned.table("chunks").num_rows == 1
    assert len([p for p in index.iterdir() if p.name.startswith("gen-")]) == 3  # live, previous, pinned
    pinned.close()
    last = _write(index, 9)
    assert not first.exists()
    assert sorted(p.name for p in index.iterdir() if p.name.startswith("gen-"))[-1] == last.name


def test_a_writer_takes_the_build_lock(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    _write(index, 1)
    writer = GenerationWriter(index)
    with pytest.raises(IndexBusy, match="another build"):
        GenerationWriter(index)
    writer.abort()
    assert _write(index, 2).name == "gen-000003"  # the aborted one's number is not reused
