"""The Bolt export: read what the server holds, plan the diff, run it stage by stage.

Only nodes labelled ``Arborgraph`` are ever read, changed or deleted; keep one index
per database (FalkorDB's named databases all map to one graph).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arborgraph.neo4j.connection import export_errors, neo4j_driver, verify
from arborgraph.neo4j.convert import index_records
from arborgraph.neo4j.cypher import DEFAULT_BATCH, Statement, node_state_cypher, rel_state_cypher
from arborgraph.neo4j.plan import Counts, NodeState, RelState, iter_stages, plan_export
from arborgraph.neo4j.records import NODE_LABELS, REL_TYPES, GraphRecords
from arborgraph.neo4j.servers import ServerDialect, detect_dialect

if TYPE_CHECKING:
    from neo4j import Driver, Session

    from arborgraph.core.protocols import ProgressCallback

DEFAULT_WORKERS = 1  # parallel sessions per stage (where the server allows; more is opt-in)


def read_state(session: "Session", group: int | None = None) -> tuple[NodeState, RelState]:
    """What the server holds: per label ``uid -> ag_hash``, per relationship type
    ``uid -> (ag_hash, start uid)``. With ``group``, records carry that many rows each
    (the driver's cost is per record); without, one row each (streamed: the server
    never holds the whole list)."""

    def rows(cypher: str) -> Iterator[list[Any]]:
        for record in session.run(cypher):
            if group is None:
                yield record["row"]
            else:
                yield from record["rows"]

    nodes: dict[str, dict[str, Any]] = {label: {} for label in NODE_LABELS}
    for labels, uid, h in rows(node_state_cypher(group)):
        for label in labels:
            if label in nodes:
                nodes[label][uid] = h
    rels: dict[str, dict[str, Any]] = {t: {} for t in REL_TYPES}
    for rel_type, uid, h, start in rows(rel_state_cypher(group)):
        if rel_type in rels:  # relationships of other types between our nodes are not ours
            rels[rel_type][uid] = (h, start)
    return nodes, rels


def run_stage(
    driver: "Driver",
    statements: Sequence[Statement],
    dialect: ServerDialect,
    *,
    database: str | None = None,
    workers: int = 1,
    progress: "ProgressCallback | None" = None,
    stage: str = "neo4j",
) -> None:
    """Run one stage: its unordered statements spread over ``workers`` sessions (a
    round trip per statement is what a small-batch server spends most on), then its
    ordered statements one after another."""
    neo4j = neo4j_driver()
    free = [st for st in statements if not st.ordered]
    ordered = [st for st in statements if st.ordered]
    total = sum(st.rows for st in statements)
    done = 0
    lock = threading.Lock()

    def advance(rows: int) -> None:
        nonlocal done
        with lock:
            done += rows
            if progress and rows:
                progress(stage, done, total)

    def run_part(part: Sequence[Statement]) -> None:
        with driver.session(database=database) as session:
            dialect.run_statements(session, part, advance)

    def run_free_part(part: Sequence[Statement]) -> None:
        # a new connection may be lost in FalkorDB's handshake (see connect()); these
        # statements are idempotent MERGEs, so the part is simply run again
        for attempt in range(3):
            try:
                return run_part(part)
            except (neo4j.exceptions.ServiceUnavailable, neo4j.exceptions.ConnectionAcquisitionTimeoutError):
                if attempt == 2:
                    raise

    if progress:
        progress(stage, 0, total)
    with export_errors():
        n = max(1, min(workers, len(free)))
        if n == 1:
            run_free_part(free)
        else:
            with ThreadPoolExecutor(max_workers=n, thread_name_prefix="neo4j-export") as pool:
                for future in [pool.submit(run_free_part, free[i::n]) for i in range(n)]:
                    future.result()
        run_part(ordered)
    if progress and not total:
        progress(stage, 0, 0)


@dataclass
class ExportReport:
    """What one export did."""

    server: str
    nodes: Counts
    relationships: Counts
    dropped_relationships: int
    statements: int
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "nodes": vars(self.nodes),
            "relationships": vars(self.relationships),
            "dropped_relationships": self.dropped_relationships,
            "statements": self.statements,
            "seconds": round(self.seconds, 3),
        }


def export_records(
    records: GraphRecords,
    driver: "Driver",
    *,
    database: str | None = None,
    batch_size: int = DEFAULT_BATCH,
    workers: int = DEFAULT_WORKERS,
    progress: "ProgressCallback | None" = None,
) -> ExportReport:
    """Bring the server's Arborgraph graph in line with ``records``: create indexes,
    write new and changed records, delete records the index no longer has.

    ``workers`` > 1 sessions write each stage's independent batches in parallel, where
    the server is safe with that (Neo4j: a deadlock between them is a transient error
    the driver retries; not measured here, hence opt-in). FalkorDB always gets one
    session (see :class:`~arborgraph.neo4j.servers.FalkorDBDialect`)."""
    t0 = time.perf_counter()
    verify(driver)
    with export_errors():
        with driver.session(database=database) as session:
            dialect = detect_dialect(session, batch_size=batch_size)
            schema = dialect.schema_statements(dialect.existing_indexes(session))
            for st in schema:
                session.run(st.cypher).consume()
            node_state, rel_state = read_state(session, dialect.state_group)
            plan = plan_export(records, node_state, rel_state)
        parallel = workers if dialect.max_sessions is None else min(workers, dialect.max_sessions)
        written = 0
        for stage, statements in iter_stages(plan, dialect, batch_size):
            run_stage(driver, statements, dialect, database=database, workers=parallel, progress=progress, stage=stage)
            written += len(statements)
    return ExportReport(
        server=f"{dialect.name} {dialect.version}".strip(),
        nodes=plan.nodes,
        relationships=plan.relationships,
        dropped_relationships=records.dropped_rels,
        statements=len(schema) + written,
        seconds=time.perf_counter() - t0,
    )


def export_index(
    index_dir: str | Path,
    driver: "Driver",
    *,
    database: str | None = None,
    batch_size: int = DEFAULT_BATCH,
    workers: int = DEFAULT_WORKERS,
    progress: "ProgressCallback | None" = None,
) -> ExportReport:
    """Export the live generation of ``index_dir`` over Bolt (see :func:`export_records`)."""
    from arborgraph.index.store import open_generation

    records = index_records(open_generation(Path(index_dir)))
    return export_records(records, driver, database=database, batch_size=batch_size, workers=workers, progress=progress)
