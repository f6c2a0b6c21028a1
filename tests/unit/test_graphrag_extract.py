"""The rule-based extractor on real pages of the bundled SQLite manual."""

from __future__ import annotations

import pytest

from graphrag import RuleExtractor
from graphrag.extract.relations import relation_between, sentence_relations, topic_subject
from graphrag.model import ChunkExtraction
from graphrag.text import code_regions, entity_key, split_units
from ingest.models import Chunk
from manual_chunks import manual_chunks

PAGES = ["pragma.md", "rescode.md", "lang_corefunc.md", "wal.md", "compile.md", "datatype3.md", "lang_createtable.md"]


@pytest.fixture(scope="module")
def chunks() -> list[Chunk]:
    return manual_chunks(PAGES)


@pytest.fixture(scope="module")
def extractor(chunks: list[Chunk]) -> RuleExtractor:
    return RuleExtractor().fit(chunks)


def _chunk_with(chunks: list[Chunk], text: str) -> Chunk:
    found = [c for c in chunks if text in c.text]
    assert found, f"no chunk contains {text!r}"
    return found[0]


def _types(ex: ChunkExtraction) -> dict[str, str]:
    return {e.name: e.type for e in ex.entities}


def test_pragmas_are_parameters_with_their_pragma_alias(chunks: list[Chunk], extractor: RuleExtractor) -> None:
    ex = extractor.extract(_chunk_with(chunks, "PRAGMA schema.journal_mode = DELETE"))
    jm = next(e for e in ex.entities if e.name == "journal_mode")
    assert jm.type == "parameter" and "PRAGMA journal_mode" in jm.aliases


def test_result_codes_functions_options_and_types(chunks: list[Chunk], extractor: RuleExtractor) -> None:
    types = _types(extractor.extract(_chunk_with(chunks, "The SQLITE_BUSY result code indicates")))
    assert types["SQLITE_BUSY"] == "error_code"
    all_types: dict[str, set[str]] = {}
    for c in chunks:
        for e in extractor.extract(c).entities:
            all_types.setdefault(e.name, set()).add(e.type)
    assert "function" in all_types["zeroblob()"]  # lang_corefunc: zeroblob(N)
    assert "function" in all_types["sqlite3_wal_checkpoint()"]
    assert "option" in all_types["SQLITE_ENABLE_FTS5"]  # compile.md: a compile-time option
    assert "data_type" in all_types["INTEGER"]
    assert "statement" in all_types["CREATE TABLE"]
    assert "keyword" in all_types["WITHOUT ROWID"]
    # learned multi-word terms and heading terms, no stopword-edged junk
    terms = {n for n, ts in all_types.items() if "term" in ts}
    assert {"rollback journal", "database connection"} <= {t.lower() for t in terms}
    assert not any(t.split()[0].lower() in {"the", "of", "and", "is"} for t in terms)


def test_mention_offsets_point_at_the_text(chunks: list[Chunk], extractor: RuleExtractor) -> None:
    for c in chunks[:60]:
        for e in extractor.extract(c).entities:
            for s, t in e.spans:
                if t > s:  # (0, 0) marks the section heading's entity
                    assert entity_key(c.text[s:t]) in {entity_key(e.name), *(entity_key(a) for a in e.aliases)}


def test_acronym_gets_its_expansion_as_alias(chunks: list[Chunk], extractor: RuleExtractor) -> None:
    ex = extractor.extract(_chunk_with(chunks, '"Write-Ahead Log" option (hereafter referred to as "WAL")'))
    wal = next(e for e in ex.entities if e.name == "WAL")
    assert "Write-Ahead Log" in wal.aliases


def test_typed_relations_from_real_sentences(chunks: list[Chunk], extractor: RuleExtractor) -> None:
    c = _chunk_with(chunks, "WAL normally requires that the VFS support shared-memory")
    ex = extractor.extract(c)
    rels = {(r.source, r.type, r.target) for r in ex.relations}
    # the verb's lemma is the type
    assert ("WAL", "require", "VFS") in rels
    # every relation cites the sentence it was read from, and two names a sentence
    # relates by a verb do not co-occur there as well
    for r in ex.relations:
        assert r.span is not None and c.text[r.span[0] : r.span[1]] == r.description
    for r in ex.relations:
        if r.type == "co_occurs":
            assert not any(
                t.span == r.span and {t.source, t.target} == {r.source, r.target} for t in ex.relations if t.type != "co_occurs"
            )


@pytest.mark.parametrize(
    ("between", "expected"),
    [
        (" is controlled by the ", ("control", True)),
        (" is limited by the ", ("limit", True)),
        (" normally requires that the ", ("require", False)),
        (" is defined in ", ("is_defined_in", False)),
        (" is a ", ("is_a", False)),
        (" is part of the ", ("part_of", False)),
        (" is compatible with ", ("is_compatible_with", False)),
        (", such as ", ("is_a", True)),
        (" contains the ", ("contain", False)),
        (" uses many fewer ", ("use", False)),
        ("() uses ", ("use", False)),  # what a call's mention leaves of it
        (" pragma sets the ", ("set", False)),  # the subject's head noun
        (" writes to the ", ("write_to", False)),
        (" copies pages into the ", ("copy_into", False)),
        (", which uses ", ("use", False)),
        (" falls back to ", ("fall_back_to", False)),  # the particle is part of the verb
        (" relies upon the ", ("rely_upon", False)),
        (" over ", ("over", False)),  # a bare preposition, though "over" can be a verb
        (" and ", None),
        (" does not use ", None),  # a negation is no relation
        (" returns an error if ", None),  # nor a condition
        (" returns a pointer to an ", None),  # the preposition belongs to the noun
        (" allows applications to read ", None),  # a second clause
        (" files ", None),  # "WAL files": a plural noun, not a verb
        (" interfaces from ", None),  # "VXLAN interfaces from B": a plural noun too
        (" is a daemon that handles the ", None),  # B is what the daemon handles
        (" clauses may only occur at the end of the entire compound ", None),  # "occur" takes no object
        (" occurs in ", ("occur_in", False)),  # ...but its own preposition's
    ],
)
def test_relation_patterns(between: str, expected: tuple[str, bool] | None) -> None:
    assert relation_between(between) == expected


def test_a_verb_reaches_coordinated_names_and_a_third_argument() -> None:
    assert sentence_relations(["A", "B", "C", "D"], [" and ", " require ", " or "]) == [
        ("B", "require", "C"), ("B", "require", "D"), ("A", "require", "C"), ("A", "require", "D"),
    ]
    # "A uses B and C requires D": C starts a clause of its own
    assert sentence_relations(["A", "B", "C", "D"], [" uses ", " and ", " requires "]) == [
        ("A", "use", "B"), ("C", "require", "D"),
    ]
    assert sentence_relations(["SQLite", "schema", "sqlite_schema"], [" stores the ", " in the "]) == [
        ("SQLite", "store", "schema"), ("schema", "is_stored_in", "sqlite_schema"),
    ]
    assert sentence_relations(["A", "B"], [" is used by "]) == [("B", "use", "A")]
    # two names as one noun phrase: an instance and its class, not a product and its part
    assert sentence_relations(["HUP", "signal"], [" "], ["acronym", "term"]) == [("HUP", "is_a", "signal")]
    assert sentence_relations(["shell variable", "ZDOTDIR"], [" "], ["term", "constant"]) == [
        ("ZDOTDIR", "is_a", "shell variable")
    ]
    assert sentence_relations(["SQLite", "error code"], [" "], ["component", "term"]) == []
    assert sentence_relations(["MPLS", "kernel modules"], [" "], ["acronym", "term"]) == []
    # a name after a preposition is that preposition's object, no subject
    assert sentence_relations(["model", "FRR", "figure"], [" implemented by ", " is shown in "]) == [
        ("FRR", "implement", "model")
    ]


def test_types_read_back_as_words() -> None:
    from graphrag.lexicon import inverse_relation_words, relation_words

    assert relation_words("require") == "requires" and relation_words("fall_back_to") == "falls back to"
    assert relation_words("is_stored_in") == "is stored in" and relation_words("over") == "over"
    assert relation_words("uses") == "uses"  # an LLM's or an older index's type, as it is
    assert inverse_relation_words("implement") == "is implemented by"
    assert inverse_relation_words("is_a") == "(inverse) is a"


def test_a_demonstrative_stands_for_the_topic_only_when_it_names_its_kind() -> None:
    assert topic_subject("This PRAGMA sets the busy handler.", "parameter") == len("This PRAGMA")
    assert topic_subject("This routine sets a busy handler.", "function") == len("This routine")
    # one command of a section about a daemon, a pronoun: not the topic
    assert topic_subject("This command requests the locator.", "term") == 0
    assert topic_subject("It returns SQLITE_BUSY.", "function") == 0


def test_code_is_kept_out_of_prose_relations(chunks: list[Chunk]) -> None:
    c = _chunk_with(chunks, "PRAGMA journal_mode=WAL;")
    regions = code_regions(c.text)
    assert any("PRAGMA journal_mode=WAL;" in c.text[s:e] for s, e in regions)
    units = [c.text[s:e] for s, e in split_units(c.text, regions)]
    assert "PRAGMA journal_mode=WAL;" in units


def test_a_statement_over_several_lines_without_fences_is_code() -> None:
    # loaders drop fences: the chunk holds the bare statement
    text = ("Initialize the window to the first 7 entries is easy:\n\nSELECT * FROM contacts\n"
            " ORDER BY lastname, firstname\n LIMIT 7;\n\nWhen the user scrolls down, it needs the next 7.")
    (region,) = code_regions(text)
    assert text[slice(*region)].startswith("SELECT * FROM contacts") and text[slice(*region)].rstrip().endswith("LIMIT 7;")
    commented = 'Intro sentence here.\n\n-- Create an FTS table named "papers"\nCREATE VIRTUAL TABLE papers USING fts3(author, document);\n\nMore prose.'
    (region,) = code_regions(commented)
    assert commented[slice(*region)].startswith("-- Create") and commented[slice(*region)].endswith("(author, document);")
    # a sentence that starts with an SQL keyword is no statement
    assert code_regions("SELECT statements read rows.\nThey never write them.") == []
    chunk = Chunk(chunk_id="d#0", doc_id="d", ordinal=0, text=text, heading_path=["Row Values"], start=0, end=len(text), n_tokens=40)
    found = RuleExtractor().extract(chunk)
    assert not [r for r in found.relations if r.type == "contact"]  # "FROM contacts ORDER" is no relation


def test_the_subject_of_a_clause_or_infinitive_is_no_object() -> None:
    option, sqlite = ["compile-time option", "SQLite"], ["compile-time option", "SQLite"]
    assert sentence_relations(option, [" causes "], tail=" to run about 2% faster.") == []
    assert sentence_relations(option, [" enables "], tail=" to use batch atomic writes.") == []
    assert sentence_relations(option, [" makes "], tail=" run more efficiently.") == []
    assert sentence_relations(sqlite, [" means that "], tail=" can never be used by two threads.") == []
    assert sentence_relations(option, [" prevents "], tail=" from being fully testable.") == []
    assert sentence_relations(["lock", "writer"], [" prevents another "], tail=" from the file.") == [("lock", "prevent", "writer")]
    # objects stay objects
    assert sentence_relations(option, [" makes "], tail=" faster.") == [("compile-time option", "make", "SQLite")]
    assert sentence_relations(["option", "busy handler"], [" enables the "], tail=" for the connection.") == [
        ("option", "enable", "busy handler")
    ]
    assert sentence_relations(["VACUUM", "database file"], [" rebuilds the "], tail=" to reclaim space.") == [
        ("VACUUM", "rebuild", "database file")
    ]


def test_extraction_is_deterministic(chunks: list[Chunk]) -> None:
    one, two = RuleExtractor().fit(chunks), RuleExtractor().fit(list(reversed(chunks)))
    assert one.vocabulary_.terms_ == two.vocabulary_.terms_  # chunk order does not matter
    assert [one.extract(c) for c in chunks[:80]] == [two.extract(c) for c in chunks[:80]]


def test_works_without_fit_and_on_backticked_markdown() -> None:
    text = "Use `PRAGMA synchronous=NORMAL` with `journal_mode` set to WAL; see `sqlite3_wal_hook()`."
    c = Chunk(chunk_id="x#0", doc_id="x", ordinal=0, text=text, heading_path=["X"], start=0, end=len(text), n_tokens=20)
    types = _types(RuleExtractor().extract(c))
    assert types["synchronous"] == "parameter"
    assert types["sqlite3_wal_hook()"] == "function"
    assert types["journal_mode"] == "identifier"


def test_term_counts_of_parts_add_up_to_the_same_fit(chunks: list[Chunk], extractor: RuleExtractor) -> None:
    """Term statistics counted in parts (as a pool's workers do) and merged fit the very
    vocabulary one count over every chunk does."""
    from graphrag.extract.terms import TermCounts

    fresh = RuleExtractor()
    texts = [c.text for c in chunks]
    parts = [fresh.count_terms(texts[i::3]) for i in range(3)]
    whole = fresh.count_terms(texts)
    merged = TermCounts.merged(parts)
    assert merged == whole
    assert merged.n_texts == len(chunks) and len(merged.df_gram) > 1000
    fitted = fresh.fit(chunks, counts=merged)
    assert fitted.fitted_state() == extractor.fitted_state()
    assert len(fitted.vocabulary_.terms_) > 20


def test_the_lexicon_reads_lemminflects_tables_as_lemminflect_does() -> None:
    """graphrag.lexicon reads the data files itself (importing the package loads numpy);
    for the lowercase words the extractor looks up, it must agree with the library."""
    from lemminflect import getAllInflections, getAllLemmas

    from graphrag import lexicon

    for word in ["stores", "used", "written", "has", "uses", "requires", "data", "all", "another", "over", "indexes"]:
        assert lexicon._lemmas(word) == dict(getAllLemmas(word)), word
    for lemma in ["store", "write", "use", "set", "bless", "broadcast", "copy", "have"]:
        assert lexicon._forms(lemma) == dict(getAllInflections(lemma, upos="VERB")), lemma
