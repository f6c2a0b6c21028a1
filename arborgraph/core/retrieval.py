"""The retriever contract: one query in, one :class:`Retrieval` out, on every route.

Every route (lookup, tree, graph, global) is a :class:`Retriever`. It is given a
:class:`RetrievalQuery` — the question, its vector, what the caller may read and the
flat hits every route starts from — and answers with a :class:`Retrieval`: its
contexts, best first, and its trace (the rankings it produced, why it is empty if so,
notes for the caller). Routing, fusion, composition and the budget are pure functions
over these values (:mod:`arborgraph.query.fusion`, :mod:`arborgraph.query.compose`); the ranking
stage reads the same query (:mod:`arborgraph.query.rerank`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from arborgraph.core.results import Context

# ``Context.extra`` key of a structure context that leads the answer however few
# structure contexts the settings let in (see :meth:`Retrieval.leading`).
OVERVIEW = "overview"


@dataclass(frozen=True)
class Retrieval:
    """What a route found for one query.

    ``contexts`` are best first. ``rankings`` name each ranking the route produced
    (retriever name -> ids, best first: what :attr:`QueryResult.retrieved` shows);
    ``why_empty`` says, when ``contexts`` is empty, why nothing was found; ``notes``
    are plain-words remarks for the caller (fallbacks, fusion).
    """

    route: str
    contexts: list[Context] = field(default_factory=list)
    rankings: dict[str, list[str]] = field(default_factory=dict)
    why_empty: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def chunks(self) -> list[Context]:
        """The contexts that are chunks of the index (not summaries, relations, reports)."""
        return [c for c in self.contexts if c.kind == "chunk"]

    @property
    def header(self) -> list[Context]:
        """The structure's own contexts (summaries, relations, reports), in order."""
        return [c for c in self.contexts if c.kind != "chunk"]

    def leading(self, n: int) -> list[Context]:
        """The structure contexts an answer starts with: those marked
        :data:`OVERVIEW` (digests of the whole manual, then its main themes), then
        ``n`` of the others."""
        marked = [c for c in self.header if c.extra.get(OVERVIEW)]
        # digests (summaries) before reports, whatever order the scopes' merge gave them
        marked.sort(key=lambda c: c.kind != "summary")
        return marked + [c for c in self.header if not c.extra.get(OVERVIEW)][:n]


@dataclass(frozen=True)
class Ranked:
    """The ranking stage's order of a query's candidates: every candidate's chunk id,
    best first (``order``), and the first of them as contexts (``contexts``: as many
    as the query can return; the rest are never turned into contexts)."""

    order: list[str]
    contexts: list[Context]


@dataclass(frozen=True, eq=False)  # arrays inside: compared by identity
class QueryScores:
    """One question's scores over the index's chunk rows, computed once per query and
    read by every step that needs them (lookup, the routes, the ranking stage).

    ``bm25`` holds every row's BM25 score (a pass over the postings of the question's
    terms), ``terms`` each distinct analysed question term with the rows holding it (its
    posting list). ``dense`` holds cosines with the question: every row's when the
    search is exact (``dense_known`` None), else only the rows marked in ``dense_known``
    (the approximate search's hits, and rows filled in later), the others ``-2``. None:
    no vectors or no query vector. Nothing here is masked: each reader applies the
    caller's mask.
    """

    bm25: np.ndarray
    terms: tuple[tuple[str, np.ndarray], ...]
    dense: np.ndarray | None = None
    dense_known: np.ndarray | None = None


@dataclass(frozen=True, eq=False)  # arrays inside: compared by identity
class RetrievalQuery:
    """One query as every route and the ranking stage see it.

    ``mask`` is the caller's visibility over the index's chunk rows (False: never
    shown, never counted), ``scopes`` the access scopes whose structures the caller
    may read. ``top_k`` contexts are returned in the end; a structured route hands
    ``pool`` candidates to the final assembly. ``hits`` is the flat lookup ranking
    (route ``lookup``), computed once per query: structures fuse with it, the router
    reads its spread, the ranking stage takes its candidates. ``scores`` are the
    question's BM25 and dense scores, from which ``hits`` were ranked.
    """

    question: str
    query_vector: np.ndarray | None
    mask: np.ndarray
    scopes: Sequence[Any]
    top_k: int
    pool: int
    hits: Retrieval
    scores: QueryScores


class Retriever(Protocol):
    """A route: ``retrieve`` answers one query with what the route itself found."""

    route: str

    def retrieve(self, query: RetrievalQuery) -> Retrieval: ...
