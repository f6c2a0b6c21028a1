"""Very large text and Markdown files are parsed a part at a time (ingest.parts): the
joined document must be exactly the whole-file parse, and parts are cut only where
that holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest import Document, SkippedFile, iter_collection
from ingest.chunking import ChunkingConfig, chunk_document
from ingest.parse_cache import ParseCache
from ingest.parts import iter_parts, load_in_parts
from ingest.safe_load import load_or_skip
from ingest.tokens import load_token_counter

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sqlite"
PAGES = ("wal.md", "lang_createtable.md", "fts5.md", "pragma.md", "lockingv3.md")


def load(path: Path, part_bytes: int, **kwargs) -> Document | SkippedFile:  # type: ignore[no-untyped-def]
    (result,) = iter_collection([path], part_bytes=part_bytes, **kwargs)
    return result


@pytest.fixture(scope="module")
def long_markdown(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real manual pages one after another, frontmatter on the first only."""
    bodies = []
    for i, name in enumerate(PAGES):
        text = (SAMPLE / name).read_text()
        if i and text.startswith("---"):
            text = text.split("---", 2)[2]
        bodies.append(text.strip())
    path = tmp_path_factory.mktemp("long") / "manual.md"
    path.write_text("\n\n".join(bodies) + "\n")
    return path


def test_markdown_in_parts_is_the_whole_file_parse(long_markdown: Path) -> None:
    whole = load(long_markdown, part_bytes=2**30)
    parts = list(iter_parts(long_markdown, "markdown", 20_000))
    parted = load(long_markdown, part_bytes=20_000)  # through the sandbox, as in a build
    assert isinstance(whole, Document) and isinstance(parted, Document)
    assert len(parts) > 10
    assert b"".join(parts) == long_markdown.read_bytes()
    assert parted.text == whole.text
    assert parted.blocks == whole.blocks
    assert (parted.title, parted.metadata, parted.content_hash) == (whole.title, whole.metadata, whole.content_hash)
    counter = load_token_counter()
    config = ChunkingConfig()
    assert chunk_document(parted, config, counter) == chunk_document(whole, config, counter)


def test_plain_text_in_parts_is_the_whole_file_parse(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    paragraphs = [f"2.{i} Section {i}\n\nParagraph {i} says something about pages and locks." for i in range(2000)]
    path.write_text("\n\n".join(paragraphs) + "\n")
    whole = load(path, part_bytes=2**30, load_timeout_s=None)
    parted = load(path, part_bytes=8_000, load_timeout_s=None)
    assert isinstance(whole, Document) and isinstance(parted, Document)
    assert (parted.text, parted.blocks, parted.title) == (whole.text, whole.blocks, whole.title)


def test_parts_never_cut_a_code_fence_or_start_with_a_thematic_break(tmp_path: Path) -> None:
    fence = "```\n" + "\n\n".join(f"# not a heading {i}\nvalue = {i}" for i in range(400)) + "\n```\n"
    text = "# Title\n\nIntro.\n\n" + fence + "\n---\n\nAfter the break.\n\n" + "\n\n".join(
        f"## Part {i}\n\nBody {i}." for i in range(300)
    )
    path = tmp_path / "fenced.md"
    path.write_text(text)
    parts = [p.decode() for p in iter_parts(path, "markdown", 2_000)]
    assert "".join(parts) == text
    assert len(parts) > 2
    assert all(p.count("```") % 2 == 0 for p in parts)  # each fence opens and closes in one part
    assert not any(p.startswith("---") for p in parts)
    whole = load(path, part_bytes=2**30, load_timeout_s=None)
    parted = load(path, part_bytes=2_000, load_timeout_s=None)
    assert isinstance(parted, Document) and isinstance(whole, Document)
    assert parted.blocks == whole.blocks
    assert sum(b.kind == "code" for b in parted.blocks) == 1


def test_an_edit_reparses_only_its_part(long_markdown: Path, tmp_path: Path) -> None:
    path = tmp_path / "manual.md"
    original = long_markdown.read_text()
    path.write_text(original)
    cache = ParseCache(tmp_path / "parsed.sqlite")
    try:
        first = load(path, part_bytes=20_000, load_timeout_s=None, parsed=cache)
        n_parts = cache.misses
        path.write_text(original.replace("checkpoint", "CHECKPOINT", 1))
        cache.misses = cache.hits = 0
        second = load(path, part_bytes=20_000, load_timeout_s=None, parsed=cache)
    finally:
        cache.close()
    assert isinstance(first, Document) and isinstance(second, Document)
    assert n_parts > 10
    assert (cache.misses, cache.hits) == (1, n_parts - 1)
    assert second.content_hash != first.content_hash
    assert "CHECKPOINT" in second.text


def test_a_stray_non_utf8_byte_falls_back_in_its_own_part_only(tmp_path: Path) -> None:
    path = tmp_path / "mixed.md"
    body = "\n\n".join(f"## Section {i}\n\nCaf\u00e9 {i}." for i in range(500))
    path.write_bytes(("# Mixed\n\n" + body).encode() + b"\n\n# Tail\n\nna\xefve\n")
    result = load(path, part_bytes=2_000, load_timeout_s=None)
    assert isinstance(result, Document)
    assert "Caf\u00e9 0." in result.text and result.text.endswith("na\u00efve")
    assert len([w for w in result.warnings if "cp1252" in w]) == 1


def test_a_part_that_fails_skips_the_file_and_names_the_part(long_markdown: Path) -> None:
    def load_part(raw: bytes, index: int) -> Document | SkippedFile:
        if index == 2:  # what the sandbox returns when a part's parse hits the time limit
            return SkippedFile(path="manual.md", reason="loader timed out after 60 s")
        return load_or_skip(raw, doc_id="manual.md", path="manual.md", fmt="markdown")

    parts = list(iter_parts(long_markdown, "markdown", 20_000))
    result = load_in_parts(iter(parts), load_part, path="manual.md", content_hash="x")
    start = len(parts[0]) + len(parts[1])
    assert isinstance(result, SkippedFile)
    assert result.reason == f"part 3 (bytes {start}-{start + len(parts[2])}): loader timed out after 60 s"
