"""Names for communities: the phrases that set a community's chunks apart from the
chunks of the other communities of its level (class-based TF-IDF, as BERTopic names
topics).

Each chunk goes to the community of the level whose members it mentions most; the
candidate phrases of a chunk are its section headings and the names of the entities
it mentions. A phrase scores by how often the community's chunks hold it against how
often all the level's chunks do, times a prior for how well it reads as a name (a
section heading or a multi-word term better than an acronym; never page structure
such as "Options" that many pages repeat, nor the identifiers of code examples). The
name is the best phrase, joined with the next one when it is a single word.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from arborgraph.core.text import ENTITY_STOPWORDS
from graphrag.chunks import doc_of
from graphrag.extract.terms import heading_key
from graphrag.graph import KnowledgeGraph
from graphrag.model import Community, Entity
from graphrag.text import entity_key
from graphrag.vocab import GENERIC_WORDS, STRONG_TYPES

MAX_NAME_WORDS = 6
# a heading used by more pages than this is page structure ("Overview", "OPTIONS")
MAX_HEADING_DOCS = 3

_NUMBERING_RE = re.compile(
    r"^\s*(?:(?:chapter|section|part|appendix)\s+[\dIVXivx]+[.:]?\s*(?:[-—–:]\s*)?|\d+(?:\.\d+)*\.?\s+|[A-Za-z]\.\s+|[ivxIVX]+\.\s+)",
    re.IGNORECASE,
)
# identifiers made up for examples (t1, tbl1, pub3b) and standard feature codes (T332)
_CODE_LIKE_RE = re.compile(r"^(?:[A-Za-z]{1,4}[0-9]+[A-Za-z]?[0-9]*|[A-Z][0-9]{3,}(?:-[0-9]+)?)$")

# how well an entity's name reads as a community's name, by its type
_TYPE_PRIOR = {"term": 1.0, "acronym": 0.6, "keyword": 0.5, "component": 0.8, "identifier": 0.4, "constant": 0.4}
_STRONG_PRIOR = 0.7
# a section heading is its authors' name for what the community's chunks discuss (a
# page's title names more than the community, and keeps the plain prior)
_HEADING_PRIOR = 1.15


def is_code_like(name: str) -> bool:
    """Whether ``name`` looks made up for a code example or is a bare code (tbl1, T332)."""
    return bool(_CODE_LIKE_RE.match(name.strip("`()")))


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


@dataclass(frozen=True, slots=True)
class _Phrase:
    text: str
    prior: float


def _heading_phrase(heading: str, structural: frozenset[str], *, page: bool = False) -> tuple[str, _Phrase] | None:
    text = _NUMBERING_RE.sub("", heading.strip().rstrip("¶").strip()).strip().rstrip(":.").strip()
    words = text.split()
    if not words or len(words) > MAX_NAME_WORDS or text.endswith("?"):
        return None
    key = heading_key(text)
    if not key or key in structural or _plain_filler(key):
        return None
    return key, _Phrase(text, 1.0 if page else _HEADING_PRIOR)


def page_title(heading: str) -> str:
    """A page's title as a reader is pointed to it: without its number, chapter prefix
    or pilcrow ("8. Configuration Reference" -> "Configuration Reference")."""
    text = _NUMBERING_RE.sub("", heading.strip().rstrip("¶").strip()).strip()
    return text or heading.strip()


def _plain_filler(key: str) -> bool:
    """A phrase of only generic words ("details", "the following")."""
    return all(w in GENERIC_WORDS or w in ENTITY_STOPWORDS for w in key.split())


def _entity_phrase(ent: Entity, structural: frozenset[str]) -> tuple[str, _Phrase] | None:
    key = entity_key(ent.name)
    if not key or key in structural or is_code_like(ent.name) or len(ent.name.split()) > MAX_NAME_WORDS:
        return None
    if _plain_filler(key):
        return None
    if ent.type in STRONG_TYPES:
        prior = _STRONG_PRIOR
    else:
        prior = _TYPE_PRIOR.get(ent.type, 0.5)
        if ent.type == "term" and " " not in key:
            prior = 0.6  # one word ("optimization") names a field, not this part of it
    return key, _Phrase(ent.name, prior)


def _assign_chunks(kg: KnowledgeGraph, communities: Sequence[Community]) -> dict[int, list[str]]:
    """Chunk ids per community: each chunk goes to the community whose members it
    mentions most (ties to the lower id); a community that wins no chunk keeps all the
    chunks its members are mentioned in."""
    votes: dict[str, Counter[int]] = defaultdict(Counter)
    for com in communities:
        for m in com.members:
            for mention in kg.entities[m].mentions:
                votes[mention.chunk_id][com.id] += 1
    out: dict[int, list[str]] = defaultdict(list)
    for chunk in sorted(votes):
        v = votes[chunk]
        out[min(v, key=lambda c: (-v[c], c))].append(chunk)
    for com in communities:
        if not out.get(com.id):
            out[com.id] = sorted({mention.chunk_id for m in com.members for mention in kg.entities[m].mentions})
    return out


def name_communities(kg: KnowledgeGraph, headings: Mapping[str, Sequence[str]]) -> dict[int, str]:
    """A name of 2-6 words for every community of ``kg``, distinct within its level.

    ``headings``: chunk id -> heading path (page title first) of the graph's chunks.
    """
    structural = structural_headings((doc_of(c), h[1:] or h) for c, h in headings.items())
    names: dict[int, str] = {}
    for level in kg.levels:
        communities = sorted(
            (c for c in kg.communities.values() if c.level == level), key=lambda c: (-len(c.members), c.id)
        )
        names.update(_name_level(kg, communities, headings, structural, names))
    return names


def _name_level(
    kg: KnowledgeGraph,
    communities: Sequence[Community],
    headings: Mapping[str, Sequence[str]],
    structural: frozenset[str],
    above: Mapping[int, str],
) -> dict[int, str]:
    """Names of one level's ``communities``; ``above``: the names of shallower levels
    (a community is not named as its parent is)."""
    chunks_of = _assign_chunks(kg, communities)
    phrases: dict[str, _Phrase] = {}
    tf: dict[int, Counter[str]] = {}
    for com in communities:
        counts: Counter[str] = Counter()
        # a name tells what the members are about: of the entities, only members name it
        members = set(com.members)
        for chunk in chunks_of[com.id]:
            found: set[str] = set()
            for depth, h in enumerate(headings.get(chunk, ())):
                if (got := _heading_phrase(h, structural, page=depth == 0)) is not None:
                    found.add(got[0])
                    phrases.setdefault(*got)  # a heading's wording wins over an entity's
            for eid in kg.chunk_entities.get(chunk, ()):
                if eid not in members:
                    continue
                if (got := _entity_phrase(kg.entities[eid], structural)) is not None:
                    found.add(got[0])
                    phrases.setdefault(*got)
            counts.update(found)
        tf[com.id] = counts
    total: Counter[str] = Counter()
    for counts in tf.values():
        total.update(counts)
    avg = sum(sum(c.values()) for c in tf.values()) / max(1, len(tf))
    used: set[str] = set()
    names: dict[int, str] = {}
    for com in communities:
        n_chunks = max(1, len(chunks_of[com.id]))
        need = min(2, n_chunks)
        scored = sorted(
            (
                (count / n_chunks * math.log(1 + avg / total[key]) * phrases[key].prior, key)
                for key, count in tf[com.id].items()
                if count >= need
            ),
            key=lambda sk: (-sk[0], sk[1]),
        )
        ranked = [(score, phrases[key].text) for score, key in scored]
        taken = used | {above[p].lower() for p in _ancestors(kg, com)}
        name = _compose(ranked, taken) or _fallback(kg, com)
        used.add(name.lower())
        names[com.id] = name
    return names


def _ancestors(kg: KnowledgeGraph, com: Community) -> list[int]:
    out = []
    parent = com.parent
    while parent is not None:
        out.append(parent)
        parent = kg.communities[parent].parent
    return out


def _compose(ranked: list[tuple[float, str]], used: set[str]) -> str | None:
    """The best phrase as a name; a single word gives way to a phrase of several words
    scoring at least half as well, or else is joined with the next phrase that shares
    no word with it. Names in ``used`` (lowercase) are skipped."""
    texts = [t for _, t in ranked]
    for i, (score, first) in enumerate(ranked[:8]):
        if len(first.split()) == 1:
            longer = [t for s, t in ranked[i + 1 : i + 4] if len(t.split()) > 1 and s >= 0.5 * score]
            if longer and _capitalised(longer[0]).lower() not in used:
                return _capitalised(longer[0])
        name = first
        if len(first.split()) == 1:
            seen = set(entity_key(first).split())
            for second in texts[i + 1 : i + 8]:
                words = set(entity_key(second).split())
                if not words & seen and len(first.split()) + len(second.split()) + 1 <= MAX_NAME_WORDS:
                    name = f"{first} and {second}"
                    break
        name = _capitalised(name)
        if name.lower() not in used:
            return name
    return None


def _fallback(kg: KnowledgeGraph, com: Community) -> str:
    """The two most connected members' names, for a community no phrase sets apart."""
    members = sorted(com.members, key=lambda m: (-kg.degree(m), m))
    readable = [kg.entities[m].name for m in members if not is_code_like(kg.entities[m].name)] or [
        kg.entities[m].name for m in members
    ]
    return _capitalised(" and ".join(readable[:2]))


_LOWER_WORD_RE = re.compile(r"^[a-z]+(?:-[a-z]+)*$")


def _capitalised(name: str) -> str:
    """The name with a capital first letter, unless it starts with an identifier."""
    first = name.split()[0] if name.split() else ""
    return name[0].upper() + name[1:] if _LOWER_WORD_RE.match(first) else name
