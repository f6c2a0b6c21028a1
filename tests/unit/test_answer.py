"""Answer checks: figures (numbers, dates, versions) an answer gives that its sources lack."""

from __future__ import annotations

from arborgraph.core.results import Context
from arborgraph.query.answer import figure_notes, unsupported_figures

PASSAGES = [
    "Version 3.12.0 of the library was released on 2016-03-29.",
    "The default page size is 4096 bytes; the maximum is 65536.",
]


def test_an_invented_date_is_flagged_against_the_passage_it_cites() -> None:
    answer = "Version 3.12.0 was released on 2017-03-28 [1]. The page size defaults to 4,096 bytes [2]."
    (found,) = unsupported_figures(answer, PASSAGES)
    assert found.figures == ("2017-03-28",)
    assert found.cited == (1,)
    assert found.sentence == "Version 3.12.0 was released on 2017-03-28 [1]."


def test_a_figure_from_another_passage_than_the_cited_one_is_flagged() -> None:
    (found,) = unsupported_figures("It was released on 2016-03-29 [2].", PASSAGES)
    assert found.figures == ("2016-03-29",) and found.cited == (2,)
    assert unsupported_figures("It was released on 2016-03-29 [1].", PASSAGES) == []


def test_a_sentence_citing_nothing_is_checked_against_every_passage() -> None:
    assert unsupported_figures("The maximum is 65536 bytes, released 2016-03-29.", PASSAGES) == []
    (found,) = unsupported_figures("The maximum is 131072 bytes [9].", PASSAGES)  # [9] is no passage
    assert found.figures == ("131072",) and found.cited == ()


def test_citations_list_markers_names_and_the_question_are_not_figures() -> None:
    answer = "1. See policy CMP0028 and sha256 sums [1], [2].\n2. The page is 4096 bytes [2]."
    assert unsupported_figures(answer, PASSAGES) == []
    # a figure the user asked about is the user's, not invented
    assert unsupported_figures("No: 8192 is not the default; it is 4096 [2].", PASSAGES, "Is it 8192?") == []
    # part of a longer number is not the number
    assert unsupported_figures("The maximum is 655 [2].", PASSAGES)[0].figures == ("655",)


def test_figure_notes_name_the_sentence_and_its_citation() -> None:
    contexts = [Context(text=t, source="a.md", node_id=f"a#{i}") for i, t in enumerate(PASSAGES)]
    (note,) = figure_notes("It came out on 2017-03-28 [1]. Nothing else.", contexts)
    assert note.startswith('answer check: 2017-03-28 in "It came out on 2017-03-28 [1]." is not in its cited passage [1]')
    assert figure_notes("It came out on 2016-03-29 [1].", contexts) == []
