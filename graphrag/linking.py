"""Entity linking: which entities of the graph does a question name?

Exact and alias matches come from the name index (n-grams of the question under
:func:`graphrag.text.entity_key`), fuzzy matches from a small edit-distance search over
names of similar length, and embedding matches from precomputed entity vectors.
Specific entities (mentioned in few chunks) score higher than ubiquitous ones.
"""

from __future__ import annotations

import difflib
import math
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from arborgraph.core.protocols import Embedder
from arborgraph.core.text import ENTITY_STOPWORDS
from graphrag.graph import KnowledgeGraph
from graphrag.model import Entity
from graphrag.text import QUESTION_WORDS, entity_key, word_spans

MAX_NGRAM = 5


@dataclass(frozen=True, slots=True)
class LinkedEntity:
    """An entity the question names: how it matched and how much it counts."""

    entity_id: str
    name: str
    score: float
    how: str  # "exact" | "alias" | "fuzzy" | "embedding"
    matched: str  # the question text (or "<embedding>")


def specificity(kg: KnowledgeGraph, entity_id: str) -> float:
    """1 for an entity in one chunk, near 0 for one in every chunk (normalised idf)."""
    n = max(2, len(kg.chunk_entities))
    df = len(kg.entities[entity_id].mentions)
    return max(0.05, math.log(n / (1 + df)) / math.log(n))


def link_entities(
    kg: KnowledgeGraph,
    question: str,
    *,
    max_entities: int = 6,
    fuzzy_cutoff: float = 0.88,
    embedder: Embedder | None = None,
    entity_vectors: tuple[Sequence[str], np.ndarray] | Mapping[str, np.ndarray] | None = None,
    min_similarity: float = 0.55,
) -> list[LinkedEntity]:
    """Entities named by ``question``, best first (at most ``max_entities``)."""
    found = dict(_name_matches(kg, question, fuzzy_cutoff))

    if embedder is not None and entity_vectors is not None:
        ids, mat = _as_matrix(entity_vectors)
        if len(ids):
            q = np.asarray(embedder.encode([question]), dtype=np.float32)[0]
            sims = mat @ q
            for row in np.argsort(-sims, kind="stable")[: max_entities * 2]:
                sim = float(sims[row])
                eid = ids[row]
                if sim < min_similarity or eid not in kg.entities:
                    continue
                _keep(found, LinkedEntity(eid, kg.entities[eid].name, sim * specificity(kg, eid), "embedding", "<embedding>"))

    return sorted(found.values(), key=lambda le: (-le.score, le.entity_id))[:max_entities]


# A question is linked by graph search, the global route and the ranking stage in turn:
# the last question's name matches are kept per graph (as the graph's search indexes
# are: dropped with it), so it is worked out once. Only the last: a question asked
# again later is linked again, as a new one would be.
_last_matches: "weakref.WeakKeyDictionary[KnowledgeGraph, tuple[str, float, int, dict[str, LinkedEntity]]]" = (
    weakref.WeakKeyDictionary()
)


def _name_matches(kg: KnowledgeGraph, question: str, fuzzy_cutoff: float) -> dict[str, LinkedEntity]:
    """Exact, alias and fuzzy matches of the question's words (entity id -> match)."""
    size = len(kg.entities)
    last = _last_matches.get(kg)
    if last is not None and last[0] == question and last[1] == fuzzy_cutoff and last[2] == size:
        return last[3]
    tokens = [(t, s, e) for t, s, e in word_spans(question)]
    found: dict[str, LinkedEntity] = {}
    covered = [False] * len(tokens)

    # exact and alias matches, longest n-gram first
    for n in range(min(MAX_NGRAM, len(tokens)), 0, -1):
        for i in range(len(tokens) - n + 1):
            if any(covered[i : i + n]):
                continue
            words = tokens[i : i + n]
            surface = question[words[0][1] : words[-1][2]]
            low = [w.lower() for w, _, _ in words]
            if all(w in QUESTION_WORDS for w in low) or (n == 1 and (len(low[0]) < 2 or low[0].isdigit())):
                continue
            key = entity_key(surface)
            if n > 2 and any(w in _ARTICLES for w in low[1:-1]) and not kg.name_index.get(key):
                # "a table without a rowid" names WITHOUT ROWID: prose puts articles
                # inside a name that never has them
                key = entity_key(" ".join(w for w, _, _ in words if w.lower() not in _ARTICLES))
            if (_edge_stopword(words[0][0]) or _edge_stopword(words[-1][0])) and " " not in key:
                continue  # "an immediate" is "immediate": try it as one word
            ids = kg.name_index.get(key, [])
            if " " not in key:
                ids = [eid for eid in ids if _single_word_ok(surface, kg.entities[eid])]
            if not ids:
                continue
            for eid in ids:
                ent = kg.entities[eid]
                how = "exact" if entity_key(ent.name) == entity_key(surface) else "alias"
                quality = 1.0 if how == "exact" else 0.9
                _keep(found, LinkedEntity(eid, ent.name, quality * specificity(kg, eid), how, surface))
            for j in range(i, i + n):
                covered[j] = True

    # fuzzy matches for uncovered content words (typos, spelling variants)
    if fuzzy_cutoff < 1.0:
        for (w, s, e), cov in zip(tokens, covered, strict=True):
            if cov or len(w) < 5 or not _identifier_like(w):
                continue  # typos are looked for in identifiers only
            key = entity_key(w)
            for cand in _close_keys(kg, key, fuzzy_cutoff):
                for eid in kg.name_index[cand]:
                    _keep(found, LinkedEntity(eid, kg.entities[eid].name, 0.7 * specificity(kg, eid), "fuzzy", w))
    _last_matches[kg] = (question, fuzzy_cutoff, size, found)
    return found


_ARTICLES = frozenset({"a", "an", "the"})


def _edge_stopword(word: str) -> bool:
    """A stopword cannot start or end a name, unless written in capitals: "LIKE",
    "IN" and "ALL" in a question about a query language are its keywords."""
    return word.lower() in ENTITY_STOPWORDS and not (len(word) > 1 and word.isupper())


def _identifier_like(word: str) -> bool:
    core = word.rstrip("()")
    return any(c in core for c in "_.0123456789") or (core[1:] != core[1:].lower() and core != core.upper())


def _bare(name: str) -> str:
    n = name.strip().removesuffix("()")
    return n[:-1] if n.endswith("s") and len(n) > 3 else n


def _single_word_ok(surface: str, ent: Entity) -> bool:
    """A one-word match must be unambiguous. A plain lowercase word names only a term
    ("checkpointing"), not the function values() or the keyword IMMEDIATE; other
    words must be written as the entity is ("VACUUM", "WAL") or look like code."""
    if _identifier_like(surface):
        return True
    if surface.islower():
        return ent.type == "term"
    bare = _bare(surface)
    return any(_bare(n) == bare for n in [ent.name, *ent.aliases])


def _keep(found: dict[str, LinkedEntity], le: LinkedEntity) -> None:
    old = found.get(le.entity_id)
    if old is None or le.score > old.score:
        found[le.entity_id] = le


def _close_keys(kg: KnowledgeGraph, key: str, cutoff: float) -> list[str]:
    by_len = kg.word_keys
    pool = [k for L in range(len(key) - 2, len(key) + 3) for k in by_len.get((key[:1], L), [])]
    return difflib.get_close_matches(key, pool, n=2, cutoff=cutoff)


def _as_matrix(
    vectors: tuple[Sequence[str], np.ndarray] | Mapping[str, np.ndarray],
) -> tuple[list[str], np.ndarray]:
    if isinstance(vectors, tuple):
        ids, mat = vectors
        return list(ids), np.asarray(mat, dtype=np.float32)
    ids = sorted(vectors)
    if not ids:
        return [], np.zeros((0, 0), dtype=np.float32)
    return ids, np.stack([np.asarray(vectors[i], dtype=np.float32) for i in ids])
