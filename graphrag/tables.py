"""The knowledge graph as named Arrow tables (and back), for Parquet storage.

Column names come from :mod:`graphrag.schema`. ``graph_from_tables(graph_to_tables(g))``
rebuilds an equal graph: same records, same order. What an update reuses besides the
graph — the per-chunk extractions and the extractor's fitted statistics — has its
own two tables (:func:`extractions_to_table`, :func:`extractor_state_to_table`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from arborgraph.core.tables import records_table
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
        (S.NAME, pa.string()),
        (S.PAGES, pa.list_(pa.string())),
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
    mentions = [m for e in ents for m in e.mentions]
    # each column holds its records' attribute of the same name, but for these
    derived: dict[str, Mapping[str, list]] = {
        S.ENTITIES: {S.DEGREE: [g.degree(e.id) for e in ents]},
        S.RELATIONSHIPS: {
            S.EVIDENCE: [
                [{S.CHUNK_ID: ev.chunk_id, S.START: ev.start, S.END: ev.end} for ev in r.evidence] for r in rels
            ],
        },
        S.COMMUNITIES: {S.PARENT: [-1 if c.parent is None else c.parent for c in coms]},
        S.COMMUNITY_REPORTS: {
            S.FINDINGS: [[{S.FINDING_TEXT: f.text, S.CHUNK_IDS: list(f.chunk_ids)} for f in r.findings] for r in reps],
        },
        S.ENTITY_CHUNKS: {S.ENTITY_ID: [e.id for e in ents for _ in e.mentions]},
    }
    records: dict[str, Sequence[object]] = {
        S.ENTITIES: ents, S.RELATIONSHIPS: rels, S.COMMUNITIES: coms, S.COMMUNITY_REPORTS: reps,
        S.ENTITY_CHUNKS: mentions,
    }
    return {
        name: records_table(records[name], SCHEMAS[name].with_metadata(meta), derived[name])
        for name in S.TABLE_NAMES
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

    # decoded column by column: row dicts (Table.to_pylist) cost several times more;
    # a chunk's id is one string however many entities it mentions (a chunk names
    # several, and a large graph holds a million mentions)
    mentions: dict[str, list[Mention]] = defaultdict(list)
    ids: dict[str, str] = {}
    one_id = ids.setdefault
    for entity, chunk, start, end, count in zip(
        *_columns(tables[S.ENTITY_CHUNKS], S.ENTITY_ID, S.CHUNK_ID, S.START, S.END, S.COUNT)
    ):
        mentions[entity].append(Mention(one_id(chunk, chunk), start, end, count))
    entities: dict[str, Entity] = {}
    for eid, name, etype, aliases, description, description_chunk in zip(
        *_columns(tables[S.ENTITIES], S.ID, S.NAME, S.TYPE, S.ALIASES, S.DESCRIPTION, S.DESCRIPTION_CHUNK)
    ):
        entities[eid] = Entity(
            id=eid,
            name=name,
            type=etype,
            aliases=list(aliases or []),
            description=description or "",
            mentions=mentions.get(eid, []),
            description_chunk=description_chunk,
        )
    rels = tables[S.RELATIONSHIPS]
    evidence = _split(*_list_parts(rels.column(S.EVIDENCE), lambda flat: [
        Evidence(c, s, e) for c, s, e in zip(*_fields(flat, S.CHUNK_ID, S.START, S.END))
    ]))
    relations: dict[str, Relation] = {}
    for rid, source, target, rtype, weight, description, chunk_ids, found in zip(
        *_columns(rels, S.ID, S.SOURCE, S.TARGET, S.TYPE, S.WEIGHT, S.DESCRIPTION, S.CHUNK_IDS), evidence
    ):
        relations[rid] = Relation(
            id=rid,
            source=source,
            target=target,
            type=rtype,
            weight=weight,
            description=description or "",
            chunk_ids=list(chunk_ids or []),
            evidence=found,
        )
    communities: dict[int, Community] = {}
    for cid, level, members, parent, children in zip(
        *_columns(tables[S.COMMUNITIES], S.ID, S.LEVEL, S.MEMBERS, S.PARENT, S.CHILDREN)
    ):
        communities[cid] = Community(
            id=cid,
            level=level,
            members=list(members or []),
            parent=None if parent < 0 else parent,
            children=list(children or []),
        )
    reports: dict[int, CommunityReport] = {}
    report_table = tables[S.COMMUNITY_REPORTS]
    n_reports = report_table.num_rows
    # graphs written before reports kept their name and pages have neither column
    names = _columns(report_table, S.NAME)[0] if S.NAME in report_table.column_names else [""] * n_reports
    pages = _columns(report_table, S.PAGES)[0] if S.PAGES in report_table.column_names else [[]] * n_reports
    for cid, level, title, summary, findings, rank, name, docs in zip(
        *_columns(report_table, S.COMMUNITY_ID, S.LEVEL, S.TITLE, S.SUMMARY, S.FINDINGS, S.RANK), names, pages
    ):
        reports[cid] = CommunityReport(
            community_id=cid,
            level=level,
            title=title,
            summary=summary,
            findings=[Finding(f[S.FINDING_TEXT], list(f[S.CHUNK_IDS] or [])) for f in findings or []],
            rank=rank,
            name=name or "",
            pages=list(docs or []),
        )
    return KnowledgeGraph(entities, relations, communities, reports, meta=meta)


def _columns(table: pa.Table, *names: str) -> list[list[Any]]:
    """The named columns as Python lists."""
    return [table.column(name).to_pylist() for name in names]


def _fields(struct: pa.Array, *names: str) -> list[list[Any]]:
    """The named fields of a struct array as Python lists (null where the struct is)."""
    by_name = dict(zip((f.name for f in struct.type), struct.flatten()))
    return [by_name[name].to_pylist() for name in names]


def _list_parts(column: pa.ChunkedArray | pa.Array, decode: Callable[[pa.Array], list[Any]]) -> tuple[list[int], list[Any]]:
    """(length of each row's list, a null list counting as empty; ``decode`` of all
    the rows' items, one flat list)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    lengths = pc.fill_null(pc.list_value_length(array), 0).to_pylist()
    return lengths, decode(array.flatten())


def _split(lengths: Sequence[int], items: Sequence[Any]) -> Iterator[list[Any]]:
    """``items`` cut into consecutive lists of ``lengths``."""
    pos = 0
    for n in lengths:
        yield list(items[pos : pos + n])
        pos += n


def extractions_to_table(
    extractions: Sequence[ChunkExtraction], hashes: Mapping[str, str], extractor: str
) -> pa.Table:
    """One row per chunk (in the given order): its hash and what ``extractor`` found."""
    meta = {S.META_SCHEMA_VERSION: str(S.SCHEMA_VERSION).encode(), S.META_EXTRACTOR: extractor.encode()}

    def offsets(span: tuple[int, int] | None) -> dict[str, int] | None:
        return None if span is None else {S.START: span[0], S.END: span[1]}

    derived = {
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
    return records_table(extractions, EXTRACTIONS_SCHEMA.with_metadata(meta), derived)


def extractions_from_table(table: pa.Table) -> tuple[list[ChunkExtraction], dict[str, str], str]:
    """(extractions in stored order, chunk id -> hash, extractor name)."""
    extractor = (table.schema.metadata or {}).get(S.META_EXTRACTOR, b"").decode()
    chunk_ids, chunk_hashes = _columns(table, S.CHUNK_ID, S.CHUNK_HASH)

    def entities(flat: pa.Array) -> list[ExtractedEntity]:
        names, types, descriptions, aliases = _fields(flat, S.NAME, S.TYPE, S.DESCRIPTION, S.ALIASES)
        spans = _split(*_list_parts(
            dict(zip((f.name for f in flat.type), flat.flatten()))[S.SPANS],
            lambda sp: list(zip(*_fields(sp, S.START, S.END))),
        ))
        return [
            ExtractedEntity(name=n, type=t, spans=sp, description=d or "", aliases=list(a or []))
            for n, t, sp, d, a in zip(names, types, spans, descriptions, aliases)
        ]

    def relations(flat: pa.Array) -> list[ExtractedRelation]:
        sources, targets, types, weights, descriptions = _fields(
            flat, S.SOURCE, S.TARGET, S.TYPE, S.WEIGHT, S.DESCRIPTION
        )
        span = dict(zip((f.name for f in flat.type), flat.flatten()))[S.SPAN]
        valid = span.is_valid().to_pylist()
        starts, ends = _fields(span, S.START, S.END)
        return [
            ExtractedRelation(s, t, ty, w, d or "", (a, b) if ok else None)
            for s, t, ty, w, d, ok, a, b in zip(sources, targets, types, weights, descriptions, valid, starts, ends)
        ]

    found_entities = _split(*_list_parts(table.column(S.ENTITIES), entities))
    found_relations = _split(*_list_parts(table.column(S.RELATIONS), relations))
    extractions = [
        ChunkExtraction(chunk_id=cid, entities=ents, relations=rels)
        for cid, ents, rels in zip(chunk_ids, found_entities, found_relations)
    ]
    return extractions, dict(zip(chunk_ids, chunk_hashes)), extractor


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
