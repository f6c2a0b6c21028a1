"""BM25 over any list of texts (chunks, summaries, reports, entities), in bm25s's format.

Technical manuals are full of identifiers (``journal_mode``, ``sqlite3_open_v2``), so
the analyser (:func:`arborgraph.core.text.analyse`) keeps each identifier whole *and*
adds its parts: "journal mode" in a question then matches ``journal_mode`` in the
manual, and the exact identifier still scores highest.

The index is bm25s's (``method="lucene"``): each term's column of precomputed BM25
weights in CSC form (data, indices, indptr) and its vocabulary, saved by bm25s. It is
built and scored here with numpy alone, step for step as bm25s 0.3 builds and scores
it, so the arrays, the vocabulary and every score are bit-identical to bm25s's own
(``tests/unit/test_lexical_numpy.py`` checks them against bm25s): importing bm25s
imports numba and scipy.sparse (0.1 to 0.8 s, by the machine's load), which no
question needs. bm25s loads only to save an index.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from arborgraph.core.text import analyse

__all__ = ["LexicalIndex"]

# bm25s cannot index a corpus with no term at all (a collection or scope of documents
# made only of stop words, punctuation or headings); such a corpus is indexed under this one
# term, which ``analyse`` can never produce, so every row scores zero for every query.
_NO_TERMS = "\x00"

# the file names bm25s saves under (bm25s.BM25.save / load defaults)
_PARAMS, _VOCAB = "params.index.json", "vocab.index.json"
_DATA, _INDICES, _INDPTR = "data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy"
_NONOCCURRENCE = "nonoccurrence_array.index.npy"
# the methods whose scores add a non-occurrence term (bm25s.BM25.methods_requiring_nonoccurrence)
_NONOCCURRENCE_METHODS = ("bm25l", "bm25+")


@dataclass(frozen=True)
class _Postings:
    """A bm25s index as arrays: each term's column of precomputed BM25 weights (CSC)."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    num_docs: int
    vocab: dict[str, int]
    dtype: np.dtype
    int_dtype: np.dtype
    nonoccurrence: np.ndarray | None

    @classmethod
    def read(cls, directory: Path) -> "_Postings":
        """What ``bm25s.BM25.load(directory, mmap=True)`` reads, read without bm25s: the
        weights mapped, not read (a large index's postings load as questions touch them)."""
        params = json.loads((directory / _PARAMS).read_text(encoding="utf-8"))
        vocab = json.loads((directory / _VOCAB).read_text(encoding="utf-8"))

        def mapped(name: str) -> np.ndarray:
            return np.load(directory / name, allow_pickle=False, mmap_mode="r")

        nonoccurrence = None
        if params.get("method", "lucene") in _NONOCCURRENCE_METHODS:
            # read whole, as bm25s does (a FileNotFoundError when missing, as there)
            nonoccurrence = np.load(directory / _NONOCCURRENCE, allow_pickle=False)
        return cls(
            data=mapped(_DATA), indices=mapped(_INDICES), indptr=mapped(_INDPTR), num_docs=int(params["num_docs"]),
            vocab=vocab, dtype=np.dtype(params.get("dtype", "float32")),
            int_dtype=np.dtype(params.get("int_dtype", "int32")), nonoccurrence=nonoccurrence,
        )

    def scores(self, tokens: Sequence[str]) -> np.ndarray:
        """``bm25s.BM25.get_scores(tokens)``: the terms' weights summed per row, term by
        term in the question's order (a repeated term counts again), unknown terms left out."""
        ids = np.asarray([self.vocab[t] for t in tokens if t in self.vocab], dtype=self.int_dtype)
        if int(ids.max(initial=0)) >= len(self.indptr) - 1:
            raise ValueError(f"a term id ({int(ids.max())}) beyond the index's {len(self.indptr) - 1} terms")
        starts, ends = self.indptr[ids], self.indptr[ids + 1]
        scores = np.zeros(self.num_docs, dtype=self.dtype)
        for start, end in zip(starts, ends):
            np.add.at(scores, self.indices[start:end], self.data[start:end])
        if self.nonoccurrence is not None:
            scores += self.nonoccurrence[ids].sum()
        return scores


def _lucene_index(corpus: list[list[str]], k1: float, b: float) -> _Postings:
    """``bm25s.BM25(k1=k1, b=b).index(corpus)``: the same vocabulary (in the same order,
    in one process: set order depends on the strings' hashes) and the same arrays, from
    the same operations on the same types (so numpy rounds and promotes alike)."""
    dtype, int_dtype = "float32", "int32"
    unique_tokens: set[str] = set()
    for doc_tokens in corpus:
        unique_tokens.update(doc_tokens)
    vocab = {token: i for i, token in enumerate(unique_tokens)}
    corpus_ids = [[vocab[token] for token in tokens] for tokens in corpus]
    avg_doc_len = np.array([len(ids) for ids in corpus_ids]).mean()
    n_docs, n_vocab = len(corpus_ids), len(vocab)
    # documents holding each term; its idf (Lucene's), rounded to float32 as bm25s does
    doc_frequencies = dict.fromkeys(range(n_vocab), 0)
    for ids in corpus_ids:
        for token_id in set(ids):
            doc_frequencies[token_id] += 1
    idf_array = np.zeros(n_vocab, dtype=dtype)
    for token_id, df in doc_frequencies.items():
        if df != 0:
            idf_array[token_id] = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
    # each (document, term) pair's weight, document by document, terms in first-seen order
    size = sum(doc_frequencies.values())
    scores = np.empty(size, dtype=dtype)
    doc_indices = np.empty(size, dtype=int_dtype)
    voc_indices = np.empty(size, dtype=int_dtype)
    i = 0
    for doc_idx, token_ids in enumerate(corpus_ids):
        doc_len = len(token_ids)
        counts = Counter(token_ids)
        voc_ind_doc = np.array(list(counts.keys()), dtype=int_dtype)
        tf_array = np.array(list(counts.values()), dtype=dtype)
        tfc = tf_array / (k1 * ((1 - b) + b * doc_len / avg_doc_len) + tf_array)
        scores_doc = idf_array[voc_ind_doc] * tfc
        start, end = i, i + len(scores_doc)
        i = end
        doc_indices[start:end] = doc_idx
        voc_indices[start:end] = voc_ind_doc
        scores[start:end] = scores_doc
    # into columns (bm25s's numpy CSC builder): by term, then by document
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(np.bincount(voc_indices, minlength=n_vocab), out=indptr[1:])
    # stable, though every key differs: numpy's default argsort is chosen by the CPU and
    # gave unsorted orders on an emulated AVX2 one (see core/ordering.py)
    sorter = np.argsort((voc_indices.astype(np.int64) << 32) | doc_indices.astype(np.int64), kind="stable")
    if "" not in vocab:  # bm25s's create_empty_token: an id past the last column
        vocab[""] = max(vocab.values()) + 1
    return _Postings(
        data=scores[sorter].astype(dtype), indices=doc_indices[sorter], indptr=indptr, num_docs=n_docs,
        vocab=vocab, dtype=np.dtype(dtype), int_dtype=np.dtype(int_dtype), nonoccurrence=None,
    )


class LexicalIndex:
    """A BM25 index whose rows line up with a table's rows."""

    def __init__(
        self, postings: _Postings, n_rows: int, *, k1_b: tuple[float, float] | None = None, directory: Path | None = None
    ) -> None:
        self._postings = postings
        self.n_rows = n_rows
        self._k1_b = k1_b  # built here: its parameters (for save)
        self._directory = directory  # loaded: where from

    @classmethod
    def build(cls, texts: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> "LexicalIndex":
        corpus = [analyse(t) for t in texts]
        if not any(corpus):  # (no rows at all: one placeholder row, never scored)
            corpus = [[_NO_TERMS] for _ in corpus or [""]]
        return cls(_lucene_index(corpus, k1, b), len(texts), k1_b=(k1, b))

    def save(self, directory: Path) -> None:
        import bm25s

        if self._k1_b is not None:  # bm25s writes it, in its own format
            p = self._postings
            retriever = bm25s.BM25(k1=self._k1_b[0], b=self._k1_b[1])
            retriever.scores = {"data": p.data, "indices": p.indices, "indptr": p.indptr, "num_docs": p.num_docs}
            retriever.vocab_dict = p.vocab
            retriever.nonoccurrence_array = None
        else:  # loaded: bm25s reads it back to write it elsewhere
            assert self._directory is not None
            retriever = bm25s.BM25.load(str(self._directory), mmap=True)
        retriever.save(str(directory), show_progress=False)
        (Path(directory) / "rows.txt").write_text(str(self.n_rows), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path) -> "LexicalIndex":
        directory = Path(directory)
        n_rows = int((directory / "rows.txt").read_text(encoding="utf-8"))
        return cls(_Postings.read(directory), n_rows, directory=directory)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every row for ``query`` (zeros where nothing matches)."""
        tokens = analyse(query)
        if self.n_rows == 0:
            return np.zeros(0, dtype=np.float32)
        if not tokens:
            return np.zeros(self.n_rows, dtype=np.float32)
        return np.asarray(self._postings.scores(tokens), dtype=np.float32)

    def postings(self, token: str) -> np.ndarray:
        """The rows holding one analysed token (ascending): its posting list, read from
        the index without scoring any other row."""
        p = self._postings
        token_id = p.vocab.get(token) if self.n_rows else None
        if token_id is None:
            return np.zeros(0, dtype=np.int64)
        start, end = int(p.indptr[token_id]), int(p.indptr[token_id + 1])
        rows = np.asarray(p.indices[start:end], dtype=np.int64)
        rows = rows[np.asarray(p.data[start:end]) > 0]
        # a column's rows come sorted from the index's writer: checked (one pass), not
        # sorted again (a common term's list at 200,000 rows: a sort per question)
        return rows if rows.size < 2 or bool((rows[1:] > rows[:-1]).all()) else np.sort(rows)
