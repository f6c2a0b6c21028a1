"""Communities named by their home (issue #35 item 3): the section holding most of a
community's mentions, else its central entity; reports in the manual's own words.

The graphs here are made by hand so that each rule's answer is known."""

from __future__ import annotations

from collections.abc import Sequence

from graphrag.graph import KnowledgeGraph
from graphrag.model import Community, CommunityReport, Entity, Mention, Relation
from graphrag.naming import community_titles, is_generic_heading, name_communities
from graphrag.reports import (
    CommunityContext,
    ExtractiveReportWriter,
    community_context,
    introduces,
    write_reports,
)


def _entity(eid: str, name: str, chunks: Sequence[str], etype: str = "term", description: str = "",
            description_chunk: str | None = None) -> Entity:
    return Entity(id=eid, name=name, type=etype, mentions=[Mention(c, 0, len(name)) for c in chunks],
                  description=description, description_chunk=description_chunk)


def _rel(source: str, rtype: str, target: str, weight: float = 1.0, sentence: str = "", chunk: str = "x#0") -> Relation:
    return Relation(f"{source}|{rtype}|{target}", source, target, rtype, weight, sentence, [chunk])


def _graph(entities: list[Entity], relations: list[Relation], communities: list[Community]) -> KnowledgeGraph:
    return KnowledgeGraph({e.id: e for e in entities}, {r.id: r for r in relations}, {c.id: c for c in communities})


# a small manual: a page on WAL with numbered sections, one on VACUUM, and many pages
# with an "Options" section (page structure)
HEADINGS: dict[str, list[str]] = {
    "wal#0": ["Write-Ahead Logging", "1. Overview"],
    "wal#1": ["Write-Ahead Logging", "2. How WAL Works", "2.1. Checkpointing"],
    "wal#2": ["Write-Ahead Logging", "2. How WAL Works", "2.1. Checkpointing"],
    "wal#3": ["Write-Ahead Logging", "2. How WAL Works", "2.2. Concurrency"],
    "vacuum#0": ["VACUUM", "1. Syntax"],
    "vacuum#1": ["VACUUM", "2. How VACUUM works"],
    **{f"tool{i}#0": [f"tool{i}", "Options"] for i in range(5)},
    **{f"tool{i}#1": [f"tool{i}", "Description"] for i in range(5)},
}


def test_a_community_is_named_by_the_section_holding_most_of_its_mentions() -> None:
    kg = _graph(
        [
            _entity("cp", "checkpoint", ["wal#1", "wal#2"]),
            _entity("frame", "WAL frame", ["wal#1", "wal#2", "vacuum#1"]),
            _entity("wal", "WAL", ["wal#0", "wal#1", "wal#3"]),
            _entity("opt", "--fast", ["tool0#0", "tool0#1"], "option"),
            _entity("opt2", "--slow", ["tool0#0"], "option"),
        ],
        [_rel("cp", "copy", "frame", 2.0), _rel("wal", "co_occurs", "cp"), _rel("opt", "co_occurs", "opt2")],
        [Community(0, 0, ["cp", "frame"]), Community(1, 0, ["wal"]), Community(2, 0, ["opt", "opt2"])],
    )
    titles = community_titles(kg, HEADINGS)
    # checkpoint: 2 of 2, WAL frame: 2 of 3 under "2.1. Checkpointing": its heading, unnumbered
    assert titles[0].text == "Checkpointing" and titles[0].source == "section"
    assert 0.8 < titles[0].share < 0.9
    # all of WAL's mentions are on its page, no section below holds three quarters of them
    assert titles[1].text == "Write-Ahead Logging"
    # "Options" is on five pages: page structure, said after its page
    assert titles[2].text == "tool0: Options"
    assert is_generic_heading("Options") and is_generic_heading("Return value") and not is_generic_heading("Checkpointing")


def test_a_section_naming_a_large_share_of_all_entities_is_an_index_and_nobodys_home() -> None:
    headings = {**HEADINGS, "index#0": ["Index"]}
    # the index page names every entity; the community is mentioned there and in one section
    names = [f"term{i}" for i in range(30)]
    entities = [_entity(f"e{i}", n, ["index#0"]) for i, n in enumerate(names)]
    entities += [_entity("cp", "checkpoint", ["index#0", "wal#1"]), _entity("frame", "WAL frame", ["index#0", "wal#2"])]
    kg = _graph(entities, [_rel("cp", "copy", "frame")], [Community(0, 0, ["cp", "frame"])])
    assert name_communities(kg, headings)[0] == "Checkpointing"


def test_a_community_with_no_home_is_named_by_its_central_entity_or_the_section_defining_it() -> None:
    spread = ["wal#0", "vacuum#0", "tool1#1", "tool2#1", "tool3#1"]
    kg = _graph(
        [
            # the most connected inside its community, mentioned all over: no section
            # holds a quarter of the community's mentions
            _entity("cp", "checkpoint", spread),
            _entity("a", "page cache", ["vacuum#0", "tool1#1", "tool2#1", "tool3#1", "tool4#1"]),
            _entity("b", "journal", ["wal#0", "tool4#1", "tool1#1"]),
            _entity("vac", "vacuum", spread, "term", "A vacuum rebuilds the database file.", "vacuum#1"),
            _entity("c", "free page", spread[2:]),
            _entity("d", "freelist", spread[:2]),
        ],
        [_rel("cp", "co_occurs", "a", 3.0), _rel("cp", "co_occurs", "b", 3.0),
         _rel("vac", "rebuild", "c", 3.0), _rel("vac", "co_occurs", "d", 2.0)],
        [Community(0, 0, ["a", "b", "cp"]), Community(1, 0, ["c", "d", "vac"])],
    )
    titles = community_titles(kg, HEADINGS)
    # "checkpoint" alone says nothing of where it lives: the page holding the most of the
    # community's mentions names it
    assert (titles[0].text, titles[0].source) == ("tool1", "page")
    # vacuum is introduced under "2. How VACUUM works", on the page "VACUUM", a heading that
    # says no more than its name: that heading, not the bare name
    assert (titles[1].text, titles[1].source) == ("VACUUM", "definition")


def test_titles_are_told_apart_within_a_level_and_from_their_ancestors() -> None:
    kg = _graph(
        [
            _entity("cp", "checkpoint", ["wal#1", "wal#2"]),
            _entity("frame", "WAL frame", ["wal#1", "wal#2"]),
            _entity("reader", "reader", ["wal#2"]),
            _entity("mark", "end mark", ["wal#1"]),
            _entity("lock", "lock", ["wal#1"]),
        ],
        [_rel("cp", "copy", "frame", 3.0), _rel("reader", "co_occurs", "mark", 2.0), _rel("lock", "co_occurs", "mark")],
        [
            Community(0, 0, ["cp", "frame", "reader", "mark", "lock"], children=[1, 2]),
            Community(1, 1, ["cp", "frame"], parent=0),
            Community(2, 1, ["reader", "mark", "lock"], parent=0),
        ],
    )
    titles = name_communities(kg, HEADINGS)
    assert titles[0] == "Checkpointing"
    # both children's home is their parent's: each is told apart by its most central
    # member the title does not name already, never by a number
    assert titles[1] == "Checkpointing: WAL frame" and titles[2] == "Checkpointing: end mark"
    assert len(set(titles.values())) == 3


def test_every_community_has_a_report_and_a_model_writes_only_those_of_min_size() -> None:
    kg = _graph(
        [_entity("cp", "checkpoint", ["wal#1"]), _entity("frame", "WAL frame", ["wal#1"]),
         _entity("lock", "lock", ["wal#3"]), _entity("reader", "reader", ["wal#3"]), _entity("mark", "end mark", ["wal#3"])],
        [_rel("cp", "copy", "frame", sentence="A checkpoint copies every WAL frame back into the database file.",
              chunk="wal#1"),
         _rel("lock", "co_occurs", "reader"), _rel("reader", "co_occurs", "mark")],
        [Community(0, 0, ["cp", "frame"]), Community(1, 0, ["lock", "reader", "mark"])],
    )

    class ModelWriter:
        name = "stand-in-model"

        def __init__(self) -> None:
            self.seen: list[int] = []

        def write(self, context: CommunityContext) -> CommunityReport:
            self.seen.append(context.community.id)
            return CommunityReport(context.community.id, context.community.level, "T", "S", rank=7.0)

    model = ModelWriter()
    reports = write_reports(kg, model, min_size=3, headings=HEADINGS)
    assert set(reports) == {0, 1} and model.seen == [1]
    assert reports[0].title == reports[0].name == "Checkpointing" and reports[0].summary.startswith("A checkpoint copies")
    # the extractive writer itself writes every size
    reports = write_reports(kg, ExtractiveReportWriter(), min_size=3, headings=HEADINGS)
    assert set(reports) == {0, 1} and all(r.title and r.summary for r in reports.values())


def test_the_summary_introduces_the_central_entities_then_tells_their_relations_with_the_sentences() -> None:
    chunks = ["wal#1", "wal#2", "wal#3"]
    kg = _graph(
        [
            _entity("cp", "checkpoint", chunks, "term",
                    "A checkpoint copies the content of the WAL file back into the database file.", "wal#1"),
            _entity("wal", "WAL", chunks, "acronym", "See the section below for the details.", "wal#0"),
            _entity("reader", "reader", chunks, "term"),
            _entity("merge", "MERGE", chunks, "keyword"),
        ],
        [
            _rel("wal", "require", "cp", 3.0, "A database in WAL mode requires a checkpoint from time to time.", "wal#2"),
            _rel("reader", "block", "cp", 2.0, "A reader can block a checkpoint from finishing its work.", "wal#3"),
            _rel("cp", "in", "wal", 1.0, "The checkpoint in WAL mode is described in the next part.", "wal#3"),
            _rel("merge", "co_occurs", "wal", 1.0, "MERGE and WAL appear together in this sentence often.", "wal#3"),
        ],
        [Community(0, 0, ["cp", "wal", "reader", "merge"])],
    )
    report = ExtractiveReportWriter().write(community_context(kg, kg.communities[0]))
    summary = report.summary
    # the sentences whose subject is a central entity lead, the most central first; one
    # pointing elsewhere does not
    assert summary.startswith(
        "A checkpoint copies the content of the WAL file back into the database file.\n"
        "A reader can block a checkpoint from finishing its work."
    ), summary
    assert "See the section below" not in summary
    # then the sentences stating typed relations (a sentence quoted once); no
    # co-occurrence, no bare preposition; the findings tell each relation as "A verb B"
    # before its sentence
    assert summary.endswith("\nA database in WAL mode requires a checkpoint from time to time."), summary
    assert "WAL requires checkpoint: A database in WAL mode requires a checkpoint from time to time." in [
        f.text for f in report.findings
    ]
    assert "Reader blocks checkpoint" not in summary
    assert "checkpoint in WAL" not in summary and "MERGE" not in summary
    # no counts, no guessed types
    for word in ("entities", "acronym", "keyword", "term", "Its "):
        assert word not in summary
    assert report.findings and report.findings[0].chunk_ids == ["wal#1"]


def test_a_community_no_sentence_tells_lists_its_members_without_guessed_types() -> None:
    kg = _graph(
        [_entity("pic", "-fPIC", ["tool1#0"], "option"), _entity("shared", "-shared", ["tool1#0"], "option"),
         _entity("gcc", "GCC", ["tool1#0"], "acronym"), _entity("cc", "cc", ["tool1#0"], "identifier")],
        [_rel("pic", "co_occurs", "shared", sentence="gcc -fPIC -shared x.c"), _rel("gcc", "co_occurs", "cc")],
        [Community(0, 0, ["pic", "shared"]), Community(1, 0, ["gcc", "cc"])],
    )
    reports = write_reports(kg, ExtractiveReportWriter(), headings=HEADINGS)
    # a rule extractor's type restates the name's form ("-fPIC" an option): not said
    assert reports[0].summary == "-fPIC and -shared, in tool1."
    assert "acronym" not in reports[1].summary and "identifier" not in reports[1].summary


def test_an_entity_introduces_a_sentence_it_is_the_subject_of() -> None:
    wal = Entity("wal", "WAL", "acronym", aliases=["write-ahead log"])
    mode = Entity("jm", "journal_mode", "parameter")
    sqlite = Entity("sqlite", "SQLite", "term")
    assert introduces("WAL is the default for new databases.", wal)
    assert introduces("The write-ahead log stores changes before the database file does.", wal)
    assert introduces("The journal_mode pragma sets the journal mode of the database.", mode)
    assert not introduces("WAL mode is faster in most cases.", wal)  # its subject is "WAL mode"
    assert not introduces("WALs are kept apart.", wal)
    assert not introduces("The SQLite code base is supported by a team of developers.", sqlite)
    assert not introduces("A database in WAL mode requires a checkpoint.", wal)


def test_a_report_opens_with_the_leads_of_the_sections_its_members_live_in_in_reading_order() -> None:
    kg = _graph(
        [
            _entity("cp", "checkpoint", ["wal#1", "wal#2"]),
            _entity("frame", "WAL frame", ["wal#1", "wal#2", "wal#3"]),
            _entity("reader", "reader", ["wal#3"]),
        ],
        [_rel("cp", "copy", "frame", 3.0, "A checkpoint copies each WAL frame into the database.", "wal#2"),
         _rel("reader", "co_occurs", "frame")],
        [Community(0, 0, ["cp", "frame", "reader"])],
    )
    leads = {
        # the section's opening chunk says what it is about; a later chunk's first
        # sentence is no lead
        "wal#1": "Checkpointing moves the content of the WAL file back into the database file.",
        "wal#2": "Then the checkpointer resets the WAL file for new transactions to use.",
        "wal#3": "Readers and one writer can work on the database at once in WAL mode.",
    }
    report = write_reports(kg, ExtractiveReportWriter(), headings=HEADINGS, leads=leads)[0]
    lines = report.summary.split("\n")
    # "2. How WAL Works" holds all of it; neither of its sections three quarters: its
    # title, with no lead of its own; its sections' leads follow in reading order under
    # their titles, then the relation's sentence
    assert report.title == "How WAL Works"
    assert lines == [
        "Checkpointing: Checkpointing moves the content of the WAL file back into the database file.",
        "Concurrency: Readers and one writer can work on the database at once in WAL mode.",
        "A checkpoint copies each WAL frame into the database.",
    ], lines
    assert report.findings[0].chunk_ids == ["wal#1"]
    # a sentence longer than the writer quotes is left out whole, never cut
    short = write_reports(kg, ExtractiveReportWriter(max_quote_chars=70), headings=HEADINGS, leads=leads)[0]
    assert short.summary.split("\n") == [
        "Concurrency: Readers and one writer can work on the database at once in WAL mode.",
        "A checkpoint copies each WAL frame into the database.",
    ], short.summary


def test_a_common_noun_with_no_home_is_titled_by_the_section_holding_most_of_its_mentions() -> None:
    def titles(first: str, glossary: bool = False) -> str:
        headings = {**HEADINGS, "glossary#0": ["Glossary"]}
        extra = ["glossary#0"] * 2 if glossary else []
        kg = _graph(
            [_entity("cl", first, ["vacuum#1", "tool1#1", "tool2#1", *extra]),
             _entity("si", "standard input", ["vacuum#1", "tool3#1", "tool4#1", "tool0#1", *extra])],
            [_rel("cl", "co_occurs", "si", 2.0)],
            [Community(0, 0, ["cl", "si"])],
        )
        return name_communities(kg, headings)[0]

    # no section holds a third of it; "How VACUUM works" holds 29 %: a title a reader
    # finds in the manual, where "Command line" is a phrase of its prose
    assert titles("command line") == "How VACUUM works"
    # a name no heading of that page is: the page holding the most of its mentions alone,
    # no keyword tacked on (issue #35, third rating: "Command line options: -odb")
    assert titles("--command-line") == "VACUUM"
    # a glossary (or an index) says what a term means in a line, and is nobody's title
    assert titles("command line", glossary=True) != "Glossary"


def test_the_leads_of_a_manual_are_the_opening_sentences_of_its_sections() -> None:
    from graphrag.build import section_leads
    from ingest.models import Chunk

    def chunk(doc: str, n: int, path: list[str], text: str) -> Chunk:
        return Chunk(chunk_id=f"{doc}#{n}", doc_id=doc, ordinal=n, text=text, heading_path=path, start=0,
                     end=len(text), n_tokens=len(text.split()))

    chunks = [
        chunk("wal", 0, ["WAL"], "The write-ahead log is an alternative to the rollback journal."),
        chunk("wal", 1, ["WAL"], "It is faster in most cases and it lets readers work on."),
        chunk("wal", 2, ["WAL", "Checkpoints"],
              "```\nPRAGMA wal_checkpoint;\n```\nA checkpoint copies frames back into the database."),
        chunk("wal", 3, ["WAL", "Readers"], "where the reader stops, the writer goes on appending frames."),
        chunk("wal", 4, ["WAL", "Writers"],
              "Note that a writer never blocks a reader. A writer appends new frames to the end of the WAL file."),
    ]
    assert section_leads(chunks) == {
        "wal#0": "The write-ahead log is an alternative to the rollback journal.",
        # past the code block, the section's first sentence
        "wal#2": "A checkpoint copies frames back into the database.",
        # wal#1 goes on from wal#0; wal#3 opens mid-sentence
        # a note is an aside: the sentence after it says what the section is about
        "wal#4": "A writer appends new frames to the end of the WAL file.",
    }


def test_a_community_sharing_its_home_is_told_apart_by_the_section_introducing_its_central_entity() -> None:
    headings = {
        **HEADINGS, "vacuum#2": ["VACUUM", "3. The freelist"], "vacuum#3": ["VACUUM", "4. Auto-vacuum"],
        "vacuum#4": ["VACUUM", "5. Limits"],
    }
    kg = _graph(
        [
            _entity("cmd", "VACUUM", ["vacuum#0", "vacuum#1", "vacuum#3"], "statement"),
            _entity("pc", "page count", ["vacuum#0", "vacuum#1", "vacuum#4"]),
            # its mentions are spread over the page: no section below it holds a third
            _entity("fl", "freelist", ["vacuum#2", "vacuum#3", "vacuum#4", "vacuum#0"]),
            _entity("up", "unused page", ["vacuum#1", "vacuum#3", "vacuum#4"]),
        ],
        [_rel("cmd", "co_occurs", "pc", 2.0), _rel("fl", "co_occurs", "up", 2.0)],
        [Community(0, 0, ["cmd", "pc"]), Community(1, 0, ["fl", "up"])],
    )
    titles = community_titles(kg, headings)
    # both live on the page "VACUUM"; the community with a member of that name keeps it,
    # the other takes the section whose heading names its central entity, not
    # "VACUUM: freelist"
    assert titles[0].text == "VACUUM"
    assert titles[1].text == "The freelist" and titles[1].section == ("VACUUM", "The freelist")


def test_a_title_is_told_apart_by_a_name_before_a_common_noun() -> None:
    kg = _graph(
        [
            _entity("cp", "checkpoint", ["wal#1", "wal#2"]),
            _entity("frame", "WAL frame", ["wal#1", "wal#2"]),
            _entity("mark", "end mark", ["wal#1", "wal#2"]),
            _entity("zlock", "WAL_READ_LOCK", ["wal#1"]),
        ],
        [_rel("cp", "copy", "frame", 3.0), _rel("mark", "co_occurs", "zlock", 1.0)],
        [Community(0, 0, ["cp", "frame"]), Community(1, 0, ["mark", "zlock"])],
    )
    titles = name_communities(kg, HEADINGS)
    # both at home in "Checkpointing"; "end mark" is the more central, but a phrase of
    # prose: the identifier tells the second community apart
    assert titles[0] == "Checkpointing" and titles[1] == "Checkpointing: WAL_READ_LOCK", titles
