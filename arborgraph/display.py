"""Making document and user text safe to show on a terminal.

File names, titles, headings and passages come from the documents, and paths and
routes from the user: any of them may hold escape sequences (which clear a screen or
set a window title), bidirectional overrides (which reorder what is read), or lone
surrogates (which cannot be encoded at all). :func:`printable` shows such characters
as visible escapes instead; the CLI prints its result without markup parsing.
"""

from __future__ import annotations

import unicodedata

# Format characters that change how the text around them is displayed: bidirectional
# embeddings, overrides and isolates, and the marks that steer them.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, multiline: bool = False) -> str:
    """``text`` with control characters, bidi controls and lone surrogates shown as
    ``\\x1b`` / ``\\u202e`` style escapes; ``multiline`` keeps newlines and tabs."""
    kept = "\n\t" if multiline else ""
    if text.isprintable() and not any(c in _BIDI for c in text):
        return text  # the common case, checked at C speed
    out = []
    for char in text:
        if char in kept:
            out.append(char)
        elif char in _BIDI or unicodedata.category(char) in ("Cc", "Cs"):
            out.append(_escaped(char))
        else:
            out.append(char)
    return "".join(out)
