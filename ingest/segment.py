"""Finding sentence, line and word boundaries as spans of a text (pure functions).

Every function returns ``(start, end)`` offsets into the text it is given, trimmed
of surrounding whitespace, so callers can cut a document without copying it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Span = tuple[int, int]

# A sentence ends at . ! or ? (plus closing quotes/brackets) followed by whitespace and
# then something that can start a sentence. Linear: no nested quantifiers.
_SENTENCE_END = re.compile(r"([.!?][\"')\]»”’]*)\s+(?=[\"'(\[«“‘]?[A-Z0-9À-Ý])|\n+")
_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs cf al fig figs no nos dr mr mrs ms st jr sr inc ltd approx eq resp sec ch vol pp".split()
)
_WORD = re.compile(r"\S+")


def trim(text: str, start: int, end: int) -> Span | None:
    """Shrink a span to exclude leading/trailing whitespace; None if nothing is left."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def line_spans(text: str, start: int, end: int) -> list[Span]:
    """Non-blank lines of ``text[start:end]``; indentation is kept (it is code's meaning)."""
    spans: list[Span] = []
    pos = start
    while pos < end:
        newline = text.find("\n", pos, end)
        stop = end if newline == -1 else newline
        line_end = stop
        while line_end > pos and text[line_end - 1].isspace():
            line_end -= 1
        if line_end > pos:
            line_start = pos
            if text[pos:line_end].strip():
                spans.append((line_start, line_end))
        pos = stop + 1
    return spans


def sentence_spans(text: str, start: int, end: int) -> list[Span]:
    """Sentences (and hard line breaks) of ``text[start:end]``."""
    spans: list[Span] = []
    piece_start = start
    for match in _SENTENCE_END.finditer(text, start, end):
        if match.group(0)[0] == "." and _is_abbreviation(text, piece_start, match.start()):
            continue
        span = trim(text, piece_start, match.end(1) if match.group(1) else match.start())
        if span:
            spans.append(span)
        piece_start = match.end()
    span = trim(text, piece_start, end)
    if span:
        spans.append(span)
    return spans


def _is_abbreviation(text: str, floor: int, dot: int) -> bool:
    word_start = dot
    while word_start > floor and not text[word_start - 1].isspace():
        word_start -= 1
    word = text[word_start:dot].lower().lstrip("([\"'")
    return word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())


def word_spans(text: str, start: int, end: int) -> list[Span]:
    """Whitespace-separated words of ``text[start:end]``."""
    return [m.span() for m in _WORD.finditer(text, start, end)]


def char_spans(text: str, start: int, end: int, limit: int, count: Callable[[str], int]) -> list[Span]:
    """Cut one unbreakable run (a huge word, a base64 blob) into spans of <= ``limit`` tokens."""
    spans: list[Span] = []
    pos = start
    while pos < end:
        low, high = pos + 1, end
        # the longest prefix within the limit (binary search: counts grow with length)
        while low < high:
            mid = (low + high + 1) // 2
            if count(text[pos:mid]) <= limit:
                low = mid
            else:
                high = mid - 1
        spans.append((pos, low))
        pos = low
    return spans
