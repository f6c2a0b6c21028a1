"""Access to chunk text at query time, and the scoring helpers both searches share.

The graph stores chunk ids, not text; a search gets text through a ``ChunkSource``:
a mapping or a callable from chunk id to a :class:`ChunkRef`, an ``ingest`` Chunk, a
``(text, doc_id, heading_path)`` tuple or None. None means the caller may not see the
chunk: it is left out, and so is any derived text (relation sentences, report
findings) quoted from it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Union

import numpy as np

from arborgraph.core.text import analyse
from arborgraph.core.results import Context


@dataclass(frozen=True, slots=True)
class ChunkRef:
    """What a search needs of a chunk."""

    text: str
    doc_id: str
    heading_path: list[str] = field(default_factory=list)
    start: int | None = None
    end: int | None = None


ChunkSource = Union[Mapping[str, Any], Callable[[str], Any]]
# chunk ids -> (n, dim) unit vectors, rows in the order asked; None row = unknown
ChunkVectors = Union[Callable[[Sequence[str]], np.ndarray], Mapping[str, np.ndarray]]


def doc_of(chunk_id: str) -> str:
    """The document id inside a chunk id (``f"{doc_id}#{ordinal}"``)."""
    return chunk_id.rsplit("#", 1)[0]


# chunk id -> its heading path whoever asks (None: no such chunk); see ChunkFetcher
ChunkHeadings = Callable[[str], "Sequence[str] | None"]


class ChunkFetcher:
    """Resolves chunk ids through a :data:`ChunkSource`, once each.

    ``headings``, when given, reads any chunk's heading path, visible or not: what the
    graph's structure says about where an entity is at home can then be worked out once
    for every caller, each caller keeping only the chunks it may see."""

    def __init__(self, source: ChunkSource, headings: ChunkHeadings | None = None) -> None:
        self._source = source
        self._cache: dict[str, ChunkRef | None] = {}
        self.headings = headings

    def get(self, chunk_id: str) -> ChunkRef | None:
        if chunk_id not in self._cache:
            raw = self._source(chunk_id) if callable(self._source) else self._source.get(chunk_id)
            self._cache[chunk_id] = _as_ref(chunk_id, raw)
        return self._cache[chunk_id]

    def visible(self, chunk_id: str) -> bool:
        return self.get(chunk_id) is not None

    def visible_mask(self, chunk_ids: Sequence[str]) -> np.ndarray:
        """One bool per id of ``chunk_ids``: whether the source lets it through; at once
        when the source can say so for many ids (a ``readable`` method taking the ids and
        returning one bool each), without making each chunk's ref."""
        readable = getattr(self._source, "readable", None)
        if readable is None:
            return np.array([self.visible(c) for c in chunk_ids], dtype=bool)
        return np.asarray(readable(chunk_ids), dtype=bool).reshape(len(chunk_ids))

    def visible_ids(self, chunk_ids: Sequence[str]) -> list[str]:
        """The ids of ``chunk_ids`` the source lets through, in their order (see
        :meth:`visible_mask`)."""
        return [c for c, ok in zip(chunk_ids, self.visible_mask(chunk_ids).tolist()) if ok]


def _as_ref(chunk_id: str, raw: Any) -> ChunkRef | None:
    if raw is None:
        return None
    if isinstance(raw, ChunkRef):
        return raw
    if isinstance(raw, str):
        return ChunkRef(raw, doc_of(chunk_id))
    if isinstance(raw, tuple):
        text, doc_id, *rest = raw
        heading = list(rest[0]) if rest else []
        start = rest[1] if len(rest) > 1 else None
        end = rest[2] if len(rest) > 2 else None
        return ChunkRef(text, doc_id, heading, start, end)
    return ChunkRef(
        raw.text,
        getattr(raw, "doc_id", doc_of(chunk_id)),
        list(getattr(raw, "heading_path", []) or []),
        getattr(raw, "start", None),
        getattr(raw, "end", None),
    )


@lru_cache(maxsize=8192)
def _terms(text: str) -> Counter[str]:
    # chunks recur across questions; analysing (stemming) is the cost of BM25 here
    return Counter(analyse(text))


# not arborgraph.core.lexical's BM25 (bm25s's, the same idf): that one counts a term the question repeats each time, which
# pushes second-hop sections under min_bridge_score (test_graph_search_puts_a_second_hop_section_in_place_of_...)
def bm25(query: str, texts: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    """BM25 of ``query`` against a small candidate set (idf over the set itself)."""
    q = list(dict.fromkeys(analyse(query)))
    docs = [_terms(t) for t in texts]
    n = len(docs)
    if not q or not n:
        return np.zeros(n, dtype=np.float32)
    lengths = [sum(d.values()) for d in docs]
    avg = sum(lengths) / n or 1.0
    df = {t: sum(1 for d in docs if t in d) for t in q}
    out = np.zeros(n, dtype=np.float32)
    for i, d in enumerate(docs):
        s = 0.0
        for t in q:
            tf = d.get(t, 0)
            if tf:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                s += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[i] / avg))
        out[i] = s
    return out


def dense_scores(
    question: str | np.ndarray, ids: Sequence[str], vectors: ChunkVectors | None, embedder: Any | None
) -> np.ndarray | None:
    """Cosine of the question (text, or its vector) with each id's vector; None
    without vectors, or for a text question without an embedder."""
    if vectors is None or not ids or (embedder is None and isinstance(question, str)):
        return None
    q = np.asarray(embedder.encode([question]), dtype=np.float32)[0] if isinstance(question, str) else question
    if callable(vectors):
        # a tuple is handed on as it is: the same tuple asked about again may be kept
        mat = np.asarray(vectors(ids if isinstance(ids, tuple) else list(ids)), dtype=np.float32)
        return mat @ q
    out = np.zeros(len(ids), dtype=np.float32)
    for i, cid in enumerate(ids):
        v = vectors.get(cid)
        if v is not None:
            out[i] = float(np.asarray(v, dtype=np.float32) @ q)
    return out


def normalise(x: np.ndarray | None, n: int) -> np.ndarray:
    """Scale to [0, 1] by the maximum (zeros stay zeros); None -> zeros."""
    if x is None:
        return np.zeros(n, dtype=np.float32)
    x = np.maximum(np.asarray(x, dtype=np.float32), 0.0)
    top = float(x.max()) if len(x) else 0.0
    return x / top if top > 0 else x


def rank_prior(candidates: Sequence[str] | Mapping[str, float] | None) -> dict[str, float]:
    """Scores for chunks a flat retriever ranked (1/(60+rank), as in RRF)."""
    if not candidates:
        return {}
    if isinstance(candidates, Mapping):
        ordered = sorted(candidates, key=lambda c: -candidates[c])
    else:
        ordered = list(candidates)
    return {cid: 1.0 / (60 + r) for r, cid in enumerate(ordered, start=1)}


def chunk_context(
    chunk_id: str,
    ref: ChunkRef,
    score: float,
    trace: list[str],
    *,
    level: int | None = None,
    extra: dict[str, Any] | None = None,
) -> Context:
    """A chunk as a retrieval result (kind "chunk", its own provenance)."""
    return Context(
        text=ref.text,
        source=ref.doc_id,
        heading_path=ref.heading_path,
        kind="chunk",
        score=round(score, 4),
        node_id=chunk_id,
        start=ref.start,
        end=ref.end,
        level=level,
        provenance=[chunk_id],
        trace=trace,
        extra=extra or {},
    )


def n_words(text: str) -> int:
    return len(text.split())
