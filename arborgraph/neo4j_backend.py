"""Deprecated: import from arborgraph.neo4j; this module goes in 0.3."""

from __future__ import annotations

from arborgraph.core.errors import GraphBackendError
from arborgraph.neo4j.backend import (
    ExpandedEdge,
    GraphServer,
    Neo4jGraphBackend,
    cypher_expand,
    graph_server,
    memory_expand,
    relations_among,
    walk,
)
from arborgraph.neo4j.cypher import neighbours_cypher
from arborgraph.neo4j.servers import FalkorDBDialect, Neo4jDialect
from graphrag.neighbours import GraphBackend, MemoryGraphBackend

RELATIONS_PER_RECORD = {d.name: d.relations_per_record for d in (Neo4jDialect(), FalkorDBDialect())}

__all__ = [
    "GraphBackend", "MemoryGraphBackend", "Neo4jGraphBackend", "GraphServer", "GraphBackendError", "graph_server",
    "ExpandedEdge",
    "walk", "cypher_expand", "memory_expand", "relations_among", "neighbours_cypher",
]
