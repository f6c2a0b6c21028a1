"""Plain-text loader: paragraphs on blank lines, a few unambiguous heading shapes."""

from __future__ import annotations

import re
import textwrap
from collections import Counter

from ingest.loaders._common import BlockSpec, build_document, clean_code, decode_text
from ingest.metadata import refuse_unread_acl
from ingest.models import Document

_BLANK_LINES = re.compile(r"\n[ \t]*\n")
_UNDERLINE = re.compile(r"^([=\-~^*#+])\1{2,}[ \t]*$")
_UNDERLINE_LEVELS = {"=": 1, "-": 2}
# "2.1 Title", "3.4.1. Title": multi-part numbers only; "1. Do this" is a list item.
_NUMBERED = re.compile(r"^(\d+(?:\.\d+)+)\.?[ \t]+(\S.{0,78})$")
_ALL_CAPS = re.compile(r"^[A-Z][A-Z0-9 ,&/()'-]{1,78}$")
_MAX_HEADING_CHARS = 80
_MAX_CODE_INDENT = 12


def load_text(raw: bytes, *, doc_id: str, path: str) -> Document:
    """Load a plain-text file."""
    text, warnings = decode_text(raw)
    refuse_unread_acl(text, "text files")
    specs = text_blocks(text)
    return build_document(
        specs, raw=raw, doc_id=doc_id, path=path, fmt="text", title=_title(specs), warnings=warnings,
    )


def _title(specs: list[BlockSpec]) -> str | None:
    """A short opening paragraph (a title line, maybe centred) names the document."""
    if not specs:
        return None
    first = specs[0]
    lines = first.text.strip().split("\n")
    if first.kind == "heading" or (len(lines) <= 3 and len(lines[0].strip()) <= _MAX_HEADING_CHARS):
        return lines[0].strip()
    return None


def text_blocks(text: str) -> list[BlockSpec]:
    """Split plain text into paragraphs, headings and indented (code) blocks."""
    paragraphs = []
    for para in _BLANK_LINES.split(text.expandtabs(8) if "\t" in text else text):
        lines = [line.rstrip() for line in para.split("\n")]
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        if lines:
            paragraphs.append(lines)
    # Many plain-text documents indent all their prose; only text indented further
    # than the usual paragraph is taken as a code/literal block.
    indents = Counter(_indent(lines) for lines in paragraphs)
    base = indents.most_common(1)[0][0] if indents else 0
    specs: list[BlockSpec] = []
    for lines in paragraphs:
        heading = _heading(lines)
        if heading is not None:
            specs.append(heading)
        elif base + 4 <= _indent(lines) <= base + _MAX_CODE_INDENT:  # deeper is centred text
            specs.append(BlockSpec("code", clean_code(textwrap.dedent("\n".join(lines)))))
        else:
            specs.append(BlockSpec("paragraph", "\n".join(line.strip() for line in lines)))
    return specs


def _indent(lines: list[str]) -> int:
    return min(len(line) - len(line.lstrip()) for line in lines if line.strip())


def _heading(lines: list[str]) -> BlockSpec | None:
    first = lines[0].strip()
    if len(lines) == 2 and first and len(first) <= _MAX_HEADING_CHARS:
        underline = _UNDERLINE.match(lines[1].strip())
        if underline and len(lines[1].strip()) >= len(first) // 2:
            return BlockSpec("heading", first, _UNDERLINE_LEVELS.get(underline.group(1), 3))
    if len(lines) != 1 or first[-1:] in ".,;:!?":
        return None
    numbered = _NUMBERED.match(first)
    if numbered:
        return BlockSpec("heading", first, min(numbered.group(1).count(".") + 1, 6))
    if _ALL_CAPS.match(first) and sum(c.isalpha() for c in first) >= 3:
        return BlockSpec("heading", first, 1)
    return None
