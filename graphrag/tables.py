"""The knowledge graph as named Arrow tables (and back), for Parquet storage.

Column names come from :mod:`graphrag.schema`. ``graph_from_tables(graph_to_tables(g))``
rebuilds an equal graph: same records, same order. What an update reuses besides the
graph — the per-chunk extractions and the extractor's fitted statistics — has its
own two tables (:func:`extractions_to_table`, :func:`extractor_state_to_table`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence

import pyarrow as pa

from graphrag import schema as S
from graphrag.graph import KnowledgeGraph
from graphrag.model import (
    ChunkExtraction,
    Community,
    CommunityReport,
    Entity,
    Evidence,
    ExtractedEntity,
    ExtractedRelation,
    Finding,
    Mention,
    Relation,
)

_EVIDENCE = pa.struct([(S.CHUNK_ID, pa.string()), (S.START, pa.int32()), (S.END, pa.int32())])
_FINDING = pa.struct([(S.FINDING_TEXT, pa.string()), (S.CHUNK_IDS, pa.list_(pa.string()))])

ENTITIES_SCHEMA = pa.schema(
    [
        (S.ID, pa.string()),
        (S.NAME, pa.string()),
        (S.TYPE, pa.string()),
        (S.ALIASES, pa.list_(pa.string())),
        (S.DESCRIPTION, pa.string()),
        (S.DESCRIPTION_CHUNK, pa.string()),
        (S.DEGREE, pa.int32()),
        (S.CHUNK_IDS, pa.list_(pa.string())),
    ]
)
RELATIONSHIPS_SCHEMA = pa.schema(
    [
        (S.ID, pa.string()),
        (S.SOURCE, pa.string()),
        (S.TARGET, pa.string()),
        (S.TYPE, pa.string()),
        (S.WEIGHT, pa.float64()),
        (S.DESCRIPTION, pa.string()),
        (S.CHUNK_IDS, pa.list_(pa.string())),
        (S.EVIDENCE, pa.list_(_EVIDENCE)),
    ]
)
COMMUNITIES_SCHEMA = pa.schema(
    [
        (S.ID, pa.int32()),
        (S.LEVEL, pa.int32()),
        (S.PARENT, pa.int32()),
        (S.CHILDREN, pa.list_(pa.int32())),
        (S.MEMBERS, pa.list_(pa.string())),
    ]
)
REPORTS_SCHEMA = pa.schema(
    [
        (S.COMMUNITY_ID, pa.int32()),
        (S.LEVEL, pa.int32()),
        (S.TITLE, pa.string()),
        (S.SUMMARY, pa.string()),
        (S.FINDINGS, pa.list_(_FINDING)),
        (S.RANK, pa.float64()),
    ]
)
ENTITY_CHUNKS_SCHEMA = pa.schema(
    [
        (S.ENTITY_ID, pa.string()),
        (S.CHUNK_ID, pa.string()),
        (S.START, pa.int32()),
        (S.END, pa.int32()),
        (S.COUNT, pa.int32()),
    ]
)
_OFFSETS = pa.struct([(S.START, pa.int32()), (S.END, pa.int32())])
EXTRACTIONS_SCHEMA = pa.schema(
    [
        (S.CHUNK_ID, pa.string()),
        (S.CHUNK_HASH, pa.string()),
        (
            S.ENTITIES,
            pa.list_(
                pa.struct(
                    [
                        (S.NAME, pa.string()),
                        (S.TYPE, pa.string()),
                        (S.SPANS, pa.list_(_OFFSETS)),
                        (S.DESCRIPTION, pa.string()),
                        (S.ALIASES, pa.list_(pa.string())),
                    ]
                )
            ),
        ),
        (
            S.RELATIONS,
            pa.list_(
                pa.struct(
                    [
                        (S.SOURCE, pa.string()),
                        (S.TARGET, pa.string()),
                        (S.TYPE, pa.string()),
                        (S.WEIGHT, pa.float64()),
                        (S.DESCRIPTION, pa.string()),
                        (S.SPAN, _OFFSETS),
                    ]
                )
            ),
        ),
    ]
)
EXTRACTOR_STATE_SCHEMA = pa.schema([(S.KIND, pa.string()), (S.KEY, pa.string()), (S.VALUE, pa.int64())])
SCHEMAS = {
    S.ENTITIES: ENTITIES_SCHEMA,
    S.RELATIONSHIPS: RELATIONSHIPS_SCHEMA,
    S.COMMUNITIES: COMMUNITIES_SCHEMA,
    S.COMMUNITY_REPORTS: REPORTS_SCHEMA,
    S.ENTITY_CHUNKS: ENTITY_CHUNKS_SCHEMA,
}


def graph_to_tables(g: KnowledgeGraph) -> dict[str, pa.Table]:
    """One Arrow table per record kind; the build metadata rides on every schema."""
    meta = {S.META_SCHEMA_VERSION: str(S.SCHEMA_VERSION).encode(), S.META_GRAPH: json.dumps(g.meta).encode()}
    ents = list(g.entities.values())
    rels = list(g.relations.values())
    coms = list(g.communities.values())
    reps = list(g.reports.values())
    columns: dict[str, dict[str, list]] = {
        S.ENTITIES: {
            S.ID: [e.id for e in ents],
            S.NAME: [e.name for e in ents],
            S.TYPE: [e.type for e in ents],
            S.ALIASES: [list(e.aliases) for e in ents],
            S.DESCRIPTION: [e.description for e in ents],
            S.DESCRIPTION_CHUNK: [e.description_chunk for e in ents],
            S.DEGREE: [g.degree(e.id) for e in ents],
            S.CHUNK_IDS: [e.chunk_ids for e in ents],
        },
        S.RELATIONSHIPS: {
            S.ID: [r.id for r in rels],
            S.SOURCE: [r.source for r in rels],
            S.TARGET: [r.target for r in rels],
            S.TYPE: [r.type for r in rels],
            S.WEIGHT: [r.weight for r in rels],
            S.DESCRIPTION: [r.description for r in rels],
            S.CHUNK_IDS: [list(r.chunk_ids) for r in rels],
            S.EVIDENCE: [
                [{S.CHUNK_ID: ev.chunk_id, S.START: ev.start, S.END: ev.end} for ev in r.evidence] for r in rels
            ],
        },
        S.COMMUNITIES: {
            S.ID: [c.id for c in coms],
            S.LEVEL: [c.level for c in coms],
            S.PARENT: [-1 if c.parent is None else c.parent for c in coms],
            S.CHILDREN: [list(c.children) for c in coms],
            S.MEMBERS: [list(c.members) for c in coms],
        },
        S.COMMUNITY_REPORTS: {
            S.COMMUNITY_ID: [r.community_id for r in reps],
            S.LEVEL: [r.level for r in reps],
            S.TITLE: [r.title for r in reps],
            S.SUMMARY: [r.summary for r in reps],
            S.FINDINGS: [[{S.FINDING_TEXT: f.text, S.CHUNK_IDS: list(f.chunk_ids)} for f in r.findings] for r in reps],
            S.RANK: [r.rank for r in reps],
        },
        S.ENTITY_CHUNKS: {
            S.ENTITY_ID: [e.id for e in ents for _ in e.mentions],
            S.CHUNK_ID: [m.chunk_id for e in ents for m in e.mentions],
            S.START: [m.start for e in ents for m in e.mentions],
            S.END: [m.end for e in ents for m in e.mentions],
            S.COUNT: [m.count for e in ents for m in e.mentions],
        },
    }
    return {
        name: pa.table(columns[name], schema=SCHEMAS[name].with_metadata(meta)) for name in S.TABLE_NAMES
    }


def graph_from_tables(tables: Mapping[str, pa.Table]) -> KnowledgeGraph:
    """Rebuild the graph written by :func:`graph_to_tables` (e.g. read from Parquet)."""
    missing = [n for n in S.TABLE_NAMES if n not in tables]
    if missing:
        raise ValueError(f"graph tables missing: {', '.join(missing)}")
    version = (tables[S.ENTITIES].schema.metadata or {}).get(S.META_SCHEMA_VERSION)
    if version is not None and int(version) != S.SCHEMA_VERSION:
        raise ValueError(f"graph tables have schema version {int(version)}, expected {S.SCHEMA_VERSION}")
    raw_meta = (tables[S.ENTITIES].schema.metadata or {}).get(S.META_GRAPH)
    meta = json.loads(raw_meta) if raw_meta else {}

    mentions: dict[str, list[Mention]] = defaultdict(list)
    for row in tables[S.ENTITY_CHUNKS].to_pylist():
        mentions[row[S.ENTITY_ID]].append(Mention(row[S.CHUNK_ID], row[S.START], row[S.END], row[S.COUNT]))
    entities: dict[str, Entity] = {}
    for row in tables[S.ENTITIES].to_pylist():
        entities[row[S.ID]] = Entity(
            id=row[S.ID],
            name=row[S.NAME],
            type=row[S.TYPE],
            aliases=list(row[S.ALIASES] or []),
            description=row[S.DESCRIPTION] or "",
            mentions=mentions.get(row[S.ID], []),
            description_chunk=row[S.DESCRIPTION_CHUNK],
        )
    relations: dict[str, Relation] = {}
    for row in tables[S.RELATIONSHIPS].to_pylist():
        relations[row[S.ID]] = Relation(
            id=row[S.ID],
            source=row[S.SOURCE],
            target=row[S.TARGET],
            type=row[S.TYPE],
            weight=row[S.WEIGHT],
            description=row[S.DESCRIPTION] or "",
            chunk_ids=list(row[S.CHUNK_IDS] or []),
            evidence=[Evidence(ev[S.CHUNK_ID], ev[S.START], ev[S.END]) for ev in row[S.EVIDENCE] or []],
        )
    communities: dict[int, Community] = {}
    for row in tables[S.COMMUNITIES].to_pylist():
        communities[row[S.ID]] = Community(
            id=row[S.ID],
            level=row[S.LEVEL],
            members=list(row[S.MEMBERS] or []),
            parent=None if row[S.PARENT] < 0 else row[S.PARENT],
            children=list(row[S.CHILDREN] or []),
        )
    reports: dict[int, CommunityReport] = {}
    for row in tables[S.COMMUNITY_REPORTS].to_pylist():
        reports[row[S.COMMUNITY_ID]] = CommunityReport(
            community_id=row[S.COMMUNITY_ID],
            level=row[S.LEVEL],
            title=row[S.TITLE],
            summary=row[S.SUMMARY],
            findings=[Finding(f[S.FINDING_TEXT], list(f[S.CHUNK_IDS] or [])) for f in row[S.FINDINGS] or []],
            rank=row[S.RANK],
        )
    return KnowledgeGraph(entities, relations, communities, reports, meta=meta)


def extractions_to_table(
    extractions: Sequence[ChunkExtraction], hashes: Mapping[str, str], extractor: str
) -> pa.Table:
    """One row per chunk (in the given order): its hash and what ``extractor`` found."""
    meta = {S.META_SCHEMA_VERSION: str(S.SCHEMA_VERSION).encode(), S.META_EXTRACTOR: extractor.encode()}

    def offsets(span: tuple[int, int] | None) -> dict[str, int] | None:
        return None if span is None else {S.START: span[0], S.END: span[1]}

    columns = {
        S.CHUNK_ID: [ex.chunk_id for ex in extractions],
        S.CHUNK_HASH: [hashes[ex.chunk_id] for ex in extractions],
        S.ENTITIES: [
            [
                {
                    S.NAME: e.name, S.TYPE: e.type, S.SPANS: [offsets(sp) for sp in e.spans],
                    S.DESCRIPTION: e.description, S.ALIASES: list(e.aliases),
                }
                for e in ex.entities
            ]
            for ex in extractions
        ],
        S.RELATIONS: [
            [
                {
                    S.SOURCE: r.source, S.TARGET: r.target, S.TYPE: r.type, S.WEIGHT: r.weight,
                    S.DESCRIPTION: r.description, S.SPAN: offsets(r.span),
                }
                for r in ex.relations
            ]
            for ex in extractions
        ],
    }
    return pa.table(columns, schema=EXTRACTIONS_SCHEMA.with_metadata(meta))


def extractions_from_table(table: pa.Table) -> tuple[list[ChunkExtraction], dict[str, str], str]:
    """(extractions in stored order, chunk id -> hash, extractor name)."""
    extractor = (table.schema.metadata or {}).get(S.META_EXTRACTOR, b"").decode()
    extractions: list[ChunkExtraction] = []
    hashes: dict[str, str] = {}
    for row in table.to_pylist():
        hashes[row[S.CHUNK_ID]] = row[S.CHUNK_HASH]
        extractions.append(
            ChunkExtraction(
                chunk_id=row[S.CHUNK_ID],
                entities=[
                    ExtractedEntity(
                        name=e[S.NAME], type=e[S.TYPE],
                        spans=[(sp[S.START], sp[S.END]) for sp in e[S.SPANS] or []],
                        description=e[S.DESCRIPTION] or "", aliases=list(e[S.ALIASES] or []),
                    )
                    for e in row[S.ENTITIES] or []
                ],
                relations=[
                    ExtractedRelation(
                        r[S.SOURCE], r[S.TARGET], r[S.TYPE], r[S.WEIGHT], r[S.DESCRIPTION] or "",
                        None if r[S.SPAN] is None else (r[S.SPAN][S.START], r[S.SPAN][S.END]),
                    )
                    for r in row[S.RELATIONS] or []
                ],
            )
        )
    return extractions, hashes, extractor


def extractor_state_to_table(state: Mapping[str, Mapping[str, int]], extractor: str) -> pa.Table:
    """A fitted extractor's learned statistics (kind -> key -> count), one row per key."""
    meta = {S.META_SCHEMA_VERSION: str(S.SCHEMA_VERSION).encode(), S.META_EXTRACTOR: extractor.encode()}
    rows = [(kind, key, int(value)) for kind in sorted(state) for key, value in sorted(state[kind].items())]
    return pa.table(
        {S.KIND: [r[0] for r in rows], S.KEY: [r[1] for r in rows], S.VALUE: [r[2] for r in rows]},
        schema=EXTRACTOR_STATE_SCHEMA.with_metadata(meta),
    )


def extractor_state_from_table(table: pa.Table) -> tuple[dict[str, dict[str, int]], str]:
    """(kind -> key -> count, extractor name) as written by :func:`extractor_state_to_table`."""
    extractor = (table.schema.metadata or {}).get(S.META_EXTRACTOR, b"").decode()
    state: dict[str, dict[str, int]] = {}
    for kind, key, value in zip(*(table.column(c).to_pylist() for c in (S.KIND, S.KEY, S.VALUE)), strict=True):
        state.setdefault(kind, {})[key] = value
    return state, extractor
