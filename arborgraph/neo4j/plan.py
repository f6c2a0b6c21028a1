"""Diff planning (pure): what an export changes, and its statements stage by stage.

The export is incremental and idempotent: the records are compared with the
``(uid, ag_hash)`` pairs the server holds; new and changed records are written, records
the index no longer has are deleted, the rest is left alone. A second export of the
same index writes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arborgraph.neo4j.cypher import DEFAULT_BATCH, Statement, node_delete_cypher, rel_delete_cypher
from arborgraph.neo4j.records import HASH, NODE_LABELS, REL_TYPES, GraphRecords, Node, Rel
from arborgraph.neo4j.servers import ServerDialect


@dataclass
class Counts:
    created: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0


@dataclass
class ExportPlan:
    """What an export changes, per label and relationship type."""

    node_upserts: dict[str, list[Node]]
    rel_upserts: dict[str, list[Rel]]
    node_deletes: dict[str, list[str]]
    rel_deletes: dict[str, list[dict[str, str]]]
    nodes: Counts
    relationships: Counts
    new: set[str] = field(default_factory=set)  # uids of the upserts the server does not have


NodeState = Mapping[str, Mapping[str, "str | None"]]  # label -> uid -> ag_hash
RelState = Mapping[str, Mapping[str, "tuple[str | None, str]"]]  # type -> uid -> (ag_hash, start uid)


def plan_export(records: GraphRecords, node_state: NodeState, rel_state: RelState) -> ExportPlan:
    """Diff the records against what the server holds (pure): new and changed records
    are written, records the index no longer has are deleted, the rest is left alone."""
    plan = ExportPlan(defaultdict(list), defaultdict(list), {}, {}, Counts(), Counts())

    def diff(uid: str, new_hash: str, old_hash: Any, counts: Counts) -> bool:
        if uid not in old_hash:
            counts.created += 1
            plan.new.add(uid)
            return True
        if old_hash[uid] != new_hash:
            counts.updated += 1
            return True
        counts.unchanged += 1
        return False

    wanted: dict[str, set[str]] = defaultdict(set)
    hashes = {label: {u: h for u, h in node_state.get(label, {}).items()} for label in NODE_LABELS}
    for node in records.nodes:
        wanted[node.label].add(node.uid)
        if diff(node.uid, node.props[HASH], hashes[node.label], plan.nodes):
            plan.node_upserts[node.label].append(node)
    for label in NODE_LABELS:
        gone = sorted(set(hashes[label]) - wanted[label])
        if gone:
            plan.node_deletes[label] = gone
            plan.nodes.deleted += len(gone)
    rel_hashes = {t: {u: hs[0] for u, hs in rel_state.get(t, {}).items()} for t in REL_TYPES}
    for rel in records.rels:
        wanted[rel.type].add(rel.uid)
        if diff(rel.uid, rel.props[HASH], rel_hashes[rel.type], plan.relationships):
            plan.rel_upserts[rel.type].append(rel)
    for t in REL_TYPES:
        gone = sorted(set(rel_hashes[t]) - wanted[t])
        if gone:
            plan.rel_deletes[t] = [{"s": rel_state[t][u][1], "uid": u} for u in gone]
            plan.relationships.deleted += len(gone)
    return plan


def delete_statements(
    kind: str, keys: Sequence[Any], dialect: ServerDialect, batch_size: int = DEFAULT_BATCH
) -> list[Statement]:
    """DETACH DELETE of nodes (``keys``: uids) or DELETE of relationships (``keys``:
    ``{"s": start uid, "uid": uid}`` rows)."""
    if kind in NODE_LABELS:
        cypher, param = node_delete_cypher(kind), "uids"
    else:
        cypher, param = rel_delete_cypher(kind), "rows"
    return [
        Statement(cypher, dialect.encode({param: batch}), len(batch), ordered=True)
        for batch in dialect.batches(list(keys), cypher, param, batch_size)
    ]


STAGE_NODES, STAGE_RELATIONSHIPS, STAGE_DELETIONS = "neo4j nodes", "neo4j relationships", "neo4j deletions"


def iter_stages(
    plan: ExportPlan, dialect: ServerDialect, batch_size: int = DEFAULT_BATCH
) -> Iterator[tuple[str, list[Statement]]]:
    """The statements in order, by stage: nodes first (relationships need both ends),
    then relationships, then deletions. Each stage is planned when it is asked for, so
    an export starts writing nodes before it has encoded every relationship."""
    nodes: list[Statement] = []
    for label in NODE_LABELS:
        nodes += dialect.upsert_statements(label, plan.node_upserts.get(label, []), batch_size, plan.new)
    yield STAGE_NODES, nodes
    rels: list[Statement] = []
    for t in REL_TYPES:
        rels += dialect.upsert_statements(t, plan.rel_upserts.get(t, []), batch_size, plan.new)
    yield STAGE_RELATIONSHIPS, rels
    deletions: list[Statement] = []
    for t in REL_TYPES:
        deletions += delete_statements(t, plan.rel_deletes.get(t, []), dialect, batch_size)
    for label in NODE_LABELS:
        deletions += delete_statements(label, plan.node_deletes.get(label, []), dialect, batch_size)
    yield STAGE_DELETIONS, deletions


def plan_stages(
    plan: ExportPlan, dialect: ServerDialect, batch_size: int = DEFAULT_BATCH
) -> list[tuple[str, list[Statement]]]:
    """Every stage of :func:`iter_stages`, planned at once."""
    return list(iter_stages(plan, dialect, batch_size))


def plan_statements(plan: ExportPlan, dialect: ServerDialect, batch_size: int = DEFAULT_BATCH) -> list[Statement]:
    """All statements of :func:`plan_stages`, in order."""
    return [st for _, stage in plan_stages(plan, dialect, batch_size) for st in stage]
