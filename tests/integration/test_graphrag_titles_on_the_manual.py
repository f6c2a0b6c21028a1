"""Communities named by their home, on real pages of the bundled SQLite manual with the
real rule extractor (the slice the shared index is built from; issue #35 item 3): every community titled and reported, titles
that are the manual's own headings where a section holds about half of a community's
mentions, summaries in the manual's words with no counts."""

from __future__ import annotations

import pytest
from conftest import SLICE

from arborgraph.index.structure_check import is_manual_title, is_template_sentence, manual_headings
from graphrag import KnowledgeGraph, RuleExtractor, build_graph
from graphrag.build import chunk_headings
from graphrag.naming import community_titles, is_common_noun
from ingest.models import Chunk
from manual_chunks import manual_chunks


@pytest.fixture(scope="module")
def chunks() -> list[Chunk]:
    return manual_chunks(SLICE)


@pytest.fixture(scope="module")
def kg(chunks: list[Chunk]) -> KnowledgeGraph:
    return build_graph(chunks, extractor=RuleExtractor())


def _community_of(kg: KnowledgeGraph, name: str, level: int = 0) -> int:
    (entity,) = kg.find(name)
    return next(c.id for c in kg.communities.values() if c.level == level and entity.id in c.members)


def test_every_community_has_a_title_distinct_within_its_level(kg: KnowledgeGraph) -> None:
    assert set(kg.reports) == set(kg.communities)
    assert any(len(c.members) < 3 for c in kg.communities.values())  # the small ones too
    for level in kg.levels:
        titles = [r.title.lower() for r in kg.reports.values() if r.level == level]
        assert all(titles) and len(titles) == len(set(titles))


def test_no_sibling_is_told_apart_only_by_a_members_name(kg: KnowledgeGraph, chunks: list[Chunk]) -> None:
    # the build merges such siblings (graphrag.namesakes): one section, one community
    titles = community_titles(kg, chunk_headings(chunks))
    for cid, title in titles.items():
        if title.named is not None and title.apart_from is not None:
            assert kg.communities[cid].parent != kg.communities[title.apart_from].parent, title.text


def test_a_community_at_home_in_a_section_is_titled_by_it(kg: KnowledgeGraph, chunks: list[Chunk]) -> None:
    titles = community_titles(kg, chunk_headings(chunks))
    # the busy handler's page, and the section of the WAL page on the shared-memory methods
    assert titles[_community_of(kg, "sqlite3_busy_handler()")].text == "Register A Callback To Handle SQLITE_BUSY Errors"
    assert titles[_community_of(kg, "xShmLock")].text == "Use of WAL Without Shared-Memory"
    headings = manual_headings(list(chunk_headings(chunks).values()))
    at_home = [t for t in titles.values() if t.source == "section"]
    # a third of its mentions; a quarter where the central entity is a common noun
    # ("transaction"): the section says more than the phrase
    assert at_home and all(
        t.share >= 0.33 or (t.share >= 0.25 and t.entity and is_common_noun(kg.entities[t.entity].name)) for t in at_home
    )
    assert sum(is_manual_title(t.text, headings) for t in titles.values()) >= 0.5 * len(titles)


def test_summaries_are_the_manuals_sentences_with_no_counts(kg: KnowledgeGraph, chunks: list[Chunk]) -> None:
    texts = [" ".join(c.text.split()) for c in chunks]
    for report in kg.reports.values():
        assert report.summary and not is_template_sentence(report.summary), report.summary
        for word in ("(acronym)", "(keyword)", "(term)", "(identifier)"):  # type tags only for sure types
            assert word not in report.summary
    # the WAL community's lines are the manual's whole sentences, an overview: more than
    # one, most of them about WAL (graphrag.overview)
    wal = kg.reports[_community_of(kg, "WAL")]
    sentences = [line if any(line in t for t in texts) else line.split(": ", 1)[-1] for line in wal.summary.split("\n")]
    assert all(any(s in t for t in texts) for s in sentences), wal.summary
    assert len(sentences) >= 2 and sum("WAL" in s for s in sentences) > len(sentences) / 2, wal.summary


def test_the_structure_check_measures_the_titles_and_summaries(sample_kb) -> None:  # type: ignore[no-untyped-def]
    (scope,) = sample_kb.explorer.structure().scopes
    shape = scope.communities
    assert shape.untitled == 0.0 and shape.template_summaries == 0.0 and shape.repeated_titles == 0.0
    assert shape.manual_titles is not None and shape.manual_titles >= 0.4

