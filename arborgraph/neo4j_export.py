"""Deprecated: import from arborgraph.neo4j; this module goes in 0.3.

The old names still work: the package's API, the FalkorDB helpers (now in
:mod:`arborgraph.neo4j.servers`), and thin forms of the functions that took a dialect
(a dialect's own methods now). ``Dialect`` is the :class:`ServerDialect` protocol; make
one with ``NEO4J`` or :func:`falkordb`. ``export_neo4j_command`` is the CLI's
``arborgraph.cli.export_neo4j`` (loaded, with typer, when asked for).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from arborgraph.neo4j import *  # noqa: F403
from arborgraph.neo4j import __all__ as _package_names
from arborgraph.neo4j.cypher import DEFAULT_BATCH, Statement
from arborgraph.neo4j.records import Node, Rel
from arborgraph.neo4j.servers import (
    FALKOR_BYTE_BUDGET,
    FALKOR_STATE_GROUP,
    TX_ROWS,
    FalkorDBDialect,
    ServerDialect,
    falkor_escape,
    node_write_cypher,
    pack_rows,
    rel_write_cypher,
    row_fields,
    statement_len,
    wire_len,
)

if TYPE_CHECKING:
    from neo4j import Session

Dialect = ServerDialect


def falkordb(
    *, escape_strings: bool = True, byte_budget: int = FALKOR_BYTE_BUDGET, max_rows: int = DEFAULT_BATCH
) -> FalkorDBDialect:
    return FalkorDBDialect(escape_strings=escape_strings, byte_budget=byte_budget, max_rows=max_rows)


def schema_statements(dialect: ServerDialect, existing: Iterable[tuple[str, str, str]] = ()) -> list[Statement]:
    return dialect.schema_statements(existing)


def encode_params(params: dict[str, Any], dialect: ServerDialect) -> dict[str, Any]:
    return dialect.encode(params)


def param_batches(
    items: Sequence[Any],
    cypher: str,
    param: str,
    dialect: ServerDialect,
    batch_size: int,
    sizes: Sequence[int] | None = None,
    *,
    pack: bool = False,
    others: Mapping[str, Any] | None = None,
) -> Iterator[list[Any]]:
    if isinstance(dialect, FalkorDBDialect):
        return dialect.batches(items, cypher, param, batch_size, others=others, sizes=sizes, pack=pack)
    return dialect.batches(items, cypher, param, batch_size, others=others)


def upsert_statements(
    kind: str,
    records: Sequence[Node] | Sequence[Rel],
    dialect: ServerDialect,
    batch_size: int = DEFAULT_BATCH,
    new: Container[str] = frozenset(),
) -> list[Statement]:
    return dialect.upsert_statements(kind, records, batch_size, new)


def run_statements(
    session: "Session",
    statements: Sequence[Statement],
    dialect: ServerDialect,
    progress: Callable[[int], None] | None = None,
) -> None:
    dialect.run_statements(session, statements, progress)


def __getattr__(name: str) -> Any:
    if name == "export_neo4j_command":
        from arborgraph.cli import export_neo4j

        return export_neo4j
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    *_package_names,
    "Dialect", "falkordb", "schema_statements", "encode_params", "param_batches", "upsert_statements",
    "run_statements", "export_neo4j_command", "FALKOR_BYTE_BUDGET", "FALKOR_STATE_GROUP", "TX_ROWS",
    "falkor_escape", "node_write_cypher", "rel_write_cypher", "pack_rows", "row_fields", "statement_len",
    "wire_len",
]
