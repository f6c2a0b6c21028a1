"""The golden snapshot: a fresh build of the test slice and fresh queries on every
route equal what ``tests/data/golden/`` holds (see ``golden_snapshot.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from golden_snapshot import GOLDEN, differences


def test_build_and_rankings_equal_the_golden_snapshot(sample_index: Path) -> None:
    if not (GOLDEN / "queries.json").exists():
        pytest.fail(f"no golden snapshot at {GOLDEN}: run python tests/support/golden_snapshot.py --update")
    problems = differences(sample_index)
    assert not problems, "differs from the golden snapshot:\n" + "\n".join(problems[:40])


def test_the_comparison_sees_a_changed_table(sample_index: Path, tmp_path: Path) -> None:
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    golden = tmp_path / "golden"
    shutil.copytree(GOLDEN, golden)
    chunks = golden / "tables" / "chunks.parquet"
    table = pq.read_table(chunks)
    texts = table.column("text").to_pylist()
    texts[3] = texts[3] + " changed"
    pq.write_table(table.set_column(table.schema.get_field_index("text"), "text", pa.array(texts)), chunks)
    problems = differences(sample_index, golden)
    assert problems == ["tables/chunks.parquet.text: 1 rows differ, first row [3]"]
