"""Community names: never page structure or identifiers made up for examples; report
paragraphs in the manual's words (see also test_graphrag_home_titles.py)."""

from __future__ import annotations

from graphrag.graph import KnowledgeGraph
from graphrag.model import Community, Entity, Mention, Relation
from graphrag.naming import is_code_like, name_communities, structural_headings
from graphrag.reports import ExtractiveReportWriter, write_reports


def _entity(eid: str, name: str, etype: str, chunks: list[str]) -> Entity:
    return Entity(id=eid, name=name, type=etype, mentions=[Mention(c, 0, len(name)) for c in chunks])


def _graph() -> tuple[KnowledgeGraph, dict[str, list[str]]]:
    """Two communities over ten pages; every page has an "Options" section."""
    headings: dict[str, list[str]] = {}
    for p in range(5):
        headings[f"wal{p}#0"] = ["Write-Ahead Logging", f"Checkpoint {p}"]
        headings[f"wal{p}#1"] = ["Write-Ahead Logging", "Options"]
        headings[f"fts{p}#0"] = ["Full-Text Search", f"Tokenizer {p}"]
        headings[f"fts{p}#1"] = ["Full-Text Search", "Options"]
    wal_chunks = [c for c in headings if c.startswith("wal")]
    fts_chunks = [c for c in headings if c.startswith("fts")]
    entities = {
        "wal": _entity("wal", "WAL", "acronym", wal_chunks),
        "checkpoint": _entity("checkpoint", "checkpoint", "term", wal_chunks),
        "tbl1": _entity("tbl1", "tbl1", "identifier", wal_chunks),  # from the pages' examples
        "tokenizer": _entity("tokenizer", "tokenizer", "term", fts_chunks),
        "fts5": _entity("fts5", "FTS5", "acronym", fts_chunks),
        "t332": _entity("t332", "T332", "identifier", fts_chunks),
        "options": _entity("options", "Options", "term", wal_chunks + fts_chunks),
    }
    relations = {
        r.id: r
        for r in [
            Relation("wal|require|checkpoint", "wal", "checkpoint", "require", 3.0,
                     "WAL requires checkpoints to keep the log file small.", ["wal0#0"]),
            Relation("tbl1|co_occurs|wal", "tbl1", "wal", "co_occurs", 5.0, "", ["wal1#0"]),
            Relation("fts5|use|tokenizer", "fts5", "tokenizer", "use", 3.0, "FTS5 uses a tokenizer.", ["fts0#0"]),
            Relation("fts5|co_occurs|t332", "fts5", "t332", "co_occurs", 5.0, "", ["fts1#0"]),
        ]
    }
    communities = {
        0: Community(0, 0, ["checkpoint", "tbl1", "wal"]),
        1: Community(1, 0, ["fts5", "t332", "tokenizer"]),
    }
    return KnowledgeGraph(entities, relations, communities), headings


def test_page_structure_and_example_identifiers() -> None:
    _, headings = _graph()
    assert structural_headings((c.split("#")[0], h[1:]) for c, h in headings.items()) == frozenset({"option"})
    assert is_code_like("tbl1") and is_code_like("pub3b") and is_code_like("T332") and is_code_like("t1")
    assert not is_code_like("journal_mode") and not is_code_like("WAL") and not is_code_like("sqlite3_open()")


def test_names_set_communities_apart_and_skip_page_structure() -> None:
    kg, headings = _graph()
    names = name_communities(kg, headings)
    # each community's mentions are all on its pages, half of them under "Options":
    # the pages' title names it, not their page structure
    assert names == {0: "Write-Ahead Logging", 1: "Full-Text Search"}
    for name in names.values():
        assert "Options" not in name and "tbl1" not in name and "T332" not in name


def test_report_quotes_the_sentence_introducing_its_central_entity_and_no_counts() -> None:
    kg, headings = _graph()
    write_reports(kg, ExtractiveReportWriter(n_entities=2), min_size=3, headings=headings)
    wal = kg.reports[0]
    assert wal.title == wal.name == "Write-Ahead Logging"
    assert wal.pages and all(p.startswith("wal") for p in wal.pages)
    # the example's identifier, though the most connected, leads nothing
    assert "tbl1" not in wal.summary and "entities" not in wal.summary
    # its typed relation's sentence opens with WAL: it introduces WAL, and is quoted once
    assert wal.summary == "WAL requires checkpoints to keep the log file small."
    assert not wal.summary.startswith(wal.title)


def test_a_report_never_lists_no_entity() -> None:
    from graphrag.model import Community, Entity
    from graphrag.reports import CommunityContext, ExtractiveReportWriter

    codes = [(Entity(id=f"e{i}", name=name, type="identifier"), 1.0) for i, name in enumerate(["tbl1", "T332", "pub3b"])]
    only_codes = CommunityContext(community=Community(id=1, level=0, members=["e0", "e1", "e2"]), entities=codes, relations=[])
    summary = ExtractiveReportWriter().write(only_codes).summary
    assert summary and "entities" not in summary and not summary.startswith(" ")


def test_a_report_leads_with_the_manuals_sentence_and_skips_placeholders() -> None:
    from graphrag.model import Community, Entity
    from graphrag.reports import CommunityContext, ExtractiveReportWriter

    wal = Entity(id="wal", name="WAL", type="acronym", description="See the section below.")
    checkpoint = Entity(id="cp", name="checkpoint", type="term")
    placeholder = Entity(id="ph", name="<database-name>", type="identifier")
    address = Entity(id="em", name="drh@hwaci.com", type="identifier")
    relations = [
        Relation("cp|in|wal", "cp", "wal", "in", 4.0, "checkpoint in the WAL file, then", ["wal#1"]),
        Relation("wal|require|cp", "wal", "cp", "require", 3.0,
                 "A database in WAL mode requires a checkpoint to move pages back into the database file.", ["wal#0"]),
    ]
    ctx = CommunityContext(
        community=Community(id=3, level=0, members=["wal", "cp", "ph", "em"]),
        entities=[(placeholder, 9.0), (address, 8.0), (wal, 5.0), (checkpoint, 4.0)],
        relations=relations,
        phrases={"cp|in|wal": "checkpoint in WAL", "wal|require|cp": "WAL requires checkpoint"},
    )
    summary = ExtractiveReportWriter().write(ctx).summary
    assert summary == "A database in WAL mode requires a checkpoint to move pages back into the database file.", summary
    assert "<database-name>" not in summary and "drh@" not in summary and "See the section below" not in summary


def test_a_relation_phrase_agrees_with_a_plural_subject() -> None:
    from graphrag.reports import relation_phrase

    entities = {
        "engines": _entity("engines", "database engines", "term", ["a#0"]),
        "sql": _entity("sql", "SQL", "acronym", ["a#0"]),
        "files": _entity("files", "WAL files", "term", ["a#0"]),
        "dir": _entity("dir", "directory", "term", ["a#0"]),
        "sqlite": _entity("sqlite", "SQLite", "component", ["a#0"]),
    }
    kg = KnowledgeGraph(entities=entities, relations={})
    phrase = lambda s, t, o: relation_phrase(kg, Relation(f"{s}|{t}|{o}", s, o, t, 1.0, "", ["a#0"]))  # noqa: E731
    assert phrase("engines", "compile", "sql") == "database engines compile SQL"
    assert phrase("files", "is_kept_in", "dir") == "WAL files are kept in directory"
    assert phrase("files", "write_to", "dir") == "WAL files write to directory"
    assert phrase("sqlite", "compile", "sql") == "SQLite compiles SQL"  # a name keeps the singular
