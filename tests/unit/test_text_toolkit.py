"""The shared text toolkit: one splitter under three sets of rules, one word list each."""

from __future__ import annotations

import pytest
from bm25s.stopwords import STOPWORDS_EN

from arborgraph.core.text import (
    ABBREVIATIONS,
    BM25_STOPWORDS,
    CHUNK_SENTENCES,
    ENTITY_STOPWORDS,
    RELATION_ABBREVIATIONS,
    RELATION_SENTENCES,
    STOPWORDS,
    SUMMARY_ABBREVIATIONS,
    SUMMARY_SENTENCES,
    SUMMARY_STOPWORDS,
    SentenceRules,
    analyse,
    sentence_spans,
)


def sentences(text: str, rules: SentenceRules) -> list[str]:
    return [text[start:end] for start, end in sentence_spans(text, rules=rules)]


def test_each_stage_uses_a_part_or_an_extension_of_the_one_list() -> None:
    assert SUMMARY_ABBREVIATIONS < ABBREVIATIONS and RELATION_ABBREVIATIONS < ABBREVIATIONS
    assert BM25_STOPWORDS < STOPWORDS < SUMMARY_STOPWORDS and STOPWORDS < ENTITY_STOPWORDS
    # every BM25 index was built with bm25s's English list: the copy must not drift
    assert BM25_STOPWORDS == frozenset(STOPWORDS_EN)


def test_the_default_rules_are_the_chunkers() -> None:
    text = "Set it, e.g. to WAL. Then commit.\nDone"
    assert sentence_spans(text) == sentence_spans(text, 0, len(text), CHUNK_SENTENCES)
    assert sentences(text, CHUNK_SENTENCES) == ["Set it, e.g. to WAL.", "Then commit.", "Done"]


@pytest.mark.parametrize(
    ("text", "chunk", "summary", "relation"),
    [
        # only the chunker reads an abbreviation inside brackets
        ("See (etc.) Next one.", ["See (etc.) Next one."], ["See (etc.)", "Next one."], ["See (etc.) Next one."]),
        # only the chunker knows "St." and single initials of any script
        ("Use St. Louis now.", ["Use St. Louis now."], ["Use St.", "Louis now."], ["Use St.", "Louis now."]),
        ("É. Next", ["É. Next"], ["É.", "Next"], ["É.", "Next"]),
        # only the relation rules start a sentence at a lower-case identifier, and leave
        # the closing quote out
        ("It opens. sqlite3_close() closes.", ["It opens. sqlite3_close() closes."],
         ["It opens. sqlite3_close() closes."], ["It opens.", "sqlite3_close() closes."]),
        ('He said "Stop." Then left.', ['He said "Stop."', "Then left."], ['He said "Stop."', "Then left."],
         ['He said "Stop.', "Then left."]),
    ],
)
def test_the_three_rule_sets_keep_their_own_boundaries(
    text: str, chunk: list[str], summary: list[str], relation: list[str]
) -> None:
    assert sentences(text, CHUNK_SENTENCES) == chunk
    assert sentences(text, SUMMARY_SENTENCES) == summary
    assert sentences(text, RELATION_SENTENCES) == relation


def test_spans_are_offsets_into_the_given_range() -> None:
    text = "xx  First one. Second one.  yy"
    assert sentence_spans(text, 2, len(text) - 2) == [(4, 14), (15, 26)]
    # without trimming, the relation rules run from gap to gap
    assert sentence_spans(text, 2, len(text) - 2, RELATION_SENTENCES) == [(2, 14), (15, 28)]


def test_the_analyser_keeps_identifiers_whole_and_in_parts() -> None:
    assert analyse("The journal_mode of a WAL database") == ["journal_mod", "journal", "mode", "wal", "databas"]
