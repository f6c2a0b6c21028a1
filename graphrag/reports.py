"""Community reports: what each community is about, grounded in chunk ids.

:func:`community_context` gathers what a writer needs (central entities, strongest
internal relations and the manual's own sentences stating them, the sentences that
introduce its central entities; with the chunks' headings, the community's title, the
lead sentences of its home sections and the pages to read); a :class:`ReportWriter`
turns it into a :class:`CommunityReport`. The default :class:`ExtractiveReportWriter`
needs no model: given the chunks' texts, its title section's lead and then the
sentences carrying most of what the community is about (:mod:`graphrag.overview`), in
reading order; without them, the lead sentences of the sections the community lives
in, in reading order under their titles, then the manual's sentences introducing its
central entities, then the sentences stating the typed relations between its members.
Whole sentences only, no counts. :func:`write_reports` gives every community a report, whatever its
size.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from arborgraph.core.api_pages import before_first_class, class_one_liners
from arborgraph.core.definitions import ALSO, opens_with_term, term_one_liners
from arborgraph.core.concurrency import run_ordered, workers_for
from arborgraph.core.leads import is_fragment, points_elsewhere
from arborgraph.core.taglines import banner_key, opening_chunks, page_taglines, shared_sentences
from arborgraph.core.text import reads_alone
from graphrag.chunks import doc_of
from graphrag.graph import KnowledgeGraph
from graphrag.lexicon import PREPOSITIONS, is_gerund, relation_words, verb_lemma, word_classes
from graphrag.model import CO_OCCURS, Community, CommunityReport, Entity, Finding, Relation
from graphrag.naming import (
    Section,
    SectionIndex,
    Title,
    capitalised,
    community_titles,
    is_generic_heading,
    page_title,
    readable_name,
)
from graphrag.overview import (
    Sentence,
    chunk_sentences,
    chunk_weights,
    document_frequencies,
    is_meta,
    names_pattern,
    overview,
    restates,
)
from graphrag.text import singular
from graphrag.vocab import HEAD_NOUN_TYPES

ProgressFn = Callable[[str, int, int | None], None]

# relations a report's paragraph does not tell: no verb says how the two relate, or (is_a)
# the phrase drops the sentence's conditions too often ("SELECT is an aggregate query")
_NOT_TOLD = frozenset({CO_OCCURS, "see_also", "is_a"})


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
    name: str = ""  # the community's title (graphrag.naming)
    pages: list[tuple[str, str]] = field(default_factory=list)  # (document id, title) to read, best first
    # (entity id, sentence, chunk id): the manual's sentence introducing a central entity
    # ("X is ...", "X stores ..."), central entities first
    introductions: list[tuple[str, str, str]] = field(default_factory=list)
    # (sentence, chunk id): sentences naming its members (where they meet first), for a
    # community whose entities nothing introduces and no typed relation relates
    meetings: list[tuple[str, str]] = field(default_factory=list)
    # (section title, lead sentence, chunk id): the sections it lives in, its title's
    # first (title "" there: the report's title says it), the others in reading order
    leads: list[tuple[str, str, str]] = field(default_factory=list)
    # the chunks of the section its title is (and the sections below it): the summary
    # quotes only them, so that a community spread over the manual is not told by
    # sentences from unrelated pages or sections (None: any chunk, for a graph without
    # headings)
    page_chunks: frozenset[str] | None = None
    # the member whose name tells its title apart from a community of the same section
    # ("Command line options: -bv"): the summary says what it is first, where the
    # section's lead would repeat the other community's
    named: str | None = None
    # (sentence, chunk id), in reading order: the sentences of the text its members are
    # discussed in that carry most of its vocabulary (graphrag.overview), when the
    # chunks' texts were given
    overview: list[tuple[str, str]] = field(default_factory=list)
    # (name, its first sentence, chunk id), in reading order, when the chunks' texts
    # were given: the classes its title's section documents (an API reference page:
    # arborgraph.core.api_pages.class_one_liners), or the options it lists when it opens
    # with one (arborgraph.core.definitions.term_one_liners)
    entries: list[tuple[str, str, str]] = field(default_factory=list)
    # the sentences of that section before its first class: the module's own docstring
    # (none before a list of options)
    preface: frozenset[str] = frozenset()


def community_context(
    kg: KnowledgeGraph, community: Community, *, max_entities: int = 30, max_relations: int = 40
) -> CommunityContext:
    """Central entities and strongest relations inside ``community``, and the sentences
    introducing its central entities."""
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
    ents = sorted(strength.items(), key=lambda kv: (-kv[1], -kg.degree(kv[0]), kv[0]))[:max_entities]
    # typed relations say more than co-occurrence: they sort first at equal weight
    rels = sorted(internal.values(), key=lambda r: (-(r.weight * (2.0 if r.type != CO_OCCURS else 1.0)), r.id))
    rels = rels[:max_relations]
    children = [kg.reports[c] for c in community.children if c in kg.reports]
    intros = []
    for eid, _ in ents:
        if readable_name(kg.entities[eid].name) and (found := introduction(kg.entities[eid], rels)) is not None:
            intros.append((eid, *found))
    meetings = [] if intros else meeting_sentences(kg, community, rels)
    return CommunityContext(
        community=community,
        entities=[(kg.entities[e], w) for e, w in ents],
        relations=rels,
        phrases={r.id: relation_phrase(kg, r) for r in rels},
        child_reports=children,
        internal_weight=sum(r.weight for r in internal.values()),
        introductions=intros,
        meetings=meetings,
    )


_MEETINGS = 2


def meeting_sentences(kg: KnowledgeGraph, community: Community, internal: Sequence[Relation]) -> list[tuple[str, str]]:
    """Up to two sentences of the manual where members of ``community`` meet (those
    stating its ``internal`` relations, strongest first) that read on their own."""
    names = [n for m in community.members for n in (kg.entities[m].name, *kg.entities[m].aliases)]
    out: dict[str, str] = {}
    for rel in internal:
        chunk = _evidence_chunk(rel)
        sentence = quotable(rel.description, names) if rel.description and chunk else None
        if sentence is not None and chunk is not None:
            out.setdefault(sentence, chunk)
            if len(out) >= _MEETINGS:
                break
    return list(out.items())


_MAX_QUOTE_WORDS = 40
_BULLET = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def quotable(sentence: str, names: Collection[str] = ()) -> str | None:
    """``sentence`` as a report quotes it (a list item without its bullet, spaces
    collapsed), or None when it does not read on its own as one statement of six to
    forty words ending in a full stop, with its brackets closed (a sentence split at
    an abbreviation inside them ends "(e.g." cut off). The entity ``names`` it holds
    count as plain words: a sentence about three functions is not a line of code."""
    text = _BULLET.sub("", " ".join(sentence.split()))
    words = text.split()
    if not (6 <= len(words) <= _MAX_QUOTE_WORDS) or text[-1:] not in ".!" or not reads_alone(_masked(text, names)):
        return None
    if text.count("(") != text.count(")") or text.count("[") != text.count("]"):
        return None
    return text


def _masked(text: str, names: Collection[str]) -> str:
    """``text`` with each of ``names`` (any case, as a whole word) said "name"."""
    pattern = names_pattern(names)
    if pattern is None:
        return text
    masked = pattern.sub("name", text)
    return masked[:1].upper() + masked[1:]


def introduces(sentence: str, entity: Entity) -> bool:
    """Whether ``entity`` is the subject of ``sentence``: it opens the sentence (after an
    article; by its name or an alias, perhaps followed by its kind, "the journal_mode
    pragma") and a verb follows ("WAL is ...", "A checkpoint copies ...")."""
    text = _ARTICLE.sub("", sentence.strip())
    low = text.lower()
    for name in sorted({entity.name, *entity.aliases}, key=len, reverse=True):
        if not name or not low.startswith(name.lower()):
            continue
        rest = text[len(name) :]
        if rest[:1].isalnum() or rest[:1] in "_-":
            continue  # "WALs", "sqlite3_open_v2" after "sqlite3_open"
        words = _WORD.findall(rest[:60].lower())
        if words and words[0] in HEAD_NOUN_TYPES:
            words = words[1:]
        if words and _finite_verb(words[0]):
            return True
    return False


def _finite_verb(word: str) -> bool:
    """Whether ``word`` can be a subject's verb: an auxiliary ("is", "can"), a word that
    is only a verb ("provides"), or a noun-verb in the third person ("stores"), not a
    noun that might be a verb ("the SQLite code base": "code") nor an -ing form."""
    classes = word_classes(word)
    if "AUX" in classes:
        return True
    if "VERB" not in classes or is_gerund(word) or word in PREPOSITIONS:
        return False
    return "NOUN" not in classes or word.endswith("s")


# a version requirement, a warning or a default says under what terms the section
# applies, not what it is ("For having an effect, a nghttp2 library version 1.5.0 or
# newer is necessary.", "Available in version 2.4.30 and later.", "By default, the
# variable contains ..."): no lead nor summary sentence, as the fourth rating asked
_TERMS = re.compile(
    r"^(?:Warning|Caution|Important|Danger|Deprecated|Compatibility|By default|Should|For having)\b"
    r"|\b(?:version|release|v)\s?\d[\w.]*\s+(?:or|and) (?:newer|later|above|higher|greater)\b"
    r"|^(?:(?:This|The)\s+(?:\w+\s+){0,2})?(?:is |was )?(?:only )?(?:available|introduced|added|new) (?:in|since|as of|from)\s"
    r"(?:\w+\s+){0,4}?(?:version|release|v?\d)",
    re.IGNORECASE,
)


def sets_terms(sentence: str) -> bool:
    """Whether ``sentence`` states a version requirement, a warning or a default
    (:data:`_TERMS`): a side detail, never what a section or a community is about."""
    return bool(_TERMS.search(sentence.strip()))


_DETERMINERS = frozenset("the a an this that these those each every any some no its their our your".split())


def states_something(sentence: str) -> bool:
    """Whether ``sentence`` has a verb a subject could have, so says something instead of
    naming it: a table's cell or a definition without its headword is a noun phrase
    ("Minimum number of idle threads to handle request spikes.", "Current time of day, in
    24-hour format.", "The filename of the DBM format file."), which the fourth rating
    marked down as a pasted fragment. A verb is an auxiliary ("is", "can"), a word only a
    verb ("appends"), an opening base form ("Use ..."), or an -s or -ed form with words
    after it that does not follow a determiner or an adjective ("A checkpoint copies
    frames ..."; not "idle threads" nor the closing "request spikes"); never after "to"."""
    words = [w.lower() for w in _WORD.findall(sentence)]
    for i, word in enumerate(words):
        classes = word_classes(word)
        before = words[i - 1] if i else ""
        if word == "am" and before != "i":
            continue  # "am/pm format"
        if "AUX" in classes:
            return True
        if "VERB" not in classes or is_gerund(word) or before == "to" or word in PREPOSITIONS:
            continue
        if i == 0 or not classes & {"NOUN", "ADJ"}:
            return True
        # an inflected form ("copies", "stored"), not a word ending so ("access")
        if (word.endswith("s") or word.endswith("ed")) and verb_lemma(word) not in (None, word) \
                and i < len(words) - 1 and before not in _DETERMINERS and "ADJ" not in word_classes(before):
            return True
    return False


def introduction(entity: Entity, relations: Sequence[Relation]) -> tuple[str, str] | None:
    """(sentence, chunk id): the manual's sentence introducing ``entity``, one it is the
    subject of and that reads on its own: its description first, then the sentences
    stating its ``relations`` (those of its community), strongest first."""
    candidates: list[tuple[str, str | None]] = [(entity.description, entity.description_chunk)]
    for rel in relations:
        if entity.id in (rel.source, rel.target):
            candidates.append((rel.description, _evidence_chunk(rel)))
    for sentence, chunk in candidates:
        if not sentence or chunk is None:
            continue
        text = quotable(sentence, [entity.name, *entity.aliases])
        if text is not None and introduces(text, entity):
            return text, chunk
    return None


def _evidence_chunk(rel: Relation) -> str | None:
    if rel.evidence:
        return rel.evidence[0].chunk_id
    return rel.chunk_ids[0] if rel.chunk_ids else None


# how many sections' leads open a report, and the share of a community's mentions a
# section other than its title's must hold to be one of them: a fifth, or a tenth where
# a central entity is introduced (a large community spread over the manual has no such
# sections: their leads would be sentences from unrelated places)
_LEADS = 2
_LEAD_SHARE = 0.2
_DEFINING_SHARE = 0.1


def home_leads(
    kg: KnowledgeGraph, index: SectionIndex, community: Community, title: Title, central: Sequence[str]
) -> list[tuple[str, str, str]]:
    """(section title, lead sentence, chunk id) of the sections ``community`` lives in:
    its title's section first (title ""), then in reading order the sections below it
    where its ``central`` entities (ids, most central first) are introduced or that hold
    :data:`_LEAD_SHARE` of its mentions, and whose opening names one of its members
    (else the lead is about something else: a section on LDP that mentions SSM once); at
    most :data:`_LEADS`. With none of these, the lead of the section holding the most of
    its mentions that names a member."""
    members = set(community.members)
    counts, total = index.held(kg, community.members)
    wanted: list[Section] = []
    for eid in central[:3]:
        chunk = kg.entities[eid].description_chunk
        if chunk and index.paths.get(chunk) and counts[index.paths[chunk]] >= _DEFINING_SHARE * total - 1e-9:
            wanted.append(index.paths[chunk])
    wanted += [s for s, n in counts.items() if total and n >= _LEAD_SHARE * total - 1e-9]
    out: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    home = title.section or ()
    # the title's section, or when it has no lead of its own, its page's
    found = next((f for s in dict.fromkeys((home, home[:1])) if s and (f := index.opening(s)) is not None), None)
    if found is not None:
        out.append(("", *found))
        seen.add(found[0])
    # the sections above the title's say more than the community is about; those on
    # other pages are about something else (a community told by its page keeps to it)
    # beside them only the sections below the title's: a section beside it on its page is
    # another topic, and its lead under its heading reads as a sentence pasted in
    # ("Private options for appendfile: Setting this option permits ...")
    others = sorted(
        (s for s in dict.fromkeys(wanted) if s != home[: len(s)] and index.title(s) and s[: len(home)] == home),
        key=lambda s: index.order.get(s, 0),
    )
    for section in others:
        if len(out) >= _LEADS:
            break
        found = index.leads.get(section)
        if found is not None and is_generic_heading(section[-1], index.structural):
            # an "OPTIONS" or "Examples" lead says what the section above it is about only
            # when it opens that section
            found = found if index.opening(section[:-1]) == found else None
        if found is not None and found[0] not in seen and members.intersection(kg.chunk_entities.get(found[1], ())) \
                and states_something(found[0]):  # a noun phrase under another heading: a pasted cell
            seen.add(found[0])
            # on the title's page: its heading without the page's title before it
            label = _lead_heading(index, section)
            page = index.title(home[:1]) if home else None
            label = label.removeprefix(f"{page}: ") if page else label
            # a heading that repeats the report's title ("The dnslookup router" on its
            # own page) says nothing before its lead
            out.append(("" if label.lower() in {title.text.lower(), (page or "").lower()} else label, *found))
    if not out and home:
        # a page opening with a list or a table: the lead of its section holding the most
        # of the community's mentions (one naming a member first) says what it is about,
        # in the page's words, where a list of names would not
        # (a noun phrase opening another section says what that heading is, not this one)
        on_page = sorted(
            (s for s in index.leads if s[:1] == home[:1] and states_something(index.leads[s][0])),
            key=lambda s: (not members.intersection(kg.chunk_entities.get(index.leads[s][1], ())), -counts[s],
                           index.order.get(s, 0)),
        )
        if on_page:
            out.append(("", *index.leads[on_page[0]]))
    if not out:
        # nothing on its page opens a section: the lead of the section holding the most
        # of its mentions that names a member, a sentence where a list of names with
        # their pages would be a fragment ("no_sslv2 and no_sslv3, in Main configuration.");
        # members named only in a reference page taken for an index: its sections
        if not total:
            counts, total = index.held(kg, community.members, in_index=True)
        anywhere = sorted(
            (s for s in index.leads
             if counts[s] > 0 and members.intersection(kg.chunk_entities.get(index.leads[s][1], ()))
             and states_something(index.leads[s][0])),
            key=lambda s: (-counts[s], -len(s), index.order.get(s, 0)),
        )
        if anywhere:
            out.append(("", *index.leads[anywhere[0]]))
    if not out and total:
        # no lead names a member: the lead of the page holding the most of its mentions,
        # which says what that page is about, where the fourth rating marked down the list
        # of names "X, Y and Z, in A and B." a report would else be
        pages: Counter[Section] = Counter()
        for s, n in counts.items():
            pages[s[:1]] += n
        for page, _ in sorted(pages.items(), key=lambda pn: (-pn[1], index.order.get(pn[0], 0))):
            found = index.opening(page) or next(
                (index.leads[s] for s in sorted(index.leads, key=lambda s: index.order.get(s, 0))
                 if s[:1] == page and states_something(index.leads[s][0])),
                None,
            )
            if found is not None:
                out.append(("", *found))
                break
    return out


def section_openers(headings: Mapping[str, Sequence[str]]) -> frozenset[str]:
    """The chunks (``headings`` in reading order) that open their section: the first of
    their document under their heading path."""
    out: set[str] = set()
    previous: tuple[str, tuple[str, ...]] | None = None
    for chunk, path in headings.items():
        key = (doc_of(chunk), tuple(path))
        if key != previous:
            out.add(chunk)
        previous = key
    return frozenset(out)


class _Overviews:
    """The overviews of one graph's communities (:func:`community_overview`), with what
    they share (the chunks' document frequencies, reading order, section openers and
    analysed sentences) made on the first one asked for."""

    def __init__(
        self, kg: KnowledgeGraph, index: SectionIndex, texts: Mapping[str, str],
        headings: Mapping[str, Sequence[str]] | None,
    ) -> None:
        self._kg, self._index, self._texts, self._headings = kg, index, texts, headings or {}
        self._shared: tuple[Counter[str], int, dict[str, int], frozenset[str], frozenset[str]] | None = None
        self._analysed: dict[str, tuple[Sentence, ...]] = {}

    def of(self, context: CommunityContext) -> list[tuple[str, str]]:
        if self._shared is None:
            df, n_docs = document_frequencies(self._texts.values())
            order = {chunk: k for k, chunk in enumerate(self._headings or self._texts)}
            many_pages = shared_sentences((doc_of(chunk), text) for chunk, text in self._texts.items())
            self._shared = (df, n_docs, order, section_openers(self._headings), many_pages)
        df, n_docs, order, openers, many_pages = self._shared
        return community_overview(
            self._kg, context, self._index, self._texts, order, df, n_docs, self._analysed, openers, many_pages
        )

    def entries(self, context: CommunityContext) -> tuple[list[tuple[str, str, str]], frozenset[str]]:
        """The class one-liners of its title's section and the sentences before its first
        class; in a section opening with an option, its options' one-liners and no
        sentence before them (none without a section)."""
        if not context.page_chunks:
            return [], frozenset()
        order = self._shared[2] if self._shared is not None else {}
        chunks = [(c, self._texts[c]) for c in sorted(context.page_chunks, key=lambda c: (order.get(c, len(order)), c))
                  if c in self._texts]
        if opens_with_term(text for _, text in chunks):
            return term_one_liners(chunks), frozenset()
        return class_one_liners(chunks), frozenset(before_first_class(chunks))


# the chunks an overview reads, most of the members' mentions first
_OVERVIEW_CHUNKS = 30


def community_overview(
    kg: KnowledgeGraph,
    context: CommunityContext,
    index: SectionIndex,
    texts: Mapping[str, str],
    order: Mapping[str, int],
    df: Mapping[str, int],
    n_docs: int,
    analysed: dict[str, tuple[Sentence, ...]],
    openers: Collection[str] = (),
    shared: Collection[str] = frozenset(),
) -> list[tuple[str, str]]:
    """The overview sentences of a community (:func:`graphrag.overview.overview`): from
    the chunks its members are mentioned in outside index pages, within its title's
    section where it has one and mentions there, at most :data:`_OVERVIEW_CHUNKS` of
    them, weighed by their mentions; the first sentences of ``openers`` (chunks opening
    their section) gain. ``analysed`` caches each chunk's sentences. A sentence many
    pages carry (``shared``, as :func:`arborgraph.core.taglines.banner_key` gives it: an
    inherited docstring) is not quoted: it fits any of them."""
    members = [kg.entities[m] for m in context.community.members]
    mentions = [
        mention.chunk_id for e in members for mention in e.mentions for _ in range(max(1, mention.count))
        if mention.chunk_id in texts and not index.in_index(mention.chunk_id)
    ]
    weight = chunk_weights(mentions)
    if context.page_chunks:
        home = {c: w for c, w in weight.items() if c in context.page_chunks}
        weight = home or weight
    chosen = sorted(weight, key=lambda c: (-weight[c], order.get(c, len(order)), c))[:_OVERVIEW_CHUNKS]
    chunks = []
    for chunk in sorted(chosen, key=lambda c: (order.get(c, len(order)), c)):
        if chunk not in analysed:
            analysed[chunk] = chunk_sentences(texts[chunk])
        chunks.append((chunk, analysed[chunk], weight[chunk]))
    names = [n for e in members if readable_name(e.name) for n in (e.name, *e.aliases)]

    def may_quote(sentence: str) -> bool:
        return quotable(sentence, names) is not None and states_something(sentence) \
            and not (points_elsewhere(sentence) or is_fragment(sentence) or sets_terms(sentence) or is_credit(sentence)) \
            and banner_key(sentence) not in shared

    return overview(chunks, names, df, n_docs, may_quote, section_openers=openers)


def _lead_heading(index: SectionIndex, section: Section) -> str:
    """The title a section's lead is shown under: the section's, or for a generic
    heading ("Overview", "Executive Summary") that of the section it opens ("ANALYZE",
    not "ANALYZE: Overview")."""
    while len(section) > 1 and is_generic_heading(section[-1], index.structural) and index.title(section[:-1]):
        section = section[:-1]
    return index.title(section) or ""


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
    """Reports without a model, in the manual's own words. The title is the community's
    title (:mod:`graphrag.naming`). With an overview in the context (the chunks' texts
    were given to :func:`write_reports`), the summary is its title section's lead, unless
    that addresses the reader or only restates the title, then the overview's sentences.
    A title section that is an API reference page says first what its classes are, one
    line each ("GroupManager: Manager class for ..."), after its lead only when that comes
    before the first class (the module's docstring, not a member's); with two classes or
    more, no overview sentences (its methods' docstrings) follow. A title section that
    opens with an option says its options the same way ("-d, --dereference: Dereference
    tags into object IDs as well."), and not the first option's gloss alone as its lead.
    Otherwise it opens with the lead sentences of the
    sections it lives in (its title's, then the others in reading order, each after its
    title), then the sentences introducing its central entities ("X is ...", "X stores
    ..."), most central first, then the sentences stating the typed relations between its
    members. A community with none of these is told by the sentences where its members
    meet. Whole sentences only: one longer than ``max_quote_chars`` is left out, never
    cut. Findings give the same sentences with their chunk ids, each relation as "A verb
    B" before the sentence stating it."""

    name = "extractive-v6"
    # the rank of a report is its community's weight relative to the level's heaviest:
    # an update that reuses the report's text sets the rank anew (graphrag.update)
    rank_from_weight = True
    # the text says the community's name: an update rewrites it when it changes
    reads_names = True

    def __init__(
        self, *, n_entities: int = 6, n_findings: int = 5, max_quote_chars: int = 400, n_relations: int = 3,
        n_introductions: int = 3, max_words: int = 100, n_classes: int = 3,
    ) -> None:
        self.max_words = max_words
        self.n_classes = n_classes
        self.n_entities = n_entities
        self.n_findings = n_findings
        self.max_quote_chars = max_quote_chars
        self.n_relations = n_relations
        self.n_introductions = n_introductions

    def write(self, context: CommunityContext) -> CommunityReport:
        com = context.community
        central = [e for e, _ in context.entities if readable_name(e.name)][: self.n_entities]
        title = context.name or " and ".join(e.name for e in central[:2]) or " and ".join(
            e.name for e, _ in context.entities[:2]
        )
        return CommunityReport(
            community_id=com.id,
            level=com.level,
            title=title,
            summary=self._summary(context),
            findings=self._findings(context, central),
            rank=context.rank,
            name=context.name,
            pages=[doc for doc, _ in context.pages],
        )

    def _summary(self, context: CommunityContext) -> str:
        used: set[str] = set()
        parts: list[str] = []

        said: set[str] = set()  # what was said, in any case and spacing

        def take(sentence: str, line: str, own_lead: bool = False, headed: bool = False) -> bool:
            """Add ``line`` (saying ``sentence``) when the sentence is new, whole, fits and
            says something of the topic (not who added it). A noun phrase only as the lead
            of the title's own section (``own_lead``), which says what that heading is, or
            under the name it defines (``headed``: "GroupManager: Manager class for ...")."""
            key = _said(sentence)
            if key in said or len(sentence) > self.max_quote_chars or is_credit(sentence):
                return False
            if points_elsewhere(sentence) or (is_fragment(sentence) and not headed) or sets_terms(sentence) \
                    or not (own_lead or headed or states_something(sentence)):
                return False  # "see section 3.10", "Let's say ...", a table's row or cell: nothing of the topic itself
            if parts and len(" ".join([*parts, line]).split()) > self.max_words:
                return False
            used.add(sentence)
            said.add(key)
            parts.append(line)
            return True

        on_page = context.page_chunks
        named = [(s, c) for eid, s, c in context.introductions if eid == context.named]
        if named:
            take(named[0][0], named[0][0])
        if context.overview:
            # the lead of its title's own section, then the sentences carrying most of
            # what it is about, in reading order: an overview, where the other sections'
            # leads under their headings and the relations' sentences read as pasted in
            lead = context.leads[0][1] if context.leads and not context.leads[0][0] else None
            if lead is not None and context.entries and lead not in context.preface:
                lead = None  # the docstring of a member the page documents first, not the module's; an option's gloss
            if lead is not None and not is_meta(lead) and not restates(lead, context.name):
                take(lead, lead, own_lead=True)
            # an API reference page: what each class it documents is, under its name, says
            # what the module holds where its methods' docstrings would not (raters gave
            # those lists 3 of 5: "no overview sentence"); with two or more, the methods'
            # docstrings are left out. A list of options likewise says each option's gloss
            # under its name.
            entries = sum(take(s, f"{name}: {s}", headed=True) for name, s, _ in context.entries[: self.n_classes])
            if entries >= 2:
                self._the_rest(parts, [name for name, _, _ in context.entries[self.n_classes:]])
            for sentence, _ in context.overview if entries < 2 else ():
                take(sentence, sentence)
            if parts:
                return "\n".join(parts)
        for k, (heading, sentence, _) in enumerate(context.leads):
            # home_leads gives a noun phrase only as the first, its title's section's lead
            take(sentence, f"{heading}: {sentence}" if heading else sentence, own_lead=k == 0 and not heading)
        # with leads, the introductions and relations add to them, not replace them
        intros = self.n_introductions - (1 if context.leads else 0)
        for _, sentence, chunk in context.introductions:
            if intros > 0 and (on_page is None or chunk in on_page) and take(sentence, sentence):
                intros -= 1
        for rel, sentence in told_relations(context, self.n_relations, used):
            if on_page is None or _evidence_chunk(rel) in on_page:
                take(sentence, sentence)
        if not parts:
            for sentence, chunk in context.meetings:
                if on_page is None or chunk in on_page:
                    take(sentence, sentence)
        if not parts:
            # nothing opens its page's sections: the sentences the manual says of its
            # members, whatever their subject, before a bare list of names
            # (those on its page first: a page of links only has none)
            described = [
                (text, chunk) for entity, _ in context.entities
                if (chunk := entity.description_chunk) and entity.description
                and (text := quotable(entity.description, [entity.name, *entity.aliases]))
            ]
            for text, _ in sorted(described, key=lambda tc: on_page is not None and tc[1] not in on_page)[:2]:
                take(text, text)
        return "\n".join(parts) if parts else _where_named(context)

    def _the_rest(self, parts: list[str], names: list[str]) -> None:
        """Add to ``parts`` the names of the entries a list left out ("Also: -q, --quiet;
        --verify; ..."), as many as fit the summary's words: a list cut short says so
        (raters: lists of three "with no sign that the list is cut short")."""
        shown = list(names)
        while shown:
            last = "; …" if len(shown) < len(names) else ("" if shown[-1].endswith((".", "…")) else ".")
            line = ALSO + "; ".join(shown) + last
            if len(" ".join([*parts, line]).split()) <= self.max_words:
                parts.append(line)
                return
            shown.pop()

    def _findings(self, context: CommunityContext, central: list[Entity]) -> list[Finding]:
        findings: list[Finding] = []
        used_text: set[str] = set()
        names = {e.id: e.name for e in central}
        for heading, sentence, chunk in context.leads:
            if len(sentence) <= self.max_quote_chars and sentence not in used_text and len(findings) < 2:
                used_text.add(sentence)
                # a finding reads "label: quote": the section's own heading, with no colon
                label = (heading or context.name).rsplit(": ", 1)[-1]
                findings.append(Finding(f"{label}: {sentence}", [chunk]))
        for eid, sentence, chunk in context.introductions:
            fits = len(sentence) <= self.max_quote_chars
            if eid in names and sentence not in used_text and len(findings) < 3 and fits:
                used_text.add(sentence)
                findings.append(Finding(f"{names[eid]}: {sentence}", [chunk]))
        per_entity: Counter[str] = Counter()
        for rel in context.relations:
            if len(findings) >= self.n_findings:
                break
            if not rel.description or rel.description in used_text or len(rel.description) > self.max_quote_chars:
                continue
            if per_entity[rel.source] >= 2 and per_entity[rel.target] >= 2:
                continue  # spread findings over the community, not one hub
            used_text.add(rel.description)
            per_entity[rel.source] += 1
            per_entity[rel.target] += 1
            chunks = list(dict.fromkeys(ev.chunk_id for ev in rel.evidence)) or rel.chunk_ids[:1]
            findings.append(Finding(f"{context.phrases.get(rel.id, rel.id)}: {rel.description}", chunks[:3]))
        label = context.name or (central[0].name if central else "")
        for sentence, chunk in context.meetings:
            if not findings and len(sentence) <= self.max_quote_chars:
                findings.append(Finding(f"{label}: {sentence}", [chunk]))
        return findings


_CREDIT = re.compile(
    # "Liviu Daia added ...", "Thanks to Wietse Venema": who wrote a feature, not what it is
    # (a person's name is two or three capitalised words: "Postfix added" is no credit)
    r"^(?:(?:[A-Z][a-z]+\.?\s+){2,3}(?:and\s+(?:[A-Z][a-z]+\.?\s+){2,3})?"
    r"(?:added|contributed|wrote|implemented|fixed|reported|suggested|donated|submitted|ported)\b"
    r"|(?i:(?:many\s+)?thanks\s+(?:go\s+)?to|credits?\s+(?:go\s+)?to|(?:written|contributed|patch)\s+by)\b)"
)


def is_credit(sentence: str) -> bool:
    """Whether ``sentence`` credits a person with a change ("Liviu Daia added ...",
    "Thanks to ..."): a changelog's line, which says nothing of what the topic is."""
    return bool(_CREDIT.match(sentence.strip()))


def _said(sentence: str) -> str:
    """A sentence as compared for repeats: lower case, words only."""
    return " ".join(re.findall(r"\w+", sentence.lower()))


def told_relations(context: CommunityContext, n: int, used: Collection[str] = ()) -> list[tuple[Relation, str]]:
    """Up to ``n`` typed relations between members, strongest first, each with the
    sentence stating it as quoted: a verb's, not a co-occurrence, a "see also", an "is a"
    or a bare preposition ("A for B" reads as a fragment); no two between the same members, none
    whose sentence is in ``used`` (already quoted) or does not read on its own."""
    out: list[tuple[Relation, str]] = []
    pairs: set[frozenset[str]] = set()
    quoted = set(used)
    for rel in context.relations:
        if len(out) >= n:
            break
        if rel.type in _NOT_TOLD or rel.type in PREPOSITIONS or not context.phrases.get(rel.id):
            continue
        pair = frozenset((rel.source, rel.target))
        ends = [e.name for e, _ in context.entities if e.id in pair]
        sentence = quotable(rel.description, ends) if rel.description else None
        if pair in pairs or sentence is None or sentence in quoted:
            continue
        pairs.add(pair)
        quoted.add(sentence)
        out.append((rel, sentence))
    return out


def _where_named(context: CommunityContext, n: int = 4) -> str:
    """For a community no sentence of the manual tells: its most central members and the
    pages that name them ("-fPIC and -shared, in How To Compile SQLite."). No types: a
    rule extractor's type is a guess from the name's form ("ssh()" a function), which the
    name already shows."""
    shown = [e for e, _ in context.entities if readable_name(e.name)][:n] or [e for e, _ in context.entities[:n]]
    listed = _join([e.name for e in shown])
    pages = list(dict.fromkeys(title for _, title in context.pages))[:2]
    return f"{listed}, in {_join(pages)}." if pages else f"{listed}."


def _join(items: Sequence[str]) -> str:
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _taglines(index: SectionIndex, texts: Mapping[str, str] | None) -> dict[str, str]:
    """Page title -> tagline of the pages titled by an identifier (:func:`page_taglines`)."""
    if not texts:
        return {}
    titles: dict[str, str] = {}  # document -> its title
    for chunk, path in index.paths.items():
        titles.setdefault(doc_of(chunk), path[0])
    # index.paths is in reading order
    openings = opening_chunks((doc_of(chunk), texts[chunk]) for chunk in index.paths if chunk in texts)
    return page_taglines((titles[document], opening) for document, opening in openings.items())


def write_reports(
    kg: KnowledgeGraph,
    writer: ReportWriter,
    *,
    min_size: int = 3,
    progress: ProgressFn | None = None,
    reuse: Callable[[CommunityContext], CommunityReport | None] | None = None,
    headings: Mapping[str, Sequence[str]] | None = None,
    small_writer: ReportWriter | None = None,
    leads: Mapping[str, str] | None = None,
    texts: Mapping[str, str] | None = None,
) -> dict[int, CommunityReport]:
    """A report for every community, deepest level first (so a parent's writer can read
    its children's reports). Stored on ``kg``.

    ``writer`` writes the reports of communities with at least ``min_size`` members;
    the smaller ones get ``small_writer``'s (default: :class:`ExtractiveReportWriter`,
    no model), unless ``writer`` is that kind of writer itself. Every community gets its
    title from :func:`graphrag.naming.community_titles`, from ``headings`` (chunk id ->
    heading path, page title first, for the graph's chunks, in reading order; without
    them its central entity's name), which also give the pages to read; every report
    keeps them (``name``, ``pages``). ``leads`` (chunk id -> lead sentence of a chunk
    opening its section, :func:`graphrag.build.section_leads`) give the lead sentences
    of the sections each community lives in (:func:`home_leads`); ``texts`` (chunk id ->
    text) the sentences of its overview (:func:`community_overview`). ``reuse`` (for
    updates) may return an existing report for a community's context (its rank, child
    reports, name, pages and leads filled in); no writer is then called for it.
    """
    small = small_writer or ExtractiveReportWriter()
    todo = sorted(kg.communities.values(), key=lambda c: (-c.level, c.id))
    contexts = {c.id: community_context(kg, c) for c in todo}
    index = SectionIndex(kg, headings or {}, leads)
    names = community_titles(kg, headings or {}, index, _taglines(index, texts))
    titles: dict[str, str] = {}
    for chunk_id, path in (headings or {}).items():
        if path:
            titles.setdefault(doc_of(chunk_id), page_title(path[0]))
    by_page: dict[str, set[str]] = {}
    for chunk_id, path in index.paths.items():
        by_page.setdefault(path[0], set()).add(chunk_id)
    on_page = {page: frozenset(chunks) for page, chunks in by_page.items()}
    for cid, ctx in contexts.items():
        ctx.name = names[cid].text if cid in names else ""
        if headings is not None:
            ctx.pages = pages_to_read(kg, ctx.community, titles)
        if cid in names:
            ctx.named = names[cid].named
        if cid in names and leads:
            ctx.leads = home_leads(kg, index, ctx.community, names[cid], [e.id for e, _ in ctx.entities])
        if cid in names and (section := names[cid].section):
            # the title's section, not its whole page: a sentence from a section beside it
            # is about another topic
            ctx.page_chunks = frozenset(
                c for c in on_page.get(section[0], frozenset()) if index.paths[c][: len(section)] == section
            )
    overviews = _Overviews(kg, index, texts, headings) if texts else None
    # rank: internal weight relative to the heaviest community of the same level
    weight = {cid: ctx.internal_weight for cid, ctx in contexts.items()}
    top: dict[int, float] = {}
    for c in todo:
        top[c.level] = max(top.get(c.level, 0.0), weight[c.id])

    def writer_for(c: Community) -> ReportWriter:
        return writer if len(c.members) >= min_size or writer.name == small.name else small

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
        if overviews is not None:
            # only for the reports written here: a reused report keeps its text
            for ctx in to_write:
                ctx.overview = overviews.of(ctx)
                ctx.entries, ctx.preface = overviews.entries(ctx)
        base = finished + len(level_todo) - len(to_write)
        written: dict[int, CommunityReport] = {}
        for w in dict.fromkeys((writer, small)):
            batch = [ctx for ctx in to_write if writer_for(ctx.community) is w]
            if not batch:
                continue

            def done(n: int, base: int = base) -> None:
                if progress:
                    progress("graphrag.reports", base + n, len(todo))

            reports = run_ordered(w.write, batch, workers_for(w), stop_on_error=True, done=done)
            written.update((ctx.community.id, r) for ctx, r in zip(batch, reports, strict=True))
            base += len(batch)
        for ctx in to_write:
            report = written[ctx.community.id]
            pages = [doc for doc, _ in ctx.pages]
            if report.name != ctx.name or report.pages != pages:
                report = dataclasses.replace(report, name=ctx.name, pages=pages)
            kg.reports[ctx.community.id] = report
        finished += len(level_todo)
        if progress and not to_write:
            progress("graphrag.reports", finished, len(todo))
    kg.reports = dict(sorted(kg.reports.items()))
    return kg.reports
