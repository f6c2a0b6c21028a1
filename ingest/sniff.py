"""Deciding what a file is from its name and first bytes (pure functions)."""

from __future__ import annotations

import re
from pathlib import PurePath

from ingest.loaders._common import Format

SNIFF_BYTES = 1024

EXTENSIONS: dict[str, Format] = {
    ".md": "markdown", ".markdown": "markdown", ".mdown": "markdown", ".mkd": "markdown",
    ".html": "html", ".htm": "html", ".xhtml": "html",
    ".txt": "text", ".text": "text",
    ".rst": "rst", ".rest": "rst",
    ".pdf": "pdf",
}
# Extensions whose content is sniffed, because files named so are often something else.
_AMBIGUOUS = frozenset({".txt", ".text", ""})
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"), (b"GIF89a", "GIF image"),
    (b"PK\x03\x04", "ZIP archive (or an Office/EPUB file)"),
    (b"\x1f\x8b", "gzip archive"),
    (b"BZh", "bzip2 archive"),
    (b"\xfd7zXZ\x00", "xz archive"),
    (b"7z\xbc\xaf\x27\x1c", "7z archive"),
    (b"\x7fELF", "executable (ELF)"),
    (b"MZ", "executable (PE)"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "legacy Office document"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"RIFF", "RIFF media file"),
    (b"OggS", "Ogg media file"),
    (b"ID3", "MP3 audio"),
    (b"\x00\x00\x01\x00", "icon image"),
    (b"wOFF", "web font"), (b"wOF2", "web font"),
)
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_HTML_START = re.compile(rb"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)\b", re.I | re.S)
# The PDF header: the spec lets readers accept it anywhere in the first kilobyte, but
# a file named as text whose prose merely mentions "%PDF-" is text.
_PDF_HEADER_AT_A_LINE = re.compile(rb"(?:^|[\r\n])%PDF-\d\.\d")
_MD_HINT = re.compile(rb"^(?:---\r?\n|#{1,6} \S)", re.M)
_RST_HINT = re.compile(rb"^(?:\.\. [\w:-]+::|[=\-~^*#]{3,}\r?\n)", re.M)


def binary_kind(head: bytes) -> str | None:
    """Name the kind of binary file ``head`` starts, or None if it looks like text.

    A PDF is binary too: call this only for a file ``detect_format`` did not take for one.
    """
    if head.startswith(_UTF16_BOMS):
        return None
    for magic, kind in _MAGIC:
        if head.startswith(magic) and (magic != b"MZ" or b"\x00" in head):
            return kind
    if b"\x00" in head[:SNIFF_BYTES]:
        return "binary data (NUL bytes)"
    return None


def is_pdf(head: bytes, *, strict: bool = True) -> bool:
    """True if ``head`` is a PDF's: ``%PDF-`` at byte 0, or (not ``strict``) a
    ``%PDF-n.n`` header at the start of a line within the first kilobyte, after the
    leading junk the spec allows."""
    if head.startswith(b"%PDF-"):
        return True
    return not strict and _PDF_HEADER_AT_A_LINE.search(head[:SNIFF_BYTES]) is not None


def detect_format(name: str, head: bytes) -> Format | None:
    """Choose a loader from the file name, sniffing content where the name is unsure.

    The extension's format is trusted unless the bytes clearly contradict it: a file
    that starts with ``%PDF-`` is a PDF whatever its name, and one whose name says
    nothing (no or an unknown extension) is also one with a PDF header after leading
    junk; a Markdown or text file that only mentions ``%PDF-`` stays what its name says.
    Returns None for a file type ingestion does not handle.
    """
    path = PurePath(name)
    suffix = path.suffix.lower()
    if is_pdf(head, strict=suffix in EXTENSIONS or suffix in _AMBIGUOUS - {""}):
        return "pdf"
    if suffix not in _AMBIGUOUS:
        if suffix in EXTENSIONS:
            return EXTENSIONS[suffix]
        return "html" if _HTML_START.match(head) else None
    inner = PurePath(path.stem).suffix.lower()  # Sphinx "_sources/x.rst.txt"
    if inner in EXTENSIONS and EXTENSIONS[inner] != "pdf":
        return EXTENSIONS[inner]
    if _HTML_START.match(head):
        return "html"
    if suffix == "":
        if head.startswith(b"---\n") or _MD_HINT.search(head):
            return "markdown"
        if _RST_HINT.search(head):
            return "rst"
    return "text"
