"""What an in-place rebuild takes from earlier work instead of redoing it: parsed
documents (ingest.parse_cache), the executor it starts, and reports whose input did
not change. Each reuse must give what the work itself would have given.

Real pages of the bundled manual, the real loaders (in their sandbox), chunker,
rule extractor, resolution, Leiden and report writer.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import graphrag.update as graph_update
import ingest.parse_cache as parse_cache
from arborgraph.index import schema as S
from arborgraph.config import Config
from arborgraph.pipeline import build_index, input_kilobytes
from arborgraph.index.store import open_generation
from graphrag import RuleExtractor
from graphrag.schema import EXTRACTIONS
from graphrag.tables import extractions_to_table
from graphrag.update import build_graph_state, state_from_tables, state_to_tables, update_graph
from ingest import chunk_document, iter_collection, load_token_counter
from ingest.models import Chunk, Document
from ingest.parse_cache import ParseCache
from conftest import copy_pages

PAGES = ["wal.md", "lockingv3.md", "autoinc.md"]


def load(docs: Path, cache: ParseCache | None) -> list[Document]:
    found = list(iter_collection([docs], parsed=cache))
    assert all(isinstance(d, Document) for d in found)
    return found  # type: ignore[return-value]


def test_unchanged_files_come_from_the_cache_and_an_edit_of_the_same_size_is_parsed(
    tmp_path: Path, sample_slice: Path
) -> None:
    docs = copy_pages(sample_slice, tmp_path / "docs", PAGES)
    cache = ParseCache(tmp_path / "parsed.sqlite")
    first = load(docs, cache)
    assert (cache.hits, cache.misses) == (0, len(PAGES))
    again = load(docs, cache)
    assert (cache.hits, cache.misses) == (len(PAGES), len(PAGES))
    assert again == first == load(docs, None)

    page = docs / "wal.md"
    raw = page.read_bytes()
    edited = raw.replace(b"checkpoint", b"CHECKPOINT", 1)
    assert edited != raw and len(edited) == len(raw)
    page.write_bytes(edited)
    after = load(docs, cache)
    assert cache.misses == len(PAGES) + 1  # only the edited file parsed again
    assert after == load(docs, None)
    wal = next(d for d in after if d.doc_id == "wal.md")
    assert "CHECKPOINT" in wal.text and wal.content_hash == hashlib.sha256(edited).hexdigest()
    cache.close()


def test_a_changed_loader_parses_every_file_again(
    tmp_path: Path, sample_slice: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = copy_pages(sample_slice, tmp_path / "docs", PAGES)
    cache = ParseCache(tmp_path / "parsed.sqlite")
    load(docs, cache)
    monkeypatch.setattr(parse_cache, "loader_fingerprint", lambda: "another loader version")
    load(docs, cache)
    assert (cache.hits, cache.misses) == (0, 2 * len(PAGES))
    cache.close()


def test_a_changed_sidecar_applies_to_a_cached_parse(tmp_path: Path, sample_slice: Path) -> None:
    docs = copy_pages(sample_slice, tmp_path / "docs", PAGES)
    sidecar = docs / "wal.md.meta.yaml"
    sidecar.write_text("acl: [team-a]\ntitle: Write-ahead logging\n", encoding="utf-8")
    cache = ParseCache(tmp_path / "parsed.sqlite")
    load(docs, cache)
    sidecar.write_text("acl: [team-b]\n", encoding="utf-8")
    after = load(docs, cache)
    assert cache.hits == len(PAGES)
    assert after == load(docs, None)
    wal = next(d for d in after if d.doc_id == "wal.md")
    assert wal.metadata.acl == ["team-b"] and wal.title != "Write-ahead logging"
    cache.close()


def _lexical_only(config: Config) -> tuple[None, str]:
    return None, "no embedding model in this test"


def _chunks(index: Path) -> list[dict[str, object]]:
    return open_generation(index).table(S.CHUNKS).to_pylist()


def test_changed_chunking_settings_rechunk_documents_from_the_parse_cache(tmp_path: Path, sample_slice: Path) -> None:
    docs = copy_pages(sample_slice, tmp_path / "docs", PAGES)
    base = Config(build_tree=False, build_graph=False, executor="serial")
    index = tmp_path / "idx"
    build_index([docs], index, base, embedder_factory=_lexical_only)
    assert (index / "cache" / "parsed.sqlite").is_file()
    before = len(_chunks(index))
    smaller = base.model_copy(update={"chunking": base.chunking.model_copy(update={"target_tokens": 90})})
    report = build_index([docs], index, smaller, embedder_factory=_lexical_only)
    assert report.stages["documents"]["chunks_reused_from"] == 0
    fresh = tmp_path / "fresh"
    build_index([docs], fresh, smaller, embedder_factory=_lexical_only)
    assert _chunks(index) == _chunks(fresh)
    assert len(_chunks(index)) > before


def test_the_executor_is_chosen_by_the_files_that_changed(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_bytes(b"a" * 6000)
    (docs / "b.md").write_bytes(b"b" * 3000)
    assert input_kilobytes([docs]) == 9
    same = {hashlib.sha256(b"a" * 6000).hexdigest()}
    assert input_kilobytes([docs], same) == 3
    (docs / "a.md").write_bytes(b"c" * 6000)  # edited, same size: counted again
    assert input_kilobytes([docs], same) == 9


def _chunks_of(docs: Path) -> list[Chunk]:
    cfg, count = Config(), load_token_counter()
    return [c for d in iter_collection([docs]) if isinstance(d, Document) for c in chunk_document(d, cfg.chunking, count)]


@pytest.mark.parametrize("edit", ["append", "change", "delete"])
def test_an_update_keeps_reports_and_extraction_rows_exactly_as_a_full_comparison_would(
    tmp_path: Path, sample_slice: Path, monkeypatch: pytest.MonkeyPatch, edit: str
) -> None:
    docs = copy_pages(sample_slice, tmp_path / "docs", [*PAGES, "lang_transaction.md", "lang_vacuum.md"])
    built, _ = build_graph_state(_chunks_of(docs), extractor=RuleExtractor())
    old = state_from_tables(state_to_tables(built))
    if edit == "append":
        with (docs / "wal.md").open("a", encoding="utf-8") as handle:
            handle.write("\n\nThe `wal_autocheckpoint` pragma also limits how large the WAL file grows.\n")
    elif edit == "change":
        page = docs / "lockingv3.md"
        page.write_text(page.read_text(encoding="utf-8").replace("PENDING", "WAITING", 3), encoding="utf-8")
    else:
        (docs / "autoinc.md").unlink()
    after = _chunks_of(docs)

    new, update = update_graph(old, after, extractor=RuleExtractor())
    # every entity dirty: each kept report is decided by comparing signatures
    monkeypatch.setattr(
        graph_update, "_dirty_entities", lambda old_graph, entities, relations, touched: set(entities) | set(old_graph.entities)
    )
    reference, reference_update = update_graph(old, after, extractor=RuleExtractor())
    assert update.reports_reused > 0 and update.reports_redone > 0
    assert update.redone_report_ids == reference_update.redone_report_ids
    tables, expected = state_to_tables(new), state_to_tables(reference)
    assert all(tables[name].equals(expected[name]) for name in expected)
    # the stored rows of unchanged chunks, taken as they were, are what encoding gives
    assert new.stored_rows is not None and len(new.stored_rows[1]) == update.chunks_reused
    encoded = extractions_to_table(new.extractions, new.hashes, new.extractor)
    assert tables[EXTRACTIONS].equals(encoded, check_metadata=True)


def test_a_build_after_one_without_structures_builds_them_again(sample_slice: Path, tmp_path: Path) -> None:
    from arborgraph.config import load_config

    docs = copy_pages(sample_slice, tmp_path / "docs", PAGES)
    index = tmp_path / "idx"
    build_index([docs], index, Config())
    flat = load_config(environ={}, overrides={"build_tree": False, "build_graph": False})
    assert build_index([docs], index, flat, force=True).stages.get("tree") is None
    # the live generation has neither structure: this build must make them, not take
    # the missing ones for unchanged
    again = build_index([docs], index, Config())
    assert not again.unchanged
    gen = open_generation(index)
    assert any(name.startswith("tables/raptor_nodes.") for name in gen.manifest.files)
    assert any(name.startswith("tables/entities.") for name in gen.manifest.files)
