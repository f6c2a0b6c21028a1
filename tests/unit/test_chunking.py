"""Chunking and token counting on real documents, plus properties under hypothesis."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import ingest.tokens as tokens
from ingest import Chunk, ChunkingConfig, Document, chunk_document, iter_collection, load_token_counter
from ingest.loaders._common import BlockSpec, build_document
from ingest.tokens import estimate_wordpiece_tokens

DATA = Path(__file__).parents[1] / "data"
COUNT = load_token_counter()
CONFIG = ChunkingConfig()


def real_documents() -> list[Document]:
    docs = list(iter_collection([DATA], load_timeout_s=None))
    return [d for d in docs if isinstance(d, Document)]


DOCS = {d.doc_id: d for d in real_documents()}


def make_doc(specs: list[BlockSpec], title: str = "Manual") -> Document:
    return build_document(specs, raw=b"x", doc_id="doc.md", path="/doc.md", fmt="markdown", title=title)


def content_blocks(doc: Document):
    return [b for b in doc.blocks if b.kind != "heading"]


def check_invariants(doc: Document, chunks: list[Chunk], config: ChunkingConfig) -> None:
    """What every chunking must satisfy, whatever the document."""
    for ordinal, chunk in enumerate(chunks):
        assert chunk.ordinal == ordinal and chunk.chunk_id == f"{doc.doc_id}#{ordinal}"
        assert doc.text[chunk.start : chunk.end] == chunk.text
        assert chunk.text == chunk.text.rstrip() and chunk.text.lstrip(" \t") == chunk.text.strip()  # code may start indented
        assert chunk.n_tokens == COUNT(chunk.text)
        assert chunk.n_tokens <= config.target_tokens + config.min_tokens
        # a chunk never contains a heading: it stays inside one section
        for block in doc.blocks:
            if block.kind == "heading":
                assert not (chunk.start <= block.start and block.end <= chunk.end)
    # every character of content is in some chunk
    covered = sorted((c.start, c.end) for c in chunks)
    for block in content_blocks(doc):
        for start, end in (span for span in _nonblank_spans(block.text, block.start)):
            assert any(s <= start and end <= e for s, e in covered) or _covered_piecewise(start, end, covered)


def _nonblank_spans(text: str, offset: int):
    return [(offset + m.start(), offset + m.end()) for m in re.finditer(r"\S+", text)]


def _covered_piecewise(start: int, end: int, covered: list[tuple[int, int]]) -> bool:
    pos = start
    for s, e in covered:
        if s <= pos < e:
            pos = e
    return pos >= end


# --- real documents -----------------------------------------------------------------


@pytest.mark.parametrize("doc_id", sorted(DOCS))
def test_real_documents_chunk_cleanly(doc_id: str) -> None:
    doc = DOCS[doc_id]
    chunks = chunk_document(doc, CONFIG, COUNT)
    assert chunks
    check_invariants(doc, chunks, CONFIG)
    for chunk in chunks:
        # the embedder sees heading path + text: it must fit the model's 256 word pieces
        assert COUNT(chunk.context_text()) + 2 <= 256
    assert chunk_document(doc, CONFIG, COUNT) == chunks  # deterministic


def test_heading_paths_follow_the_outline() -> None:
    doc = DOCS["html/sqlite_datatype3.html"]
    chunks = chunk_document(doc, CONFIG, COUNT)
    paths = [c.heading_path for c in chunks]
    # the h1 "1. Datatypes In SQLite" repeats the title: not twice in the path
    assert paths[0] == ["Datatypes In SQLite"]
    assert ["Datatypes In SQLite", "3. Type Affinity", "3.1. Determination Of Column Affinity",
            "3.1.1. Affinity Name Examples"] in paths
    assert ["Datatypes In SQLite", "2. Storage Classes and Datatypes", "2.1. Boolean Datatype"] in paths
    doc = DOCS["html/python_json.html"]
    paths = [c.heading_path for c in chunk_document(doc, CONFIG, COUNT)]
    assert paths[0] == ["json — JSON encoder and decoder"]
    assert ["json — JSON encoder and decoder", "Basic Usage"] in paths


def test_code_blocks_that_fit_are_never_split() -> None:
    checked = 0
    for doc in DOCS.values():
        chunks = chunk_document(doc, CONFIG, COUNT)
        for block in doc.blocks:
            if block.kind == "code" and COUNT(block.text) <= 150:
                checked += 1
                assert any(c.start <= block.start and block.end <= c.end for c in chunks), block.text[:60]
    assert checked >= 10  # the sample pages hold that many code blocks: the check ran


def test_overlap_is_whole_sentences_from_the_previous_chunk() -> None:
    doc = DOCS["html/sqlite_lockingv3.html"]
    chunks = chunk_document(doc, CONFIG, COUNT)
    overlapping = [(a, b) for a, b in zip(chunks, chunks[1:]) if a.heading_path == b.heading_path and b.start < a.end]
    assert len(overlapping) >= 3
    for previous, chunk in overlapping:
        overlap = doc.text[chunk.start : previous.end]
        assert previous.text.endswith(overlap)
        assert COUNT(overlap) <= round(CONFIG.overlap * CONFIG.target_tokens)
        assert doc.text[chunk.start - 1].isspace()  # never mid-word
        if not (overlap[0].isupper() or overlap[0] in "\"'(-0123456789"):
            # the last sentence alone was longer than the overlap: its last words
            assert not re.search(r"[.!?]\s+[A-Z]", overlap)
    whole = [b for a, b in overlapping if doc.text[b.start].isupper() or doc.text[b.start] in "-0123456789"]
    assert len(whole) >= len(overlapping) / 2
    # never across a heading
    for previous, chunk in zip(chunks, chunks[1:]):
        if previous.heading_path != chunk.heading_path:
            assert chunk.start >= previous.end


# --- constructed documents ----------------------------------------------------------


def sentence(i: int) -> str:
    return f"Sentence number {i} explains how the pager writes page {i} back to the database file."


def test_long_paragraph_splits_on_sentences() -> None:
    paragraph = " ".join(sentence(i) for i in range(60))
    doc = make_doc([BlockSpec("heading", "Pager", 1), BlockSpec("paragraph", paragraph)])
    chunks = chunk_document(doc, CONFIG, COUNT)
    assert len(chunks) > 3
    check_invariants(doc, chunks, CONFIG)
    for chunk in chunks:
        assert chunk.text.startswith("Sentence number ") and chunk.text.endswith("database file.")
        assert chunk.n_tokens <= CONFIG.target_tokens
        assert chunk.heading_path == ["Manual", "Pager"]


def test_long_sentence_splits_on_words() -> None:
    words = " ".join(f"word{i}" for i in range(900))
    doc = make_doc([BlockSpec("paragraph", words)])
    chunks = chunk_document(doc, CONFIG, COUNT)
    assert len(chunks) >= 5
    check_invariants(doc, chunks, CONFIG)
    for chunk in chunks:
        assert chunk.n_tokens <= CONFIG.target_tokens
        assert doc.text[chunk.start].isalpha() and doc.text[chunk.end - 1].isdigit()  # whole words


def test_unbreakable_word_splits_on_characters() -> None:
    # The real tokenizer maps any word over 100 characters to one [UNK]; with a
    # counter that does not, a blob must still be cut to the target.
    blob = "QmFzZTY0" * 700
    doc = make_doc([BlockSpec("paragraph", blob)])
    chunks = chunk_document(doc, CONFIG, estimate_wordpiece_tokens)
    assert len(chunks) >= 5
    assert "".join(c.text for c in chunks if c.start >= 0).replace(" ", "").count("QmFzZTY0") >= 700
    for chunk in chunks:
        assert doc.text[chunk.start : chunk.end] == chunk.text
        assert chunk.n_tokens <= CONFIG.target_tokens


def test_code_bigger_than_the_target_splits_on_lines() -> None:
    lines = [f"    result_{i} = compute(value_{i}, factor={i})  # step {i}" for i in range(120)]
    code = "def run():\n" + "\n".join(lines)
    doc = make_doc([BlockSpec("paragraph", "The job runs these steps:"), BlockSpec("code", code)])
    chunks = chunk_document(doc, CONFIG, COUNT)
    check_invariants(doc, chunks, CONFIG)
    code_start = doc.blocks[1].start
    for chunk in chunks:
        if chunk.start >= code_start:
            assert doc.text[chunk.start - 1] == "\n"  # starts at a line
            assert chunk.end == len(doc.text) or doc.text[chunk.end] == "\n"  # ends at a line end
            assert all(line in code.split("\n") for line in chunk.text.split("\n"))


def test_small_blocks_are_packed_and_a_tiny_tail_is_merged() -> None:
    paragraphs = [BlockSpec("paragraph", sentence(i) + " " + sentence(i + 100)) for i in range(7)]
    tail = BlockSpec("paragraph", "Done.")
    doc = make_doc([BlockSpec("heading", "Steps", 2), *paragraphs, tail])
    chunks = chunk_document(doc, CONFIG, COUNT)
    check_invariants(doc, chunks, CONFIG)
    assert chunks[-1].text.endswith("Done.")
    assert COUNT(doc.text[chunks[-2].end if len(chunks) > 1 else 0 : chunks[-1].end]) >= CONFIG.min_tokens or len(chunks) == 1
    # packing: a chunk holds several paragraphs
    assert chunks[0].text.count("\n\n") >= 2


def test_sections_are_never_merged_even_when_tiny() -> None:
    doc = make_doc(
        [BlockSpec("heading", "A", 1), BlockSpec("paragraph", "Short."),
         BlockSpec("heading", "B", 1), BlockSpec("paragraph", "Also short.")]
    )
    chunks = chunk_document(doc, CONFIG, COUNT)
    assert [(c.text, c.heading_path) for c in chunks] == [("Short.", ["Manual", "A"]), ("Also short.", ["Manual", "B"])]


def test_headings_only_document_has_no_chunks() -> None:
    assert chunk_document(make_doc([BlockSpec("heading", "Empty", 1)]), CONFIG, COUNT) == []


def test_long_heading_path_shrinks_the_chunk() -> None:
    long_heading = " ".join(["configuration"] * 60)
    doc = make_doc([BlockSpec("heading", long_heading, 1), BlockSpec("paragraph", " ".join(sentence(i) for i in range(30)))])
    for chunk in chunk_document(doc, CONFIG, COUNT):
        assert COUNT(chunk.context_text()) + 2 <= 256


def test_config_validation() -> None:
    with pytest.raises(ValidationError):
        ChunkingConfig(target_tokens=100, min_tokens=100)
    with pytest.raises(ValidationError):
        ChunkingConfig(overlap=0.9)
    with pytest.raises(ValidationError):
        ChunkingConfig(target_token=100)  # typo: extra keys are refused


# --- properties ---------------------------------------------------------------------

_words = st.text(alphabet=st.sampled_from("abcdefghij KLMNOP .,!?;:()é中\t-_/"), min_size=1, max_size=400)
_code = st.lists(st.text(alphabet=st.sampled_from("ab (){}=+ \t#"), max_size=80), min_size=1, max_size=60).map("\n".join)
_block = st.one_of(
    st.tuples(st.just("heading"), _words, st.integers(1, 6)),
    st.tuples(st.sampled_from(["paragraph", "list", "table"]), _words, st.just(0)),
    st.tuples(st.just("code"), _code, st.just(0)),
)
_config = st.builds(
    ChunkingConfig,
    target_tokens=st.integers(32, 300),
    overlap=st.floats(0.0, 0.5),
    min_tokens=st.integers(0, 31),
    max_context_tokens=st.one_of(st.none(), st.integers(40, 512)),
)


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks=st.lists(_block, min_size=1, max_size=25), config=_config, title=_words)
def test_offsets_and_sections_hold_for_any_document(blocks, config: ChunkingConfig, title: str) -> None:
    specs = [BlockSpec(kind, text, level) for kind, text, level in blocks]
    # a document of blank blocks only is not one to check: rejected, so that hypothesis
    # draws another in its place instead of counting an unchecked example as passed
    assume(any(s.text.strip() for s in specs))
    doc = make_doc(specs, title=title)
    chunks = chunk_document(doc, config, COUNT)
    check_invariants(doc, chunks, config)


# --- token counting -----------------------------------------------------------------


def test_token_counter_uses_the_model_tokenizer_without_special_tokens_or_truncation() -> None:
    assert COUNT.exact
    assert COUNT("") == 0
    assert COUNT("hello world") == 2
    assert COUNT("tokenization") == 2  # token ##ization
    # the shipped tokenizer.json truncates at 128: the counter must not
    assert COUNT("hello " * 300) == 300


def test_explicit_model_dir_without_tokenizer_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_token_counter(tmp_path)


def test_fallback_estimate_when_the_model_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "default_model_dir", lambda: None)
    counter = load_token_counter()
    assert counter.name == "estimate_wordpiece_tokens" and not counter.exact
    assert counter("hello world") == 2


def test_estimate_is_close_to_the_real_count_on_real_text() -> None:
    exact = estimate = 0
    for doc in DOCS.values():
        exact += COUNT(doc.text)
        estimate += estimate_wordpiece_tokens(doc.text)
    assert 0.9 <= estimate / exact <= 1.25  # errs on the high side: chunks stay small
