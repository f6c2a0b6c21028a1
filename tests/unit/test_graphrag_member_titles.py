"""Community titles and reports as the third blind rating asked (issue #35 item 3): no
member's word tacked onto a section's title unless it heads a section there ("Command
line options: -odb"); communities sharing a title told apart by their own sections;
summaries without cross-references, example set-ups, table rows or headword-less
definitions, and a sentence where a list of names with their pages stood.

The graphs are made by hand so that each rule's answer is known; the sections, leads,
titles and reports are made by the real code (section_leads over real chunks,
SectionIndex, community_titles, write_reports)."""

from __future__ import annotations

from arborgraph.core.leads import is_fragment, points_elsewhere
from arborgraph.index.structure_check import is_template_sentence
from graphrag.build import section_leads
from graphrag.model import Community, Relation
from graphrag.naming import community_titles
from graphrag.reports import ExtractiveReportWriter, write_reports
from hand_graphs import entity as _entity
from hand_graphs import graph as _graph
from hand_graphs import page_chunks as _chunks


# a mail server's manual: its command line (options in a definition list, one of them
# with a heading of its own), its main configuration, and release notes with a "Bug
# Fixes" section per release
PAGES = {
    "cmd": [
        (["The command line", "Command line options"],
         "Exim's command line takes the standard Unix form of a sequence of options.\n"
         "-odb: This option applies to all modes in which Exim accepts incoming messages."),
        (["The command line", "Command line options"], "-odi: This option sets background delivery off."),
        (["The command line", "-bP"], "The -bP option writes the values of the main configuration options."),
        (["The command line", "Trusted users"], "Some options are available only to trusted users of the host."),
    ],
    "main": [
        (["Main configuration"], "Their use is described in section 10.6.\n"
                                 "The main configuration holds the options that apply to the whole server."),
        (["Main configuration", "TLS options"],
         "Statement | Description buffered | Controls flushing of log messages.\n"
         "The TLS options say which protocol versions the server offers to its clients."),
        (["Main configuration", "Split setup"], "Let's say a company named Example, Inc.\n"
                                                "A split setup answers internal and external clients differently."),
        (["Main configuration", "Queue options"], "The queue options say how often the queue runner starts."),
    ],
    "notes": [
        (["Release Notes", "Notes for 9.18.34", "Bug Fixes"], "A stale answer could be returned with a future TTL."),
        (["Release Notes", "Notes for 9.18.35", "Bug Fixes"], "A worker thread could crash on a malformed query."),
    ],
    "install": [(["Installing"], "The install script copies the binaries into the configured directory.")],
    "faq": [(["Questions and answers"], "Most questions about delivery are answered by the logs.")],
    "session": [(["Session Interface", "Constants"], "These constants are the return codes of the session calls.")],
}


def _titles(entities: list[Entity], communities: list[Community]) -> dict[int, str]:
    chunks = _chunks(PAGES)
    kg = _graph(entities, [], communities)
    return {cid: t.text for cid, t in community_titles(kg, {c.chunk_id: list(c.heading_path) for c in chunks}).items()}


def test_a_member_name_follows_its_page_only_where_it_heads_a_section_there() -> None:
    # spread over the manual, the most on the command line page (no section holds a
    # third): -odb has no heading there, -bP has one
    spread = ["cmd#0", "cmd#3", "main#1", "main#2", "notes#0", "install#0", "faq#0"]
    titles = _titles(
        [_entity("odb", "-odb", spread), _entity("bp", "-bP", spread)],
        [Community(0, 0, ["odb"]), Community(1, 1, ["bp"])],
    )
    # the page, not "The command line: -odb" (the rater: a keyword tacked on)
    assert titles[0] == "The command line"
    # -bP heads a section of that page: its section, said after the page
    assert titles[1] == "The command line: -bP"


def test_communities_sharing_a_home_are_told_apart_by_their_own_sections() -> None:
    def at(section: str) -> list[str]:
        return [section, "main#0", "main#0", "main#0"]  # a quarter under a section of its own

    titles = _titles(
        [_entity("tls", "TLS", at("main#1")), _entity("v", "protocol version", at("main#1")),
         _entity("split", "split setup", at("main#2")), _entity("view", "view", at("main#2")),
         _entity("qr", "queue runner", at("main#3")), _entity("int", "interval", at("main#3"))],
        [Community(0, 0, ["tls", "v"]), Community(1, 0, ["split", "view"]), Community(2, 0, ["qr", "int"])],
    )
    # all at home on the page, each below it under a section of its own: the one keeping
    # the page's title is the first, the others are told apart by their sections, no
    # member's word ("Main configuration: view")
    assert sorted(titles.values()) == ["Main configuration", "Queue options", "Split setup"], titles


def test_one_heading_in_two_places_is_told_apart_by_the_heading_above_it() -> None:
    titles = _titles(
        [_entity("stale", "take advantage", ["notes#0"]), _entity("ttl", "future TTL", ["notes#0"]),
         _entity("worker", "worker thread", ["notes#1"]), _entity("query", "malformed query", ["notes#1"])],
        [Community(0, 0, ["stale", "ttl"]), Community(1, 0, ["worker", "query"])],
    )
    assert sorted(titles.values()) == ["Bug Fixes", "Notes for 9.18.35: Bug Fixes"], titles
    assert not any("take advantage" in t or "worker thread" in t for t in titles.values())


def test_a_lead_is_no_cross_reference_example_set_up_table_row_or_headless_definition() -> None:
    assert points_elsewhere("Their use is described in section 10.6.")
    assert points_elsewhere("For a general description of how a router operates, see sections 3.10 and 3.12.")
    assert points_elsewhere("More examples and discussion can be found in the Exim book.")
    assert points_elsewhere("Let's say a company named Example, Inc.")
    assert points_elsewhere("The latest versions can always be found at https://www.isc.org/download/.")
    assert not points_elsewhere("The appendfile transport delivers a message by appending it to an existing file.")
    assert not points_elsewhere("Exim can be configured to look up data in files or databases.")
    assert is_fragment("Statement | Description buffered | Controls flushing of log messages.")
    assert is_fragment("Controls the size of journal files.")
    assert not is_fragment("The queue options say how often the queue runner starts.")
    assert is_fragment("T. Bates, Y. Rekhter, R. Chandra, D. Katz.")
    assert not is_fragment("T. Bates wrote the first multiprotocol extensions for BGP-4.")
    assert points_elsewhere("The definition of struct rev_cmdline_info can be found in revision.h.")
    leads = section_leads(_chunks(PAGES))
    assert leads["main#0"] == "The main configuration holds the options that apply to the whole server."
    assert leads["main#1"] == "The TLS options say which protocol versions the server offers to its clients."
    assert leads["main#2"] == "A split setup answers internal and external clients differently."


def test_a_summary_keeps_to_its_section_and_never_ends_on_a_list_of_names() -> None:
    chunks = _chunks(PAGES)
    headings = {c.chunk_id: list(c.heading_path) for c in chunks}
    leads = section_leads(chunks)
    # two members named in one section each, no sentence of the manual says anything of
    # them: before, "no_sslv2 and no_sslv3, in Main configuration."
    kg = _graph([_entity("a", "no_sslv2", ["main#1"]), _entity("b", "no_sslv3", ["main#1", "main#3"])], [],
                [Community(0, 0, ["a", "b"])])
    summary = write_reports(kg, ExtractiveReportWriter(), headings=headings, leads=leads)[0].summary
    assert summary == "The TLS options say which protocol versions the server offers to its clients."
    assert not is_template_sentence(summary)
    # a community at home in "TLS options": the lead of the queue options beside it is
    # another topic and is not pasted in under its heading
    kg = _graph([_entity("t", "TLS", ["main#1"]), _entity("v", "protocol version", ["main#1"]),
                 _entity("o", "offered protocol", ["main#1"]), _entity("q", "queue runner", ["main#3"])],
                [Relation("t|co_occurs|q", "t", "q", "co_occurs", 1.0, "", ["main#3"])],
                [Community(0, 0, ["t", "v", "o", "q"])])
    report = write_reports(kg, ExtractiveReportWriter(), headings=headings, leads=leads)[0]
    assert report.title == "TLS options"
    assert "queue runner starts" not in report.summary and "Queue options:" not in report.summary


def test_one_common_word_alone_is_said_after_the_heading_above_it() -> None:
    titles = _titles([_entity("a", "SQLITE_CHANGESET_DATA", ["session#0"]), _entity("b", "return code", ["session#0"])],
                     [Community(0, 0, ["a", "b"])])
    # "Constants" alone says nothing of what they are constants of
    assert titles[0] == "Session Interface: Constants"


def test_a_title_told_apart_by_a_member_is_summarised_by_what_that_member_is() -> None:
    chunks = _chunks(PAGES)
    said = "The -bv option verifies the addresses given as arguments without delivering."
    kg = _graph(
        [_entity("odb", "-odb", ["cmd#0"]), _entity("odi", "-odi", ["cmd#0"]),
         _entity("bv", "-bv", ["cmd#0"], said, "cmd#0"), _entity("bt", "-bt", ["cmd#0"])],
        [], [Community(0, 0, ["odb", "odi"]), Community(1, 0, ["bv", "bt"])],
    )
    reports = write_reports(kg, ExtractiveReportWriter(), headings={c.chunk_id: list(c.heading_path) for c in chunks},
                            leads=section_leads(chunks))
    assert reports[0].title == "Command line options"
    assert reports[1].title == "Command line options: -bv"
    # not the section's lead both communities share first
    assert reports[1].summary.split("\n")[0] == said


def test_a_community_of_prose_phrases_is_told_apart_by_another_section_it_is_in() -> None:
    titles = _titles(
        [_entity("v", "protocol version", ["main#1"]), _entity("c", "cipher list", ["main#1"]),
         _entity("cs", "client side", ["main#1", "main#1", "main#1", "notes#0"]),
         _entity("ss", "server side", ["main#1"])],
        [Community(0, 0, ["v", "c"]), Community(1, 0, ["cs", "ss"])],
    )
    assert titles[0] == "TLS options"
    # not "TLS options: client side": the one other place it is mentioned
    assert titles[1] == "Bug Fixes", titles
