"""Community reports: what each community is about, grounded in chunk ids.

:func:`community_context` gathers what a writer needs (central entities, strongest
internal relations and the manual's own sentences stating them; with the chunks'
headings, the community's name and the pages to read); a :class:`ReportWriter` turns
it into a :class:`CommunityReport`. The default :class:`ExtractiveReportWriter` needs
no model: a paragraph built from the graph (what the community is about, its key
entities and their typed relations, the pages to read), then findings that quote
the manual.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from arborgraph.core.concurrency import run_ordered, workers_for
from arborgraph.core.text import reads_alone
from graphrag.chunks import doc_of
from graphrag.graph import KnowledgeGraph
from graphrag.lexicon import PREPOSITIONS, relation_words
from graphrag.model import CO_OCCURS, Community, CommunityReport, Entity, Finding, Relation
from graphrag.naming import is_code_like, name_communities, page_title
from graphrag.text import singular

ProgressFn = Callable[[str, int, int | None], None]

# relations that say how two things relate, as a report's paragraph tells them
_NOT_TOLD = frozenset({CO_OCCURS, "see_also"})
# how a strong type reads after a name ("journal_mode (parameter)")
_TYPE_WORDS = {
    "function": "function", "parameter": "parameter", "statement": "statement", "command": "command",
    "option": "option", "file": "file", "data_type": "data type", "error_code": "error code",
    "class": "class", "module": "module",
}


def relation_phrase(kg: KnowledgeGraph, rel: Relation) -> str:
    """"journal_mode configures WAL" (names, not ids); "A and B" for a co-occurrence."""
    source, target = kg.entities[rel.source].name, kg.entities[rel.target].name
    if rel.type == CO_OCCURS:
        return f"{source} and {target}"
    words = _agreeing(relation_words(rel.type), rel.type, source)
    if words.endswith(" a") and target[:1].lower() in "aeiou":
        words += "n"  # "is an environment variable"
    return f"{source} {words} {target}"


_PLURAL_OF = {"is": "are", "has": "have", "does": "do", "was": "were"}


def _agreeing(words: str, rel_type: str, subject: str) -> str:
    """The relation's words in agreement with a plural subject: "Database engines
    compile SQL", "WAL files are kept in", not "compiles", "is kept in"."""
    last = subject.rsplit(" ", 1)[-1]
    if not (last.isalpha() and last.islower() and singular(last) != last):
        return words  # a name, an identifier or a singular noun
    first, _, rest = words.partition(" ")
    lemma = rel_type.split("_", 1)[0]
    if first in _PLURAL_OF:
        first = _PLURAL_OF[first]
    elif first != lemma and first.startswith(lemma[:-1] if lemma.endswith("e") else lemma):
        first = lemma  # "compiles" -> "compile", "writes to" -> "write to"
    else:
        return words
    return f"{first} {rest}" if rest else first


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
    name: str = ""  # the community's name (graphrag.naming), "" without the chunks' headings
    pages: list[tuple[str, str]] = field(default_factory=list)  # (document id, title) to read, best first


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


def pages_to_read(kg: KnowledgeGraph, community: Community, titles: Mapping[str, str], n: int = 3) -> list[tuple[str, str]]:
    """The ``n`` documents that mention the community's members most (mentions
    counted), as (document id, title); ties to the document id."""
    weight: Counter[str] = Counter()
    for m in community.members:
        for mention in kg.entities[m].mentions:
            weight[doc_of(mention.chunk_id)] += mention.count
    best = sorted(weight, key=lambda d: (-weight[d], d))[:n]
    return [(d, titles.get(d, d)) for d in best]


class ReportWriter(Protocol):
    """Writes the report of one community from its context."""

    name: str

    def write(self, context: CommunityContext) -> CommunityReport: ...


class ExtractiveReportWriter:
    """Reports without a model. The title is the community's name; the summary is a
    paragraph: a sentence of the manual saying what the community is about, its most
    connected entities (how many of how many), the typed relations among them and the
    pages to read. Findings quote the definitions and the sentences stating the
    strongest relations verbatim, with their chunk ids."""

    name = "extractive-v3"
    # the rank of a report is its community's weight relative to the level's heaviest:
    # an update that reuses the report's text sets the rank anew (graphrag.update)
    rank_from_weight = True
    # the text says the community's name and pages: an update rewrites it when they change
    reads_names = True

    def __init__(
        self, *, n_entities: int = 6, n_findings: int = 5, max_quote_chars: int = 400, n_relations: int = 2
    ) -> None:
        self.n_entities = n_entities
        self.n_findings = n_findings
        self.max_quote_chars = max_quote_chars
        self.n_relations = n_relations

    def write(self, context: CommunityContext) -> CommunityReport:
        com = context.community
        # identifiers made up for examples (tbl1), bare codes (T332), placeholders and
        # addresses lead nothing
        central = [e for e, _ in context.entities if _listable(e.name)][: self.n_entities]
        title = context.name or " and ".join(e.name for e in central[:2]) or f"Community {com.id}"
        return CommunityReport(
            community_id=com.id,
            level=com.level,
            title=title,
            summary=self._summary(context, central),
            findings=self._findings(context, central),
            rank=context.rank,
            name=context.name,
            pages=[doc for doc, _ in context.pages],
        )

    def _summary(self, context: CommunityContext, central: list[Entity]) -> str:
        sentences = _lead_sentences(context, central, self.max_quote_chars)
        n_members = len(context.community.members)
        listed = _join([_with_type(e) for e in central])
        if central and n_members > len(central):
            verb = "is" if len(central) == 1 else "are"
            sentences.append(f"The most connected of its {n_members} entities {verb} {listed}.")
        elif central:
            sentences.append(f"Its {n_members} entities are {listed}.")
        told = _told_relations(context, self.n_relations, {e.id for e in central})
        if told:
            sentences.append(_sentence_case(_join(told)) + ".")
        if context.pages:
            titles = list(dict.fromkeys(title for _, title in context.pages))
            sentences.append(f"To read: {_join(titles)}.")
        return " ".join(sentences)

    def _findings(self, context: CommunityContext, central: list[Entity]) -> list[Finding]:
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
        return findings


_MAX_LEAD_WORDS = 35
_BULLET = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+")
_LEADS = 2


def _lead_sentences(context: CommunityContext, central: list[Entity], max_chars: int) -> list[str]:
    """Up to two of the manual's sentences saying what the community is about: among
    the central entities' definitions and the sentences stating its relations, those
    that read on their own and name the most central entities (a definition of the
    most central one first at equal count); the second must name one the first does
    not. Quoted verbatim."""
    names = [(e.id, _name_pattern(e.name)) for e in central]
    candidates: dict[str, float] = {}
    for rank, e in enumerate(central):
        candidates.setdefault(" ".join(e.description.split()), 0.5 if rank == 0 else 0.2)
    for rel in context.relations:
        candidates.setdefault(" ".join(rel.description.split()), 0.0)
    scored: list[tuple[float, str, frozenset[str]]] = []
    for quoted, bonus in candidates.items():
        text = _BULLET.sub("", quoted)  # a list item is quoted without its bullet
        words = text.split()
        if not (6 <= len(words) <= _MAX_LEAD_WORDS) or text[-1:] not in ".!" or not reads_alone(text):
            continue
        named = frozenset(eid for eid, pattern in names if pattern.search(text))
        if named:
            scored.append((len(named) + bonus, text, named))
    scored.sort(key=lambda t: (-t[0], t[1]))
    chosen: list[str] = []
    seen: frozenset[str] = frozenset()
    for _, text, named in scored:
        if chosen and not named - seen:
            continue
        chosen.append(text[:max_chars])
        seen |= named
        if len(chosen) >= _LEADS:
            break
    return chosen


def _name_pattern(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", re.IGNORECASE)


_PLACEHOLDER = re.compile(r"^<.*>$|@|^\w+\.(?:com|org|net|example)$|^(?:param|arg|foo|bar|baz)\d*$", re.IGNORECASE)


def _listable(name: str) -> bool:
    """Whether an entity's name reads well in a report: not an example's made-up
    identifier or a bare code, a placeholder, an address, or two letters in mixed case."""
    stripped = name.strip()
    if is_code_like(stripped) or _PLACEHOLDER.search(stripped):
        return False
    return len(stripped) >= 3 or stripped.isupper()


def _with_type(e: Entity) -> str:
    kind = _TYPE_WORDS.get(e.type)
    return f"{e.name} ({kind})" if kind else e.name


def _told_relations(context: CommunityContext, n: int, listed: set[str]) -> list[str]:
    """Up to ``n`` typed relations between entities of ``listed`` (those the paragraph
    names), strongest first, no two between the same names."""
    told: list[Relation] = []
    seen: set[frozenset[str]] = set()
    for rel in context.relations:
        if rel.type in _NOT_TOLD or frozenset((rel.source, rel.target)) in seen:
            continue
        if rel.source not in listed or rel.target not in listed:
            continue
        if rel.type in PREPOSITIONS or rel.type == "is_a":
            # "A for B", "A in B" read as fragments; "A is a B" is too often a wrong reading
            continue
        if not context.phrases.get(rel.id):
            continue
        seen.add(frozenset((rel.source, rel.target)))
        told.append(rel)
        if len(told) >= n:
            break
    # "A uses B and A uses C" is said "A uses B and C"
    names = {e.id: e.name for e, _ in context.entities}
    out: list[str] = []
    heads: dict[tuple[str, str], int] = {}
    for rel in told:
        phrase, target = context.phrases[rel.id], names.get(rel.target, "")
        head = phrase[: len(phrase) - len(target)] if target and phrase.endswith(" " + target) else None
        at = heads.get((rel.source, rel.type))
        if head is not None and at is not None and out[at].startswith(head):
            out[at] = f"{out[at]} and {target}"
            continue
        if head is not None:
            heads[(rel.source, rel.type)] = len(out)
        out.append(phrase)
    return out


def _join(items: Sequence[str]) -> str:
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _sentence_case(text: str) -> str:
    """Capitalise a sentence's first letter unless it starts with an identifier."""
    first = text.split(" ", 1)[0]
    return text[0].upper() + text[1:] if first.isalpha() and first.islower() else text


def write_reports(
    kg: KnowledgeGraph,
    writer: ReportWriter,
    *,
    min_size: int = 3,
    progress: ProgressFn | None = None,
    reuse: Callable[[CommunityContext], CommunityReport | None] | None = None,
    headings: Mapping[str, Sequence[str]] | None = None,
) -> dict[int, CommunityReport]:
    """Reports for every community with at least ``min_size`` members, deepest level
    first (so a parent's writer can read its children's reports). Stored on ``kg``.

    ``headings`` (chunk id -> heading path, page title first, for the graph's chunks)
    gives each context its community's name and the pages to read; every report keeps
    them (``name``, ``pages``). ``reuse`` (for updates) may return an existing report
    for a community's context (its rank, child reports, name and pages filled in);
    ``writer`` is then not called for it.
    """
    todo = sorted(
        (c for c in kg.communities.values() if len(c.members) >= min_size),
        key=lambda c: (-c.level, c.id),
    )
    contexts = {c.id: community_context(kg, c) for c in todo}
    if headings is not None:
        names = name_communities(kg, headings)
        titles: dict[str, str] = {}
        for chunk_id, path in headings.items():
            if path:
                titles.setdefault(doc_of(chunk_id), page_title(path[0]))
        for cid, ctx in contexts.items():
            ctx.name = names.get(cid, "")
            ctx.pages = pages_to_read(kg, ctx.community, titles)
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
            pages = [doc for doc, _ in ctx.pages]
            if report.name != ctx.name or report.pages != pages:
                report = dataclasses.replace(report, name=ctx.name, pages=pages)
            kg.reports[ctx.community.id] = report
        finished += len(level_todo)
        if progress and not to_write:
            progress("graphrag.reports", finished, len(todo))
    kg.reports = dict(sorted(kg.reports.items()))
    return kg.reports
