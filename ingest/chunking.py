"""Structure-aware chunking: sections first, then blocks, sentences, words.

A chunk never crosses a heading. Inside a section, blocks are packed up to the
target size; a block too big for a chunk is split (prose on sentences, code, lists
and tables on lines, then on words). Each chunk after the first in a section starts
with an overlap: the last sentences of the chunk before it. Offsets are exact:
``doc.text[chunk.start:chunk.end] == chunk.text``.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ingest.models import Block, Chunk, Document
from ingest.segment import char_spans, line_spans, word_spans
from arborgraph.core.text import Span, sentence_spans

CountTokens = Callable[[str], int]
SpanCount = Callable[[int, int], int]  # tokens in doc.text[start:end]

# Below this a chunk could not hold a sentence; a heading path so long that it
# leaves less room is truncated by the model whatever chunking does.
_MIN_BUDGET = 32
# Characters tokenised at a time when counting a document's tokens (then up to the
# next whitespace): large enough that per-call overhead vanishes, small enough that a
# 200 MB file's tokenisation does not hold gigabytes of offsets at once.
_TOKEN_WINDOW_CHARS = 1 << 16
_WHITESPACE = re.compile(r"\s")
_SECTION_NUMBER = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[IVXLC]+\.)\s+")


class ChunkingConfig(BaseModel):
    """How documents are cut into chunks (sizes in word-piece tokens of the embedder)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    target_tokens: int = Field(220, ge=_MIN_BUDGET, description="largest chunk text, overlap included")
    overlap: float = Field(0.15, ge=0.0, le=0.5, description="share of target_tokens repeated from the previous chunk")
    min_tokens: int = Field(40, ge=0, description="a section's last chunk with less new text is merged into the one before")
    max_context_tokens: int | None = Field(
        256,
        description=(
            "the embedding model's input limit, [CLS]/[SEP] included: chunks shrink so that "
            "Chunk.context_text() (heading path + text) fits; None disables"
        ),
    )

    @model_validator(mode="after")
    def _check(self) -> ChunkingConfig:
        if self.min_tokens >= self.target_tokens:
            raise ValueError("min_tokens must be smaller than target_tokens")
        if self.max_context_tokens is not None and self.max_context_tokens < _MIN_BUDGET + 2:
            raise ValueError(f"max_context_tokens must be at least {_MIN_BUDGET + 2}")
        return self


@dataclass
class _Section:
    heading_path: list[str]
    blocks: list[Block] = field(default_factory=list)


@dataclass
class _Piece:
    start: int
    end: int
    tokens: int
    kind: str  # the kind of block it comes from


@dataclass
class _Draft:
    start: int  # where the chunk text starts (overlap included)
    content_start: int  # where its new text starts
    end: int
    pieces: list[_Piece]
    new_tokens: int


def chunk_document(doc: Document, config: ChunkingConfig, count_tokens: CountTokens) -> list[Chunk]:
    """Cut a document into chunks (see the module docstring for the rules)."""
    chunks: list[Chunk] = []
    span = _span_counter(doc.text, count_tokens)
    for section in _sections(doc):
        budget, hard_limit = _budgets(section.heading_path, config, count_tokens)
        pieces = [
            piece
            for block in section.blocks
            for piece in _block_pieces(doc.text, block, budget, span, count_tokens)
        ]
        for draft in _pack(doc.text, pieces, budget, hard_limit, config, span):
            text = doc.text[draft.start : draft.end]
            # counting the span is exact unless a boundary cuts a word (a character split)
            cut = _inside_word(doc.text, draft.start) or _inside_word(doc.text, draft.end)
            ordinal = len(chunks)
            chunks.append(
                Chunk(
                    chunk_id=f"{doc.doc_id}#{ordinal}",
                    doc_id=doc.doc_id,
                    ordinal=ordinal,
                    text=text,
                    heading_path=list(section.heading_path),
                    start=draft.start,
                    end=draft.end,
                    n_tokens=count_tokens(text) if cut else span(draft.start, draft.end),
                )
            )
    return chunks


def _inside_word(text: str, offset: int) -> bool:
    return 0 < offset < len(text) and not text[offset - 1].isspace() and not text[offset].isspace()


def _normalised_heading(text: str) -> str:
    return " ".join(_SECTION_NUMBER.sub("", text.strip()).rstrip("¶").split()).casefold()


def _sections(doc: Document) -> list[_Section]:
    """Group content blocks under their heading path; headings themselves are not content."""
    title = doc.title.strip()
    sections = [_Section([title] if title else [])]
    stack: list[tuple[int, str]] = []
    for block in doc.blocks:
        if block.kind != "heading":
            sections[-1].blocks.append(block)
            continue
        level = max(block.level, 1)
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, block.text.strip()))
        path = [title] if title else []
        for i, (_, heading) in enumerate(stack):
            if i == 0 and path and _normalised_heading(heading) == _normalised_heading(title):
                continue  # the document's h1 usually repeats its title
            path.append(heading)
        sections.append(_Section(path))
    return [s for s in sections if s.blocks]


def _budgets(heading_path: list[str], config: ChunkingConfig, count: CountTokens) -> tuple[int, int]:
    """Token budget of a chunk's text in this section, and the cap when merging a tail."""
    budget = config.target_tokens
    hard = config.target_tokens + config.min_tokens
    if config.max_context_tokens is not None:
        prefix = " > ".join(heading_path) + "\n" if heading_path else ""
        room = config.max_context_tokens - 2 - (count(prefix) if prefix else 0)
        budget = min(budget, max(room, _MIN_BUDGET))
        hard = min(hard, max(room, _MIN_BUDGET))
    return budget, hard


def _span_counter(text: str, count: CountTokens) -> SpanCount:
    """Token counts of spans of ``text``, from one tokenisation of the whole text if possible.

    A counter with ``token_starts`` (the model tokenizer) tokenises the text once, in
    windows cut at whitespace (no word piece crosses whitespace, so the windows give
    the same tokens as the whole text, while the tokenizer's working memory stays that
    of one window however large the document); the starts are kept in one int array.
    A span's count is then the number of tokens starting inside it, which equals
    counting the span alone whenever it starts and ends at whitespace, as all spans
    here do (only a word cut into characters may differ by a token).
    """
    token_starts = getattr(count, "token_starts", None)
    starts = _window_starts(text, token_starts) if token_starts is not None else None
    if starts is None:
        return lambda s, e: count(text[s:e])
    return lambda s, e: bisect_left(starts, e) - bisect_left(starts, s)


def _window_starts(text: str, token_starts: Callable[[str], list[int] | None]) -> array[int] | None:
    # an int64 array, not a list: 8 bytes a token rather than ~36 (and no numpy, which
    # pool workers that only chunk would otherwise import)
    starts: array[int] = array("q")
    begin = 0
    while begin < len(text):
        end = min(begin + _TOKEN_WINDOW_CHARS, len(text))
        if end < len(text):
            space = _WHITESPACE.search(text, end)
            end = space.start() if space is not None else len(text)
        found = token_starts(text[begin:end])
        if found is None:
            return None
        starts.extend(start + begin for start in found)
        begin = end
    return starts


def _block_pieces(text: str, block: Block, limit: int, span: SpanCount, count: CountTokens) -> list[_Piece]:
    """The block whole if it fits ``limit``, else its parts, each within the limit."""
    tokens = span(block.start, block.end)
    if tokens <= limit:
        return [_Piece(block.start, block.end, tokens, block.kind)]
    if block.kind == "paragraph":
        splitters = [sentence_spans, word_spans]
    elif block.kind == "code":
        splitters = [line_spans, word_spans]
    else:  # lists and tables: items/rows first
        splitters = [line_spans, sentence_spans, word_spans]
    return [
        _Piece(s, e, n, block.kind) for s, e, n in _split(text, block.start, block.end, limit, span, count, splitters)
    ]


def _split(
    text: str,
    start: int,
    end: int,
    limit: int,
    span: SpanCount,
    count: CountTokens,
    splitters: list[Callable[[str, int, int], list[Span]]],
) -> list[tuple[int, int, int]]:
    if not splitters:
        return [(s, e, count(text[s:e])) for s, e in char_spans(text, start, end, limit, count)]
    out: list[tuple[int, int, int]] = []
    for s, e in splitters[0](text, start, end):
        n = span(s, e)
        if n <= limit:
            out.append((s, e, n))
        else:
            out.extend(_split(text, s, e, limit, span, count, splitters[1:]))
    return out


def _pack(
    text: str, pieces: list[_Piece], budget: int, hard_limit: int, config: ChunkingConfig, span: SpanCount
) -> list[_Draft]:
    """Greedily fill chunks with pieces, each after the first opening with an overlap."""
    drafts: list[_Draft] = []
    overlap_budget = int(round(config.overlap * budget))
    i = 0
    while i < len(pieces):
        overlap_start, overlap_tokens = (None, 0)
        if drafts and overlap_budget:
            overlap_start, overlap_tokens = _overlap(text, drafts[-1], overlap_budget, span)
        if overlap_start is not None and overlap_tokens + pieces[i].tokens > budget:
            overlap_start, overlap_tokens = None, 0  # a whole block matters more than the overlap
        taken = [pieces[i]]
        used = overlap_tokens + pieces[i].tokens
        i += 1
        while i < len(pieces) and used + pieces[i].tokens <= budget:
            taken.append(pieces[i])
            used += pieces[i].tokens
            i += 1
        content_start = taken[0].start
        drafts.append(
            _Draft(
                start=overlap_start if overlap_start is not None else content_start,
                content_start=content_start,
                end=taken[-1].end,
                pieces=taken,
                new_tokens=sum(p.tokens for p in taken),
            )
        )
    if len(drafts) >= 2 and drafts[-1].new_tokens < config.min_tokens:
        last, previous = drafts[-1], drafts[-2]
        if span(previous.start, last.end) <= hard_limit:
            previous.end = last.end
            previous.pieces.extend(last.pieces)
            previous.new_tokens += last.new_tokens
            drafts.pop()
    return drafts


def _overlap(text: str, previous: _Draft, limit: int, span: SpanCount) -> tuple[int | None, int]:
    """Where the overlap taken from the end of ``previous`` starts, and its size in tokens.

    Whole sentences (lines, for code; items and rows count as sentences) where they fit, else the last
    words. Never the whole of the previous chunk's new text: that would be a repeat.
    """
    best: tuple[int | None, int] = (None, 0)
    last_unit_start: int | None = None
    for unit_start in _unit_starts_backwards(text, previous):
        if last_unit_start is None:
            last_unit_start = unit_start
        if unit_start <= previous.content_start:
            break
        n = span(unit_start, previous.end)
        if n > limit:
            break
        best = (unit_start, n)
    if best[0] is None and last_unit_start is not None:
        for word_start, _ in reversed(word_spans(text, last_unit_start, previous.end)):
            if word_start <= previous.content_start:
                break
            n = span(word_start, previous.end)
            if n > limit:
                break
            best = (word_start, n)
    return best


def _unit_starts_backwards(text: str, draft: _Draft) -> Iterator[int]:
    for piece in reversed(draft.pieces):
        # sentence_spans also breaks at newlines: list items and table rows are units too
        split = line_spans if piece.kind == "code" else sentence_spans
        for unit_start, _ in reversed(split(text, piece.start, piece.end)):
            yield unit_start
