"""Titles for communities: the section of the manual that is a community's home, or
else its central entity.

A community's members are mentioned in chunks, and every chunk sits under a path of
headings (page title first). A community's **home** is the section (a page, or a
heading below it) whose chunks hold at least a third of its members' mentions (each
member counted once per chunk); the deepest such section names it, without its
number, a generic heading ("Options", "Examples") after the heading above it
("pg_resetwal: Options"). A section whose chunks mention a large share of all the
graph's entities is an index, a glossary or a table of contents, and is nobody's home.

A community spread over the manual has no home: it is named by the heading of the
section whose sentence introduces its **central entity** (the member with the most
relation weight inside it) when the heading names it. A central entity that is a plain
common noun ("command line", "author", "cause Git") names nothing a reader looks up:
then the section holding the most of the community's mentions names it, when that
section holds a fair share of them (:data:`MOST_SHARE`). Else the page holding the most
of its mentions names it: the section of that page headed by the central entity's name
when there is one ("omelasticsearch: retryfailures"), else the page alone, never a
member's word tacked on ("Command line options: -odb", not a bare "IP" or "Table"
either); a bare entity name only in a graph without headings.

Titles are distinct within a level: of communities with one title, the one with the
best claim keeps it (a member of that name, then the larger share of mentions) and the
others are told apart by their own sections (the heading level below their home holding
the most of each, or another section holding a fair share of it), or where one heading
stands in several places, by the heading above theirs ("Notes for BIND 9.18.34: Bug
Fixes"); only where neither differs by a member's name, defined members first.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from arborgraph.core.taglines import with_tagline
from arborgraph.core.text import ENTITY_STOPWORDS
from graphrag.extract.terms import heading_key
from graphrag.graph import KnowledgeGraph
from graphrag.lexicon import word_classes
from graphrag.model import Community, Entity
from graphrag.text import entity_key
from graphrag.vocab import GENERIC_WORDS, HEAD_NOUN_TYPES

# a heading used by more pages than this is page structure ("Overview", "OPTIONS")
MAX_HEADING_DOCS = 3
# the share of a community's mentions its home section must hold: a third (on the tuning
# manuals, a section holding a third to a half of a community named it better than its
# central entity did: "Define New Collating Sequences" for sqlite3_create_collation(),
# "Commit Limiting" for --max-parents)
HOME_SHARE = 0.33
# a section below its page names the community when it holds this share of what the
# section above it holds ("Write-Ahead Logging", not its "Options" with half of it)
DESCEND_SHARE = 0.75
# the share of an entity's mentions a section named after it must hold to title its
# community when the community has no home
NAMED_SHARE = 0.15
# a section whose chunks mention this share of all entities is an index, not a home
INDEX_SHARE = 0.2
MIN_ENTITIES_FOR_INDEX = 20
# a page that calls itself an index or a quick reference ("Directive Quick Reference",
# "Directive Index") lists what other pages define, though it names less than
# INDEX_SHARE of a large manual's entities: the fourth rating marked "Directive Quick
# Reference: AliasPreservePath" down, the directive's own page being its home
_INDEX_TITLE = re.compile(
    r"(?:^|\s)(?:Quick Reference|Reference Card|(?:(?:Directive|Module|Option|Command|Function|Keyword|"
    r"Variable|Parameter|Setting)s?|General|Alphabetical) Index)$",
    re.IGNORECASE,
)
# the share of a community's mentions the section holding the most of them must hold to
# title it in place of a central entity that is a plain common noun
MOST_SHARE = 0.25
# a heading longer than this is a sentence set as a heading, not a title
MAX_TITLE_WORDS = 12

_NUMBERING_RE = re.compile(
    r"^\s*(?:[-–—•*]\s+|(?:chapter|section|part|appendix)\s+[\dIVXivx]+[.:]?\s*(?:[-—–:]\s*)?|\d+(?:\.\d+)*\.?\s+|[A-Za-z]\.\s+|[ivxIVX]+\.\s+)",
    re.IGNORECASE,
)
# identifiers made up for examples (t1, tbl1, pub3b) and standard feature codes (T332)
_CODE_LIKE_RE = re.compile(r"^(?:[A-Za-z]{1,4}[0-9]+[A-Za-z]?[0-9]*|[A-Z][0-9]{3,}(?:-[0-9]+)?)$")
# placeholders, addresses and stock example names: no title, no lead of a report
_PLACEHOLDER_RE = re.compile(r"^<.*>$|@|^\w+\.(?:com|org|net|example)$|^(?:param|arg|foo|bar|baz)\d*$", re.IGNORECASE)
# headings that say what part of a page a section is, not what it is about
GENERIC_HEADING_WORDS = frozenset(
    """
    overview introduction summary description syntax usage option options example examples
    note notes detail details background limitation limitations parameter parameters argument
    arguments return value values see also synopsis discussion history caveat caveats
    configuration compatibility definition definitions reference remarks environment files
    exit status bugs author authors diagnostics output input sample samples
    variables commands functions methods settings fields name index glossary contents
    """.split()
)


def is_code_like(name: str) -> bool:
    """Whether ``name`` looks made up for a code example or is a bare code (tbl1, T332)."""
    return bool(_CODE_LIKE_RE.match(name.strip("`()")))


def readable_name(name: str) -> bool:
    """Whether an entity's name can lead a title or a report: not an example's made-up
    identifier or a bare code, a placeholder, an address, or two letters in mixed case."""
    stripped = name.strip()
    if is_code_like(stripped) or _PLACEHOLDER_RE.search(stripped):
        return False
    return len(stripped) >= 3 or stripped.isupper()


def structural_headings(pages: Iterable[tuple[str, Sequence[str]]], max_docs: int = MAX_HEADING_DOCS) -> frozenset[str]:
    """Keys (:func:`heading_key`) of the headings more than ``max_docs`` documents use:
    ``pages`` holds (document id, headings) pairs, one per chunk or section."""
    docs: dict[str, set[str]] = defaultdict(set)
    for doc, headings in pages:
        for h in headings:
            k = heading_key(h)
            if k:
                docs[k].add(doc)
    return frozenset(k for k, d in docs.items() if len(d) > max_docs)


def page_title(heading: str) -> str:
    """A heading as a reader is pointed to it: without its number, chapter prefix, list
    dash or pilcrow ("8. Configuration Reference" -> "Configuration Reference", "-
    Mandatory configuration file edits" -> "Mandatory configuration file edits", "4 - Building on a supported system" ->
    "Building on a supported system": a list item set as a heading keeps no bullet; "DANE
    TLS authentication." -> "DANE TLS authentication")."""
    text = _NUMBERING_RE.sub("", heading.strip().rstrip("¶").strip()).strip()
    # a number and then a dash ("4 - Building on a supported system")
    if text[:1] in "-–—•*":
        text = _NUMBERING_RE.sub("", text).strip()
    # a heading set as a sentence ("DANE TLS authentication.") is a title without its stop
    if re.search(r"[a-z)]\.$", text) and not re.search(r"\b(?:etc|vs|e\.g|i\.e)\.$", text):
        text = text[:-1]
    return text or heading.strip()


# the separators a title bar puts between a page's name and its site's
# ("mod_cache - Apache HTTP Server Version 2.4", "Sessions | Django documentation")
_TITLE_BAR = re.compile(r"\s+[-|–—:]\s+")
# the share of a manual's page titles with a separator that must end in the same site
# name for it to be taken for the title bar's, and the fewest pages that makes a site
_TITLE_BAR_SHARE = 0.8
_TITLE_BAR_PAGES = 3


def shared_title_suffix(page_titles: Iterable[str]) -> str:
    """The tail (separator included) that at least :data:`_TITLE_BAR_SHARE` of the
    distinct ``page_titles`` with a title-bar separator end in after it: a site's name and
    version an HTML manual's title bar adds to every page (" - Apache HTTP Server
    Version 2.4"), which the fourth rating marked down in titles; "" when there is none."""
    titles = {t.strip().rstrip("¶").strip() for t in page_titles if t.strip()}
    if len(titles) < _TITLE_BAR_PAGES:
        return ""
    tails: Counter[str] = Counter()
    for t in titles:
        found = list(_TITLE_BAR.finditer(t))
        if found and found[-1].start() > 0:
            tails[t[found[-1].start():]] += 1
    if not tails:
        return ""
    tail, n = tails.most_common(1)[0]
    # of the titles with a separator (a page whose first heading is its own, without a
    # title bar, has none: 95 of Apache httpd's 244), and a fifth of them all
    return tail if n >= max(_TITLE_BAR_PAGES, _TITLE_BAR_SHARE * sum(tails.values()), 0.2 * len(titles)) else ""


def is_generic_heading(heading: str, structural: frozenset[str] = frozenset()) -> bool:
    """Whether ``heading`` names a part of a page rather than a topic: one of many
    pages' headings (``structural``) or made of generic words only ("Examples",
    "Return value", "See also")."""
    key = heading_key(heading)
    if not key or key in structural:
        return True
    words = page_title(heading).lower().rstrip(":.").split()
    return all(w in GENERIC_HEADING_WORDS or w in GENERIC_WORDS or w in ENTITY_STOPWORDS for w in words)


def central_members(kg: KnowledgeGraph, community: Community) -> list[str]:
    """The members of ``community``, most central first: by the weight of their
    relations inside it, then by their degree in the whole graph, then by id."""
    members = set(community.members)
    inside: Counter[str] = Counter({m: 0.0 for m in community.members})
    for m in community.members:
        for rel in kg.adjacency.get(m, []):
            other = rel.target if rel.source == m else rel.source
            if other in members and other != m:
                inside[m] += rel.weight
    return sorted(community.members, key=lambda m: (-inside[m], -kg.degree(m), m))


Section = tuple[str, ...]  # a heading path, page title first, each heading as page_title gives it


@dataclass(frozen=True, slots=True)
class Title:
    """A community's title and where it comes from: ``source`` is ``"section"`` (its
    home), ``"definition"`` (the section introducing its central entity), ``"page"``
    (the page holding the most of its mentions, with its central entity's name after
    it unless that is a common noun) or ``"entity"`` (the central entity's name, for a
    graph without headings); ``share`` the share of its members' mentions under the
    section (0 for an entity's name; each member's mentions weigh 1 in all)."""

    text: str
    source: str
    share: float = 0.0
    entity: str | None = None  # the central entity's id
    # sections that may tell it apart from a community with the same title: those below
    # the home that hold a third too, then the section introducing its central entity
    deeper: tuple[Section, ...] = ()
    section: Section | None = None  # the section the title is (None for an entity's name)
    # the member whose name tells the title apart ("Command line options: -bv"), if any:
    # its report says what that member is first
    named: str | None = None
    # the community of the same level that keeps the title this one is told apart from by
    # that member's name (graphrag.namesakes merges the two where they are siblings)
    apart_from: int | None = None


class SectionIndex:
    """The sections of the graph's chunks: which sections each chunk is under, what they
    are called and which are index pages."""

    def __init__(
        self, kg: KnowledgeGraph, headings: Mapping[str, Sequence[str]], leads: Mapping[str, str] | None = None
    ) -> None:
        """``headings``: chunk id -> heading path, in reading order; ``leads``: chunk id ->
        the lead sentence of a chunk that opens its section (see :func:`section_leads`)."""
        self.paths: dict[str, Section] = {}
        # where each section starts in reading order, and its lead sentence (with its chunk)
        self.order: dict[Section, int] = {}
        self.leads: dict[Section, tuple[str, str]] = {}
        self._openings: dict[Section, tuple[str, str]] | None = None  # made on first use
        suffix = shared_title_suffix(path[0] for path in headings.values() if path)
        for chunk, path in headings.items():
            cleaned = tuple(page_title(h) for h in path if h.strip())
            if suffix and cleaned and cleaned[0].endswith(suffix) and len(cleaned[0]) > len(suffix):
                # the title bar ("mod_cache - Apache HTTP Server Version 2.4") repeats the
                # site's name on every page: the page's own heading below it is its title
                # ("Apache Module mod_cache"); with none, the bar without the site's name
                cleaned = cleaned[1:] if len(cleaned) > 1 else (cleaned[0][: -len(suffix)].strip(),)
            if cleaned:
                self.paths[chunk] = cleaned
                for depth in range(1, len(cleaned) + 1):
                    self.order.setdefault(cleaned[:depth], len(self.order))
                if leads and chunk in leads:
                    self.leads.setdefault(cleaned, (leads[chunk], chunk))
        # a lead many pages share is boilerplate ("Parameter names are case-insensitive."):
        # it says what kind of section it opens, not what this one is about
        pages_of: dict[str, set[str]] = defaultdict(set)
        for section, (sentence, _) in self.leads.items():
            pages_of[_norm(sentence)].add(section[0])
        self.leads = {s: lead for s, lead in self.leads.items() if len(pages_of[_norm(lead[0])]) <= MAX_HEADING_DOCS}
        self.structural = structural_headings((path[0], path[1:]) for path in self.paths.values())
        # headings below a page that another page has too ("Main options" on ffmpeg's,
        # ffprobe's and ffplay's pages): alone they do not say whose they are
        self.recurring = structural_headings(((path[0], path[1:]) for path in self.paths.values()), max_docs=1)
        entities: dict[Section, set[str]] = defaultdict(set)
        for chunk, path in self.paths.items():
            ids = kg.chunk_entities.get(chunk, ())
            for depth in range(1, len(path) + 1):
                entities[path[:depth]].update(ids)
        mentioned = sum(1 for e in kg.entities.values() if e.mentions)
        need = max(1.0, INDEX_SHARE * mentioned)
        # a graph of a few pages has no index: one page may name most of its entities
        self.index_like = frozenset(
            s for s, ids in entities.items()
            if mentioned >= MIN_ENTITIES_FOR_INDEX
            and (len(ids) >= need or (len(s) == 1 and len(ids) >= MIN_ENTITIES_FOR_INDEX and _INDEX_TITLE.search(s[0])))
        )

    def opening(self, section: Section) -> tuple[str, str] | None:
        """(sentence, chunk id): the lead sentence of ``section``, or when its own text
        has none (a page whose text starts under "NAME" or "Overview"), of the first
        section below it in reading order whose headings past it are all generic."""
        if self._openings is None:
            # one pass over the leads in reading order: each lead opens the sections above
            # it that are reached through generic headings only, unless one came first
            self._openings = {}
            for s in sorted(self.leads, key=lambda s: self.order.get(s, 0)):
                for depth in range(len(s), 0, -1):
                    if depth < len(s) and not is_generic_heading(s[depth], self.structural):
                        break
                    if depth == len(s) or s[:depth] not in self.leads:
                        self._openings.setdefault(s[:depth], self.leads[s])
        return self.leads.get(section) or self._openings.get(section)

    def sections(self, chunk: str) -> list[Section]:
        """The sections ``chunk`` is under, the page first."""
        path = self.paths.get(chunk, ())
        return [path[:d] for d in range(1, len(path) + 1)]

    def title(self, section: Section, *, in_index: bool = False) -> str | None:
        """A section's title: its heading, after the nearest heading above it that is
        not generic when it is generic itself or another page has it too; None for an index page (unless
        ``in_index``: a reference page naming much of the manual, for members named
        nowhere else) or a heading no title can be made of."""
        if not in_index and any(section[:d] in self.index_like for d in range(1, len(section) + 1)):
            return None
        own = section[-1].rstrip(":").strip()
        if not own or len(own.split()) > MAX_TITLE_WORDS:
            return None
        # an identifier alone below its page ("retryfailures", "mail_owner", "--outfile")
        # says what it is only with the page it is on: "omelasticsearch: retryfailures"
        # (a capitalised word is a topic: "Checkpointing")
        alone = len(own.split()) > 1 or len(section) == 1 or bool(_WORD_RE.match(own))
        # a heading other pages have too says whose it is with the heading above it
        # ("ffprobe Documentation: Main options")
        shared = len(section) > 1 and heading_key(own) in self.recurring
        if alone and not shared and not is_generic_heading(own, self.structural):
            return own
        for above in reversed(section[:-1]):
            if not is_generic_heading(above, self.structural) and len(above.split()) <= MAX_TITLE_WORDS:
                return f"{above}: {own}"
        return None if is_generic_heading(own, self.structural) else own

    def held(
        self, kg: KnowledgeGraph, members: Iterable[str], *, in_index: bool = False
    ) -> tuple[Counter[Section], float]:
        """The weight of ``members``' mentions each section holds, and their total: each
        member's mentions outside index pages (or anywhere, ``in_index``: for members
        named only there) weigh 1 in all."""
        counts: Counter[Section] = Counter()
        total = 0.0
        for m in members:
            # a mention in an index says nothing of where an entity is discussed
            chunks = [mention.chunk_id for mention in kg.entities[m].mentions
                      if in_index or not self.in_index(mention.chunk_id)]
            for chunk in chunks:
                total += 1 / len(chunks)
                for section in self.sections(chunk):
                    counts[section] += 1 / len(chunks)
        return counts, total

    def in_index(self, chunk: str) -> bool:
        """Whether ``chunk`` is in an index, a glossary or a table of contents."""
        return any(section in self.index_like for section in self.sections(chunk))

    def share(self, kg: KnowledgeGraph, members: Iterable[str], section: Section) -> float:
        """The share of ``members``' mentions under ``section`` (weighed as in :meth:`homes`)."""
        counts, total = self.held(kg, members)
        return counts[section] / total if total else 0.0

    def homes(
        self, kg: KnowledgeGraph, members: Iterable[str], need_share: float = HOME_SHARE
    ) -> tuple[list[tuple[Section, float]], int]:
        """The sections that may be the home of ``members``, with the share of their
        mentions each holds (each member's mentions weigh 1 in all, so that a member
        named everywhere does not outweigh the others), and which of them is the home.

        From the page holding the most, the path goes down to the section below holding
        the most while that holds at least ``need_share`` of them; the home is the
        last titled section on it that holds :data:`DESCEND_SHARE` of what the section
        above it holds (``-1``: none). The titled sections past it tell a community
        apart from another with the same home."""
        counts, total = self.held(kg, members)
        need = need_share * total - 1e-9
        path: list[tuple[Section, float]] = []
        home = -1
        above: Section = ()
        held = total
        descending = True
        while True:
            below = [(n, s) for s, n in counts.items() if len(s) == len(above) + 1 and s[:-1] == above]
            if not below:
                break
            n, section = min(below, key=lambda ns: (-ns[0], ns[1]))
            if n < need:
                break
            descending = descending and (not above or n >= DESCEND_SHARE * held - 1e-9)
            above, held = section, n
            if self.title(section) is not None:
                path.append((section, n / total))
                if descending:
                    home = len(path) - 1
        return path, home


def community_titles(
    kg: KnowledgeGraph,
    headings: Mapping[str, Sequence[str]],
    index: SectionIndex | None = None,
    taglines: Mapping[str, str] | None = None,
) -> dict[int, Title]:
    """A :class:`Title` for every community of ``kg``, distinct within its level and
    from its ancestors' titles.

    ``headings``: chunk id -> heading path (page title first) of the graph's chunks;
    ``index``: their :class:`SectionIndex` when the caller has made it already;
    ``taglines``: page title -> the one-line summary a page titled by an identifier
    opens with (:func:`arborgraph.core.taglines.page_taglines`), said after that page's name
    where it is a title alone ("celery.utils.log — Logging utilities").
    """
    index = index or SectionIndex(kg, headings)
    titles: dict[int, Title] = {}
    for level in kg.levels:  # top down: a community's ancestors are named before it
        communities = sorted((c for c in kg.communities.values() if c.level == level), key=lambda c: c.id)
        first = {c.id: _title(kg, index, c, [titles[a] for a in _ancestors(kg, c)]) for c in communities}
        titles.update(_placed(index, _distinct(kg, index, communities, first, titles)))
    # after the titles are told apart: a page's tagline is its own, so two titles that
    # differ keep differing, and none that is the same page's becomes another's
    for cid, t in titles.items():
        if t.section and t.text == t.section[0] and (tagline := (taglines or {}).get(t.text)):
            titles[cid] = dataclasses.replace(t, text=with_tagline(t.text, tagline))
    return titles


def _placed(index: SectionIndex, level: Mapping[int, Title]) -> dict[int, Title]:
    """One level's titles with each that is one common word alone ("Constants",
    "Modifiers", "Table": a word of the dictionary, not a term of the manual such as
    "Checkpointing" or "Savepoints") said after the heading above its section, as an
    acronym below its page is ("SQL Language Expressions: Constants"), when that title
    is free."""
    out = dict(level)
    taken = {_norm(t.text) for t in level.values()}
    for cid, t in sorted(level.items()):
        if not (t.section and len(t.section) > 1 and _WORD_RE.match(t.text) and word_classes(t.text.lower())):
            continue
        placed = next((q for q in _qualified(index, t.section) if _norm(q) not in taken), None)
        if placed is not None:
            taken.add(_norm(placed))
            out[cid] = dataclasses.replace(t, text=placed)
    return out


def name_communities(kg: KnowledgeGraph, headings: Mapping[str, Sequence[str]]) -> dict[int, str]:
    """The title of every community of ``kg`` (see :func:`community_titles`)."""
    return {cid: t.text for cid, t in community_titles(kg, headings).items()}


def _ancestors(kg: KnowledgeGraph, community: Community) -> list[int]:
    out = []
    parent = community.parent
    while parent is not None and parent in kg.communities:
        out.append(parent)
        parent = kg.communities[parent].parent
    return out


def _title(kg: KnowledgeGraph, index: SectionIndex, community: Community, above: Sequence[Title]) -> Title:
    """A community's title before titles are made distinct: its home section's, or its
    central entity's (the most central member not leading an ancestor already)."""
    ranked = central_members(kg, community)
    central = _readable(kg, ranked) or ranked
    led = {t.entity for t in above}
    lead = next((m for m in central if m not in led), central[0])
    path, home = index.homes(kg, community.members)
    entity = kg.entities[lead]
    if home < 0 and is_common_noun(entity.name):
        # "Command line" names nothing a reader looks up: the section where most of the
        # community is mentioned does, if it holds a fair share of it
        path, home = index.homes(kg, community.members, MOST_SHARE)
    if home >= 0:
        section, share = path[home]
        deeper = tuple(s for s, _ in path[home + 1 :])
        defined = _defining_section(index, kg, entity)
        if defined is not None and defined != section:
            deeper += (defined,)
        return Title(index.title(section) or "", "section", round(share, 4), lead, deeper, section)
    defined = _defining_section(index, kg, entity)
    if defined is not None:
        share = index.share(kg, community.members, defined)
        return Title(index.title(defined) or "", "definition", round(share, 4), lead, (), defined)
    page = _most_held_page(kg, index, community.members)
    if page is not None:
        # spread over the manual: a bare name ("mail_owner", "Table") does not say where
        # it lives; the page holding the most of its mentions does, and its report quotes
        # that page only.
        section, share = page
        # a member's name after the page is right only where it heads a section of that
        # page ("omelasticsearch: retryfailures"): a keyword tacked on ("Command line
        # options: -odb", "File and database lookups: IP") names nothing the page shows
        headed = _headed_section(index, kg, entity, section)
        if headed is not None and (text := index.title(headed)):
            return Title(text, "page", round(share, 4), lead, (), headed)
        text = index.title(section) or index.title(section, in_index=True) or section[0]
        return Title(text, "page", round(share, 4), lead, (), section)
    return Title(capitalised(entity.name), "entity", 0.0, lead)


def _most_held_page(kg: KnowledgeGraph, index: SectionIndex, members: Iterable[str]) -> tuple[Section, float] | None:
    """(page, share of the mentions) of the titled page holding the most of ``members``'
    mentions, ties to reading order. Members named only on pages that name much of the
    manual (a reference of all parameters, taken for an index) are at home there: then
    the page with most of their mentions that is not generic ("Index") names them. None
    when no page does."""
    members = list(members)
    counts, total = index.held(kg, members)
    pages = [(n, index.order.get(s, 0), s) for s, n in counts.items() if len(s) == 1 and index.title(s)]
    if not total:
        everywhere: Counter[Section] = Counter(
            index.sections(mention.chunk_id)[0] for m in members for mention in kg.entities[m].mentions
            if index.sections(mention.chunk_id)
        )
        total = sum(everywhere.values())
        pages = [(n, index.order.get(s, 0), s) for s, n in everywhere.items()
                 if not is_generic_heading(s[0], index.structural) and len(s[0].split()) <= MAX_TITLE_WORDS]
        if not pages:
            # a reference page of generic name ("Configuration Reference"): its section
            # holding the most of them, where a term alone ("Dnstap messages") says
            # nothing of where it lives
            sections: Counter[Section] = Counter(
                s for m in members for mention in kg.entities[m].mentions for s in index.sections(mention.chunk_id)
                if len(s) > 1 and len(s[-1]) > 2 and index.title(s, in_index=True)
                and not is_generic_heading(s[-1], index.structural)
            )
            pages = [(n, -len(s), s) for s, n in sections.items()]
    if not pages or not total:
        return None
    n, _, section = min(pages, key=lambda t: (-t[0], t[1]))
    return section, n / total


_COMMON_NOUN_RE = re.compile(r"^[a-z]+(?:[ -][a-z]+)*(?: [A-Z][a-z]+)?$")


def is_common_noun(name: str) -> bool:
    """Whether ``name`` is plain lower-case words ("command line", "login shell"), or such
    words before one proper name ("cause Git"), or a generic heading taken for a term
    ("Variables", "Author"): a phrase of prose, not a name an identifier, an acronym or
    a title gives ("--staged", "IPv4", "Write-Ahead Log")."""
    return bool(_COMMON_NOUN_RE.match(name.strip())) or is_generic_heading(name)


def _headed_section(index: SectionIndex, kg: KnowledgeGraph, entity: Entity, within: Section) -> Section | None:
    """The section below ``within`` whose heading is ``entity``'s name (or names it and
    its kind only: "The VALUES clause"), the first in reading order; None when no
    heading there is the entity."""
    own = set(entity_key(entity.name).split())
    if not own:
        return None
    found = []
    for section in index.order:
        if len(section) <= len(within) or section[: len(within)] != within:
            continue
        words = set(heading_key(section[-1]).split())
        rest = {w for w in words - own if w not in ENTITY_STOPWORDS and w not in HEAD_NOUN_TYPES}
        if own <= words and not rest:
            found.append(section)
    return min(found, key=lambda s: index.order[s]) if found else None


def _readable(kg: KnowledgeGraph, ids: Sequence[str]) -> list[str]:
    return [m for m in ids if readable_name(kg.entities[m].name)]


def _defining_section(index: SectionIndex, kg: KnowledgeGraph, entity: Entity) -> Section | None:
    """The section that introduces ``entity``: the section of its defining sentence when
    the heading says no more than the entity's name and kind ("The VALUES clause" for
    VALUES, "PRAGMA application_id" for application_id), else of the sections whose
    heading names it, the one holding most of its mentions, at least
    :data:`NAMED_SHARE` of them ("The Virtual Table Mechanism Of SQLite" for virtual
    table). Never a generic heading."""
    own = set(entity_key(entity.name).split())
    if not own:
        return None
    if entity.description_chunk:
        for section in reversed(index.sections(entity.description_chunk)):
            words = set(heading_key(section[-1]).split())
            rest = {w for w in words - own if w not in ENTITY_STOPWORDS and w not in HEAD_NOUN_TYPES}
            if own <= words and not rest and not is_generic_heading(section[-1], index.structural):
                return section if index.title(section) is not None else None
    counts, total = index.held(kg, [entity.id])
    named = [
        (n, len(section), section) for section, n in counts.items()
        if n >= NAMED_SHARE * total - 1e-9 and own <= set(heading_key(section[-1]).split())
        and not is_generic_heading(section[-1], index.structural) and index.title(section) is not None
    ]
    return min(named, key=lambda t: (-t[0], -t[1], t[2]))[2] if named else None


def _distinct(
    kg: KnowledgeGraph, index: SectionIndex, communities: Sequence[Community], first: Mapping[int, Title],
    above: Mapping[int, Title],
) -> dict[int, Title]:
    """One level's titles made distinct: of communities sharing a title, the one with the
    best claim keeps it and the others are told apart; so is a community titled as one
    of its ancestors (``above``: the shallower levels' titles). A community told apart
    takes, when one is free, a section below its home that holds a third of its mentions
    too, the section introducing its central entity, or another of its own sections
    (:func:`_own_sections`); else, when its home is a heading of the same name elsewhere,
    that heading after the one above it; else a member's name after the title."""
    groups: dict[str, list[Community]] = defaultdict(list)
    for c in communities:
        groups[_norm(first[c.id].text)].append(c)
    out = {c.id: first[c.id] for c in communities}
    taken = set(groups)

    def claim(c: Community) -> tuple[bool, float, int]:
        # a member of that name, then the most mentions under the section
        owns = any(_norm(kg.entities[m].name) == _norm(first[c.id].text) for m in c.members)
        return (not owns, -first[c.id].share * len(c.members), c.id)

    for key in sorted(groups):
        group = sorted(groups[key], key=claim)
        for i, c in enumerate(group):
            ancestral = {_norm(above[a].text) for a in _ancestors(kg, c) if a in above}
            if i == 0 and key not in ancestral:
                continue
            base = first[c.id]
            free = [
                s for s in (*base.deeper, *_own_sections(kg, index, c, base.section))
                if (t := _section_title(index, s)) and _norm(t) not in taken | ancestral
            ]
            # the heading above tells apart only sections of one name in different places,
            # not one section ("How WAL Works: Checkpointing" is "Checkpointing" again)
            elsewhere = all(first[o.id].section != base.section for o in group if o.id != c.id) and all(
                above[a].section != base.section for a in _ancestors(kg, c) if a in above
            )
            qualified = [
                t for t in _qualified(index, base.section) if elsewhere and _norm(t) not in taken | ancestral
            ]
            if free:
                text, section = _section_title(index, free[0]) or "", free[0]
            elif qualified:
                # its home's heading after the heading above it: "Notes for BIND 9.18.34:
                # Bug Fixes", one of many "Bug Fixes" told apart by where it is
                text, section = qualified[0], base.section
            elif not _names_a_term(kg, c) and (
                weak := [s for s in _own_sections(kg, index, c, base.section, 0.0)
                         if (t := _section_title(index, s)) and _norm(t) not in taken | ancestral]
            ):
                # its members are phrases of prose ("take advantage", "recipient address"):
                # any other section where it is mentioned is a place a reader finds, a
                # phrase after the title is not
                text, section = _section_title(index, weak[0]) or "", weak[0]
            else:
                # a page's title with a member's name after it is told apart after the page
                named = None
                if base.source == "page" and base.section:
                    named = _section_title(index, base.section) or base.section[0]
                text, member = _told_apart(kg, c, named or base.text, taken | ancestral)
                taken.add(_norm(text))
                keeper = group[0].id if group[0].id != c.id else None
                out[c.id] = Title(text, base.source, base.share, base.entity, (), base.section, member, keeper)
                continue
            taken.add(_norm(text))
            out[c.id] = Title(text, base.source, base.share, base.entity, (), section)
    return out


# the share of a community's mentions a section beside its home must hold to tell it
# apart from another community with that home (its own second home)
APART_SHARE = 0.15


def _own_sections(
    kg: KnowledgeGraph, index: SectionIndex, community: Community, home: Section | None, need: float = APART_SHARE
) -> list[Section]:
    """The sections that tell ``community`` apart from another with the same ``home``, in
    order of preference: the sections below its home, the next heading level down first,
    each level's holding the most of its mentions first; then its other sections holding
    ``need`` of its mentions (its own second home), the most first. Never a member's
    word: "Bug Fixes: take advantage" names nothing of the manual."""
    counts, total = index.held(kg, community.members)
    if not total:
        counts, total = index.held(kg, community.members, in_index=True)  # named in a reference page only
    if not total:
        return []
    home = home or ()
    # a heading every page has ("Exim Internet Mailer", "Options") tells nothing apart
    counts = Counter({s: n for s, n in counts.items() if not is_generic_heading(s[-1], index.structural)})
    below = sorted(
        (s for s, n in counts.items() if n > 0 and len(s) > len(home) and s[: len(home)] == home),
        key=lambda s: (len(s), -counts[s], index.order.get(s, 0)),
    )
    beside = sorted(
        (s for s, n in counts.items()
         if n > 0 and n >= need * total - 1e-9 and s[: len(home)] != home and s != home[: len(s)]),
        key=lambda s: (-counts[s], -len(s), index.order.get(s, 0)),
    )
    return below + beside


def _section_title(index: SectionIndex, section: Section) -> str | None:
    """A section's title, or for a section of a reference page taken for an index (its
    members named nowhere else) its title there."""
    return index.title(section) or (index.title(section, in_index=True) if len(section) > 1 else None)


def _qualified(index: SectionIndex, section: Section | None) -> list[str]:
    """``section``'s title after each heading above it that is not generic, the nearest
    first ("Notes for BIND 9.18.34: Bug Fixes", then "Release Notes: Bug Fixes")."""
    if not section or len(section) < 2 or (own := _section_title(index, section)) is None:
        return []
    return [
        f"{above}: {own}" for above in reversed(section[:-1])
        if not is_generic_heading(above, index.structural) and len(above.split()) <= MAX_TITLE_WORDS
        and not own.startswith(f"{above}:") and _norm(above) != _norm(own)
    ]


def _names_a_term(kg: KnowledgeGraph, community: Community) -> bool:
    """Whether a member of ``community`` is a name a title may end on: an identifier, an
    acronym or a proper name, not a phrase of prose ("activation date")."""
    return any(not is_common_noun(kg.entities[m].name) for m in _readable(kg, community.members))


def _told_apart(kg: KnowledgeGraph, community: Community, title: str, taken: set[str]) -> tuple[str, str | None]:
    """``title`` with the name of the most central member it does not already name, or
    two of them when one is not enough; a name before a common noun ("Postfix TLS
    Support: smtpd_starttls_timeout", not "...: read operations"). With the id of the
    member named (the first, of two)."""
    central = central_members(kg, community)
    ranked = _readable(kg, central) or central
    # a name ("-bv") before a phrase of prose ("recipient address"), and of each kind
    # one the manual defines (its introducing sentence is known) first, most central first
    ranked = sorted(ranked, key=lambda m: (is_common_noun(kg.entities[m].name), not kg.entities[m].description_chunk))
    ids = {kg.entities[m].name: m for m in reversed(ranked)}  # a name's most central member
    names = [kg.entities[m].name for m in ranked]
    names = [n for n in dict.fromkeys(names) if _norm(n) not in _norm(title)] or list(dict.fromkeys(names))
    for n in names:
        text = f"{title}: {n}"
        if _norm(text) not in taken:
            return text, ids[n]
    for a, b in zip(names, names[1:]):
        text = f"{title}: {a} and {b}"
        if _norm(text) not in taken:
            return text, ids[a]
    return f"{title}: {' and '.join(names)}", ids[names[0]] if names else None


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


_WORD_RE = re.compile(r"^[A-Z][a-z]+$")
_LOWER_WORD_RE = re.compile(r"^[a-z]+(?:-[a-z]+)*$")


def capitalised(name: str) -> str:
    """``name`` with a capital first letter, unless it starts with an identifier
    ("checkpoint" -> "Checkpoint", "compile-time option" -> "Compile-time option",
    "sqlite3_open()" unchanged)."""
    first = name.split()[0] if name.split() else ""
    return name[0].upper() + name[1:] if _LOWER_WORD_RE.match(first) else name
