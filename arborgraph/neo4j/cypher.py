"""Cypher text: the statement type and every template over map rows.

Labels, relationship types and property names come from :mod:`.records`, never from
data, and pass :func:`ident`; every value travels as a parameter. A real Neo4j server
gets only these templates (batched ``UNWIND $rows AS row`` of maps); the positional
forms FalkorDB needs are in :mod:`.servers`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from arborgraph.neo4j.records import ENTITY, HASH, MARK, NODE_LABELS, RELATES_TO, UID, WEIGHT_KEY

DEFAULT_BATCH = 1000


@dataclass(frozen=True, slots=True)
class Statement:
    """One Cypher statement and its parameters; ``rows`` is the records it writes.
    ``ordered`` statements run one after another once the others of their stage are
    done (appended pieces, hashes written after them, deletions); the others may run
    in parallel."""

    cypher: str
    params: dict[str, Any] = field(default_factory=dict)
    rows: int = 0
    ordered: bool = False


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def ident(name: str) -> str:
    """``name`` if it is a safe Cypher identifier, else :class:`ValueError`."""
    # labels, types and property names come from this package's constants, never from data
    if not _IDENT.match(name):
        raise ValueError(f"not a safe Cypher identifier: {name!r}")
    return name


def node_upsert_cypher(label: str) -> str:
    return f"UNWIND $rows AS row MERGE (n:{MARK}:{ident(label)} {{uid: row.uid}}) SET n = row"


def rel_upsert_cypher(rel_type: str) -> str:
    return (
        f"UNWIND $rows AS row MATCH (a:{MARK} {{uid: row.s}}) MATCH (b:{MARK} {{uid: row.e}}) "
        f"MERGE (a)-[r:{ident(rel_type)} {{uid: row.p.uid}}]->(b) SET r = row.p"
    )


def upsert_cypher(kind: str) -> str:
    """MERGE of map rows: a node's props, or ``{s: start uid, e: end uid, p: props}``."""
    return node_upsert_cypher(kind) if kind in NODE_LABELS else rel_upsert_cypher(kind)


def _match_node_rows(label: str) -> str:
    return f"UNWIND $rows AS row MATCH (n:{MARK}:{ident(label)} {{uid: row.uid}})"


def _match_rel_rows(rel_type: str) -> str:
    # from the start node's uid (unique, indexed): no relationship index is needed
    return f"UNWIND $rows AS row MATCH (:{MARK} {{uid: row.s}})-[r:{ident(rel_type)} {{uid: row.uid}}]->(:{MARK})"


def node_delete_cypher(label: str) -> str:
    return f"UNWIND $uids AS uid MATCH (n:{MARK}:{ident(label)} {{uid: uid}}) DETACH DELETE n"


def rel_delete_cypher(rel_type: str) -> str:
    return f"{_match_rel_rows(rel_type)} DELETE r"


def node_append_cypher(label: str, prop: str) -> str:
    p = ident(prop)
    return f"{_match_node_rows(label)} SET n.{p} = n.{p} + row.v"


def rel_append_cypher(rel_type: str, prop: str) -> str:
    p = ident(prop)
    return f"{_match_rel_rows(rel_type)} SET r.{p} = r.{p} + row.v"


def append_cypher(kind: str, prop: str) -> str:
    """Appends ``row.v`` to property ``prop`` of the record keyed by ``row``."""
    return node_append_cypher(kind, prop) if kind in NODE_LABELS else rel_append_cypher(kind, prop)


def node_hash_cypher(label: str) -> str:
    return f"{_match_node_rows(label)} SET n.{HASH} = row.h"


def rel_hash_cypher(rel_type: str) -> str:
    return f"{_match_rel_rows(rel_type)} SET r.{HASH} = row.h"


def hash_cypher(kind: str) -> str:
    """Sets the hash ``row.h`` of the record keyed by ``row``."""
    return node_hash_cypher(kind) if kind in NODE_LABELS else rel_hash_cypher(kind)


def _state_cypher(match: str, values: str, group: int | None) -> str:
    if group is None:
        return f"{match} RETURN [{values}] AS row"
    # all rows collected, then handed out ``group`` per record (not named ``all``:
    # Neo4j reads ``size(all)`` as its predicate function all(...))
    return (
        f"{match} WITH collect([{values}]) AS collected "
        f"UNWIND range(0, size(collected) - 1, {int(group)}) AS i RETURN collected[i..i + {int(group)}] AS rows"
    )


def node_state_cypher(group: int | None = None) -> str:
    """Rows ``[labels, uid, ag_hash]`` of every Arborgraph node: one per record, or
    ``group`` per record. One query for all labels: FalkorDB delivers a reply of more
    than a few KB after a pause of about 40 ms (as Nagle's algorithm meeting a delayed ACK
    would), paid about once per query, which made a query per label most of the
    cost of an export that changes nothing."""
    return _state_cypher(f"MATCH (n:{MARK})", f"labels(n), n.{UID}, n.{HASH}", group)


def rel_state_cypher(group: int | None = None) -> str:
    """Rows ``[type, uid, ag_hash, start uid]`` of every relationship between
    Arborgraph nodes (see :func:`node_state_cypher`)."""
    return _state_cypher(f"MATCH (a:{MARK})-[r]->(:{MARK})", f"type(r), r.{UID}, r.{HASH}, a.{UID}", group)


# lookups by natural id (and entity name) for people querying the exported graph
ID_INDEXES = [(label, "id") for label in NODE_LABELS] + [(ENTITY, "name")]


SchemaKey = tuple[str, str, str]  # (NODE, or UNIQUE for a uniqueness constraint; label; property)


def neo4j_schema() -> list[tuple[SchemaKey, str]]:
    """Neo4j's idempotent schema, each statement with the key of what it creates: a
    uniqueness constraint on ``Arborgraph.uid`` (MERGE and every relationship lookup go
    through it) and indexes on natural ids and entity names. Relationship statements
    start from a node uid: no relationship index."""
    out = [(("UNIQUE", MARK, UID), f"CREATE CONSTRAINT arborgraph_uid IF NOT EXISTS FOR (n:{MARK}) REQUIRE n.{UID} IS UNIQUE")]
    out += [
        (("NODE", label, prop), f"CREATE INDEX arborgraph_{label.lower()}_{prop} IF NOT EXISTS FOR (n:{label}) ON (n.{prop})")
        for label, prop in ID_INDEXES
    ]
    return out


def neo4j_schema_cypher() -> list[str]:
    """The statements of :func:`neo4j_schema`."""
    return [cypher for _, cypher in neo4j_schema()]


def neo4j_schema_state_cypher() -> str:
    """Rows (kind, label, property) of the server's single-label, single-property
    indexes, kind UNIQUE for those a uniqueness constraint owns."""
    return (
        "SHOW INDEXES YIELD entityType, labelsOrTypes, properties, owningConstraint "
        "WHERE size(labelsOrTypes) = 1 AND size(properties) = 1 "
        "RETURN CASE WHEN owningConstraint IS NULL THEN entityType ELSE 'UNIQUE' END AS kind, "
        "labelsOrTypes[0] AS label, properties[0] AS property"
    )


def neighbours_cypher(limited: bool) -> str:
    """Each entity's relations, sorted like ``KnowledgeGraph.adjacency``; ``$k`` caps
    them, and records carry ``$g`` of one entity's relations each."""
    top = "[..$k]" if limited else ""
    return (
        f"UNWIND $uids AS uid MATCH (n:{MARK}:{ENTITY} {{uid: uid}})-[r:{RELATES_TO}]-(:{MARK}:{ENTITY}) "
        f"WITH uid, r ORDER BY r.{WEIGHT_KEY} DESC, r.id ASC "
        f"WITH uid, collect([r.id, startNode(r).id, endNode(r).id, r.type, r.{WEIGHT_KEY}, r.chunk_ids]){top} AS top "
        "UNWIND range(0, size(top) - 1, $g) AS i RETURN uid, top[i..i + $g] AS part"
    )


def relation_count_cypher() -> str:
    """The number of relations between the entities of scope ``$scope``."""
    return f"MATCH (:{MARK}:{ENTITY} {{scope: $scope}})-[r:{RELATES_TO}]->(:{MARK}:{ENTITY}) RETURN count(r) AS n"
