"""The same build in-process, on a local process pool and on a real Dask LocalCluster
gives identical tables; a bad executor spec or unreachable scheduler is a clear error."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from arborgraph.config import load_config
from arborgraph.executor import ExecutorError, batches, make_executor
from arborgraph.pipeline import build_index

PAGES = ["wal.md", "c3ref_busy_timeout.md", "lockingv3.md", "autoinc.md"]
TABLES = ["chunks", "entities.s0", "relationships.s0", "communities.s0", "community_reports.s0"]


def _tables(index: Path) -> dict[str, object]:
    gen = (index / "CURRENT").read_text().strip()
    return {t: pq.read_table(index / gen / "tables" / f"{t}.parquet") for t in TABLES}


def test_serial_process_and_dask_builds_are_identical(tmp_path: Path, sample_slice: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for page in PAGES:
        shutil.copy(sample_slice / page, docs / page)
    results = {}
    for spec in ("serial", "process", "dask"):
        cfg = load_config(overrides={"build_tree": False, "executor": spec})
        report = build_index([docs], tmp_path / spec, cfg)
        assert report.stages["executor"]["name"].startswith(spec)
        if spec != "serial":
            assert report.stages["executor"]["workers"] >= 2
        results[spec] = _tables(tmp_path / spec)
    for table in TABLES:
        assert results["serial"][table].num_rows > 0
        assert results["serial"][table].equals(results["process"][table]), table
        assert results["serial"][table].equals(results["dask"][table]), table


def test_bad_executor_specs_are_clear_errors() -> None:
    with pytest.raises(ExecutorError, match="unknown executor"):
        make_executor("threads", 10)
    with pytest.raises(ExecutorError, match="cannot reach the Dask scheduler"):
        make_executor("tcp://127.0.0.1:9", 10)


def test_batches_preserve_order_and_cover_everything() -> None:
    items = list(range(23))
    parts = batches(items, 4)
    assert [x for part in parts for x in part] == items
    assert len(parts) == 4
    assert batches([], 3) == [] and batches([1], 8) == [[1]]
