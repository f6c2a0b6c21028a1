"""A community's overview (issue #35 item 3, sixth rating): the sentences of the text
its members are discussed in that carry most of its vocabulary, the section's opening
first among equals, in reading order, within a budget; never an aside to the reader, a
version note, a question or a sentence cut at a chunk's start.

The graphs are made by hand over real chunks; the sentences are split, analysed and
chosen by the real code (graphrag.overview, write_reports)."""

from __future__ import annotations

from graphrag.build import chunk_texts, section_leads
from graphrag.model import Community
from graphrag.overview import chunk_sentences, document_frequencies, is_meta, overview, restates
from graphrag.reports import ExtractiveReportWriter, quotable, write_reports
from hand_graphs import entity as _entity
from hand_graphs import graph as _graph
from hand_graphs import page_chunks as _chunks

PAGES = {
    "wal": [
        (["Write-Ahead Logging"],
         "You should read the introduction to transactions first. The write-ahead log keeps changes in a separate "
         "WAL file until a checkpoint copies them back into the database file. Readers keep reading the database "
         "file while a writer appends to the WAL file."),
        (["Write-Ahead Logging", "Checkpoints"],
         "A checkpoint copies the pages of the WAL file back into the database file and resets the WAL file. "
         "Deprecated in version 3.7: the old checkpoint call. Is a checkpoint ever run automatically? "
         "The default page size of the database is 4096 bytes on most systems today."),
        (["Write-Ahead Logging", "Checkpoints"],
         "database file whenever it grows past a thousand pages of the WAL file and the checkpoint runs. "
         "An application may run a checkpoint itself when the WAL file grows too large for its readers."),
    ],
    "misc": [
        (["Miscellaneous"], "The shell prints query results as a table with one row per line of output text."),
    ],
}


def _overview(chunks, names=("WAL file", "checkpoint"), **kw):  # type: ignore[no-untyped-def]
    df, n = document_frequencies(c.text for c in chunks)
    analysed = [(c.chunk_id, chunk_sentences(c.text), 1.0) for c in chunks if c.doc_id == "wal"]
    return overview(analysed, names, df, n, lambda s: True, **kw)


def test_the_overview_says_what_the_text_is_about_in_reading_order() -> None:
    chunks = _chunks(PAGES)
    chosen = _overview(chunks, section_openers={"wal#0", "wal#1"})
    sentences = [s for s, _ in chosen]
    assert sentences[0].startswith("The write-ahead log keeps changes")
    assert any(s.startswith("A checkpoint copies the pages") for s in sentences)
    # in reading order, each with the chunk it is quoted from
    order = [next(i for i, c in enumerate(chunks) if s in " ".join(c.text.split())) for s, _ in chosen]
    assert order == sorted(order)
    assert all(s in " ".join(dict(((c.chunk_id, c.text) for c in chunks))[chunk].split()) for s, chunk in chosen)
    # nothing about the page size: it carries none of the community's vocabulary
    assert not any("page size" in s for s in sentences)


def test_no_aside_version_note_question_or_cut_sentence_is_chosen() -> None:
    chosen = [s for s, _ in _overview(_chunks(PAGES), max_sentences=10, max_words=1000)]
    assert chosen, "the text has sentences to choose"
    assert not any(s.startswith(("You should read", "Deprecated", "Is a checkpoint", "database file whenever"))
                   for s in chosen)
    assert is_meta("For more information, see the tutorial.") and is_meta("New in version 2.0.")
    assert not is_meta("A checkpoint copies the WAL file back into the database.")


def test_the_budget_holds() -> None:
    chosen = _overview(_chunks(PAGES), max_sentences=10, max_words=40)
    assert sum(len(s.split()) for s, _ in chosen) <= 40
    assert len(_overview(_chunks(PAGES), max_sentences=2, max_words=1000)) == 2


def test_a_report_written_with_the_texts_is_an_overview_and_without_them_as_before() -> None:
    chunks = _chunks(PAGES)
    headings = {c.chunk_id: list(c.heading_path) for c in chunks}

    def kg():  # type: ignore[no-untyped-def]
        return _graph(
            [_entity("wal", "WAL file", ["wal#0", "wal#1", "wal#2"]),
             _entity("ckpt", "checkpoint", ["wal#0", "wal#1", "wal#2"]),
             _entity("db", "database file", ["wal#0", "wal#1"])],
            [],
            [Community(0, 0, ["wal", "ckpt", "db"])],
        )

    leads = section_leads(chunks)
    with_texts = write_reports(kg(), ExtractiveReportWriter(), headings=headings, leads=leads,
                               texts=chunk_texts(chunks))[0].summary.split("\n")
    without = write_reports(kg(), ExtractiveReportWriter(), headings=headings, leads=leads)[0].summary.split("\n")
    assert with_texts[0].startswith("The write-ahead log keeps changes")  # its own section's lead
    assert any(s.startswith("A checkpoint copies the pages") for s in with_texts[1:])
    assert not any("You should read" in s or "page size" in s for s in with_texts)
    assert len(with_texts) > len(without)
    assert len(" ".join(with_texts).split()) <= ExtractiveReportWriter().max_words


def test_what_the_sixth_rating_marked_down_is_no_overview_sentence() -> None:
    # a sentence split inside its brackets ("(e.g." cut off), a setting's case, a pronoun
    # for what came before, an API's generated note, a lead that only restates the title
    assert quotable("Specified in the style of standard Java memory specs (e.g.") is None
    assert quotable("The size is given in the style of Java memory specs (for example 128m).") is not None
    assert is_meta("If false, the task fails when the file is missing.")
    assert is_meta("Some of them are listed in the reference below.")
    assert is_meta("Proxied for the AsyncSession class on behalf of the scoped session.")
    assert restates("Support for the PostgreSQL database.", "PostgreSQL")
    assert not restates("The FTP task implements a basic FTP client that can send and delete files.", "FTP Task")
