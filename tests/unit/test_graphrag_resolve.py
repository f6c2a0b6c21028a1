"""Entity resolution: variants merge (keeping aliases), different things stay apart."""

from __future__ import annotations

from pathlib import Path

from graphrag import GraphConfig, RuleExtractor
from graphrag.build import extract_all
from graphrag.model import ChunkExtraction, ExtractedEntity, ExtractedRelation
from graphrag.resolution import resolve
from ingest import ChunkingConfig, chunk_document, iter_collection, load_token_counter

MANUAL = Path(__file__).resolve().parents[2] / "examples" / "sqlite"


def _ex(chunk_id: str, *entities: tuple[str, str], relations: tuple[tuple[str, str, str], ...] = ()) -> ChunkExtraction:
    return ChunkExtraction(
        chunk_id,
        [ExtractedEntity(name=n, type=t, spans=[(0, len(n))]) for n, t in entities],
        [ExtractedRelation(s, d, t, 1.0, f"{s} {t} {d}.", (0, 10)) for s, t, d in relations],
    )


def test_surface_variants_merge_and_keep_their_aliases() -> None:
    ents, _ = resolve(
        [
            _ex("a#0", ("shared_buffers", "parameter")),
            _ex("a#1", ("shared buffers", "term")),
            _ex("a#2", ("Shared Buffers", "term")),
            _ex("a#3", ("`shared_buffers`", "identifier")),
            _ex("a#4", ("shared-buffer", "term")),
        ]
    )
    assert list(ents) == ["shared_buffer"]
    e = ents["shared_buffer"]
    assert e.name == "shared_buffers" and e.type == "parameter"
    assert set(e.aliases) == {"shared buffers", "Shared Buffers", "`shared_buffers`", "shared-buffer"}
    assert e.chunk_ids == ["a#0", "a#1", "a#2", "a#3", "a#4"]


def test_acronym_and_expansion_merge_through_an_alias() -> None:
    wal = ExtractedEntity(name="WAL", type="acronym", spans=[(40, 43)], aliases=["write-ahead log"])
    ents, _ = resolve(
        [
            ChunkExtraction("w#0", [wal]),
            _ex("w#1", ("write-ahead log", "term")),
            _ex("w#2", ("Write-Ahead Logs", "term")),
        ]
    )
    assert len(ents) == 1
    (e,) = ents.values()
    assert {e.name, *e.aliases} == {"WAL", "write-ahead log", "Write-Ahead Logs"}
    assert e.chunk_ids == ["w#0", "w#1", "w#2"]


def test_acronym_is_inferred_only_where_both_meet() -> None:
    together = [_ex("v#0", ("VFS", "acronym"), ("virtual file system", "term")), _ex("v#1", ("VFS", "acronym"))]
    ents, _ = resolve(together)
    assert len(ents) == 1 and "virtual file system" in next(iter(ents.values())).aliases
    apart = [_ex("v#0", ("VFS", "acronym")), _ex("v#1", ("virtual file system", "term"))]
    assert len(resolve(apart)[0]) == 2
    assert len(resolve(together, GraphConfig(infer_acronyms=False))[0]) == 2


def test_same_name_with_separate_evidence_stays_apart() -> None:
    exs = [
        _ex("cli#0", ("sqlite3", "command"), ("-header", "option"), relations=(("sqlite3", "uses", "-header"),)),
        _ex("cli#1", ("sqlite3", "command")),
        _ex("cli#2", ("sqlite3", "command")),
        _ex("py#0", ("sqlite3", "module"), ("Connection", "class"), relations=(("Connection", "part_of", "sqlite3"),)),
        _ex("py#1", ("sqlite3", "module")),
        _ex("py#2", ("sqlite3", "identifier")),
    ]
    ents, rels = resolve(exs)
    assert {"sqlite3@command", "sqlite3@module"} <= set(ents)
    assert ents["sqlite3@command"].chunk_ids == ["cli#0", "cli#1", "cli#2"]
    assert len(ents) == 4
    # a weak-typed mention joins the type used in its own document, not a third entity
    assert ents["sqlite3@module"].chunk_ids == ["py#0", "py#1", "py#2"]
    assert "sqlite3@command|uses|-header" in rels
    assert "connection|part_of|sqlite3@module" in rels


def test_a_rare_second_type_does_not_split() -> None:
    exs = [_ex(f"c#{i}", ("SQLITE_BUSY", "error_code")) for i in range(6)] + [_ex("c#9", ("SQLITE_BUSY", "option"))]
    ents, _ = resolve(exs)
    assert list(ents) == ["sqlite_busy"] and ents["sqlite_busy"].type == "error_code"
    # guessed constant types are one family: never split even when both are common
    exs += [_ex(f"d#{i}", ("SQLITE_BUSY", "option")) for i in range(5)]
    assert len(resolve(exs)[0]) == 1


def test_relations_merge_with_weights_chunks_and_evidence() -> None:
    exs = [
        _ex("r#0", ("WAL", "acronym"), ("checkpoint", "term"), relations=(("WAL", "requires", "checkpoint"), ("checkpoint", "co_occurs", "WAL"))),
        _ex("r#1", ("WAL", "acronym"), ("checkpoints", "term"), relations=(("WAL", "requires", "checkpoints"),)),
    ]
    _, rels = resolve(exs)
    req = rels["wal|requires|checkpoint"]
    assert req.weight == 2.0 and req.chunk_ids == ["r#0", "r#1"] and len(req.evidence) == 2
    # the typed relation stands for the pair: their co-occurrence is no second edge
    assert "checkpoint|co_occurs|wal" not in rels


def _co(chunk_id: str, a: str, b: str, sentence: str) -> ChunkExtraction:
    return ChunkExtraction(
        chunk_id,
        [ExtractedEntity(name=n, type="acronym", spans=[(0, len(n))]) for n in (a, b)],
        [ExtractedRelation(a, b, "co_occurs", 1.0, sentence, (0, len(sentence)))],
    )


def test_co_occurrence_is_a_fallback_named_in_enough_sentences() -> None:
    exs = [
        _co("c#0", "VFS", "WAL", "The VFS and WAL ..."),
        _co("c#1", "VFS", "WAL", "Each WAL needs a VFS ..."),
        # one sentence that overlapping chunks both hold counts once
        _co("d#0", "WAL", "MUTEX", "The WAL and the MUTEX ..."),
        _co("d#1", "WAL", "MUTEX", "The WAL and the  MUTEX ..."),
    ]
    _, rels = resolve(exs, GraphConfig(min_cooccurrence_sentences=2))
    co = rels["vfs|co_occurs|wal"]  # undirected: stored smaller id first
    assert co.source == "vfs" and co.chunk_ids == ["c#0", "c#1"]
    assert "mutex|co_occurs|wal" not in rels  # named together by one sentence only: chance
    _, once = resolve(exs, GraphConfig(min_cooccurrence_sentences=1))
    assert "mutex|co_occurs|wal" in once
    assert "vfs|co_occurs|wal" not in resolve(exs)[1]  # the default asks for three sentences


def test_description_prefers_the_entity_own_section() -> None:
    a = ExtractedEntity("VACUUM", "statement", [(0, 6)], description="VACUUM is mentioned in passing.")
    b = ExtractedEntity("VACUUM", "statement", [(0, 0), (10, 16)], description="The VACUUM command rebuilds the database file.")
    ents, _ = resolve([ChunkExtraction("x#0", [a]), ChunkExtraction("lang_vacuum#0", [b])])
    e = ents["vacuum"]
    assert e.description.startswith("The VACUUM command") and e.description_chunk == "lang_vacuum#0"


def test_resolution_on_real_pages() -> None:
    count = load_token_counter()
    chunks = [
        c
        for doc in iter_collection([MANUAL / "wal.md", MANUAL / "isolation.md", MANUAL / "c3ref_wal_checkpoint_v2.md"])
        for c in chunk_document(doc, ChunkingConfig(), count)
    ]
    ents, rels = resolve(extract_all(chunks, RuleExtractor()))
    wal = ents["wal"]
    assert wal.name == "WAL"
    assert {"write-ahead log", "Write-Ahead Log"} <= set(wal.aliases)
    assert len({c.split("#")[0] for c in wal.chunk_ids}) == 3  # all three pages
    assert not [e for e in ents if e.startswith("write_ahead_log")]  # merged, not duplicated
    assert any(r.source == "wal" or r.target == "wal" for r in rels.values())
    assert resolve(extract_all(chunks, RuleExtractor())) == (ents, rels)
