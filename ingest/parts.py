"""Very large text and Markdown files, read and parsed a part at a time.

A loader parses a whole file at once, and its parser's working memory is many times
the file's size (markdown-it's tokens for a 200 MB file took 3.4 GB). Plain text and
Markdown have no structure that spans a blank line before a heading, so such a file
is cut there into parts of about ``part_bytes``, each part parsed on its own (in the
sandbox, within its time limit, cached by its own bytes), and the parts' documents
joined into one: the same text and blocks as a whole-file parse, at the memory of one
part. Only the joined document, which the build keeps anyway, grows with the file.

Formats whose structure does span such cuts are not cut: reStructuredText (heading
levels follow the order in which underline styles first appear), HTML and PDF; nor
is UTF-16 text, whose line breaks are not the byte ``\\n``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

from ingest.loaders._common import BLOCK_SEPARATOR, fallback_title
from ingest.models import Block, Document, SkippedFile

PARTABLE_FORMATS = frozenset({"text", "markdown"})
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_READ_BLOCK = 1 << 20
_FENCE = re.compile(rb"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(rb"^ {0,3}#{1,6}(?:[ \t]|$)")

LoadPart = Callable[[bytes, int], Document | SkippedFile]


def can_cut(fmt: str, head: bytes) -> bool:
    """Whether a file of this format, starting with ``head``, may be parsed in parts."""
    return fmt in PARTABLE_FORMATS and not head.startswith(_UTF16_BOMS)


def iter_parts(path: Path, fmt: str, part_bytes: int) -> Iterator[bytes]:
    """The file's bytes in consecutive parts of about ``part_bytes`` (their join is the file).

    A part ends at a blank line; in Markdown, preferably at the last blank line before a
    heading, never inside a fenced code block, and never so that the next part starts
    with ``---`` (it would read as frontmatter). A file with no usable cut is one part.
    """
    pending = b""
    with open(path, "rb") as handle:
        while True:
            block = handle.read(_READ_BLOCK)
            pending += block
            while len(pending) >= 2 * part_bytes or (not block and len(pending) > part_bytes):
                cut = _cut(pending, part_bytes, markdown=fmt == "markdown")
                if cut is None:
                    # no cut in two parts' length (one giant code fence?): the rest is one part
                    yield pending + handle.read()
                    return
                yield pending[:cut]
                pending = pending[cut:]
            if not block:
                break
    if pending:
        yield pending


def _cut(data: bytes, part_bytes: int, *, markdown: bool) -> int | None:
    """Where to end the first part of ``data``: after a blank line past ``part_bytes``
    (scanning forward), preferring one before a Markdown heading; None if there is none."""
    fenced = False
    fence = b""
    position = 0
    best_blank: int | None = None
    limit = len(data)
    while position < limit:
        end = data.find(b"\n", position)
        line_end = limit if end < 0 else end + 1
        line = data[position:line_end]
        if markdown:
            match = _FENCE.match(line)
            if match is not None:
                marker = match.group(1)
                if not fenced:
                    fenced, fence = True, marker[:3]
                elif marker.startswith(fence):
                    fenced = False
        if not fenced and position >= part_bytes and not line.strip() and line_end < limit:
            following = data[line_end : data.find(b"\n", line_end) + 1 or limit]
            if following.strip() and not following.startswith(b"---"):
                if not markdown or _HEADING.match(following):
                    return line_end
                if best_blank is None:
                    best_blank = line_end
            if best_blank is not None and position >= 2 * part_bytes:
                return best_blank  # no heading within another part's length: any blank line
        position = line_end
    return best_blank


def load_in_parts(
    parts: Iterator[bytes], load_part: LoadPart, *, path: str, content_hash: str
) -> Document | SkippedFile:
    """Parse each part with ``load_part(raw, index)`` and join the documents.

    The first part carries the frontmatter (metadata, title); a part that fails skips
    the whole file, with the part named in the reason. Parts with no text are dropped.
    """
    joined: Document | None = None
    texts: list[str] = []
    blocks: list[Block] = []
    warnings: list[str] = []
    offset = 0
    first_byte = 0
    for index, raw in enumerate(parts):
        result = load_part(raw, index)
        where = f"part {index + 1} (bytes {first_byte}-{first_byte + len(raw)})"
        first_byte += len(raw)
        if isinstance(result, SkippedFile):
            if result.reason == "no text content":
                continue
            return SkippedFile(path=path, reason=f"{where}: {result.reason}")
        if joined is None:
            joined = result
        else:
            texts.append(BLOCK_SEPARATOR)
            offset += len(BLOCK_SEPARATOR)
        texts.append(result.text)
        shift = offset
        blocks.extend(
            b if shift == 0 else b.model_copy(update={"start": b.start + shift, "end": b.end + shift})
            for b in result.blocks
        )
        offset += len(result.text)
        warnings.extend(w for w in result.warnings if w not in warnings)
    if joined is None:
        return SkippedFile(path=path, reason="no text content")
    title = joined.title
    if title == fallback_title(path):
        headings = [b for b in blocks if b.kind == "heading"]
        top = [b for b in headings if b.level == 1] or headings
        title = top[0].text[:300] if top else title
    return joined.model_copy(
        update={"text": "".join(texts), "blocks": blocks, "title": title, "warnings": warnings,
                "content_hash": content_hash}
    )
