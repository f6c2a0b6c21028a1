"""An index adopts the communities GDS's Leiden wrote in the database.

:func:`adopt_gds_communities` reads back, scope by scope, the ids ``gds.leiden`` wrote
on the ``Entity`` nodes (:mod:`.gds`), lays them out as the index's community table
(:func:`.hierarchy.gds_hierarchy`), has the index's own report builder
(:func:`graphrag.reports.write_reports`, as a build calls it) write every community's
report, and writes a new generation: the previous generation's files linked over, the
adopted scopes' graph tables written anew, the manifest's scope records saying where the
communities came from (``communities``: source ``gds-leiden`` and GDS's settings). The
commit switches ``CURRENT`` as a build's does; anything failing before it leaves the
previous generation live and untouched.

It first checks that the database holds this index's graph: the same entities and the
same edges GDS partitions (an export of another generation, or a later export without
GDS run again, is refused with one line saying what to run). A scope GDS skipped keeps
its own communities and is named among the ``skipped``.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arborgraph.core.errors import ExportError
from arborgraph.neo4j.connection import export_errors, verify
from arborgraph.neo4j.gds import (
    COMMUNITIES_PROPERTY,
    GRAPH_PROPERTY,
    LeidenSettings,
    SkippedScope,
    edges_digest,
    gds_version,
    index_settings,
    partition_modularity,
    partitioned_scopes,
    projected_edges_cypher,
    top_level_partition,
)
from arborgraph.neo4j.hierarchy import HierarchyError, gds_hierarchy, split_communities
from arborgraph.neo4j.records import ENTITY, MARK

if TYPE_CHECKING:
    import pyarrow as pa
    from neo4j import Driver

    from arborgraph.index.manifest import Manifest
    from arborgraph.index.scoped import Scope
    from arborgraph.index.store import Generation
    from graphrag.graph import KnowledgeGraph
    from ingest.models import Chunk

SOURCE = "gds-leiden"  # the communities record's source


@dataclass(frozen=True)
class AdoptedScope:
    """One scope whose communities are now GDS's: the communities per level (level 0
    first) before and after, the reports written, both top levels' modularity over the
    edges Leiden partitions (one function, as :mod:`.gds` compares them), and how many of
    GDS's finer communities straddled coarser ones and were split along them
    (:func:`.hierarchy.split_communities`)."""

    scope: str
    tag: str
    communities_by_level: list[int]
    previous_by_level: list[int]
    reports: int
    modularity: float
    previous_modularity: float
    gds_split: int

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["modularity"] = round(self.modularity, 6)
        out["previous_modularity"] = round(self.previous_modularity, 6)
        return out


@dataclass(frozen=True)
class AdoptOutcome:
    """What :func:`adopt_gds_communities` did: the generation it wrote (and the one it
    replaced), the scopes adopted, the scopes that kept their own communities."""

    generation: str
    previous_generation: str
    adopted: list[AdoptedScope]
    skipped: list[SkippedScope]
    gds_version: str
    settings: LeidenSettings
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "previous_generation": self.previous_generation,
            "source": SOURCE,
            "gds_version": self.gds_version,
            "settings": asdict(self.settings),
            "adopted": [a.as_dict() for a in self.adopted],
            "kept_own": [s.as_dict() for s in self.skipped],
            "seconds": round(self.seconds, 3),
        }


# -- reading the database ----------------------------------------------------------------


def scope_entities_cypher() -> str:
    return (
        f"MATCH (n:{MARK}:{ENTITY} {{scope: $scope}}) "
        f"RETURN n.id AS id, n.{COMMUNITIES_PROPERTY} AS levels, n.{GRAPH_PROPERTY} AS graph"
    )


@dataclass(frozen=True)
class ServerGraph:
    """What the database holds of one scope: each entity's GDS ids (None where GDS
    wrote none), the digests of the graphs GDS gave them (one, when it ran once on this
    export) and the edges GDS projects now."""

    levels: dict[str, list[int] | None]
    digests: set[str]
    edges: list[tuple[str, str, float]]


def read_server_graph(driver: "Driver", scope: str, settings: LeidenSettings, database: str | None) -> ServerGraph:
    with export_errors(), driver.session(database=database) as session:
        rows = session.run(scope_entities_cypher(), scope=scope).data()
        levels = {r["id"]: (list(r["levels"]) if r["levels"] is not None else None) for r in rows}
        digests = {r["graph"] for r in rows if r["levels"] is not None}
        params = {"scope": scope, "min_weight": settings.min_edge_weight}
        # each pair as the index orders it (ids, not uids)
        edges = sorted((*sorted((r["a"], r["b"])), float(r["weight"])) for r in session.run(projected_edges_cypher(), params))
    return ServerGraph(levels, digests, edges)


# -- checking it is this index's graph (pure) ------------------------------------------------


def mismatch(index_graph: "KnowledgeGraph", server: ServerGraph, edges: Sequence[tuple[str, str, float]]) -> str | None:
    """Why the database's graph of a scope is not ``index_graph`` (its Leiden ``edges``)
    or carries no GDS communities for it; None when GDS partitioned exactly this graph."""
    ours, theirs = set(index_graph.entities), set(server.levels)
    if ours != theirs:
        return f"its entities are not this index's ({len(ours ^ theirs)} differ)"
    same_edges = [(a, b) for a, b, _ in edges] == [(a, b) for a, b, _ in server.edges] and all(
        math.isclose(w, v, rel_tol=1e-9, abs_tol=1e-9) for (_, _, w), (_, _, v) in zip(edges, server.edges)
    )
    if not same_edges:
        return "its relations are not this index's"
    projected = {v for a, b, _ in edges for v in (a, b)}
    missing = sum(1 for v in projected if server.levels[v] is None)
    if missing:
        return f"{missing} of its {len(projected)} partitioned entities carry no GDS communities"
    if server.digests != {edges_digest(edges)}:
        return "GDS partitioned another version of its relations"
    return None


# -- the new graph of a scope -----------------------------------------------------------------


def scope_chunks(generation: "Generation") -> dict[str, list["Chunk"]]:
    """The index's chunks by access scope, in document order (as the build hands them
    to a scope's graph: what names its communities and opens their reports)."""
    from arborgraph.index import schema as S
    from arborgraph.index.chunk_rows import chunks_from_table
    from arborgraph.index.scoped import scope_of

    docs = generation.table(S.DOCUMENTS, columns=[S.DOC_ID, S.DOC_ACL])
    acl = dict(zip(docs.column(S.DOC_ID).to_pylist(), docs.column(S.DOC_ACL).to_pylist()))
    out: dict[str, list[Chunk]] = {}
    for chunk in chunks_from_table(generation.table(S.CHUNKS)):
        out.setdefault(scope_of(acl[chunk.doc_id]), []).append(chunk)
    return out


def adopted_graph(
    graph: "KnowledgeGraph", levels: Mapping[str, Sequence[int]], chunks: Sequence["Chunk"], graph_config: Mapping[str, Any]
) -> "KnowledgeGraph":
    """``graph``'s entities and relations with GDS's communities (``levels``: ids per
    entity, finest first) and their reports, written as a build writes them."""
    from graphrag.build import chunk_headings, chunk_texts, default_report_writer, section_leads
    from graphrag.config import GraphConfig
    from graphrag.graph import KnowledgeGraph
    from graphrag.namesakes import with_namesakes_merged
    from graphrag.reports import write_reports

    config = GraphConfig.model_validate(dict(graph_config))
    writer = default_report_writer(config)
    if graph.meta.get("report_writer", writer.name) != writer.name:
        raise ExportError(
            f"this index's community reports were written by {graph.meta['report_writer']}; --adopt writes "
            "extractive reports only, so it adopts into an index built without an LLM"
        )
    try:
        communities = gds_hierarchy(levels, min_size=config.min_community_size)
    except HierarchyError as exc:
        raise ExportError(f"GDS's communities cannot be adopted: {exc}") from None
    next_id = max(int(graph.meta.get("next_community_id", 0)), len(communities))
    meta = {**graph.meta, "communities": SOURCE, "next_community_id": str(next_id)}
    headings = chunk_headings(chunks)
    # as a build does: siblings only a member's name would tell apart are one community
    adopted = with_namesakes_merged(KnowledgeGraph(graph.entities, graph.relations, communities, meta=meta), headings)
    write_reports(
        adopted, writer, min_size=config.min_report_size, headings=headings, leads=section_leads(chunks),
        texts=chunk_texts(chunks),
    )
    return adopted


def by_level(graph: "KnowledgeGraph") -> list[int]:
    """The number of communities at each level, level 0 first."""
    return [sum(1 for c in graph.communities.values() if c.level == level) for level in graph.levels]


# -- writing the generation ---------------------------------------------------------------------


def write_generation(
    index_dir: Path, generation: "Generation", tables: Mapping[str, Mapping[str, "pa.Table"]],
    records: Mapping[str, dict[str, Any]],
) -> str:
    """A new generation of ``index_dir``: ``generation``'s files linked over but the
    graph tables of the scopes in ``tables`` (tag -> table name -> table), written
    anew, and its manifest with those scopes' ``communities`` records; committed as a
    build commits (the build lock held, ``CURRENT`` switched last). Returns its name."""
    from arborgraph.index.index_dir import current_generation
    from arborgraph.index.layout import scoped, table_file
    from arborgraph.index.manifest import index_manifest
    from arborgraph.index.store import GenerationWriter

    writer = GenerationWriter(index_dir)
    try:
        if current_generation(index_dir) != generation.path:
            raise ExportError(f"{index_dir} changed while GDS's communities were read: run the command again")
        replaced = {table_file(scoped(name, tag)) for tag, named in tables.items() for name in named}
        writer.reuse(generation, tuple(rel for rel in generation.manifest.files if rel not in replaced))
        for tag, named in tables.items():
            for name, table in named.items():
                writer.write_table(scoped(name, tag), table)
        data = index_manifest(generation).to_json()
        for key in ("schema_version", "generation", "files"):
            data.pop(key, None)
        for scope in data["scopes"]:
            if scope["tag"] in records:
                scope["communities"] = records[scope["tag"]]
        return writer.commit(data).name
    except BaseException:
        writer.abort()
        raise


def adopt_gds_communities(
    index_dir: str | Path, driver: "Driver", *, database: str | None = None, settings: LeidenSettings | None = None
) -> AdoptOutcome:
    """Make GDS's communities (written on the database's entities by
    :func:`.gds.gds_leiden_index`) the communities of the index at ``index_dir``, with
    reports: a new generation (see the module docstring). ``settings`` are what GDS ran
    with, for the record (default: the index's, as :func:`.gds.gds_leiden_index` runs it).

    Raises :class:`ExportError` (one line, the index untouched) when the database holds
    another graph than the index's, carries no GDS communities for it, or the index's
    reports were written by an LLM."""
    from arborgraph.index.manifest import CommunitiesRecord, Manifest
    from arborgraph.index.store import open_generation
    from graphrag.build import leiden_edges
    from graphrag.config import GraphConfig
    from graphrag.tables import graph_to_tables

    t0 = time.perf_counter()
    index_dir = Path(index_dir)
    verify(driver)
    generation = open_generation(index_dir, shape=Manifest)
    manifest: Manifest = generation.manifest  # type: ignore[assignment]
    graph_config = manifest.config.get("graph") or {}
    settings = settings or index_settings(generation)
    scopes, skipped = partitioned_scopes(generation, settings)
    if not scopes:
        raise ExportError(f"{index_dir} has no entity graph GDS partitions: nothing to adopt")
    with driver.session(database=database) as session:
        version = gds_version(session)
    chunks = scope_chunks(generation)
    rerun = f"arborgraph export-neo4j --index {index_dir} --uri URI --gds-leiden --adopt"
    tables: dict[str, Any] = {}
    records: dict[str, dict[str, Any]] = {}
    adopted: list[AdoptedScope] = []
    for scope in scopes:
        graph = scope.graph
        edges = leiden_edges(graph.relations, GraphConfig.model_validate(graph_config))
        server = read_server_graph(driver, scope.scope, settings, database)
        problem = mismatch(graph, server, edges)
        if problem is not None:
            raise ExportError(f"the database's graph of scope {scope.scope!r} is not this index's: {problem}; run {rerun}")
        projected = {v for a, b, _ in edges for v in (a, b)}
        levels = {v: ids for v, ids in server.levels.items() if ids is not None and v in projected}
        new = adopted_graph(graph, levels, chunks.get(scope.scope, []), graph_config)
        tables[scope.tag] = graph_to_tables(new)
        records[scope.tag] = CommunitiesRecord(
            source=SOURCE, gds_version=version, settings=asdict(settings), levels=len(new.levels),
            communities=len(new.communities),
            adopted_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        ).model_dump(mode="json")
        adopted.append(_adopted(scope, graph, new, edges, settings, split_communities(levels)))
    name = write_generation(index_dir, generation, tables, records)
    return AdoptOutcome(name, generation.name, adopted, skipped, version, settings, time.perf_counter() - t0)


def _adopted(
    scope: "Scope", before: "KnowledgeGraph", after: "KnowledgeGraph", edges: Sequence[tuple[str, str, float]],
    settings: LeidenSettings, split: int,
) -> AdoptedScope:
    return AdoptedScope(
        scope=scope.scope, tag=scope.tag,
        communities_by_level=by_level(after), previous_by_level=by_level(before), reports=len(after.reports),
        modularity=partition_modularity(edges, top_level_partition(after), settings.resolution),
        previous_modularity=partition_modularity(edges, top_level_partition(before), settings.resolution),
        gds_split=split,
    )
