"""Query-focused digests: sentences of a route's candidates, packed to the budget."""

from __future__ import annotations

import numpy as np
import pytest

from arborgraph.core.results import Context
from arborgraph.query.digest import (
    FEATURES,
    DigestPlan,
    Sentence,
    SentenceScorer,
    candidate_sentences,
    digest,
    load_model,
    sentence_features,
)
from ingest import load_token_counter

WAL = (
    "The WAL journaling mode uses a write-ahead log instead of a rollback journal. "
    "A checkpoint moves the content of the WAL file back into the database file. "
    "By default SQLite does a checkpoint automatically when the WAL file reaches 1000 pages. "
    "Applications can also run a checkpoint by hand."
)
LOCKS = (
    "SQLite uses POSIX advisory locks on unix. "
    "A database in WAL mode needs shared memory for its index. "
    "Network filesystems do not support the shared memory that WAL needs."
)
ABOUT = "SQLite is a C library. It is the most widely deployed database engine in the world."


def chunk(node_id: str, text: str, source: str = "wal.html", heading: str = "Write-Ahead Logging") -> Context:
    return Context(text=text, source=source, heading_path=[heading], node_id=node_id)


def term_scorer() -> SentenceScorer:
    """A scorer that reads only the question's idf-weighted term cover."""
    weights = np.zeros(len(FEATURES))
    weights[FEATURES.index("idf_cover")] = 1.0
    return SentenceScorer(FEATURES, np.zeros(len(FEATURES)), np.ones(len(FEATURES)), weights, 0.0)


def test_sentences_come_from_chunks_only_without_list_debris() -> None:
    summary = Context(text="A summary. Of many pages.", source="x", node_id="L1:0", kind="summary")
    passages = [summary, chunk("c1", WAL + "\nSee also.\n")]
    found = candidate_sentences(passages, 0, 2)
    texts = [passages[s.passage].text[s.start : s.end] for s in found]
    assert texts[0].startswith("The WAL journaling mode")
    assert len(texts) == 4  # "See also." is two words: debris
    assert all(s.passage == 1 for s in found)
    assert [s.position for s in found] == [0, 1, 2, 3]


def test_features_see_the_question_terms_in_the_sentence() -> None:
    passages = [chunk("c1", WAL), chunk("c2", LOCKS, "locks.html", "File Locking")]
    sentences = candidate_sentences(passages, 0, 2)
    matrix = sentence_features("When does SQLite run a checkpoint automatically?", passages, sentences)
    cover = matrix[:, FEATURES.index("idf_cover")]
    best = passages[sentences[int(np.argmax(cover))].passage].text
    assert "checkpoint automatically" in best[sentences[int(np.argmax(cover))].start :]
    assert matrix[0, FEATURES.index("chunk_inv_rank")] == 1.0
    assert matrix[-1, FEATURES.index("chunk_inv_rank")] == 0.5
    assert matrix[0, FEATURES.index("first_in_chunk")] == 1.0


def test_features_of_a_span_of_the_callers_own_count_its_words_and_terms() -> None:
    passages = [chunk("c1", WAL), chunk("c2", LOCKS, "locks.html", "File Locking")]
    cut = candidate_sentences(passages, 0, 2)
    # the whole of a passage: no sentence the split cut, so read from the text itself
    whole = Sentence(passage=1, start=0, end=len(LOCKS), position=0)
    matrix = sentence_features("How are file locks taken?", passages, [*cut, whole])
    assert matrix[-1, FEATURES.index("log_words")] == pytest.approx(np.log1p(len(LOCKS.split())))
    first = cut[0]
    assert matrix[0, FEATURES.index("log_words")] == pytest.approx(
        np.log1p(len(passages[0].text[first.start : first.end].split()))
    )
    assert matrix[-1, FEATURES.index("heading_cover")] > 0  # "File Locking" holds the question's "file" and "lock"


def test_digest_packs_the_best_sentences_under_their_passage_in_reading_order() -> None:
    count = load_token_counter()
    passages = [chunk("c0", ABOUT, "about.html", "About"), chunk("c1", WAL), chunk("c2", LOCKS, "locks.html", "File Locking")]
    question = "Why does WAL need shared memory, and when is a checkpoint run automatically?"
    out = digest(question, passages, DigestPlan(whole_first=1, passages=10), scorer=term_scorer(),
                 budget_tokens=80, count_tokens=count, max_contexts=10)
    assert out[0] is passages[0]  # kept whole
    digests = out[1:]
    assert {d.kind for d in digests} == {"digest"}
    assert sum(count(c.text) for c in out) <= 80 + len(digests)  # ellipses joining pieces
    for d in digests:
        assert d.provenance == [d.extra["passage"]] and d.node_id == f"digest:{d.extra['passage']}"
        source = {p.node_id: p for p in passages}[d.extra["passage"]]
        assert d.heading_path == source.heading_path and d.source == source.source
        for piece in d.text.removeprefix("… ").split(" … "):
            assert piece in source.text  # the manual's own words, whole sentences
    joined = " ".join(d.text for d in digests)
    assert "shared memory" in joined and "1000 pages" in joined
    assert "most widely deployed" not in joined


def test_adjacent_sentences_keep_the_manual_text_between_them() -> None:
    count = load_token_counter()
    text = "Alpha checkpoint one.\nBeta checkpoint two. Gamma unrelated words here."
    out = digest("checkpoint", [chunk("c1", text)], DigestPlan(0, 5), scorer=term_scorer(),
                 budget_tokens=1000, count_tokens=count, max_contexts=5)
    assert out[0].text.startswith("Alpha checkpoint one.\nBeta checkpoint two.")


def test_a_repeated_sentence_is_picked_once() -> None:
    count = load_token_counter()
    same = "The checkpoint runs when the WAL file reaches 1000 pages."
    passages = [chunk("c1", same + " Other words entirely here."), chunk("c2", same, "b.html")]
    out = digest("when does the checkpoint run", passages, DigestPlan(0, 5), scorer=term_scorer(),
                 budget_tokens=1000, count_tokens=count, max_contexts=5)
    assert sum(c.text.count("reaches 1000 pages") for c in out) == 1


def test_digest_stays_within_the_number_of_contexts() -> None:
    count = load_token_counter()
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda"]
    passages = [chunk(f"c{i}", f"Checkpoint fact {w} {w}x {w}y is stated.", f"p{i}.html") for i, w in enumerate(words)]
    out = digest("checkpoint fact", passages, DigestPlan(1, 10), scorer=term_scorer(),
                 budget_tokens=10_000, count_tokens=count, max_contexts=3)
    assert len(out) == 3


def test_a_model_for_other_features_is_refused() -> None:
    scorer = SentenceScorer(("a",), np.zeros(1), np.ones(1), np.ones(1), 0.0)
    with pytest.raises(ValueError, match="sentence model reads"):
        scorer.score(np.zeros((1, len(FEATURES))))


def test_the_shipped_model_reads_these_features_and_plans_routes() -> None:
    model = load_model()
    assert model.scorer.features == FEATURES
    assert set(model.plans) <= {"lookup", "tree", "graph", "global"}
