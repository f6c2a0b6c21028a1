"""Records to an Arrow table by its declared schema: the one row-to-column conversion
the index's table builders share (documents, tree nodes, graph records, extractions).

A column is named like the record attribute it holds, so the schema alone says what
goes where; a builder spells out only the columns no attribute holds as such (a count
worked out elsewhere, nested records as structs, a null written as -1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa


def records_table(
    records: Sequence[object], schema: pa.Schema, derived: Mapping[str, Sequence[object]] | None = None
) -> pa.Table:
    """A table of ``schema`` (its fields, types, order, nullability and metadata), one
    row per record in order: column ``name`` holds each record's attribute ``name``,
    unless ``derived`` gives that column's values (one per record)."""
    derived = derived or {}
    unknown = sorted(set(derived) - set(schema.names))
    if unknown:
        raise ValueError(f"derived columns not in the schema: {unknown}")
    columns = {
        name: derived[name] if name in derived else [getattr(record, name) for record in records]
        for name in schema.names
    }
    return pa.Table.from_pydict(columns, schema=schema)
