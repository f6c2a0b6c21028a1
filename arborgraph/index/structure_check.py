"""How readable an index's structures are: measured from its tables, with no model.

The tree's names, the graph's relations and the communities' titles are what a person
reads when exploring an index. These checks put numbers on the ways they go wrong:

- tree names: length in words, page titles strung together, names repeated among
  siblings, and grounding (the share of a name's words found in the node's own chunks);
- relations: the share that is bare co-occurrence, and the types that carry the rest;
- entities: page-structure headings (OPTIONS, SYNOPSIS... — headings found on many
  pages) among the best-connected entities;
- communities: title length, titles that are comma lists of their members' names,
  titles repeated within a level or that are the manual's own headings, communities
  with no title, and summaries that count entities instead of saying what they are.

Every function here is pure over Arrow tables; :func:`structure_report` reads them from
an opened generation for the scopes a caller may read.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from statistics import median

import pyarrow as pa
from pydantic import BaseModel, Field

from arborgraph.core.taglines import SEPARATOR
from arborgraph.core.text import STOPWORDS
from arborgraph.index import schema as S
from arborgraph.index.layout import scoped
from arborgraph.index.store import Generation
from graphrag import schema as G
from raptor import schema as R

# a heading found under this share of pages (or more) is page structure, not a topic
RECURRING_HEADING_SHARE = 0.10
TOP_ENTITIES = 50
CO_OCCURRENCE = "co_occurs"
TITLE_SEPARATOR = " · "
EXAMPLES = 8

_WORD = re.compile(r"[A-Za-z0-9][\w'+#.-]*[\w+#]|[A-Za-z0-9]")


def words(text: str) -> list[str]:
    """The words of a name, as a reader counts them (punctuation and separators dropped)."""
    return _WORD.findall(text)


def _content_words(text: str) -> list[str]:
    return [w.lower() for w in words(text) if w.lower() not in STOPWORDS and len(w) > 1]


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


class TreeShape(BaseModel):
    """Names of the tree's summary nodes (level 1 and up)."""

    summary_nodes: int
    name_words_median: float | None
    name_words_max: int | None
    strung_titles: float = Field(description="share of names joining two or more page titles")
    sibling_repeats: float = Field(description="share of names equal to a sibling's")
    grounding: float | None = Field(description="mean share of a name's content words found in its chunks")
    names_longer_than_6_words: float
    manual_titles: float | None = Field(
        None, description="share of level 1-3 names that are one of the manual's own titles or headings "
        "(a generic one after the title it belongs to: 'pg_resetwal: Options')"
    )
    title_coverage: float | None = Field(
        None, description="mean share of a level 1-3 node's chunks under the heading its name is (0 for a name that is none)"
    )
    outline_nodes: float | None = Field(None, description="share of summary nodes that are the manual's own sections, pages or folders")
    examples: list[str] = Field(description="the names of the top levels, highest first")


class GraphShape(BaseModel):
    """Relations and the best-connected entities."""

    entities: int
    relations: int
    co_occurrence: float | None = Field(description="share of relations that are bare co-occurrence")
    relation_types: dict[str, int] = Field(description="the ten most common types and their counts")
    recurring_headings: int = Field(description="headings found on at least 10 % of pages")
    boilerplate_in_top: list[str] = Field(description="recurring headings among the 50 best-connected entities")
    top_entities: list[str]


class CommunityShape(BaseModel):
    """Titles and summaries of the community reports."""

    communities: int
    title_words_median: float | None
    comma_lists: float = Field(description="share of titles that list two or more members' names")
    repeated_titles: float = Field(description="share of titles equal to another community's of the same level")
    untitled: float | None = Field(None, description="share of communities with no report, so no title")
    manual_titles: float | None = Field(
        None, description="share of titles that are one of the manual's headings or page titles (without section "
        "numbers, any case; 'Page: Heading' when both are)"
    )
    template_summaries: float | None = Field(
        None, description="share of summaries with a template sentence: a count of entities or members "
        "('Its 4 entities are', '73 related entities'), or only members listed with their pages ('X and Y, in Doc A "
        "and Doc B.')"
    )
    examples: list[str]


class ScopeStructure(BaseModel):
    scope: str
    tree: TreeShape | None
    graph: GraphShape | None
    communities: CommunityShape | None


class StructureReport(BaseModel):
    index_dir: str
    generation: str
    scopes: list[ScopeStructure]


def _share(hits: int, total: int) -> float:
    return round(hits / total, 4) if total else 0.0


def is_strung(name: str, page_titles: Iterable[str]) -> bool:
    """Whether ``name`` strings page titles together: the old ``A · B`` form, or two or
    more distinct page titles (of two words or more) inside it."""
    if TITLE_SEPARATOR in name:
        return True
    low = _norm(name)
    found = {t for t in page_titles if t in low}
    return len(found) >= 2


def heading_coverage(name: str, chunk_ids: Sequence[str], chunk_paths: dict[str, Sequence[str]]) -> float | None:
    """The share of ``chunk_ids`` under the heading ``name`` is, or None when ``name`` is
    no heading over them. A heading counts without its section number; ``"Owner:
    Heading"`` is the heading under the title or heading ``Owner``."""
    from raptor.text import clean_label

    paths = [[_norm(clean_label(h)) for h in chunk_paths.get(c, ())] for c in chunk_ids]
    for wanted in _names_of(name):
        owner, _, own = wanted.rpartition(": ")
        hits = sum(wanted in path or (bool(owner) and own in path and owner in path) for path in paths)
        if hits:
            return hits / len(paths)
    return None


def _names_of(name: str) -> list[str]:
    """``name`` as headings are compared, and without the one-line summary said after a
    module page's name ("celery.utils.log — Logging utilities": the page's title and its
    own first sentence, :mod:`arborgraph.core.taglines`)."""
    title, tagged, _ = name.partition(SEPARATOR)
    return [_norm(name), _norm(title)] if tagged else [_norm(name)]


def tree_shape(
    nodes: pa.Table, chunk_text: dict[str, str], page_titles: Sequence[str],
    chunk_paths: dict[str, Sequence[str]] | None = None,
) -> TreeShape:
    """The names of ``nodes`` (a ``raptor_nodes`` table); ``chunk_text`` maps a chunk id to
    its text (without its heading path: a name made of headings is not grounded by them),
    ``chunk_paths`` to its heading path (page title first): with them, how many names
    are the manual's own titles and how much of their nodes those cover."""
    rows = nodes.select([R.NODE_ID, R.LEVEL, R.TITLE, R.PARENTS, R.CHUNK_IDS, R.ORIGIN]).to_pylist()
    summaries = [r for r in rows if r[R.LEVEL] >= 1]
    titles = sorted({_norm(t) for t in page_titles if len(words(t)) >= 2})
    lengths = [len(words(r[R.TITLE] or "")) for r in summaries]

    siblings: dict[str, list[str]] = defaultdict(list)
    for r in summaries:
        for parent in r[R.PARENTS] or ["<top>"]:
            siblings[parent].append(_norm(r[R.TITLE] or ""))
    repeated = set()
    for r in summaries:
        for parent in r[R.PARENTS] or ["<top>"]:
            if siblings[parent].count(_norm(r[R.TITLE] or "")) > 1:
                repeated.add(r[R.NODE_ID])

    grounded: list[float] = []
    vocab_cache: dict[str, set[str]] = {}
    for r in summaries:
        content = _content_words(r[R.TITLE] or "")
        if not content:
            continue
        seen: set[str] = set()
        for cid in r[R.CHUNK_IDS] or []:
            if cid not in vocab_cache:
                vocab_cache[cid] = {w.lower() for w in words(chunk_text.get(cid, ""))}
            seen |= vocab_cache[cid]
        grounded.append(sum(w in seen for w in content) / len(content))

    manual_titles = title_coverage = None
    if chunk_paths is not None:
        low = [r for r in summaries if r[R.LEVEL] <= 3]
        covers = [heading_coverage(r[R.TITLE] or "", r[R.CHUNK_IDS] or [], chunk_paths) for r in low]
        manual_titles = _share(sum(c is not None for c in covers), len(low)) if low else None
        title_coverage = round(sum(c or 0.0 for c in covers) / len(covers), 4) if covers else None
    top = sorted(summaries, key=lambda r: (-r[R.LEVEL], r[R.NODE_ID]))[:EXAMPLES]
    return TreeShape(
        manual_titles=manual_titles,
        title_coverage=title_coverage,
        outline_nodes=_share(sum(r[R.ORIGIN] == "outline" for r in summaries), len(summaries)) if summaries else None,
        summary_nodes=len(summaries),
        name_words_median=median(lengths) if lengths else None,
        name_words_max=max(lengths) if lengths else None,
        strung_titles=_share(sum(is_strung(r[R.TITLE] or "", titles) for r in summaries), len(summaries)),
        sibling_repeats=_share(len(repeated), len(summaries)),
        grounding=round(sum(grounded) / len(grounded), 4) if grounded else None,
        names_longer_than_6_words=_share(sum(n > 6 for n in lengths), len(summaries)),
        examples=[f"L{r[R.LEVEL]} {r[R.TITLE]}" for r in top],
    )


def recurring_headings(heading_paths: Iterable[tuple[str, Sequence[str]]], share: float = RECURRING_HEADING_SHARE) -> set[str]:
    """Headings (lower-cased) found under at least ``share`` of the pages: ``heading_paths``
    gives (document id, heading path) per chunk; a path's first entry is the page's own
    title and does not count."""
    per_doc: dict[str, set[str]] = defaultdict(set)
    for doc_id, path in heading_paths:
        per_doc[doc_id].update(_norm(h) for h in list(path)[1:] if h.strip())
    if not per_doc:
        return set()
    counts = Counter(h for hs in per_doc.values() for h in hs)
    need = max(2, share * len(per_doc))
    return {h for h, n in counts.items() if n >= need}


def graph_shape(entities: pa.Table, relations: pa.Table, headings: set[str]) -> GraphShape:
    names = entities.column(G.NAME).to_pylist()
    degrees = entities.column(G.DEGREE).to_pylist()
    best = [n for _, n in sorted(zip(degrees, names), key=lambda p: (-p[0], p[1]))[:TOP_ENTITIES]]
    types = Counter(relations.column(G.TYPE).to_pylist())
    return GraphShape(
        entities=entities.num_rows,
        relations=relations.num_rows,
        co_occurrence=_share(types.get(CO_OCCURRENCE, 0), relations.num_rows) if relations.num_rows else None,
        relation_types=dict(types.most_common(10)),
        recurring_headings=len(headings),
        boilerplate_in_top=[n for n in best if _norm(n) in headings],
        top_entities=best[:20],
    )


def is_comma_list(title: str, member_names: set[str]) -> bool:
    """Whether ``title`` is two or more of its members' names joined by commas."""
    parts = [_norm(p) for p in re.split(r",|\band\b|&", title) if p.strip()]
    return "," in title and sum(p in member_names for p in parts) >= 2


# a count of what a community holds: "Its 4 entities", "73 related entities (10 keyword, ...)"
_TEMPLATE = re.compile(
    r"\b\d[\d,]*\s+(?:[a-z-]+\s+){0,2}(?:entities|entity|members|member)\b|\bits\s+\d+\s+entities\b", re.IGNORECASE
)


# a list of names and where they are, with no verb: "inet_interfaces and proxy_interfaces,
# in Postfix Configuration Parameters and Postfix Standard Configuration Examples."
# (the pages are titles, capitalised; a clause before "in" is prose: "If it exists, in ...")
_STUB = re.compile(
    r"^(?!(?i:if|when|while|although|because|as|for|once|unless|since|after|before)\b)[^\n]{1,200}?"
    r", in [A-Z0-9`\"'(][^\n]{0,300}\.$"
)


def is_template_sentence(text: str) -> bool:
    """Whether a summary holds a template sentence: a count of entities or members
    ("Its 4 entities are ...", "The most connected of its 12 entities", "73 related
    entities (10 keyword, ...)"), or is one keyword list of members and the pages naming
    them ("X and Y, in Doc A and Doc B."), which a reader rates as no summary at all."""
    return bool(_TEMPLATE.search(text) or _STUB.match(text.strip()))


def manual_headings(heading_paths: Iterable[Sequence[str]], page_titles: Iterable[str] = ()) -> set[str]:
    """The manual's headings and page titles as :func:`is_manual_title` compares them:
    without section numbers, lower-cased."""
    from raptor.text import clean_label

    out = {_norm(clean_label(t)) for t in page_titles if t and t.strip()}
    for path in heading_paths:
        out.update(_norm(clean_label(h)) for h in path if h and h.strip())
    return out


def is_manual_title(title: str, headings: set[str]) -> bool:
    """Whether ``title`` is one of ``headings`` (see :func:`manual_headings`), or
    ``"Page: Heading"`` with both parts among them."""
    from raptor.text import clean_label

    for wanted in _names_of(clean_label(title)):
        if wanted in headings:
            return True
        owner, sep, own = wanted.partition(": ")
        if sep and owner in headings and own in headings:
            return True
    return False


def community_shape(
    communities: pa.Table, reports: pa.Table, entities: pa.Table, headings: set[str] | None = None
) -> CommunityShape:
    """The titles and summaries of ``reports``; ``headings`` (see :func:`manual_headings`)
    gives how many titles are the manual's own."""
    name_of = dict(zip(entities.column(G.ID).to_pylist(), entities.column(G.NAME).to_pylist()))
    members = {
        c: {_norm(name_of.get(m, "")) for m in ms}
        for c, ms in zip(communities.column(G.ID).to_pylist(), communities.column(G.MEMBERS).to_pylist())
    }
    columns = [G.COMMUNITY_ID, G.LEVEL, G.TITLE, G.RANK] + ([G.SUMMARY] if G.SUMMARY in reports.column_names else [])
    rows = reports.select(columns).to_pylist()
    per_level = Counter((r[G.LEVEL], _norm(r[G.TITLE] or "")) for r in rows)
    lengths = [len(words(r[G.TITLE] or "")) for r in rows]
    ranked = sorted(rows, key=lambda r: (-(r[G.RANK] or 0), r[G.COMMUNITY_ID]))[:EXAMPLES]
    titled = {r[G.COMMUNITY_ID] for r in rows if (r[G.TITLE] or "").strip()}
    return CommunityShape(
        communities=len(rows),
        title_words_median=median(lengths) if lengths else None,
        comma_lists=_share(sum(is_comma_list(r[G.TITLE] or "", members.get(r[G.COMMUNITY_ID], set())) for r in rows), len(rows)),
        repeated_titles=_share(sum(per_level[(r[G.LEVEL], _norm(r[G.TITLE] or ""))] > 1 for r in rows), len(rows)),
        untitled=_share(sum(c not in titled for c in members), len(members)) if members else None,
        manual_titles=_share(sum(is_manual_title(r[G.TITLE] or "", headings) for r in rows), len(rows))
        if headings is not None and rows else None,
        template_summaries=_share(sum(is_template_sentence(r[G.SUMMARY] or "") for r in rows), len(rows))
        if G.SUMMARY in columns and rows else None,
        examples=[r[G.TITLE] for r in ranked],
    )


def structure_report(index_dir: str, generation: Generation, scopes: Sequence[tuple[str, str]]) -> StructureReport:
    """The checks over ``scopes`` ((tag, scope key) pairs: only those the caller may read)
    of an opened ``generation``."""
    chunks = generation.table(S.CHUNKS, columns=[S.CHUNK_ID, S.CHUNK_DOC_ID, S.CHUNK_TEXT, S.CHUNK_HEADING_PATH])
    docs = generation.table(S.DOCUMENTS, columns=[S.DOC_ID, S.DOC_TITLE])
    ids = chunks.column(S.CHUNK_ID).to_pylist()
    doc_ids = chunks.column(S.CHUNK_DOC_ID).to_pylist()
    paths = chunks.column(S.CHUNK_HEADING_PATH).to_pylist()
    texts = chunks.column(S.CHUNK_TEXT).to_pylist()
    chunk_text = dict(zip(ids, texts))
    title_of = dict(zip(docs.column(S.DOC_ID).to_pylist(), docs.column(S.DOC_TITLE).to_pylist()))
    doc_of = dict(zip(ids, doc_ids))
    out = []
    for tag, scope in scopes:
        has_tree = generation.has_table(scoped(R.NODES_TABLE, tag))
        has_graph = generation.has_table(scoped(G.ENTITIES, tag))
        nodes = generation.table(scoped(R.NODES_TABLE, tag)) if has_tree else None
        entities = generation.table(scoped(G.ENTITIES, tag)) if has_graph else None
        # the scope's chunks: those its tree or its graph was built from
        owner = nodes.column(R.CHUNK_IDS) if nodes is not None else entities.column(G.CHUNK_IDS) if entities is not None else None
        in_scope = {c for cs in owner.to_pylist() for c in cs or []} if owner is not None else set()
        tree = graph = comm = None
        if nodes is not None:
            titles = sorted({title_of[doc_of[c]] for c in in_scope if c in doc_of and title_of.get(doc_of[c])})
            tree = tree_shape(nodes, chunk_text, titles, {c: p or () for c, p in zip(ids, paths) if c in in_scope})
        if entities is not None:
            relations = generation.table(scoped(G.RELATIONSHIPS, tag))
            pairs = [(d, p or []) for c, d, p in zip(ids, doc_ids, paths) if c in in_scope]
            graph = graph_shape(entities, relations, recurring_headings(pairs))
            if generation.has_table(scoped(G.COMMUNITY_REPORTS, tag)):
                headings = manual_headings((p for _, p in pairs), (title_of.get(d, "") for d, _ in pairs))
                comm = community_shape(
                    generation.table(scoped(G.COMMUNITIES, tag)), generation.table(scoped(G.COMMUNITY_REPORTS, tag)),
                    entities, headings,
                )
        out.append(ScopeStructure(scope=scope, tree=tree, graph=graph, communities=comm))
    return StructureReport(index_dir=index_dir, generation=generation.name, scopes=out)
