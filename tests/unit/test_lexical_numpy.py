"""BM25 indexes are built and scored with numpy alone (no bm25s, numba or scipy at query
time): the arrays, vocabulary, saved files and scores must be bit-identical to bm25s's
own, and a saved index bm25s built with any of its methods must score as bm25s scores it."""

from __future__ import annotations

import json
import random
from pathlib import Path

import bm25s
import numpy as np
import pytest

from arborgraph.core.lexical import LexicalIndex
from arborgraph.core.text import analyse

MANUAL = Path(__file__).resolve().parents[2] / "examples" / "sqlite"


def _paragraphs(pages: int) -> list[str]:
    texts: list[str] = []
    for page in sorted(MANUAL.glob("*.md"))[:pages]:
        texts += [p for p in page.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    return texts


def _questions(texts: list[str], n: int, seed: int = 0) -> list[str]:
    """Queries made of the corpus's words (some repeated, some absent from it)."""
    rng = random.Random(seed)
    words = sorted({w for t in texts for w in t.split()})
    out = ["journal_mode WAL checkpoint", "busy busy timeout", "zzzqqq nothing", "the and of", "é ü 中文 café"]
    for _ in range(n):
        out.append(" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))))
    return out


def _bm25s_scores(directory: Path, query: str) -> np.ndarray:
    tokens = analyse(query)
    reference = bm25s.BM25.load(str(directory), mmap=True)
    return np.asarray(reference.get_scores(tokens), dtype=np.float32)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


CORPORA = {
    "manual": lambda: _paragraphs(60),
    "rows without a usable term": lambda: ["", "the of and", "busy timeout", "   ", "busy busy busy"],
    "one row": lambda: ["journal_mode WAL"],
    "no terms at all": lambda: ["the", "", "of and"],
    "no rows": lambda: [],
    "repeats and unicode": lambda: ["café café ü", "中文 文本 café", "x_y x y x_y", "Ünïcödé ünïcödé"],
}


def _bm25s_built(texts: list[str], k1: float = 1.2, b: float = 0.75) -> bm25s.BM25:
    """What the index was built with before: bm25s itself, on the same analysed texts."""
    corpus = [analyse(t) for t in texts]
    if not any(corpus):
        corpus = [["\x00"] for _ in corpus or [""]]
    retriever = bm25s.BM25(k1=k1, b=b)
    retriever.index(corpus, show_progress=False)
    return retriever


@pytest.mark.parametrize("name", sorted(CORPORA))
def test_the_numpy_build_is_bm25s_build_bit_for_bit(tmp_path: Path, name: str) -> None:
    texts = CORPORA[name]()
    for k1, b in ((1.2, 0.75), (1.5, 0.3)):
        ours = LexicalIndex.build(texts, k1=k1, b=b)
        reference = _bm25s_built(texts, k1, b)
        p = ours._postings
        assert list(p.vocab.items()) == list(reference.vocab_dict.items())  # the same ids, in the same order
        for key, mine in (("data", p.data), ("indices", p.indices), ("indptr", p.indptr)):
            assert _same_bits(mine, reference.scores[key]), key
        assert p.num_docs == reference.scores["num_docs"]
    # ... and saves the files bm25s saves
    ours.save(tmp_path / "ours")
    reference.save(str(tmp_path / "bm25s"), show_progress=False)
    for file in sorted((tmp_path / "bm25s").iterdir()):
        assert (tmp_path / "ours" / file.name).read_bytes() == file.read_bytes(), file.name


def test_scores_of_a_loaded_index_are_bm25s_scores_bit_for_bit(tmp_path: Path) -> None:
    texts = _paragraphs(40) + ["", "   ", "the of and"]  # rows without a usable term too
    built = LexicalIndex.build(texts, k1=1.2, b=0.75)
    built.save(tmp_path)
    loaded = LexicalIndex.load(tmp_path)
    reference = bm25s.BM25.load(str(tmp_path), mmap=True)
    for query in _questions(texts, 200):
        tokens = analyse(query)
        if not tokens:
            continue
        expected = np.asarray(reference.get_scores(tokens), dtype=np.float32)
        assert _same_bits(loaded.scores(query), expected), query
        assert _same_bits(built.scores(query), expected), query


def test_postings_are_the_rows_holding_the_term(tmp_path: Path) -> None:
    texts = ["busy timeout handler", "busy database", "vacuum the file", "timeout"]
    LexicalIndex.build(texts).save(tmp_path)
    loaded = LexicalIndex.load(tmp_path)
    for token in ("busy", "timeout", "vacuum", "nowhere"):
        held = [row for row, text in enumerate(texts) if token in analyse(text)]
        assert loaded.postings(token).tolist() == held


@pytest.mark.parametrize("method", ["robertson", "atire", "bm25l", "bm25+", "lucene"])
def test_every_bm25s_method_scores_alike(tmp_path: Path, method: str) -> None:
    """bm25l and bm25+ add a non-occurrence term, read from its own saved array."""
    texts = _paragraphs(8)
    retriever = bm25s.BM25(method=method)
    retriever.index([analyse(t) for t in texts], show_progress=False)
    retriever.save(str(tmp_path), show_progress=False)
    (tmp_path / "rows.txt").write_text(str(len(texts)), encoding="utf-8")
    loaded = LexicalIndex.load(tmp_path)
    for query in _questions(texts, 40, seed=1):
        if analyse(query):
            assert _same_bits(loaded.scores(query), _bm25s_scores(tmp_path, query)), (method, query)


def test_an_index_without_terms_or_rows_scores_zero(tmp_path: Path) -> None:
    for name, texts in (("no-terms", ["the", "", "of and"]), ("no-rows", [])):
        LexicalIndex.build(texts).save(tmp_path / name)
        loaded = LexicalIndex.load(tmp_path / name)
        assert loaded.scores("busy timeout").tolist() == [0.0] * len(texts)
        assert loaded.postings("busy").tolist() == []


def test_a_loaded_index_saves_what_bm25s_saved(tmp_path: Path) -> None:
    texts = _paragraphs(3)
    LexicalIndex.build(texts).save(tmp_path / "a")
    LexicalIndex.load(tmp_path / "a").save(tmp_path / "b")
    for name in ("data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy", "rows.txt"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    vocab = [json.loads((tmp_path / side / "vocab.index.json").read_text(encoding="utf-8")) for side in ("a", "b")]
    assert vocab[0] == vocab[1]
