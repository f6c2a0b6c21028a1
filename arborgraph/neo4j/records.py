"""The record model of the exported property graph: names, property types, uids, hashes.

Every node carries the label ``Arborgraph``, a unique ``uid`` and ``ag_hash`` (a hash of
its content); every relationship a ``uid`` and ``ag_hash`` too. ``weight_key`` is a
relation weight's IEEE-754 bits as an ordered int64: it sorts exactly like the float on
any server (FalkorDB's Bolt layer keeps only six decimals of a float) and gives back
the exact weight.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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


def _with_fields(props: dict[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    """``props`` plus the cleaned ``fields``, leaving out None and empty lists."""
    for name, value in fields.items():
        value = _clean(value)
        if value is None or value == []:
            continue
        props[name] = value
    return props


def make_node(label: str, uid: str, fields: Mapping[str, Any]) -> Node:
    props = _with_fields({UID: uid}, fields)
    props[HASH] = content_hash(label, props)
    return Node(label, props)


def make_rel(rel_type: str, start: str, end: str, fields: Mapping[str, Any], discriminator: str = "") -> Rel:
    props = _with_fields({UID: rel_uid(rel_type, start, end, discriminator)}, fields)
    props[HASH] = content_hash(rel_type, {"start": start, "end": end, **props})
    return Rel(rel_type, start, end, props)
