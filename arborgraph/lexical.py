"""BM25 over any list of texts (chunks, summaries, reports, entities), via bm25s.

Technical manuals are full of identifiers (``journal_mode``, ``sqlite3_open_v2``), so
the analyser keeps each identifier whole *and* adds its parts: "journal mode" in a
question then matches ``journal_mode`` in the manual, and the exact identifier still
scores highest.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import bm25s
import numpy as np
from bm25s.stopwords import STOPWORDS_EN

_TOKEN_RE = re.compile(r"[A-Za-z0-9_]+")
_PART_RE = re.compile(r"[A-Za-z]+|[0-9]+")
_STOPWORDS = frozenset(STOPWORDS_EN)
# bm25s cannot index a corpus with no term at all (a collection or scope of documents
# made only of stop words, punctuation or headings); such a corpus is indexed under this one
# term, which ``analyse`` can never produce, so every row scores zero for every query.
_NO_TERMS = "\x00"


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    try:
        import Stemmer  # PyStemmer: Snowball in C, ships its data, no download
    except ImportError:  # pragma: no cover - dependency declared in pyproject
        return None
    return Stemmer.Stemmer("english")


def analyse(text: str) -> list[str]:
    """Lower-cased, stop-word-free, stemmed tokens; identifiers also split into parts."""
    tokens: list[str] = []
    for raw in _TOKEN_RE.findall(text.lower()):
        parts = _PART_RE.findall(raw)
        if len(parts) > 1:
            tokens.append(raw)
            tokens.extend(p for p in parts if len(p) > 1 and p not in _STOPWORDS)
        elif len(raw) > 1 and raw not in _STOPWORDS:
            tokens.append(raw)
    stemmer = _stemmer()
    return stemmer.stemWords(tokens) if stemmer is not None else tokens


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
        retriever = bm25s.BM25.load(str(directory))
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
