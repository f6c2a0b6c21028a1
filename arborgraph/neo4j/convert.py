"""An index's tables as export records (pure, but for :func:`index_records`, which
reads an opened generation).

This is the one module of the package that knows the index's table layout: it reads
the column names of ``arborgraph.index.schema``, ``raptor.schema`` and ``graphrag.schema`` and
the scope helpers of ``arborgraph.pipeline.structures``, imported where they are used.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from arborgraph.core.errors import ExportError
from arborgraph.neo4j.records import (
    CHILD_OF,
    CHUNK,
    COMMUNITY,
    DOCUMENT,
    ENTITY,
    HAS_CHUNK,
    IN_COMMUNITY,
    MENTIONS,
    PARENT_COMMUNITY,
    RELATES_TO,
    TREE_NODE,
    WEIGHT_KEY,
    GraphRecords,
    Node,
    Rel,
    chunk_uid,
    community_uid,
    document_uid,
    entity_uid,
    make_node,
    make_rel,
    tree_uid,
    weight_key,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from arborgraph.index.store import Generation


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
    from arborgraph.index import schema as S
    from arborgraph.index.scoped import scope_of
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
    from arborgraph.index import schema as S
    from arborgraph.index.layout import scoped
    from arborgraph.index.manifest import index_manifest
    from graphrag.schema import TABLE_NAMES
    from raptor.schema import NODES_TABLE

    parts = []
    for s in index_manifest(generation).scopes:
        tag = s.tag
        tree = generation.table(scoped(NODES_TABLE, tag)) if generation.has_table(scoped(NODES_TABLE, tag)) else None
        graph = None
        if all(generation.has_table(scoped(name, tag)) for name in TABLE_NAMES):
            graph = {name: generation.table(scoped(name, tag)) for name in TABLE_NAMES}
        parts.append(ScopeTables(s.scope, tree, graph))
    return records_from_tables(generation.table(S.DOCUMENTS), generation.table(S.CHUNKS), parts)

