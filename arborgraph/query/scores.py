"""A question scored against the collection once: BM25, its terms' postings, cosines.

Every step of a query reads the same :class:`~arborgraph.core.retrieval.QueryScores`
(lookup's two rankings, the tree walk's leaf scores, graph and global search's chunk
scores, the ranking stage's features), so no step scores the collection again.
"""

from __future__ import annotations

import numpy as np

from arborgraph.core.retrieval import QueryScores
from arborgraph.core.text import analyse
from arborgraph.index.opened import Index

UNKNOWN_COSINE = -2.0  # below any cosine: a row the approximate search did not score


def score_question(
    index: Index, question: str, query_vector: np.ndarray | None, *,
    mask: np.ndarray | None = None, depth: int = 100, expansion: int = 256,
) -> QueryScores:
    """The question's scores over ``index`` (see :class:`QueryScores`).

    With an approximate dense index, the cosines are those of its best hits, scored
    exactly: at least ``depth`` rows the ``mask`` lets through when there are that many
    (the search goes deeper while the caller may read too few of its hits), with
    ``expansion`` HNSW candidates explored."""
    bm25 = index.lexical.scores(question)
    terms = tuple((term, index.lexical.postings(term)) for term in sorted(set(analyse(question))))
    dense = index.dense
    if dense is None or query_vector is None:
        return QueryScores(bm25=bm25, terms=terms)
    if not dense.approximate:
        return QueryScores(bm25=bm25, terms=terms, dense=dense.scores(query_vector))
    n = dense.n_rows
    k = min(n, 2 * depth)
    while True:
        rows = dense.nearest(query_vector, k, expansion)
        visible = int(mask[rows].sum()) if mask is not None else len(rows)
        if visible >= depth or k >= n:
            break
        k = min(n, 4 * k)
    cosines = np.full(n, UNKNOWN_COSINE, dtype=np.float32)
    known = np.zeros(n, dtype=bool)
    cosines[rows] = dense.scores_of(rows, query_vector)
    known[rows] = True
    return QueryScores(bm25=bm25, terms=terms, dense=cosines, dense_known=known)


def cosines_of(scores: QueryScores, index: Index, query_vector: np.ndarray | None, rows: np.ndarray) -> None:
    """Make sure ``scores.dense`` holds the exact cosine of every row in ``rows`` (the
    approximate search scored only its hits): computed for the missing ones alone."""
    if scores.dense is None or scores.dense_known is None or index.dense is None or query_vector is None:
        return
    rows = np.asarray(rows, dtype=np.int64)
    missing = rows[~scores.dense_known[rows]]
    if missing.size:
        scores.dense[missing] = index.dense.scores_of(missing, query_vector)
        scores.dense_known[missing] = True
