"""BM25 over any list of texts (chunks, summaries, reports, entities), via bm25s.

Technical manuals are full of identifiers (``journal_mode``, ``sqlite3_open_v2``), so
the analyser (:func:`arborgraph.core.text.analyse`) keeps each identifier whole *and*
adds its parts: "journal mode" in a question then matches ``journal_mode`` in the
manual, and the exact identifier still scores highest.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import bm25s
import numpy as np

from arborgraph.core.text import analyse

__all__ = ["LexicalIndex", "analyse"]

# bm25s cannot index a corpus with no term at all (a collection or scope of documents
# made only of stop words, punctuation or headings); such a corpus is indexed under this one
# term, which ``analyse`` can never produce, so every row scores zero for every query.
_NO_TERMS = "\x00"


class LexicalIndex:
    """A BM25 index whose rows line up with a table's rows."""

    def __init__(self, retriever: bm25s.BM25, n_rows: int) -> None:
        self._retriever = retriever
        self.n_rows = n_rows

    @classmethod
    def build(cls, texts: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> "LexicalIndex":
        retriever = bm25s.BM25(k1=k1, b=b)
        corpus = [analyse(t) for t in texts]
        if not any(corpus):  # (no rows at all: one placeholder row, never scored)
            corpus = [[_NO_TERMS] for _ in corpus or [""]]
        # create_empty_token keeps row alignment for texts with no usable token
        retriever.index(corpus, show_progress=False)
        return cls(retriever, len(texts))

    def save(self, directory: Path) -> None:
        self._retriever.save(str(directory), show_progress=False)
        (Path(directory) / "rows.txt").write_text(str(self.n_rows), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path) -> "LexicalIndex":
        # mapped, not read: a large index's postings load as questions touch them
        retriever = bm25s.BM25.load(str(directory), mmap=True)
        n_rows = int((Path(directory) / "rows.txt").read_text(encoding="utf-8"))
        return cls(retriever, n_rows)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every row for ``query`` (zeros where nothing matches)."""
        tokens = analyse(query)
        if self.n_rows == 0:
            return np.zeros(0, dtype=np.float32)
        if not tokens:
            return np.zeros(self.n_rows, dtype=np.float32)
        return np.asarray(self._retriever.get_scores(tokens), dtype=np.float32)

    def token_scores(self, token: str) -> np.ndarray:
        """BM25 score of every row for one already analysed token (see :func:`analyse`)."""
        if self.n_rows == 0:
            return np.zeros(0, dtype=np.float32)
        return np.asarray(self._retriever.get_scores([token]), dtype=np.float32)

    def postings(self, token: str) -> np.ndarray:
        """The rows holding one analysed token (ascending): its posting list, read from
        the index without scoring any other row."""
        token_id = self._retriever.vocab_dict.get(token) if self.n_rows else None
        if token_id is None:
            return np.zeros(0, dtype=np.int64)
        index = self._retriever.scores
        start, end = int(index["indptr"][token_id]), int(index["indptr"][token_id + 1])
        rows = np.asarray(index["indices"][start:end], dtype=np.int64)
        return np.sort(rows[np.asarray(index["data"][start:end]) > 0])
