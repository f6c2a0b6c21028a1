"""Sibling communities that only a member's name would tell apart are merged
(graphrag.namesakes): three blind raters marked "Command line options: -bv" titles down.

The graphs are made by hand over real chunks, so the answer is known; titles and
reports are made by the real code (community_titles, write_reports)."""

from __future__ import annotations

from graphrag.build import section_leads
from graphrag.model import Community
from graphrag.namesakes import merged_namesakes, with_namesakes_merged
from graphrag.naming import community_titles
from graphrag.reports import ExtractiveReportWriter, write_reports
from hand_graphs import entity as _entity
from hand_graphs import graph as _graph
from hand_graphs import page_chunks as _chunks

PAGES = {
    # one section holding two groups of options
    "cmd": [
        (["The command line", "Command line options"], "Each option starts with a hyphen and a letter or two."),
        (["The command line", "Command line options"], "Options that test addresses start with -b."),
    ],
    "main": [(["Main configuration"], "The main configuration holds the options that apply to the whole server.")],
    "queue": [(["Queue runners"], "A queue runner delivers the messages waiting on the queue.")],
}
HEADINGS = {c.chunk_id: list(c.heading_path) for c in _chunks(PAGES)}


def _options(*communities: Community, extra: tuple = ()) -> object:
    return _graph(
        [_entity("odb", "-odb", ["cmd#0"]), _entity("odi", "-odi", ["cmd#1"]),
         _entity("bv", "-bv", ["cmd#0"]), _entity("bt", "-bt", ["cmd#1"]),
         _entity("conf", "main configuration", ["main#0"]), _entity("runner", "queue runner", ["queue#0"]), *extra],
        [], list(communities),
    )


def test_siblings_a_member_would_tell_apart_are_one_community() -> None:
    kg = _options(Community(0, 0, ["odb", "odi"]), Community(1, 0, ["bv", "bt"]), Community(2, 0, ["conf"]))
    # named alone, the second is told apart by a member's name
    assert community_titles(kg, HEADINGS)[1].text == "Command line options: -bt"
    merged = merged_namesakes(kg, HEADINGS)
    assert sorted(merged) == [0, 2]
    assert merged[0].members == ["odb", "odi", "bv", "bt"]
    assert merged[2].members == ["conf"]
    # the graph it came from is left as it was
    assert sorted(kg.communities) == [0, 1, 2] and kg.communities[0].members == ["odb", "odi"]
    reports = write_reports(with_namesakes_merged(kg, HEADINGS), ExtractiveReportWriter(), headings=HEADINGS,
                            leads=section_leads(_chunks(PAGES)))
    assert sorted(reports) == [0, 2]
    assert reports[0].title == "Command line options"


def test_a_merge_keeps_the_hierarchy_whole() -> None:
    # two level-1 siblings under community 0 share a home; each has a child at level 2
    kg = _options(
        Community(0, 0, ["odb", "odi", "bv", "bt"], children=[1, 2]),
        Community(1, 1, ["odb", "odi"], parent=0, children=[3]),
        Community(2, 1, ["bv", "bt"], parent=0, children=[4]),
        Community(3, 2, ["odb", "odi"], parent=1),
        Community(4, 2, ["bv", "bt"], parent=2),
        Community(5, 0, ["conf", "runner"]),
    )
    merged = merged_namesakes(kg, HEADINGS)
    assert 2 not in merged
    assert merged[0].children == [1]
    assert merged[1].children == [3, 4] and merged[1].members == ["odb", "odi", "bv", "bt"]
    assert merged[4].parent == 1 and merged[3].parent == 1


def test_namesakes_under_different_parents_keep_the_members_name() -> None:
    kg = _options(
        Community(0, 0, ["odb", "odi", "conf"], children=[2]),
        Community(1, 0, ["bv", "bt", "runner"], children=[3]),
        Community(2, 1, ["odb", "odi"], parent=0),
        Community(3, 1, ["bv", "bt"], parent=1),
    )
    titles = community_titles(kg, HEADINGS)
    assert titles[3].named is not None and titles[3].text.startswith("Command line options: ")
    assert with_namesakes_merged(kg, HEADINGS) is kg


def test_without_headings_or_namesakes_the_graph_is_kept() -> None:
    kg = _options(Community(0, 0, ["odb", "odi", "bv", "bt"]), Community(1, 0, ["conf"]))
    assert with_namesakes_merged(kg, HEADINGS) is kg
    assert with_namesakes_merged(kg, {}) is kg


def test_a_build_merges_them_before_it_names_and_reports() -> None:
    from graphrag.build import graph_from_extractions
    from graphrag.model import ChunkExtraction, ExtractedEntity, ExtractedRelation

    def clique(chunk: str, names: list[str]) -> ChunkExtraction:
        return ChunkExtraction(
            chunk, [ExtractedEntity(n, "term", [(0, 1)]) for n in names],
            [ExtractedRelation(a, b, "uses", 2.0) for a, b in zip(names, names[1:])],
        )

    # two groups no relation joins, both at home under "Command line options"
    extractions = [clique("cmd#0", ["-odb", "-odi", "-odf"]), clique("cmd#1", ["-bv", "-bt", "-bP"]),
                   clique("main#0", ["main configuration", "primary hostname"])]
    kg = graph_from_extractions(extractions, extractor="hand", headings=HEADINGS)
    titles = sorted(r.title for r in kg.reports.values())
    assert titles == ["Command line options", "Main configuration"], titles
