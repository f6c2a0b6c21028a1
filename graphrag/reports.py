"""Community reports: what each community is about, grounded in chunk ids.

:func:`community_context` gathers what a writer needs (central entities, strongest
internal relations and the manual's own sentences stating them); a
:class:`ReportWriter` turns it into a :class:`CommunityReport`. The default
:class:`ExtractiveReportWriter` needs no model: its findings quote the manual.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from arborgraph.core.concurrency import run_ordered, workers_for
from graphrag.graph import KnowledgeGraph
from graphrag.model import CO_OCCURS, Community, CommunityReport, Entity, Finding, Relation

ProgressFn = Callable[[str, int, int | None], None]

RELATION_VERBS = {
    "is_a": "is a",
    "part_of": "is part of",
    "uses": "uses",
    "configures": "configures",
    "limits": "limits",
    "requires": "requires",
    "see_also": "see also",
    "defined_in": "is defined in",
    CO_OCCURS: "appears with",
}


def relation_phrase(kg: KnowledgeGraph, rel: Relation) -> str:
    """"journal_mode configures WAL" (names, not ids)."""
    verb = RELATION_VERBS.get(rel.type, rel.type.replace("_", " "))
    return f"{kg.entities[rel.source].name} {verb} {kg.entities[rel.target].name}"


@dataclass(slots=True)
class CommunityContext:
    """What a report writer sees of one community."""

    community: Community
    entities: list[tuple[Entity, float]]  # (entity, weighted degree inside), central first
    relations: list[Relation]  # internal relations, strongest first
    phrases: dict[str, str] = field(default_factory=dict)  # relation id -> "A uses B"
    child_reports: list[CommunityReport] = field(default_factory=list)
    rank: float = 0.0  # 0-10, importance relative to the other communities of its level
    internal_weight: float = 0.0  # summed weight of all relations inside


def community_context(
    kg: KnowledgeGraph, community: Community, *, max_entities: int = 30, max_relations: int = 40
) -> CommunityContext:
    """Central entities and strongest relations inside ``community``."""
    members = set(community.members)
    strength: Counter[str] = Counter({m: 0.0 for m in community.members})
    internal: dict[str, Relation] = {}
    for m in sorted(members):
        for rel in kg.adjacency.get(m, []):
            if rel.source in members and rel.target in members:
                internal[rel.id] = rel
    for rel in internal.values():
        strength[rel.source] += rel.weight
        strength[rel.target] += rel.weight
    ents = sorted(strength.items(), key=lambda kv: (-kv[1], kv[0]))[:max_entities]
    # typed relations say more than co-occurrence: they sort first at equal weight
    rels = sorted(internal.values(), key=lambda r: (-(r.weight * (2.0 if r.type != CO_OCCURS else 1.0)), r.id))
    rels = rels[:max_relations]
    children = [kg.reports[c] for c in community.children if c in kg.reports]
    return CommunityContext(
        community=community,
        entities=[(kg.entities[e], w) for e, w in ents],
        relations=rels,
        phrases={r.id: relation_phrase(kg, r) for r in rels},
        child_reports=children,
        internal_weight=sum(r.weight for r in internal.values()),
    )


class ReportWriter(Protocol):
    """Writes the report of one community from its context."""

    name: str

    def write(self, context: CommunityContext) -> CommunityReport: ...


class ExtractiveReportWriter:
    """Reports without a model: central entities, their definitions and the sentences
    that state the strongest relations, quoted verbatim with their chunk ids."""

    name = "extractive-v1"
    # the rank of a report is its community's weight relative to the level's heaviest:
    # an update that reuses the report's text sets the rank anew (graphrag.update)
    rank_from_weight = True

    def __init__(self, *, n_entities: int = 6, n_findings: int = 5, max_quote_chars: int = 400) -> None:
        self.n_entities = n_entities
        self.n_findings = n_findings
        self.max_quote_chars = max_quote_chars

    def write(self, context: CommunityContext) -> CommunityReport:
        com = context.community
        central = [e for e, _ in context.entities[: self.n_entities]]
        title = ", ".join(e.name for e in central[:3])
        types = Counter(e.type for e, _ in context.entities)
        type_text = ", ".join(f"{n} {t}" for t, n in sorted(types.items(), key=lambda kv: (-kv[1], kv[0]))[:4])
        summary = (
            f"{len(com.members)} related entities ({type_text}) centred on "
            + ", ".join(f"{e.name} ({e.type})" for e in central)
            + "."
        )
        findings: list[Finding] = []
        used_text: set[str] = set()
        for e in central[:2]:
            if e.description and e.description_chunk and e.description not in used_text:
                used_text.add(e.description)
                findings.append(Finding(f"{e.name}: {e.description[: self.max_quote_chars]}", [e.description_chunk]))
        per_entity: Counter[str] = Counter()
        for rel in context.relations:
            if len(findings) >= self.n_findings:
                break
            if not rel.description or rel.description in used_text:
                continue
            if per_entity[rel.source] >= 2 and per_entity[rel.target] >= 2:
                continue  # spread findings over the community, not one hub
            used_text.add(rel.description)
            per_entity[rel.source] += 1
            per_entity[rel.target] += 1
            chunks = list(dict.fromkeys(ev.chunk_id for ev in rel.evidence)) or rel.chunk_ids[:1]
            quote = rel.description[: self.max_quote_chars]
            findings.append(Finding(f"{context.phrases.get(rel.id, rel.id)}: {quote}", chunks[:3]))
        return CommunityReport(
            community_id=com.id,
            level=com.level,
            title=title,
            summary=summary,
            findings=findings,
            rank=context.rank,
        )


def write_reports(
    kg: KnowledgeGraph,
    writer: ReportWriter,
    *,
    min_size: int = 3,
    progress: ProgressFn | None = None,
    reuse: Callable[[CommunityContext], CommunityReport | None] | None = None,
) -> dict[int, CommunityReport]:
    """Reports for every community with at least ``min_size`` members, deepest level
    first (so a parent's writer can read its children's reports). Stored on ``kg``.

    ``reuse`` (for updates) may return an existing report for a community's context
    (its rank and child reports filled in); ``writer`` is then not called for it.
    """
    todo = sorted(
        (c for c in kg.communities.values() if len(c.members) >= min_size),
        key=lambda c: (-c.level, c.id),
    )
    contexts = {c.id: community_context(kg, c) for c in todo}
    # rank: internal weight relative to the heaviest community of the same level
    weight = {cid: ctx.internal_weight for cid, ctx in contexts.items()}
    top: dict[int, float] = {}
    for c in todo:
        top[c.level] = max(top.get(c.level, 0.0), weight[c.id])
    kg.reports = {}
    finished = 0
    # A report reads only its children's (one level deeper), so the communities of one
    # level are written together: at once, up to the writer's ``concurrency`` (LLM).
    for level in sorted({c.level for c in todo}, reverse=True):
        level_todo = [c for c in todo if c.level == level]
        to_write: list[CommunityContext] = []
        for c in level_todo:
            ctx = contexts[c.id]
            ctx.child_reports = [kg.reports[ch] for ch in c.children if ch in kg.reports]
            ctx.rank = round(10.0 * weight[c.id] / top[c.level], 3) if top[c.level] else 0.0
            kept = reuse(ctx) if reuse is not None else None
            if kept is not None:
                kg.reports[c.id] = kept
            else:
                to_write.append(ctx)
        base = finished + len(level_todo) - len(to_write)

        def done(n: int, base: int = base) -> None:
            if progress:
                progress("graphrag.reports", base + n, len(todo))

        written = run_ordered(writer.write, to_write, workers_for(writer), stop_on_error=True, done=done)
        for ctx, report in zip(to_write, written, strict=True):
            kg.reports[ctx.community.id] = report
        finished += len(level_todo)
        if progress and not to_write:
            progress("graphrag.reports", finished, len(todo))
    kg.reports = dict(sorted(kg.reports.items()))
    return kg.reports
