"""The structure check's measures, on hand-made tables whose answers are known."""

from __future__ import annotations

import pyarrow as pa

from arborgraph.index.structure_check import (
    community_shape,
    graph_shape,
    is_comma_list,
    is_manual_title,
    is_strung,
    is_template_sentence,
    manual_headings,
    recurring_headings,
    tree_shape,
    words,
)

TITLES = ["write-ahead logging", "atomic commit in sqlite", "the sqlite query planner"]


def test_words_counts_what_a_reader_counts() -> None:
    assert words("Write-Ahead Logging · WAL: wal, read, content") == ["Write-Ahead", "Logging", "WAL", "wal", "read", "content"]
    assert words("sqlite3_open_v2() and C++") == ["sqlite3_open_v2", "and", "C++"]


def test_strung_titles_are_separated_or_hold_two_page_titles() -> None:
    assert is_strung("Atomic Commit · WAL", TITLES)
    assert is_strung("Write-Ahead Logging and Atomic Commit in SQLite", TITLES)
    assert not is_strung("Write-Ahead Logging checkpoints", TITLES)
    assert not is_strung("Transactions and locking", TITLES)


def _nodes(rows: list[tuple[str, int, str, list[str], list[str]]]) -> pa.Table:
    return pa.table({
        "node_id": [r[0] for r in rows],
        "level": [r[1] for r in rows],
        "title": [r[2] for r in rows],
        "parents": [r[3] for r in rows],
        "chunk_ids": [r[4] for r in rows],
        "origin": ["" if r[1] == 0 else "outline" if r[0].startswith("S") else "cluster" for r in rows],
    })


def test_tree_shape_measures_length_repeats_and_grounding() -> None:
    nodes = _nodes([
        ("L0:0", 0, "leaf", ["L1:0"], ["a"]),
        ("L1:0", 1, "Checkpoint frames", ["L2:0"], ["a"]),
        ("L1:1", 1, "checkpoint  frames", ["L2:0"], ["b"]),  # repeats its sibling (case, spacing)
        ("L1:2", 1, "Atomic Commit in SQLite · Write-Ahead Logging", ["L2:0"], ["a", "b"]),
        ("L2:0", 2, "Durability", [], ["a", "b"]),  # not in the chunks: grounding 0
    ])
    chunks = {"a": "The checkpoint copies frames back.", "b": "Frames wait in the WAL until a checkpoint."}
    shape = tree_shape(nodes, chunks, TITLES)
    assert shape.summary_nodes == 4
    assert shape.name_words_median == 2.0 and shape.name_words_max == 6
    assert shape.sibling_repeats == 0.5  # L1:0 and L1:1, of four
    assert shape.strung_titles == 0.25
    # 1, 1, 0 (atomic, commit, sqlite, write-ahead, logging: none in a or b), 0
    assert shape.grounding == 0.5
    assert shape.examples[0] == "L2 Durability"


def test_tree_shape_counts_names_that_are_the_manuals_titles_and_what_they_cover() -> None:
    nodes = _nodes([
        ("a", 0, "leaf", ["S1"], []), ("b", 0, "leaf", ["S1"], []), ("c", 0, "leaf", ["S2"], []),
        ("S1", 1, "How WAL Works", ["L3"], ["a", "b"]),  # its heading, over both its chunks
        ("S2", 1, "Write-Ahead Logging: Overview", ["L3"], ["c"]),  # a generic heading after its page
        ("L2", 2, "Write-Ahead Logging", ["L3"], ["a", "b", "c", "d"]),  # a page title over 3 of 4
        ("L3", 3, "Checkpoint frames", [], ["a", "b", "c", "d"]),  # keyphrases: no heading
    ])
    paths = {
        "a": ["Write-Ahead Logging", "2. How WAL Works"], "b": ["Write-Ahead Logging", "2. How WAL Works"],
        "c": ["Write-Ahead Logging", "1. Overview"], "d": ["Atomic Commit In SQLite"],
    }
    shape = tree_shape(nodes, {k: "" for k in paths}, TITLES, paths)
    assert shape.manual_titles == 0.75
    assert shape.title_coverage == round((1 + 1 + 0.75 + 0) / 4, 4)
    assert shape.outline_nodes == 0.5
    assert tree_shape(nodes, {}, TITLES).manual_titles is None  # no heading paths: not measured


def test_recurring_headings_ignore_the_page_title_and_need_a_share_of_pages() -> None:
    paths = [(f"p{i}", [f"Page {i}", "OPTIONS", f"topic {i}"]) for i in range(20)]
    paths += [("p0", ["Page 0", "Description"]), ("p1", ["Page 1", "DESCRIPTION"])]  # 2 of 20 pages: 10 %
    paths += [("p2", ["Page 2", "Notes"]), ("p2", ["Page 2", "Notes", "More"])]  # one page, twice
    assert recurring_headings(paths) == {"options", "description"}
    assert recurring_headings(paths, share=0.5) == {"options"}


def test_graph_shape_counts_co_occurrence_and_boilerplate_among_the_best_connected() -> None:
    entities = pa.table({"name": ["OPTIONS", "WAL", "checkpoint", "Description"], "degree": [9, 7, 5, 1]})
    relations = pa.table({"type": ["co_occurs", "co_occurs", "copies", "requires"]})
    shape = graph_shape(entities, relations, {"options", "description"})
    assert shape.co_occurrence == 0.5
    assert shape.relation_types == {"co_occurs": 2, "copies": 1, "requires": 1}
    assert shape.boilerplate_in_top == ["OPTIONS", "Description"]
    assert shape.top_entities[:2] == ["OPTIONS", "WAL"]


def test_comma_lists_are_lists_of_member_names() -> None:
    members = {"wal", "checkpoint", "pnckpt"}
    assert is_comma_list("WAL, checkpoint, pnCkpt", members)
    assert is_comma_list("WAL, checkpoint and journal", members)
    assert not is_comma_list("Checkpoints and the write-ahead log", members)
    assert not is_comma_list("Locking, journaling and recovery", members)  # a list, but of topics


def test_community_shape_measures_titles_per_level() -> None:
    entities = pa.table({"id": ["e1", "e2", "e3"], "name": ["WAL", "checkpoint", "VACUUM"]})
    communities = pa.table({"id": [1, 2, 3], "members": [["e1", "e2"], ["e3"], ["e1"]]})
    reports = pa.table({
        "community_id": [1, 2, 3], "level": [0, 0, 1], "rank": [3.0, 2.0, 1.0],
        "title": ["WAL, checkpoint", "Reclaiming free pages", "Reclaiming free pages"],
    })
    shape = community_shape(communities, reports, entities)
    assert shape.communities == 3 and shape.title_words_median == 3
    assert abs(shape.comma_lists - 1 / 3) < 1e-3
    assert shape.repeated_titles == 0.0  # the two equal titles are on different levels
    assert shape.examples[0] == "WAL, checkpoint"


def test_community_shape_counts_the_manuals_titles_template_summaries_and_untitled_communities() -> None:
    headings = manual_headings(
        [["Write-Ahead Logging", "2. How WAL Works", "2.1. Checkpointing"], ["pg_resetwal", "Options"]],
        ["Atomic Commit In SQLite"],
    )
    assert headings == {"write-ahead logging", "how wal works", "checkpointing", "pg_resetwal", "options",
                        "atomic commit in sqlite"}
    assert is_manual_title("CHECKPOINTING", headings) and is_manual_title("2.1. Checkpointing", headings)
    assert is_manual_title("pg_resetwal: Options", headings)  # "Page: Heading", both headings
    assert not is_manual_title("Write-Ahead Logging: checkpoint", headings)  # a member's name after it
    assert not is_manual_title("Checkpoint frames", headings)
    # a module page's name with the one-line summary it opens with is the page's title
    assert is_manual_title("pg_resetwal — Reset the write-ahead log", headings)
    assert not is_manual_title("Checkpoint frames — Reset the write-ahead log", headings)
    assert is_template_sentence("Its 4 entities are WAL, checkpoint, reader and writer.")
    assert is_template_sentence("The most connected of its 12 entities is WAL.")
    assert is_template_sentence("WAL has 73 related entities (10 keyword, 10 term, 6 acronym).")
    assert not is_template_sentence("A checkpoint copies 1000 pages back into the database file.")
    # a list of members and the pages naming them is no summary either
    assert is_template_sentence("inet_interfaces and proxy_interfaces, in Configuration Parameters and TLS Support.")
    assert is_template_sentence("-fPIC and -shared, in How To Compile SQLite.")
    assert not is_template_sentence("If the file exists, in most cases new data is appended to it.")
    assert not is_template_sentence("The file is kept, in most cases.")

    entities = pa.table({"id": ["e1", "e2", "e3"], "name": ["WAL", "checkpoint", "VACUUM"]})
    communities = pa.table({"id": [1, 2, 3, 4], "members": [["e1", "e2"], ["e3"], ["e1"], ["e2"]]})
    reports = pa.table({
        "community_id": [1, 2, 3], "level": [0, 0, 1], "rank": [3.0, 2.0, 1.0],
        "title": ["Checkpointing", "Write-Ahead Logging: checkpoint", "pg_resetwal: Options"],
        "summary": ["Its 2 entities are WAL and checkpoint.", "A checkpoint copies pages back.", "VACUUM rebuilds it."],
    })
    shape = community_shape(communities, reports, entities, headings)
    assert shape.untitled == 0.25  # community 4 has no report
    assert abs(shape.manual_titles - 2 / 3) < 1e-3
    assert abs(shape.template_summaries - 1 / 3) < 1e-3
    without = community_shape(communities, reports.drop_columns(["summary"]), entities)
    assert without.manual_titles is None and without.template_summaries is None  # not measured


def test_a_page_name_said_with_its_summary_covers_the_pages_chunks() -> None:
    from arborgraph.index.structure_check import heading_coverage

    paths = {"a": ["celery.utils.log"], "b": ["celery.utils.log", "Functions"], "c": ["Routing"]}
    assert heading_coverage("celery.utils.log — Logging utilities", ["a", "b", "c"], paths) == 2 / 3
    assert heading_coverage("celery.utils.log", ["a", "b", "c"], paths) == 2 / 3
    assert heading_coverage("Routing — Logging utilities", ["a", "b"], paths) is None
