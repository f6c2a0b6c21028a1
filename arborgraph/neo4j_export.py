"""Export an index to Neo4j: an incremental Bolt export, or CSV files for ``neo4j-admin``.

The property graph (every node also carries the label ``Arborgraph`` and a unique
``uid``; every node and relationship carries ``ag_hash``, a hash of its content)::

    (:Document)-[:HAS_CHUNK {ordinal}]->(:Chunk)
    (:Chunk|TreeNode)-[:CHILD_OF]->(:TreeNode)           RAPTOR tree, leaves are chunks
    (:Chunk)-[:MENTIONS {count, start, end}]->(:Entity)
    (:Entity)-[:RELATES_TO {id, type, weight, weight_key, description, chunk_ids}]->(:Entity)
    (:Entity)-[:IN_COMMUNITY {level}]->(:Community)      community reports are properties
    (:Community)-[:PARENT_COMMUNITY]->(:Community)       child -> parent

Trees, entities and communities exist once per access scope (see
:mod:`arborgraph.structures`), so their uids carry a scope key; every such node has a
``scope`` property. ``weight_key`` is the weight's IEEE-754 bits as an ordered int64:
it sorts exactly like the float on any server (FalkorDB's Bolt layer keeps only six
decimals of a float) and gives back the exact weight.

The Bolt export is incremental and idempotent: it reads the ``(uid, ag_hash)`` pairs
already on the server, writes only what is new or changed (``MERGE`` on ``uid``,
batched ``UNWIND`` with parameters only), and deletes what the index no longer has. A
second export of the same index writes nothing. Only nodes labelled ``Arborgraph`` are
ever read, changed or deleted; keep one index per database.

Servers: Neo4j (4.4+, 5.x, 2025.x) and FalkorDB's experimental Bolt layer, told apart
by a probe. FalkorDB pastes parameters into the query text unescaped, into a 4 KB
buffer: for it strings are escaped, statements stay under a byte budget, and values
too long for one statement are appended in pieces (the hash is written last, so an
interrupted export is redone next time). Its named databases all map to one graph.
What bounds its write rate is the number of statements, one round trip each over its
one safe connection: so its rows are positional lists (no key repeated per row),
packed to fill each statement, and records the diff found absent are CREATEd, sparing
it a uid lookup per record (see :class:`Dialect`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import shlex
import struct
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional

import typer

from arborgraph.core.errors import ExportError  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    import pyarrow as pa
    from neo4j import Driver, Session

    from arborgraph.core.protocols import ProgressCallback
    from arborgraph.store import Generation

MARK = "Arborgraph"
UID = "uid"
HASH = "ag_hash"
WEIGHT_KEY = "weight_key"

DOCUMENT, CHUNK, TREE_NODE, ENTITY, COMMUNITY = "Document", "Chunk", "TreeNode", "Entity", "Community"
NODE_LABELS = (DOCUMENT, CHUNK, TREE_NODE, ENTITY, COMMUNITY)
HAS_CHUNK, CHILD_OF, MENTIONS = "HAS_CHUNK", "CHILD_OF", "MENTIONS"
RELATES_TO, IN_COMMUNITY, PARENT_COMMUNITY = "RELATES_TO", "IN_COMMUNITY", "PARENT_COMMUNITY"
REL_TYPES = (HAS_CHUNK, CHILD_OF, MENTIONS, RELATES_TO, IN_COMMUNITY, PARENT_COMMUNITY)

# Property name -> neo4j-admin CSV type. The Bolt export sends the same properties;
# None, NaN and empty lists are left out (absent = unknown/empty) on both paths.
STR, LONG, DOUBLE, STR_LIST = "string", "long", "double", "string[]"
NODE_PROPERTIES: dict[str, tuple[tuple[str, str], ...]] = {
    DOCUMENT: (
        ("id", STR), ("scope", STR), ("path", STR), ("title", STR), ("format", STR),
        ("content_hash", STR), ("source", STR), ("version", STR), ("valid_from", STR),
        ("valid_to", STR), ("acl", STR_LIST), ("importance", DOUBLE), ("extra_json", STR),
        ("warnings", STR_LIST),
    ),
    CHUNK: (
        ("id", STR), ("scope", STR), ("doc_id", STR), ("ordinal", LONG), ("text", STR),
        ("heading_path", STR_LIST), ("start", LONG), ("end", LONG), ("n_tokens", LONG),
    ),
    TREE_NODE: (
        ("id", STR), ("scope", STR), ("level", LONG), ("title", STR), ("text", STR),
        ("summariser", STR), ("cluster", LONG), ("umap_x", DOUBLE), ("umap_y", DOUBLE),
        ("heading_path", STR_LIST), ("n_chunks", LONG), ("start", LONG), ("end", LONG),
    ),
    ENTITY: (
        ("id", STR), ("scope", STR), ("name", STR), ("type", STR), ("aliases", STR_LIST),
        ("description", STR), ("description_chunk", STR), ("degree", LONG),
    ),
    COMMUNITY: (
        ("id", LONG), ("scope", STR), ("level", LONG), ("n_members", LONG), ("title", STR),
        ("summary", STR), ("findings", STR_LIST), ("finding_chunk_ids", STR), ("rank", DOUBLE),
    ),
}
REL_PROPERTIES: dict[str, tuple[tuple[str, str], ...]] = {
    HAS_CHUNK: (("ordinal", LONG),),
    CHILD_OF: (),
    MENTIONS: (("count", LONG), ("start", LONG), ("end", LONG)),
    RELATES_TO: (
        ("id", STR), ("type", STR), ("weight", DOUBLE), (WEIGHT_KEY, LONG),
        ("description", STR), ("chunk_ids", STR_LIST),
    ),
    IN_COMMUNITY: (("level", LONG),),
    PARENT_COMMUNITY: (),
}

PUBLIC = "public"
# FalkorDB renders query + parameters into a 4,096-byte stack buffer, and the Bolt message
# must fit its 4,096-byte read chunk (a probe: 4,100 rendered bytes passed, 4,150 lost the
# connection). statement_len() is that rendering, exactly, and bounds the message's
# Packstream size but for its envelope (database name, flags): this leaves 96 bytes for it
FALKOR_BYTE_BUDGET = 4000
DEFAULT_BATCH = 1000
# rows per record when reading FalkorDB's state: its Bolt layer sizes a message with 16
# bits (a record over 64 KB hangs the connection), and a row is two or three uids
FALKOR_STATE_GROUP = 64
TX_ROWS = 10_000  # rows per transaction on Neo4j (FalkorDB's transactions are no-ops)
DEFAULT_WORKERS = 1  # parallel sessions per stage (Neo4j only; more is opt-in)


# -- records ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Node:
    """One node to export; ``props`` holds ``uid``, the properties and ``ag_hash``."""

    label: str
    props: dict[str, Any]

    @property
    def uid(self) -> str:
        return str(self.props[UID])


@dataclass(frozen=True, slots=True)
class Rel:
    """One relationship between two node uids; ``props`` holds ``uid`` and ``ag_hash``."""

    type: str
    start: str
    end: str
    props: dict[str, Any]

    @property
    def uid(self) -> str:
        return str(self.props[UID])


@dataclass
class GraphRecords:
    """Everything an index exports: nodes, relationships, and relationships left out
    because an end is missing (e.g. a mention of a chunk that is not in the index)."""

    nodes: list[Node]
    rels: list[Rel]
    dropped_rels: int = 0


def scope_key(scope: str) -> str:
    """A short key for a scope inside uids: 'public', or a hash of the ACL scope (its
    principals may contain any character)."""
    if scope == PUBLIC:
        return PUBLIC
    return "acl-" + hashlib.blake2b(scope.encode(), digest_size=6).hexdigest()


def document_uid(doc_id: str) -> str:
    return f"doc:{doc_id}"


def chunk_uid(chunk_id: str) -> str:
    return f"chunk:{chunk_id}"


def tree_uid(scope: str, node_id: str) -> str:
    return f"tree:{scope_key(scope)}:{node_id}"


def entity_uid(scope: str, entity_id: str) -> str:
    return f"entity:{scope_key(scope)}:{entity_id}"


def community_uid(scope: str, community_id: int) -> str:
    return f"community:{scope_key(scope)}:{community_id}"


def rel_uid(rel_type: str, start: str, end: str, discriminator: str = "") -> str:
    digest = hashlib.blake2b(f"{start}\0{end}\0{discriminator}".encode(), digest_size=10).hexdigest()
    return f"{rel_type.lower()}:{digest}"


def weight_key(weight: float) -> int:
    """An int64 that orders like ``weight`` (IEEE-754 bits, negatives flipped)."""
    bits = struct.unpack("<q", struct.pack("<d", float(weight)))[0]
    return bits if bits >= 0 else -(bits & 0x7FFF_FFFF_FFFF_FFFF) - 1


def weight_from_key(key: int) -> float:
    """The exact float :func:`weight_key` was made from."""
    bits = key if key >= 0 else -(key + 1) | -0x8000_0000_0000_0000
    return float(struct.unpack("<d", struct.pack("<q", bits))[0])


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "isoformat"):  # dates: ISO strings on every server and in CSV
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def content_hash(kind: str, payload: Mapping[str, Any]) -> str:
    text = json.dumps([kind, payload], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def make_node(label: str, uid: str, fields: Mapping[str, Any]) -> Node:
    props = {UID: uid}
    for name, value in fields.items():
        value = _clean(value)
        if value is None or value == []:
            continue
        props[name] = value
    props[HASH] = content_hash(label, props)
    return Node(label, props)


def make_rel(rel_type: str, start: str, end: str, fields: Mapping[str, Any], discriminator: str = "") -> Rel:
    props: dict[str, Any] = {UID: rel_uid(rel_type, start, end, discriminator)}
    for name, value in fields.items():
        value = _clean(value)
        if value is None or value == []:
            continue
        props[name] = value
    props[HASH] = content_hash(rel_type, {"start": start, "end": end, **props})
    return Rel(rel_type, start, end, props)


@dataclass(frozen=True)
class ScopeTables:
    """The per-scope tables of one access scope (None where the index lacks them)."""

    scope: str
    tree: "pa.Table | None"
    graph: "Mapping[str, pa.Table] | None"


def records_from_tables(
    documents: "pa.Table", chunks: "pa.Table", scopes: Sequence[ScopeTables]
) -> GraphRecords:
    """The nodes and relationships of an index, from its tables (pure)."""
    from arborgraph import schema as S
    from arborgraph.structures import scope_of
    from graphrag import schema as G
    from raptor import schema as R

    nodes: list[Node] = []
    rels: list[Rel] = []
    doc_scope: dict[str, str] = {}
    for d in documents.drop_columns([S.DOC_TEXT]).to_pylist():
        scope = scope_of(d[S.DOC_ACL])
        doc_scope[d[S.DOC_ID]] = scope
        nodes.append(make_node(DOCUMENT, document_uid(d[S.DOC_ID]), {
            "id": d[S.DOC_ID], "scope": scope, "path": d[S.DOC_PATH], "title": d[S.DOC_TITLE],
            "format": d[S.DOC_FORMAT], "content_hash": d[S.DOC_HASH], "source": d[S.DOC_SOURCE],
            "version": d[S.DOC_VERSION], "valid_from": d[S.DOC_VALID_FROM], "valid_to": d[S.DOC_VALID_TO],
            "acl": d[S.DOC_ACL], "importance": d[S.DOC_IMPORTANCE], "extra_json": d[S.DOC_EXTRA],
            "warnings": d[S.DOC_WARNINGS],
        }))
    for c in chunks.to_pylist():
        cid = c[S.CHUNK_ID]
        nodes.append(make_node(CHUNK, chunk_uid(cid), {
            "id": cid, "scope": doc_scope.get(c[S.CHUNK_DOC_ID]), "doc_id": c[S.CHUNK_DOC_ID],
            "ordinal": c[S.CHUNK_ORDINAL], "text": c[S.CHUNK_TEXT], "heading_path": c[S.CHUNK_HEADING_PATH],
            "start": c[S.CHUNK_START], "end": c[S.CHUNK_END], "n_tokens": c[S.CHUNK_TOKENS],
        }))
        rels.append(make_rel(HAS_CHUNK, document_uid(c[S.CHUNK_DOC_ID]), chunk_uid(cid),
                             {"ordinal": c[S.CHUNK_ORDINAL]}))

    for part in scopes:
        sc = part.scope
        if part.tree is not None:
            tree_rows = part.tree.to_pylist()
            level = {r[R.NODE_ID]: r[R.LEVEL] for r in tree_rows}
            chunk_ids = set(chunks.column(S.CHUNK_ID).to_pylist())

            def tree_ref(node_id: str, sc: str = sc) -> str:
                # leaves are the chunks themselves; a leaf that is not a chunk stays a tree node
                if level[node_id] == 0 and node_id in chunk_ids:
                    return chunk_uid(node_id)
                return tree_uid(sc, node_id)

            for r in tree_rows:
                if r[R.LEVEL] == 0 and r[R.NODE_ID] in chunk_ids:
                    continue
                nodes.append(make_node(TREE_NODE, tree_uid(sc, r[R.NODE_ID]), {
                    "id": r[R.NODE_ID], "scope": sc, "level": r[R.LEVEL], "title": r[R.TITLE],
                    "text": r[R.TEXT], "summariser": r[R.SUMMARISER], "cluster": r[R.CLUSTER],
                    "umap_x": r[R.UMAP_X], "umap_y": r[R.UMAP_Y], "heading_path": r[R.HEADING_PATH],
                    "n_chunks": len(r[R.CHUNK_IDS]), "start": r[R.START], "end": r[R.END],
                }))
                for child in r[R.CHILDREN]:
                    rels.append(make_rel(CHILD_OF, tree_ref(child), tree_uid(sc, r[R.NODE_ID]), {}))
        if part.graph is not None:
            g = part.graph
            for e in g[G.ENTITIES].to_pylist():
                nodes.append(make_node(ENTITY, entity_uid(sc, e[G.ID]), {
                    "id": e[G.ID], "scope": sc, "name": e[G.NAME], "type": e[G.TYPE],
                    "aliases": e[G.ALIASES], "description": e[G.DESCRIPTION],
                    "description_chunk": e[G.DESCRIPTION_CHUNK], "degree": e[G.DEGREE],
                }))
            for m in g[G.ENTITY_CHUNKS].to_pylist():
                rels.append(make_rel(MENTIONS, chunk_uid(m[G.CHUNK_ID]), entity_uid(sc, m[G.ENTITY_ID]),
                                     {"count": m[G.COUNT], "start": m[G.START], "end": m[G.END]}))
            for r in g[G.RELATIONSHIPS].to_pylist():
                rels.append(make_rel(
                    RELATES_TO, entity_uid(sc, r[G.SOURCE]), entity_uid(sc, r[G.TARGET]),
                    {"id": r[G.ID], "type": r[G.TYPE], "weight": r[G.WEIGHT], WEIGHT_KEY: weight_key(r[G.WEIGHT]),
                     "description": r[G.DESCRIPTION], "chunk_ids": r[G.CHUNK_IDS]},
                    discriminator=r[G.ID],
                ))
            reports = {r[G.COMMUNITY_ID]: r for r in g[G.COMMUNITY_REPORTS].to_pylist()}
            for c in g[G.COMMUNITIES].to_pylist():
                rep = reports.get(c[G.ID]) or {}
                findings = rep.get(G.FINDINGS) or []
                cuid = community_uid(sc, c[G.ID])
                nodes.append(make_node(COMMUNITY, cuid, {
                    "id": c[G.ID], "scope": sc, "level": c[G.LEVEL], "n_members": len(c[G.MEMBERS]),
                    "title": rep.get(G.TITLE), "summary": rep.get(G.SUMMARY),
                    "findings": [f[G.FINDING_TEXT] for f in findings],
                    "finding_chunk_ids": json.dumps([f[G.CHUNK_IDS] for f in findings]) if findings else None,
                    "rank": rep.get(G.RANK),
                }))
                for member in c[G.MEMBERS]:
                    rels.append(make_rel(IN_COMMUNITY, entity_uid(sc, member), cuid, {"level": c[G.LEVEL]}))
                if c[G.PARENT] >= 0:
                    rels.append(make_rel(PARENT_COMMUNITY, cuid, community_uid(sc, c[G.PARENT]), {}))
    return _consistent(nodes, rels)


def _consistent(nodes: list[Node], rels: list[Rel]) -> GraphRecords:
    """Drop exact duplicates, refuse conflicting ones, and leave out relationships with a
    missing end (the server could not create them, and each export would retry them)."""
    seen: dict[str, Node] = {}
    for n in nodes:
        old = seen.setdefault(n.uid, n)
        if old is not n and old != n:
            raise ExportError(f"two different nodes share uid {n.uid!r}")
    seen_rels: dict[str, Rel] = {}
    dropped = 0
    for r in rels:
        if r.start not in seen or r.end not in seen:
            dropped += 1
            continue
        old_rel = seen_rels.setdefault(r.uid, r)
        if old_rel is not r and old_rel != r:
            raise ExportError(f"two different relationships share uid {r.uid!r}")
    return GraphRecords(list(seen.values()), list(seen_rels.values()), dropped)


def index_records(generation: "Generation") -> GraphRecords:
    """The records of an opened index generation (reads its tables)."""
    from arborgraph import schema as S
    from arborgraph.structures import scoped
    from graphrag.schema import TABLE_NAMES
    from raptor.schema import NODES_TABLE

    parts = []
    for s in generation.manifest.get("scopes", []):
        tag = s["tag"]
        tree = generation.table(scoped(NODES_TABLE, tag)) if generation.has_table(scoped(NODES_TABLE, tag)) else None
        graph = None
        if all(generation.has_table(scoped(name, tag)) for name in TABLE_NAMES):
            graph = {name: generation.table(scoped(name, tag)) for name in TABLE_NAMES}
        parts.append(ScopeTables(s["scope"], tree, graph))
    return records_from_tables(generation.table(S.DOCUMENTS), generation.table(S.CHUNKS), parts)


# -- dialects and statements -------------------------------------------------------------


@dataclass(frozen=True)
class Dialect:
    """What the server accepts. ``byte_budget`` bounds query + parameters as the server
    renders them; ``escape_strings`` escapes quotes and backslashes for a server that
    pastes string parameters into the query text.

    ``positional`` sends each upserted record as a list in a fixed property order
    (:func:`row_fields`) instead of a map: a server that renders parameters as text
    would otherwise spend its budget on the same keys in every row. ``create_new``
    CREATEs the records the diff found absent instead of MERGEing them (no lookup per
    record); only for a server without uniqueness constraints and with one writer —
    on Neo4j, MERGE through the constraint costs little and is safe."""

    name: Literal["neo4j", "falkordb"]
    version: str = ""
    escape_strings: bool = False
    byte_budget: int | None = None
    max_rows: int = DEFAULT_BATCH
    positional: bool = False
    create_new: bool = False


NEO4J = Dialect("neo4j")


def falkordb(*, escape_strings: bool = True, byte_budget: int = FALKOR_BYTE_BUDGET, max_rows: int = DEFAULT_BATCH) -> Dialect:
    return Dialect(
        "falkordb", escape_strings=escape_strings, byte_budget=byte_budget, max_rows=max_rows,
        positional=True, create_new=True,
    )


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


def _ident(name: str) -> str:
    # labels, types and property names come from this module's constants, never from data
    if not _IDENT.match(name):
        raise ValueError(f"not a safe Cypher identifier: {name!r}")
    return name


def node_upsert_cypher(label: str) -> str:
    return f"UNWIND $rows AS row MERGE (n:{MARK}:{_ident(label)} {{uid: row.uid}}) SET n = row"


def rel_upsert_cypher(rel_type: str) -> str:
    return (
        f"UNWIND $rows AS row MATCH (a:{MARK} {{uid: row.s}}) MATCH (b:{MARK} {{uid: row.e}}) "
        f"MERGE (a)-[r:{_ident(rel_type)} {{uid: row.p.uid}}]->(b) SET r = row.p"
    )


def row_fields(kind: str) -> tuple[str, ...]:
    """The property order of a positional row of ``kind`` (a label or relationship
    type); a relationship's row starts with its start and end uids."""
    spec = NODE_PROPERTIES[kind] if kind in NODE_LABELS else REL_PROPERTIES[kind]
    return (UID, *(name for name, _ in spec), HASH)


def _positional_map(kind: str, offset: int) -> str:
    return "{" + ", ".join(f"{_ident(f)}: r[{i + offset}]" for i, f in enumerate(row_fields(kind))) + "}"


def node_write_cypher(label: str, create: bool) -> str:
    """Upsert of positional node rows: CREATE (records the server lacks) or MERGE on
    uid. A null in a row leaves the property out, as an absent key does."""
    props = _positional_map(label, 0)
    if create:
        return f"UNWIND $rows AS r CREATE (n:{MARK}:{_ident(label)} {props})"
    return f"UNWIND $rows AS r MERGE (n:{MARK}:{_ident(label)} {{{UID}: r[0]}}) SET n = {props}"


def rel_write_cypher(rel_type: str, create: bool) -> str:
    """Upsert of positional relationship rows ``[start uid, end uid, uid, ...]``."""
    props = _positional_map(rel_type, 2)
    ends = f"UNWIND $rows AS r MATCH (a:{MARK} {{{UID}: r[0]}}) MATCH (b:{MARK} {{{UID}: r[1]}}) "
    if create:
        return ends + f"CREATE (a)-[x:{_ident(rel_type)} {props}]->(b)"
    return ends + f"MERGE (a)-[x:{_ident(rel_type)} {{{UID}: r[2]}}]->(b) SET x = {props}"


def _match_node_rows(label: str) -> str:
    return f"UNWIND $rows AS row MATCH (n:{MARK}:{_ident(label)} {{uid: row.uid}})"


def _match_rel_rows(rel_type: str) -> str:
    # from the start node's uid (unique, indexed): no relationship index is needed
    return f"UNWIND $rows AS row MATCH (:{MARK} {{uid: row.s}})-[r:{_ident(rel_type)} {{uid: row.uid}}]->(:{MARK})"


def node_delete_cypher(label: str) -> str:
    return f"UNWIND $uids AS uid MATCH (n:{MARK}:{_ident(label)} {{uid: uid}}) DETACH DELETE n"


def rel_delete_cypher(rel_type: str) -> str:
    return f"{_match_rel_rows(rel_type)} DELETE r"


def node_append_cypher(label: str, prop: str) -> str:
    p = _ident(prop)
    return f"{_match_node_rows(label)} SET n.{p} = n.{p} + row.v"


def rel_append_cypher(rel_type: str, prop: str) -> str:
    p = _ident(prop)
    return f"{_match_rel_rows(rel_type)} SET r.{p} = r.{p} + row.v"


def node_hash_cypher(label: str) -> str:
    return f"{_match_node_rows(label)} SET n.{HASH} = row.h"


def rel_hash_cypher(rel_type: str) -> str:
    return f"{_match_rel_rows(rel_type)} SET r.{HASH} = row.h"


def _state_cypher(match: str, values: str, group: int | None) -> str:
    if group is None:
        return f"{match} RETURN [{values}] AS row"
    # all rows collected, then handed out ``group`` per record
    return (
        f"{match} WITH collect([{values}]) AS all "
        f"UNWIND range(0, size(all) - 1, {int(group)}) AS i RETURN all[i..i + {int(group)}] AS rows"
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
_ID_INDEXES = [(label, "id") for label in NODE_LABELS] + [(ENTITY, "name")]


def schema_statements(dialect: Dialect, existing: Iterable[tuple[str, str, str]] = ()) -> list[Statement]:
    """The constraint and indexes. Neo4j: idempotent ``IF NOT EXISTS`` statements, a
    uniqueness constraint on ``Arborgraph.uid`` (MERGE and every relationship lookup go
    through it) and indexes on natural ids and entity names. FalkorDB: only the uid
    index, unless ``existing`` ((entity type, label, property) triples) has it; index
    upkeep is what its writes spend most on. Relationship statements start from a node
    uid, so no relationship index is needed."""
    if dialect.name == "neo4j":
        out = [Statement(f"CREATE CONSTRAINT arborgraph_uid IF NOT EXISTS FOR (n:{MARK}) REQUIRE n.{UID} IS UNIQUE")]
        out += [
            Statement(f"CREATE INDEX arborgraph_{label.lower()}_{prop} IF NOT EXISTS FOR (n:{label}) ON (n.{prop})")
            for label, prop in _ID_INDEXES
        ]
        return out
    if ("NODE", MARK, UID) in set(existing):
        return []
    return [Statement(f"CREATE INDEX FOR (n:{MARK}) ON (n.{UID})")]


def falkor_escape(text: str) -> str:
    """A string as FalkorDB's Bolt layer must receive it: it pastes the value between
    single quotes, and its lexer reads backslash escapes."""
    if "\0" in text:
        raise ExportError("FalkorDB's Bolt layer cannot carry a NUL character in a string")
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _escape_str(value: str) -> str:
    return falkor_escape(value) if ("\\" in value or "'" in value or "\0" in value) else value


def _escape_value(value: Any) -> Any:
    t = type(value)
    if t is str:
        return _escape_str(value)
    if t is list:
        # rows are mostly flat lists of strings: no recursive call for those
        return [_escape_str(v) if type(v) is str else _escape_value(v) for v in value]
    if t is dict:
        return {k: _escape_value(v) for k, v in value.items()}
    return value


def encode_params(params: dict[str, Any], dialect: Dialect) -> dict[str, Any]:
    """Parameters as this server must receive them (escaped for FalkorDB)."""
    return _escape_value(params) if dialect.escape_strings else params


def _packstream_int_len(value: int) -> int:
    if -16 <= value <= 127:
        return 1
    if -128 <= value <= 127:
        return 2
    if -32768 <= value <= 32767:
        return 3
    return 5 if -(2**31) <= value < 2**31 else 9


def _str_len(value: str, escape: bool) -> int:
    n = (len(value) if value.isascii() else len(value.encode())) + 2
    if escape and ("\\" in value or "'" in value):
        n += value.count("\\") + value.count("'")
    return n


def wire_len(value: Any, escape: bool = True) -> int:
    """Bytes ``value`` takes where FalkorDB renders parameters as query text, and an
    upper bound of its Packstream size too (the whole message must also fit the
    server's 4 KB read chunk)."""
    t = type(value)
    if t is str:
        return _str_len(value, escape)
    if t is list or t is tuple:
        if not value:
            return 2
        # loops rather than sum() over generators: sizing every row is most of planning
        n = 2 * len(value)
        for v in value:
            n += _str_len(v, escape) if type(v) is str else wire_len(v, escape)
        return n
    if t is dict:
        if not value:
            return 2
        n = 4 * len(value)
        for k, v in value.items():
            n += len(k) + wire_len(v, escape)
        return n
    if value is None:
        return 4
    if t is bool:
        return 5
    if t is int:
        return max(len(str(value)), _packstream_int_len(value))
    if t is float:
        return max(len(f"{value:f}"), 9)
    raise ExportError(f"cannot send a {t.__name__} value")


def statement_len(cypher: str, params: Mapping[str, Any], escape: bool = True) -> int:
    """Bytes of ``CYPHER k=v ... <query>``, the text FalkorDB builds from a RUN message."""
    return len("CYPHER ") + sum(len(k) + 2 + wire_len(v, escape) for k, v in params.items()) + len(cypher.encode())


def pack_rows(sizes: Sequence[int], room: int, limit: int, window: int = 256, carry: int = 8) -> list[list[int]]:
    """Indices of rows grouped so that each group's sizes sum to at most ``room`` and
    it has at most ``limit`` rows: first fit decreasing within windows of ``window``
    consecutive rows, the ``carry`` emptiest groups of a window staying open for the
    next (bounded work on large exports; consecutive runs leave about half a long
    row's room unused per statement)."""
    groups: list[list[int]] = []
    bins: list[list[int]] = []
    free: list[int] = []
    for start in range(0, len(sizes), window):
        for i in sorted(range(start, min(start + window, len(sizes))), key=lambda i: (-sizes[i], i)):
            for b, left in enumerate(free):
                if sizes[i] <= left and len(bins[b]) < limit:
                    bins[b].append(i)
                    free[b] -= sizes[i]
                    break
            else:
                bins.append([i])
                free.append(room - sizes[i])
        keep = sorted(range(len(bins)), key=lambda b: (-free[b], b))[:carry] if start + window < len(sizes) else []
        groups += [sorted(bins[b]) for b in range(len(bins)) if b not in keep]
        bins, free = [bins[b] for b in keep], [free[b] for b in keep]
    return groups


def param_batches(
    items: Sequence[Any],
    cypher: str,
    param: str,
    dialect: Dialect,
    batch_size: int,
    sizes: Sequence[int] | None = None,
    *,
    pack: bool = False,
    others: Mapping[str, Any] | None = None,
) -> Iterator[list[Any]]:
    """Runs of ``items`` that fit one statement (``sizes``: their :func:`wire_len`,
    when already known; ``others``: the statement's other parameters): consecutive,
    or with ``pack`` (order does not matter) grouped to fill statements
    (:func:`pack_rows`)."""
    limit = min(batch_size, dialect.max_rows)
    if dialect.byte_budget is None:
        for i in range(0, len(items), limit):
            yield list(items[i : i + limit])
        return
    room = dialect.byte_budget - statement_len(cypher, {**(others or {}), param: []})
    full = [(sizes[i] if sizes is not None else wire_len(item, dialect.escape_strings)) + 2 for i, item in enumerate(items)]
    for size in full:
        if size > room:
            raise ExportError(f"a value of {size} bytes does not fit FalkorDB's statement budget")
    if pack:
        for group in pack_rows(full, room, limit):
            yield [items[i] for i in group]
        return
    batch: list[Any] = []
    used = 0
    for item, size in zip(items, full):
        if batch and (used + size > room or len(batch) >= limit):
            yield batch
            batch, used = [], 0
        batch.append(item)
        used += size
    if batch:
        yield batch


def _split_value(value: Any, room: int, escape: bool) -> tuple[Any, Any]:
    """A head of ``value`` (a string or list) that renders in ``room`` bytes, and the rest."""
    if isinstance(value, str):
        used, cut = 2, 0
        for ch in value:
            size = len(ch.encode()) + (1 if escape and ch in "\\'" else 0)
            if used + size > room:
                break
            used += size
            cut += 1
        return value[:cut], value[cut:]
    used, cut = 2, 0
    for item in value:
        size = wire_len(item, escape) + 2
        if used + size > room:
            break
        used += size
        cut += 1
    return list(value[:cut]), list(value[cut:])


def _fit(
    props: dict[str, Any], room: int, escape: bool, measure: Callable[[dict[str, Any]], int]
) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """``props`` (too long for ``room`` bytes as ``measure`` renders a row of them) cut
    to fit, without its hash, and per property the tail to append."""
    head = {k: v for k, v in props.items() if k != HASH}
    tails: dict[str, list[Any]] = {}
    splittable = sorted(
        (k for k, v in head.items() if isinstance(v, (str, list)) and k != UID),
        key=lambda k: -wire_len(head[k], escape),
    )
    for key in splittable:
        excess = measure(head) - room
        if excess <= 0:
            break
        keep = max(wire_len(head[key], escape) - excess, 2)
        head[key], rest = _split_value(head[key], keep, escape)
        if rest:
            tails[key] = [rest]
    if measure(head) > room:
        raise ExportError(f"record {props.get(UID)!r} does not fit FalkorDB's statement budget")
    return head, tails


def _pieces(value: Any, room: int, escape: bool) -> list[Any]:
    out = []
    while value:
        head, value = _split_value(value, room, escape)
        if not head:
            raise ExportError("a list element is too long for FalkorDB's statement budget")
        out.append(head)
    return out


def _encoded_row(row: Any, escape: bool) -> tuple[Any, int]:
    """``row`` as the server must receive it (escaped if ``escape``, see
    :func:`encode_params`) and its :func:`wire_len`."""
    if not escape:
        return row, wire_len(row, False)
    if type(row) is not list:
        row = _escape_value(row)
        return row, wire_len(row, False)
    out = []
    n = 2 * len(row) if row else 2
    for v in row:  # a positional row: mostly strings, escaped and measured in one step
        t = type(v)
        if t is str:
            v = _escape_str(v)
            n += _str_len(v, False)
        elif v is None:
            n += 4
        elif t is int or t is float:
            n += wire_len(v, False)
        else:
            v = _escape_value(v)
            n += wire_len(v, False)
        out.append(v)
    return out, n


def _row_encoder(kind: str, dialect: Dialect) -> Callable[["Node | Rel", dict[str, Any]], Any]:
    """How a record (with ``props`` in place of its own) travels: a map, or with
    ``dialect.positional`` a list in :func:`row_fields` order."""
    is_node = kind in NODE_LABELS
    if not dialect.positional:
        if is_node:
            return lambda rec, props: props
        return lambda rec, props: {"s": rec.start, "e": rec.end, "p": props}  # type: ignore[union-attr]
    fields = row_fields(kind)
    known = set(fields)

    def positional(rec: "Node | Rel", props: dict[str, Any]) -> list[Any]:
        if not known.issuperset(props):
            raise ExportError(f"{kind} record {rec.uid!r} has undeclared properties {sorted(set(props) - known)}")
        values = [props.get(f) for f in fields]
        return values if is_node else [rec.start, rec.end, *values]  # type: ignore[union-attr]

    return positional


def upsert_statements(
    kind: str,
    records: Sequence[Node] | Sequence[Rel],
    dialect: Dialect,
    batch_size: int = DEFAULT_BATCH,
    new: Container[str] = frozenset(),
) -> list[Statement]:
    """MERGE statements for nodes (``kind`` a label) or relationships (a type), or,
    with ``dialect.create_new``, CREATE statements for the records whose uid is in
    ``new`` (the server does not have them); with a byte budget, long values follow in
    append statements and the hashes come last."""
    is_node = kind in NODE_LABELS
    encode = _row_encoder(kind, dialect)
    if dialect.create_new:
        groups = [(True, [r for r in records if r.uid in new]), (False, [r for r in records if r.uid not in new])]
    else:
        groups = [(False, list(records))]
    budget = dialect.byte_budget
    esc = dialect.escape_strings
    out: list[Statement] = []
    rests: dict[str, list[tuple[dict[str, Any], Any]]] = defaultdict(list)  # property -> (key row, tail)
    hashes: list[dict[str, Any]] = []
    for create, group in groups:
        if not group:
            continue
        if dialect.positional:
            cypher = node_write_cypher(kind, create) if is_node else rel_write_cypher(kind, create)
        else:
            cypher = node_upsert_cypher(kind) if is_node else rel_upsert_cypher(kind)
        room = (budget or 0) - statement_len(cypher, {"rows": []}) - 4
        # rows are escaped (when the server needs it) and measured in one pass, once each
        rows: list[Any] = []
        sizes: list[int] = []
        for rec in group:
            props = rec.props
            if budget is None and not esc:
                rows.append(encode(rec, props))
                continue
            row, size = _encoded_row(encode(rec, props), esc)
            if budget is not None and size > room:
                key_row = {"uid": rec.uid} if is_node else {"s": rec.start, "uid": rec.uid}  # type: ignore[union-attr]
                head, tails = _fit(props, room, esc, lambda p, rec=rec: wire_len(encode(rec, p), esc))
                row, size = _encoded_row(encode(rec, head), esc)
                hashes.append({**key_row, "h": props[HASH]})
                for prop, (rest,) in tails.items():
                    rests[prop].append((key_row, rest))
            sizes.append(size)
            rows.append(row)
        out += [
            Statement(cypher, {"rows": batch}, len(batch))
            for batch in param_batches(
                rows, cypher, "rows", dialect, batch_size, sizes if budget is not None else None, pack=True
            )
        ]
    for prop in sorted(rests):
        append_cypher = node_append_cypher(kind, prop) if is_node else rel_append_cypher(kind, prop)
        assert budget is not None
        pieces = [
            (key_row, _pieces(rest, budget - statement_len(append_cypher, {"rows": [{**key_row, "v": ""}]}) - 4, esc))
            for key_row, rest in rests[prop]
        ]
        for i in range(max(len(p) for _, p in pieces)):
            # piece i of every value: one statement never holds two pieces of one value
            piece_rows = [{**key_row, "v": p[i]} for key_row, p in pieces if i < len(p)]
            out += [
                Statement(append_cypher, encode_params({"rows": batch}, dialect), 0, ordered=True)
                for batch in param_batches(piece_rows, append_cypher, "rows", dialect, batch_size)
            ]
    if hashes:
        hash_cypher = node_hash_cypher(kind) if is_node else rel_hash_cypher(kind)
        out += [
            Statement(hash_cypher, encode_params({"rows": batch}, dialect), 0, ordered=True)
            for batch in param_batches(hashes, hash_cypher, "rows", dialect, batch_size)
        ]
    return out


def delete_statements(kind: str, keys: Sequence[Any], dialect: Dialect, batch_size: int = DEFAULT_BATCH) -> list[Statement]:
    """DETACH DELETE of nodes (``keys``: uids) or DELETE of relationships (``keys``:
    ``{"s": start uid, "uid": uid}`` rows)."""
    if kind in NODE_LABELS:
        cypher, param = node_delete_cypher(kind), "uids"
    else:
        cypher, param = rel_delete_cypher(kind), "rows"
    return [
        Statement(cypher, encode_params({param: batch}, dialect), len(batch), ordered=True)
        for batch in param_batches(list(keys), cypher, param, dialect, batch_size)
    ]


# -- planning ---------------------------------------------------------------------------


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

    def diff(key: str, uid: str, new_hash: str, old_hash: Any, counts: Counts) -> bool:
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
        if diff(node.label, node.uid, node.props[HASH], hashes[node.label], plan.nodes):
            plan.node_upserts[node.label].append(node)
    for label in NODE_LABELS:
        gone = sorted(set(hashes[label]) - wanted[label])
        if gone:
            plan.node_deletes[label] = gone
            plan.nodes.deleted += len(gone)
    rel_hashes = {t: {u: hs[0] for u, hs in rel_state.get(t, {}).items()} for t in REL_TYPES}
    for rel in records.rels:
        wanted[rel.type].add(rel.uid)
        if diff(rel.type, rel.uid, rel.props[HASH], rel_hashes[rel.type], plan.relationships):
            plan.rel_upserts[rel.type].append(rel)
    for t in REL_TYPES:
        gone = sorted(set(rel_hashes[t]) - wanted[t])
        if gone:
            plan.rel_deletes[t] = [{"s": rel_state[t][u][1], "uid": u} for u in gone]
            plan.relationships.deleted += len(gone)
    return plan


STAGE_NODES, STAGE_RELATIONSHIPS, STAGE_DELETIONS = "neo4j nodes", "neo4j relationships", "neo4j deletions"


def iter_stages(plan: ExportPlan, dialect: Dialect, batch_size: int = DEFAULT_BATCH) -> Iterator[tuple[str, list[Statement]]]:
    """The statements in order, by stage: nodes first (relationships need both ends),
    then relationships, then deletions. Each stage is planned when it is asked for, so
    an export starts writing nodes before it has encoded every relationship."""
    nodes: list[Statement] = []
    for label in NODE_LABELS:
        nodes += upsert_statements(label, plan.node_upserts.get(label, []), dialect, batch_size, plan.new)
    yield STAGE_NODES, nodes
    rels: list[Statement] = []
    for t in REL_TYPES:
        rels += upsert_statements(t, plan.rel_upserts.get(t, []), dialect, batch_size, plan.new)
    yield STAGE_RELATIONSHIPS, rels
    deletions: list[Statement] = []
    for t in REL_TYPES:
        deletions += delete_statements(t, plan.rel_deletes.get(t, []), dialect, batch_size)
    for label in NODE_LABELS:
        deletions += delete_statements(label, plan.node_deletes.get(label, []), dialect, batch_size)
    yield STAGE_DELETIONS, deletions


def plan_stages(plan: ExportPlan, dialect: Dialect, batch_size: int = DEFAULT_BATCH) -> list[tuple[str, list[Statement]]]:
    """Every stage of :func:`iter_stages`, planned at once."""
    return list(iter_stages(plan, dialect, batch_size))


def plan_statements(plan: ExportPlan, dialect: Dialect, batch_size: int = DEFAULT_BATCH) -> list[Statement]:
    """All statements of :func:`plan_stages`, in order."""
    return [st for _, stage in plan_stages(plan, dialect, batch_size) for st in stage]


# -- the server -------------------------------------------------------------------------


def _neo4j() -> Any:
    try:
        import neo4j
    except ImportError:
        raise ExportError("the Neo4j export needs the neo4j driver: pip install 'arborgraph[neo4j]'") from None
    return neo4j


CONNECT_TIMEOUT = 15.0
BOLT_SCHEMES = ("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")


def connect(uri: str, user: str | None = None, password: str | None = None, *, timeout: float = CONNECT_TIMEOUT) -> "Driver":
    """A driver for ``uri`` whose connectivity is verified (see :func:`verify`).

    ``timeout`` bounds opening a connection, handshake included: after a client closes
    N connections, FalkorDB's Bolt layer leaves the handshakes of the next N new
    connections unanswered, and the driver would wait 60 s on each before retrying."""
    neo4j = _neo4j()
    auth = (user or "neo4j", password) if password is not None else None
    if not uri.startswith(BOLT_SCHEMES):
        raise ExportError(f"bad Bolt URI {uri!r}: expected bolt:// or neo4j:// (with +s / +ssc for TLS)")
    try:
        driver = neo4j.GraphDatabase.driver(
            uri, auth=auth, connection_timeout=timeout, connection_acquisition_timeout=timeout
        )
    except (ValueError, neo4j.exceptions.ConfigurationError) as exc:
        raise ExportError(f"bad Bolt URI {uri!r}: {exc}") from None
    try:
        verify(driver)
    except BaseException:
        driver.close()
        raise
    return driver


def verify(driver: "Driver", attempts: int = 3) -> None:
    """Check the server answers, retrying a connection that failed or timed out (see
    :func:`connect`); raises :class:`ExportError` with one line otherwise."""
    neo4j = _neo4j()
    retry = (neo4j.exceptions.ServiceUnavailable, neo4j.exceptions.ConnectionAcquisitionTimeoutError)
    for attempt in range(attempts):
        try:
            driver.verify_connectivity()
            return
        except neo4j.exceptions.AuthError as exc:
            raise ExportError(f"authentication failed: {_one_line(exc)}") from None
        except retry as exc:
            if attempt == attempts - 1:
                raise ExportError(f"cannot reach the Bolt server: {_one_line(exc)}") from None
            time.sleep(0.05 * (attempt + 1))
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
            raise ExportError(f"the Bolt server refused the connection: {_one_line(exc)}") from None


def _one_line(exc: BaseException) -> str:
    text = str(getattr(exc, "message", None) or exc)
    return " ".join(text.split())[:300]


def detect_dialect(session: "Session", *, batch_size: int = DEFAULT_BATCH) -> Dialect:
    """Tell Neo4j from FalkorDB (both announce themselves as Neo4j).

    FalkorDB lists its own procedures (``db.idx.*``, ``algo.*``) in ``dbms.procedures()``;
    Neo4j 5 no longer has that procedure and answers ``dbms.components()`` instead. The
    FalkorDB probe goes first because a failed statement leaves FalkorDB's Bolt layer
    slow to accept the next connection (its handshake then waits out the driver's
    60 s timeout). For FalkorDB a backslash round trip shows whether string parameters
    are pasted into the query unescaped (its lexer then reads ``\\\\`` as one backslash).
    """
    neo4j = _neo4j()
    names: set[str] = set()
    try:
        names = {r["name"] for r in session.run("CALL dbms.procedures() YIELD name RETURN name").data()}
    except neo4j.exceptions.Neo4jError:
        pass
    if any(n.startswith("db.idx.") for n in names) and any(n.startswith("algo.") for n in names):
        probe = "a\\\\b"
        echoed = session.run("RETURN $v AS v", v=probe).single()
        return falkordb(escape_strings=echoed is not None and echoed["v"] != probe, max_rows=batch_size)
    try:
        rows = session.run("CALL dbms.components() YIELD name, versions RETURN name, versions").data()
    except neo4j.exceptions.Neo4jError as exc:
        raise ExportError(f"unsupported Bolt server (neither Neo4j nor FalkorDB): {_one_line(exc)}") from None
    for row in rows:
        if str(row.get("name", "")).startswith("Neo4j"):
            return Dialect("neo4j", version=str((row.get("versions") or [""])[0]), max_rows=batch_size)
    raise ExportError("unsupported Bolt server (neither Neo4j nor FalkorDB)")


def _falkor_indexes(session: "Session") -> set[tuple[str, str, str]]:
    rows = session.run("CALL db.indexes() YIELD label, properties, entitytype RETURN label, properties, entitytype").data()
    return {(r["entitytype"], r["label"], p) for r in rows for p in r["properties"]}


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


def _tx_groups(statements: Sequence[Statement]) -> Iterator[list[Statement]]:
    group: list[Statement] = []
    rows = 0
    for st in statements:
        if group and (rows + st.rows > TX_ROWS or len(group) >= 200):
            yield group
            group, rows = [], 0
        group.append(st)
        rows += st.rows
    if group:
        yield group


def run_statements(
    session: "Session",
    statements: Sequence[Statement],
    dialect: Dialect,
    progress: "Callable[[int], None] | None" = None,
) -> None:
    """Run statements in order on one session; ``progress`` gets the rows of each.

    Neo4j: in managed write transactions of up to ``TX_ROWS`` rows, which the driver
    retries on transient errors (its statements are idempotent MERGEs and deletes).
    FalkorDB: one unmanaged transaction (a no-op there, but it keeps the connection)
    that is never retried, because appending a piece of a long value is not
    idempotent. A failure stops the export, and as the value's hash is written only
    after its last piece, the next export writes the record again.
    """

    def work(tx: Any, group: list[Statement]) -> None:
        for st in group:
            tx.run(st.cypher, st.params).consume()

    if dialect.name == "neo4j":
        for group in _tx_groups(statements):
            session.execute_write(work, group)
            if progress:
                progress(sum(st.rows for st in group))
    elif statements:
        with session.begin_transaction() as tx:
            for st in statements:
                tx.run(st.cypher, st.params).consume()
                if progress:
                    progress(st.rows)
            tx.commit()


def run_stage(
    driver: "Driver",
    statements: Sequence[Statement],
    dialect: Dialect,
    *,
    database: str | None = None,
    workers: int = 1,
    progress: "ProgressCallback | None" = None,
    stage: str = "neo4j",
) -> None:
    """Run one stage: its unordered statements spread over ``workers`` sessions (a
    round trip per statement is what a small-batch server spends most on), then its
    ordered statements one after another."""
    neo4j = _neo4j()
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
            run_statements(session, part, dialect, advance)

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
    try:
        n = max(1, min(workers, len(free)))
        if n == 1:
            run_free_part(free)
        else:
            with ThreadPoolExecutor(max_workers=n, thread_name_prefix="neo4j-export") as pool:
                for future in [pool.submit(run_free_part, free[i::n]) for i in range(n)]:
                    future.result()
        run_part(ordered)
    except neo4j.exceptions.Neo4jError as exc:
        raise ExportError(f"the server rejected a statement ({exc.code}): {_one_line(exc)}") from None
    except neo4j.exceptions.DriverError as exc:
        raise ExportError(f"lost the Bolt server: {_one_line(exc)}") from None
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

    On Neo4j, ``workers`` > 1 sessions write each stage's independent batches in
    parallel (a deadlock between them is a transient error the driver retries; not
    measured here, hence opt-in). FalkorDB always gets one session: under concurrent
    Bolt connections its server has left statements unanswered for good and has
    crashed (SIGSEGV in its Bolt RUN handler with 8 sessions); its Bolt layer is not
    safe for concurrent clients, and it runs writes one at a time anyway (two
    sessions wrote the sample manual's nodes slower than one)."""
    neo4j = _neo4j()
    t0 = time.perf_counter()
    verify(driver)
    try:
        with driver.session(database=database) as session:
            dialect = detect_dialect(session, batch_size=batch_size)
            existing = _falkor_indexes(session) if dialect.name == "falkordb" else set()
            schema = schema_statements(dialect, existing)
            for st in schema:
                session.run(st.cypher).consume()
            node_state, rel_state = read_state(session, FALKOR_STATE_GROUP if dialect.name == "falkordb" else None)
            plan = plan_export(records, node_state, rel_state)
        parallel = workers if dialect.name == "neo4j" else 1
        written = 0
        for stage, statements in iter_stages(plan, dialect, batch_size):
            run_stage(driver, statements, dialect, database=database, workers=parallel, progress=progress, stage=stage)
            written += len(statements)
    except neo4j.exceptions.Neo4jError as exc:
        raise ExportError(f"the server rejected a statement ({exc.code}): {_one_line(exc)}") from None
    except neo4j.exceptions.DriverError as exc:
        raise ExportError(f"lost the Bolt server: {_one_line(exc)}") from None
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
    from arborgraph.store import open_generation

    records = index_records(open_generation(Path(index_dir)))
    return export_records(records, driver, database=database, batch_size=batch_size, workers=workers, progress=progress)


# -- CSV for neo4j-admin database import ------------------------------------------------------

_ARRAY_DELIMITERS = (";", "|", "\x1f")


def _csv_field(value: Any, delimiter: str) -> str:
    if value is None:
        return ""  # an empty unquoted field: no property
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        value = delimiter.join(str(v) for v in value)
    text = str(value)
    return '"' + text.replace('"', '""') + '"'


def _pick_delimiter(records: GraphRecords) -> str:
    used: set[str] = set()
    specs = {**NODE_PROPERTIES, **REL_PROPERTIES}
    for rec in [*records.nodes, *records.rels]:
        kind = rec.label if isinstance(rec, Node) else rec.type
        for name, typ in specs[kind]:
            if typ == STR_LIST:
                for item in rec.props.get(name, []):
                    used.update(ch for ch in _ARRAY_DELIMITERS if ch in item)
    for ch in _ARRAY_DELIMITERS:
        if ch not in used:
            return ch
    raise ExportError("every array delimiter candidate occurs in the data")


def _header(name: str, typ: str) -> str:
    return name if typ == STR else f"{name}:{typ}"


@dataclass
class CsvReport:
    directory: Path
    files: list[str]
    nodes: int
    relationships: int
    array_delimiter: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "files": self.files,
            "nodes": self.nodes,
            "relationships": self.relationships,
            "array_delimiter": self.array_delimiter,
        }


def _csv_name(kind: str, is_node: bool) -> str:
    return f"{'nodes' if is_node else 'rels'}_{kind.lower()}.csv"


def write_csv(records: GraphRecords, out_dir: str | Path) -> CsvReport:
    """Node and relationship CSVs for ``neo4j-admin database import full``, plus
    ``import.sh`` (the command) and ``schema.cypher`` (constraint and indexes to run after).

    Headers use ``uid:ID`` (one ID space: uids are unique across labels), ``:LABEL``,
    ``:START_ID``, ``:END_ID``, ``:TYPE`` and typed properties; every string is quoted
    with doubled quotes (RFC 4180), so the import needs ``--multiline-fields=true``.
    """
    out = Path(out_dir)
    ours = {_csv_name(k, True) for k in NODE_LABELS} | {_csv_name(t, False) for t in REL_TYPES}
    ours |= {"import.sh", "schema.cypher"}
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out} exists and is not a directory")
    if out.is_dir():
        strangers = sorted(p.name for p in out.iterdir() if p.name not in ours)
        if strangers:
            raise ExportError(f"{out} holds other files ({strangers[0]}, ...); give an empty or new directory")
    out.mkdir(parents=True, exist_ok=True)
    delim = _pick_delimiter(records)
    by_label: dict[str, list[Node]] = defaultdict(list)
    for n in records.nodes:
        by_label[n.label].append(n)
    by_type: dict[str, list[Rel]] = defaultdict(list)
    for r in records.rels:
        by_type[r.type].append(r)
    files: list[str] = []
    for label in NODE_LABELS:
        spec = NODE_PROPERTIES[label]
        name = _csv_name(label, True)
        with (out / name).open("w", encoding="utf-8", newline="") as fh:
            fh.write(",".join([f"{UID}:ID", ":LABEL", *(_header(n, t) for n, t in spec), HASH]) + "\n")
            labels = _csv_field(f"{MARK}{delim}{label}", delim)
            for node in by_label.get(label, []):
                cells = [_csv_field(node.uid, delim), labels]
                cells += [_csv_field(node.props.get(n), delim) for n, _ in spec]
                cells.append(_csv_field(node.props[HASH], delim))
                fh.write(",".join(cells) + "\n")
        files.append(name)
    for t in REL_TYPES:
        spec = REL_PROPERTIES[t]
        name = _csv_name(t, False)
        with (out / name).open("w", encoding="utf-8", newline="") as fh:
            fh.write(",".join([":START_ID", ":END_ID", ":TYPE", UID, *(_header(n, ty) for n, ty in spec), HASH]) + "\n")
            for rel in by_type.get(t, []):
                cells = [_csv_field(rel.start, delim), _csv_field(rel.end, delim), _csv_field(t, delim)]
                cells.append(_csv_field(rel.uid, delim))
                cells += [_csv_field(rel.props.get(n), delim) for n, _ in spec]
                cells.append(_csv_field(rel.props[HASH], delim))
                fh.write(",".join(cells) + "\n")
        files.append(name)
    args = ["neo4j-admin", "database", "import", "full", "--multiline-fields=true", f"--array-delimiter={delim}"]
    args += [f"--nodes={_csv_name(k, True)}" for k in NODE_LABELS]
    args += [f"--relationships={_csv_name(t, False)}" for t in REL_TYPES]
    script = (
        "#!/bin/sh\n"
        "# Bulk-load these files into an empty Neo4j database (default name: neo4j), then run\n"
        "# schema.cypher (e.g. cypher-shell -d DATABASE -f schema.cypher) for the constraint and indexes.\n"
        "set -e\n"
        'cd "$(dirname "$0")"\n'
        f'exec {" ".join(shlex.quote(a) for a in args)} "${{1:-neo4j}}"\n'
    )
    (out / "import.sh").write_text(script, encoding="utf-8")
    (out / "schema.cypher").write_text("".join(st.cypher + ";\n" for st in schema_statements(NEO4J)), encoding="utf-8")
    files += ["import.sh", "schema.cypher"]
    return CsvReport(out, files, len(records.nodes), len(records.rels), delim)


# -- command line ------------------------------------------------------------------------


def _user_error(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def export_neo4j_command(
    index: Annotated[Path, typer.Option("--index", "-i", help="index directory")],
    uri: Annotated[Optional[str], typer.Option("--uri", help="Bolt URI of the server, e.g. bolt://localhost:7687")] = None,
    user: Annotated[str, typer.Option("--user", envvar="NEO4J_USER", help="user name")] = "neo4j",
    password: Annotated[Optional[str], typer.Option("--password", envvar="NEO4J_PASSWORD", help="password (none: no authentication)")] = None,
    database: Annotated[Optional[str], typer.Option("--database", "-d", help="database (default: the server's default)")] = None,
    csv: Annotated[Optional[Path], typer.Option("--csv", help="write neo4j-admin import files to this directory instead")] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="rows per statement")] = DEFAULT_BATCH,
    workers: Annotated[int, typer.Option("--workers", min=1, max=16, help="parallel sessions (Neo4j; FalkorDB gets one)")] = DEFAULT_WORKERS,
    timeout: Annotated[float, typer.Option("--timeout", min=0.1, help="seconds to wait for a connection")] = CONNECT_TIMEOUT,
    json_out: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """Export the index to Neo4j over Bolt (incremental), or as CSV files for neo4j-admin import."""
    from arborgraph.store import IndexError_, open_generation

    if (uri is None) == (csv is None):
        raise _user_error("give exactly one of --uri (export over Bolt) or --csv DIR (files for neo4j-admin)")
    try:
        records = index_records(open_generation(index))
        if csv is not None:
            report: CsvReport | ExportReport = write_csv(records, csv)
        else:
            assert uri is not None
            driver = connect(uri, user, password, timeout=timeout)
            try:
                report = export_records(records, driver, database=database, batch_size=batch_size, workers=workers)
            finally:
                driver.close()
    except (ExportError, IndexError_) as exc:
        raise _user_error(str(exc)) from None
    if json_out:
        typer.echo(json.dumps(report.as_dict(), indent=2))
    elif isinstance(report, CsvReport):
        typer.echo(f"wrote {report.nodes} nodes and {report.relationships} relationships to {report.directory} (run import.sh)")
    else:
        n, r = report.nodes, report.relationships
        typer.echo(
            f"{report.server}: nodes {n.created} created, {n.updated} updated, {n.deleted} deleted, "
            f"{n.unchanged} unchanged; relationships {r.created} created, {r.updated} updated, "
            f"{r.deleted} deleted, {r.unchanged} unchanged ({report.seconds:.1f} s)"
        )


__all__ = [
    "Dialect", "ExportError", "ExportReport", "CsvReport", "GraphRecords", "Node", "Rel", "Statement",
    "NEO4J", "falkordb", "connect", "verify", "detect_dialect", "index_records", "records_from_tables",
    "plan_export", "iter_stages", "plan_stages", "plan_statements", "run_stage", "run_statements", "upsert_statements", "delete_statements", "schema_statements",
    "export_records", "export_index", "write_csv", "export_neo4j_command", "weight_key", "weight_from_key",
    "entity_uid", "chunk_uid", "document_uid", "tree_uid", "community_uid", "encode_params", "statement_len",
    "row_fields", "node_write_cypher", "rel_write_cypher",
    "param_batches", "pack_rows", "wire_len", "falkor_escape",
]

