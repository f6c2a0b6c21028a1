"""Helpers every loader shares: decoding bytes, tidying text, assembling a Document."""

from __future__ import annotations

import codecs
import hashlib
import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Literal

from ingest.errors import SkipFile
from ingest.models import Block, BlockKind, Document, DocumentMetadata

Format = Literal["markdown", "html", "text", "rst", "pdf"]

BLOCK_SEPARATOR = "\n\n"
MAX_HEADING_CHARS = 300

# C0 controls other than tab and newline, plus DEL: they only ever come from broken
# encodings and trip up downstream stores.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


@dataclass(frozen=True)
class BlockSpec:
    """A block before offsets are assigned."""

    kind: BlockKind
    text: str
    level: int = 0


def decode_text(raw: bytes, declared: str | None = None) -> tuple[str, list[str]]:
    """Decode file bytes to text, returning the text and any warnings.

    UTF-8 (or a BOM-announced UTF-16) is expected; otherwise a charset the file
    declares itself is tried, then cp1252 and finally latin-1, which never fails.
    Line endings are normalised to ``\\n``; control characters other than tab and
    newline are dropped.
    """
    warnings: list[str] = []
    text: str | None = None
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            try:
                text = raw.decode(encoding)
            except UnicodeDecodeError:
                pass
            break
    if text is None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            candidates = [c for c in (declared, "cp1252", "latin-1") if c and _known_codec(c)]
            for encoding in candidates:
                try:
                    text = raw.decode(encoding)
                except UnicodeDecodeError:
                    continue
                how = "declared charset" if encoding == declared else "fallback"
                warnings.append(
                    f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
                    f"decoded as {encoding} ({how})"
                )
                break
    assert text is not None  # latin-1 decodes any byte string
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    # A form feed separates pages in old text files; other controls are debris (and
    # lxml refuses them).
    return _CONTROL.sub("", text.replace("\f", "\n\n")), warnings


def _known_codec(name: str) -> bool:
    try:
        codecs.lookup(name)
    except LookupError:
        return False
    return True


def clean_inline(text: str) -> str:
    """Collapse runs of whitespace to single spaces and drop control characters."""
    return " ".join(_CONTROL.sub("", text).split())


def clean_code(text: str) -> str:
    """Keep a code block's whitespace exactly, minus blank edges and control characters."""
    text = _CONTROL.sub("", text.replace("\r\n", "\n"))
    lines = text.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(line.rstrip() for line in lines)


def fallback_title(path: str) -> str:
    """A title for a document that names none: its file name without extension."""
    name = PurePath(path.replace("\\", "/")).name
    stem = name.split(".")[0] if not name.startswith(".") else name
    return stem or name or "untitled"


def build_document(
    specs: list[BlockSpec],
    *,
    raw: bytes,
    doc_id: str,
    path: str,
    fmt: Format,
    title: str | None,
    metadata: DocumentMetadata | None = None,
    warnings: list[str] | None = None,
) -> Document:
    """Join block texts with blank lines, record each block's offsets, hash the bytes.

    Raises ``SkipFile`` when no block has text: an empty document is not worth indexing.
    """
    blocks: list[Block] = []
    parts: list[str] = []
    offset = 0
    for spec in specs:
        text = clean_code(spec.text) if spec.kind == "code" else spec.text.strip()
        if not text.strip():
            continue
        if spec.kind == "heading" and len(text) > MAX_HEADING_CHARS:
            spec = BlockSpec("paragraph", text)  # a "heading" this long is broken markup
        if parts:
            parts.append(BLOCK_SEPARATOR)
            offset += len(BLOCK_SEPARATOR)
        blocks.append(Block(kind=spec.kind, text=text, level=spec.level, start=offset, end=offset + len(text)))
        parts.append(text)
        offset += len(text)
    if not blocks:
        raise SkipFile("no text content")
    if not title:
        headings = [b for b in blocks if b.kind == "heading"]
        top = [b for b in headings if b.level == 1] or headings
        title = top[0].text if top else fallback_title(path)
    return Document(
        doc_id=doc_id,
        path=path,
        title=clean_inline(title)[:300] or fallback_title(path),
        format=fmt,
        text="".join(parts),
        blocks=blocks,
        content_hash=hashlib.sha256(raw).hexdigest(),
        metadata=metadata or DocumentMetadata(),
        warnings=list(warnings or []),
    )
