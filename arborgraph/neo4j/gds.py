"""Communities in the database: GDS's hierarchical Leiden over an exported entity graph.

:func:`run_gds_leiden` projects the entities of one access scope and their relations
into the Graph Data Science library (relation weights summed per pair, pairs lighter
than ``min_edge_weight`` left out: the edges the index's own Leiden partitions, see
:func:`graphrag.build.leiden_edges`), runs ``gds.leiden`` with intermediate communities
and writes them back on the ``Entity`` nodes: ``gds_communities`` (one id per level,
the finest first), ``gds_community`` (the last level's) and ``gds_graph`` (a digest of
the edges partitioned, :func:`edges_digest`). A later export of an entity that changed
rewrites its node without them.

:func:`gds_leiden_index` does it for every scope of an index and sets the result
beside the index's own partition (a scope whose graph has no relation heavy enough to
partition is skipped, and said so, not an error: the others are partitioned): both modularities are computed here, by one function
(:func:`partition_modularity`) over the same weighted graph at the index's resolution,
so that they compare; GDS's own figure is kept as ``gds_reported_modularity``.

Needs Neo4j with the GDS library (FalkorDB has neither ``gds.*`` nor an equivalent).
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arborgraph.core.errors import ExportError
from arborgraph.neo4j.connection import export_errors, neo4j_driver, one_line, verify
from arborgraph.neo4j.records import ENTITY, MARK, PUBLIC, RELATES_TO, scope_key

if TYPE_CHECKING:
    from neo4j import Driver, Session

    from arborgraph.index.scoped import Scope
    from arborgraph.index.store import Generation
    from graphrag.graph import KnowledgeGraph

COMMUNITIES_PROPERTY = "gds_communities"  # every level's community id, the finest first
COMMUNITY_PROPERTY = "gds_community"  # the last level's
# a digest of the weighted edges that run partitioned (edges_digest): what an adoption
# checks the index's own edges against, so that ids GDS gave another graph are never taken
GRAPH_PROPERTY = "gds_graph"


@dataclass(frozen=True)
class LeidenSettings:
    """What ``gds.leiden`` is given: the index's resolution, edge threshold and seed
    (``concurrency`` 1: with a seed, the same graph gives the same communities)."""

    resolution: float = 1.0
    min_edge_weight: float = 1.0
    seed: int = 42
    max_levels: int = 10

    @classmethod
    def of_index(cls, graph_config: Mapping[str, Any]) -> "LeidenSettings":
        """The settings an index's graph was built with (its manifest's ``config.graph``)."""
        defaults = cls()
        return cls(
            resolution=float(graph_config.get("resolution", defaults.resolution)),
            min_edge_weight=float(graph_config.get("min_edge_weight", defaults.min_edge_weight)),
            seed=int(graph_config.get("seed", defaults.seed)),
        )


@dataclass
class GdsLeidenRun:
    """What one ``gds.leiden`` run found: each entity's community per level."""

    scope: str
    membership: dict[str, list[int]]  # entity id -> community ids, finest level first
    edges: list[tuple[str, str, float]]  # the projected pairs and summed weights
    levels: int
    reported_modularity: float
    seconds: float  # projection, Leiden and write-back on the server

    @property
    def final(self) -> dict[str, int]:
        """Each entity's community at the last level."""
        return {entity: ids[-1] for entity, ids in self.membership.items()}


@dataclass
class GdsLeidenReport:
    """GDS's communities of one scope beside the index's own."""

    scope: str
    nodes: int
    edges: int
    gds_communities: int
    gds_levels: int
    gds_modularity: float
    gds_reported_modularity: float
    index_communities: int
    index_modularity: float
    gds_seconds: float

    @property
    def modularity_ratio(self) -> float:
        """``gds_modularity / index_modularity`` (the target is at least 0.95)."""
        return self.gds_modularity / self.index_modularity if self.index_modularity else float("nan")

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("gds_modularity", "gds_reported_modularity", "index_modularity"):
            out[key] = round(out[key], 6)
        out["gds_seconds"] = round(self.gds_seconds, 3)
        out["modularity_ratio"] = round(self.modularity_ratio, 4)
        return out


@dataclass(frozen=True)
class SkippedScope:
    """A scope :func:`gds_leiden_index` did not partition, and why."""

    scope: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"scope": self.scope, "reason": self.reason}


@dataclass
class GdsLeidenOutcome:
    """What :func:`gds_leiden_index` did: a report per partitioned scope, and the
    scopes it skipped."""

    reports: list[GdsLeidenReport]
    skipped: list[SkippedScope]


# -- Cypher ------------------------------------------------------------------------------


def projection_cypher() -> str:
    """A GDS graph ``$name`` of scope ``$scope``'s entities: one undirected relationship
    per pair, weighted by the sum of the pair's relation weights, if at least ``$min_weight``."""
    return (
        f"MATCH (s:{MARK}:{ENTITY} {{scope: $scope}})-[r:{RELATES_TO}]-(t:{MARK}:{ENTITY} {{scope: $scope}}) "
        "WHERE s.uid < t.uid "
        "WITH s, t, sum(r.weight) AS weight WHERE weight >= $min_weight "
        "WITH gds.graph.project($name, s, t, {relationshipProperties: {weight: weight}}, "
        "{undirectedRelationshipTypes: ['*']}) AS g "
        "RETURN g.nodeCount AS nodes, g.relationshipCount AS relationships"
    )


def leiden_write_cypher() -> str:
    return (
        "CALL gds.leiden.write($name, {writeProperty: $property, includeIntermediateCommunities: true, "
        "relationshipWeightProperty: 'weight', gamma: $gamma, randomSeed: $seed, concurrency: 1, "
        "maxLevels: $max_levels}) "
        "YIELD ranLevels, modularity, communityCount RETURN ranLevels, modularity, communityCount"
    )


def clear_communities_cypher() -> str:
    return (
        f"MATCH (n:{MARK}:{ENTITY} {{scope: $scope}}) "
        f"REMOVE n.{COMMUNITIES_PROPERTY}, n.{COMMUNITY_PROPERTY}, n.{GRAPH_PROPERTY}"
    )


def final_community_cypher() -> str:
    return (
        f"MATCH (n:{MARK}:{ENTITY} {{scope: $scope}}) WHERE n.{COMMUNITIES_PROPERTY} IS NOT NULL "
        f"SET n.{COMMUNITY_PROPERTY} = n.{COMMUNITIES_PROPERTY}[-1]"
    )


def graph_digest_cypher() -> str:
    return (
        f"MATCH (n:{MARK}:{ENTITY} {{scope: $scope}}) WHERE n.{COMMUNITIES_PROPERTY} IS NOT NULL "
        f"SET n.{GRAPH_PROPERTY} = $digest"
    )


def membership_cypher() -> str:
    return (
        f"MATCH (n:{MARK}:{ENTITY} {{scope: $scope}}) WHERE n.{COMMUNITIES_PROPERTY} IS NOT NULL "
        f"RETURN n.id AS id, n.{COMMUNITIES_PROPERTY} AS levels"
    )


def projected_edges_cypher() -> str:
    return (
        f"MATCH (s:{MARK}:{ENTITY} {{scope: $scope}})-[r:{RELATES_TO}]-(t:{MARK}:{ENTITY} {{scope: $scope}}) "
        "WHERE s.uid < t.uid WITH s, t, sum(r.weight) AS weight WHERE weight >= $min_weight "
        "RETURN s.id AS a, t.id AS b, weight"
    )


# -- running it ----------------------------------------------------------------------------


def gds_version(session: "Session") -> str:
    """The server's GDS version, or :class:`ExportError` saying it has none."""
    neo4j = neo4j_driver()
    try:
        record = session.run("RETURN gds.version() AS version").single()
    except neo4j.exceptions.Neo4jError as exc:
        raise ExportError(f"the server has no Graph Data Science library (gds.*): {one_line(exc)}") from None
    return str(record["version"]) if record is not None else ""


def run_gds_leiden(
    driver: "Driver", *, scope: str = PUBLIC, database: str | None = None, settings: LeidenSettings = LeidenSettings()
) -> GdsLeidenRun:
    """Hierarchical ``gds.leiden`` over the exported entity graph of ``scope``; the
    community ids are written back on the entity nodes (see the module's docstring)."""
    verify(driver)
    name = f"arborgraph-leiden-{scope_key(scope)}-{uuid.uuid4().hex[:8]}"
    params = {"scope": scope, "min_weight": settings.min_edge_weight}
    with driver.session(database=database) as session:
        gds_version(session)
    with export_errors(), driver.session(database=database) as session:
        t0 = time.perf_counter()
        session.run(clear_communities_cypher(), scope=scope).consume()
        projected = session.run(projection_cypher(), {**params, "name": name}).single()
        if projected is None or not projected["relationships"]:
            raise ExportError(
                f"no relations of scope {scope!r} on the server to partition: export the index first (export-neo4j)"
            )
        try:
            result = session.run(leiden_write_cypher(), {
                "name": name, "property": COMMUNITIES_PROPERTY, "gamma": settings.resolution,
                "seed": settings.seed, "max_levels": settings.max_levels,
            }).single()
        finally:
            session.run("CALL gds.graph.drop($name, false) YIELD graphName RETURN graphName", name=name).consume()
        session.run(final_community_cypher(), scope=scope).consume()
        seconds = time.perf_counter() - t0
        membership = {r["id"]: list(r["levels"]) for r in session.run(membership_cypher(), scope=scope)}
        edges = [(r["a"], r["b"], float(r["weight"])) for r in session.run(projected_edges_cypher(), params)]
        session.run(graph_digest_cypher(), scope=scope, digest=edges_digest(edges)).consume()
    assert result is not None
    return GdsLeidenRun(
        scope=scope,
        membership=membership,
        edges=edges,
        levels=int(result["ranLevels"]),
        reported_modularity=float(result["modularity"]),
        seconds=seconds,
    )


# -- comparing with the index's own partition (pure) ------------------------------------------


def edges_digest(edges: Iterable[tuple[str, str, float]]) -> str:
    """A digest of undirected weighted edges, whatever their order and orientation; the
    weights to 9 significant digits (a sum in Cypher and in Python may differ in the last bits)."""
    rows = sorted((*sorted((a, b)), float(f"{w:.9g}")) for a, b, w in edges)
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def partition_modularity(
    edges: Iterable[tuple[str, str, float]], community: Mapping[str, int], resolution: float = 1.0
) -> float:
    """Weighted modularity (with ``resolution``) of ``community`` over the undirected
    graph ``edges``; a vertex without a community counts as one of its own."""
    import igraph as ig

    edge_list = list(edges)
    names = sorted({v for a, b, _ in edge_list for v in (a, b)})
    index = {n: i for i, n in enumerate(names)}
    labels: dict[Any, int] = {}
    membership = [labels.setdefault(("c", community[n]) if n in community else ("alone", n), len(labels)) for n in names]
    graph = ig.Graph(n=len(names), edges=[(index[a], index[b]) for a, b, _ in edge_list], directed=False)
    return float(graph.modularity(membership, weights=[w for _, _, w in edge_list], resolution=resolution, directed=False))


def top_level_partition(kg: "KnowledgeGraph") -> dict[str, int]:
    """Each entity's community at the index's level 0 (the partition of the whole graph)."""
    return {m: c.id for c in kg.communities.values() if c.level == 0 for m in c.members}


def compare_with_index(run: GdsLeidenRun, kg: "KnowledgeGraph", settings: LeidenSettings) -> GdsLeidenReport:
    """GDS's final partition and the index's level 0, scored alike over the same graph
    (the index's edges, as its own Leiden saw them)."""
    from graphrag.communities import aggregate_edges

    edges = aggregate_edges(
        ((r.source, r.target, r.weight) for r in kg.relations.values()), min_weight=settings.min_edge_weight
    )
    index_partition = top_level_partition(kg)
    final = run.final
    return GdsLeidenReport(
        scope=run.scope,
        nodes=len({v for a, b, _ in edges for v in (a, b)}),
        edges=len(edges),
        gds_communities=len(set(final.values())),
        gds_levels=run.levels,
        gds_modularity=partition_modularity(edges, final, settings.resolution),
        gds_reported_modularity=run.reported_modularity,
        index_communities=len(set(index_partition.values())),
        index_modularity=partition_modularity(edges, index_partition, settings.resolution),
        gds_seconds=run.seconds,
    )


def index_settings(generation: "Generation", max_levels: int = LeidenSettings.max_levels) -> LeidenSettings:
    """The settings GDS is run with for an index generation: its graph's resolution,
    edge threshold and seed, and ``max_levels``."""
    from arborgraph.index.manifest import index_manifest

    settings = LeidenSettings.of_index(index_manifest(generation).config.get("graph") or {})
    return LeidenSettings(settings.resolution, settings.min_edge_weight, settings.seed, max_levels)


def partitioned_scopes(generation: "Generation", settings: LeidenSettings) -> tuple[list["Scope"], list[SkippedScope]]:
    """The scopes of an index generation GDS partitions (those with a graph), and those
    it skips: a scope whose graph has no relation to partition (none, or all lighter
    than the edge threshold) - GDS would find nothing on the server either, and one
    such scope must not stop the others."""
    from arborgraph.index.layout import scoped
    from arborgraph.index.scoped import load_scopes
    from graphrag.communities import aggregate_edges
    from graphrag.schema import ENTITIES

    run: list["Scope"] = []
    skipped: list[SkippedScope] = []
    for scope in load_scopes(generation):
        if not generation.has_table(scoped(ENTITIES, scope.tag)):
            continue
        relations = ((r.source, r.target, r.weight) for r in scope.graph.relations.values())
        if not aggregate_edges(relations, min_weight=settings.min_edge_weight):
            skipped.append(SkippedScope(scope.scope, "no relations to partition"))
        else:
            run.append(scope)
    return run, skipped


def gds_leiden_index(
    index_dir: str | Path, driver: "Driver", *, database: str | None = None, max_levels: int = LeidenSettings.max_levels
) -> GdsLeidenOutcome:
    """:func:`run_gds_leiden` on every access scope of the index at ``index_dir`` that
    has a graph (exported there already), with the settings its graph was built with,
    each compared with the index's own communities (:func:`compare_with_index`).

    A scope with no relation to partition is skipped, not run (see
    :func:`partitioned_scopes`). A scope that has relations in the index but none on
    the server is still an error (the export is missing)."""
    from arborgraph.index.store import open_generation

    generation = open_generation(Path(index_dir))
    settings = index_settings(generation, max_levels)
    scopes, skipped = partitioned_scopes(generation, settings)
    outcome = GdsLeidenOutcome([], skipped)
    for scope in scopes:
        run = run_gds_leiden(driver, scope=scope.scope, database=database, settings=settings)
        outcome.reports.append(compare_with_index(run, scope.graph, settings))
    if not outcome.reports and not outcome.skipped:
        raise ExportError(f"{index_dir} has no entity graph to partition")
    return outcome
