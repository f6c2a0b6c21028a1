"""arborgraph.core.tables.records_table: records to a table of a declared schema."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pytest

from arborgraph.core.tables import records_table


@dataclass(frozen=True)
class Row:
    name: str
    tags: tuple[str, ...]
    size: int | None


SCHEMA = pa.schema(
    [
        pa.field("name", pa.string(), nullable=False),
        pa.field("tags", pa.list_(pa.string()), nullable=False),
        pa.field("size", pa.int32()),
        pa.field("twice", pa.int64()),
    ]
).with_metadata({b"k": b"v"})


def test_columns_come_from_attributes_of_their_names_and_the_derived_ones():
    rows = [Row("a", ("x", "y"), 3), Row("b", (), None)]
    table = records_table(rows, SCHEMA, {"twice": [6, None]})
    assert table.schema.equals(SCHEMA, check_metadata=True)  # types, order, nullability, metadata
    assert table.to_pylist() == [
        {"name": "a", "tags": ["x", "y"], "size": 3, "twice": 6},
        {"name": "b", "tags": [], "size": None, "twice": None},
    ]


def test_no_records_make_an_empty_table_of_the_schema():
    table = records_table([], SCHEMA, {"twice": []})
    assert table.num_rows == 0 and table.schema.equals(SCHEMA, check_metadata=True)


def test_a_derived_column_the_schema_lacks_is_refused():
    with pytest.raises(ValueError, match="twice_over"):
        records_table([], SCHEMA, {"twice": [], "twice_over": []})


def test_a_column_no_record_holds_fails_by_name():
    with pytest.raises(AttributeError, match="twice"):
        records_table([Row("a", (), 1)], SCHEMA)
