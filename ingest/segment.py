"""Finding sentence, line and word boundaries as spans of a text (pure functions).

Every function returns ``(start, end)`` offsets into the text it is given, trimmed
of surrounding whitespace, so callers can cut a document without copying it. Sentences
are :func:`arborgraph.core.text.sentence_spans` with its chunk rules (line breaks end a
unit too); lines, words and runs of characters are cut here.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from arborgraph.core.text import Span, sentence_spans

__all__ = ["char_spans", "line_spans", "word_spans"]

_WORD = re.compile(r"\S+")


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
