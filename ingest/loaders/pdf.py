"""PDF loader: the text layer page by page (pypdf), bookmarks as headings."""

from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass

from ingest.errors import SkipFile
from ingest.loaders._common import BlockSpec, build_document, clean_inline
from ingest.models import Document

_MAX_OUTLINE_ITEMS = 5_000
_SENTENCE_END = re.compile(r"[.!?:;)\]\"']$")
_HYPHENATED = re.compile(r"[a-z]-$")


@dataclass(frozen=True)
class _Bookmark:
    title: str
    level: int
    page: int


def load_pdf(raw: bytes, *, doc_id: str, path: str) -> Document:
    """Load a PDF's text layer; a PDF without one is skipped as a likely scan."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    # pypdf logs every recoverable oddity of a malformed file as a warning, which
    # Python's last-resort handler prints; quiet it unless the application chose a level.
    pypdf_logger = logging.getLogger("pypdf")
    if pypdf_logger.level == logging.NOTSET:
        pypdf_logger.setLevel(logging.ERROR)
    if not raw.lstrip()[:1024].count(b"%PDF-"):
        raise SkipFile("not a PDF (no %PDF- header)")
    try:
        reader = PdfReader(io.BytesIO(raw), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise SkipFile("encrypted PDF (needs a password)")
        pages = list(reader.pages)
    except PdfReadError as exc:
        raise SkipFile(f"unreadable PDF: {exc}") from None
    warnings: list[str] = []
    page_texts: list[str] = []
    failures: list[str] = []
    for number, page in enumerate(pages, start=1):
        try:
            page_texts.append(page.extract_text() or "")
        except Exception as exc:  # noqa: BLE001 - one bad page must not lose the others
            failures.append(_extraction_failure(exc))
            warnings.append(f"page {number}: text extraction failed ({type(exc).__name__})")
            page_texts.append("")
    if not any(t.strip() for t in page_texts):
        if failures:  # not a scan: the text could not be got at
            raise SkipFile(
                f"no text extracted: extraction failed on {len(failures)} of {len(pages)} page(s) ({failures[0]})"
            )
        raise SkipFile("no text layer (scanned PDF?)")
    bookmarks = _bookmarks(reader, warnings)
    specs: list[BlockSpec] = []
    for number, text in enumerate(page_texts):
        specs.extend(_page_blocks(text, [b for b in bookmarks if b.page == number]))
    title = None
    try:
        title = reader.metadata.title if reader.metadata else None
    except Exception:  # noqa: BLE001 - broken info dictionaries are common
        title = None
    return build_document(
        specs, raw=raw, doc_id=doc_id, path=path, fmt="pdf",
        title=str(title) if title else None, warnings=warnings,
    )


def _extraction_failure(exc: Exception) -> str:
    from pypdf.errors import LimitReachedError

    if isinstance(exc, LimitReachedError):
        return "a stream decompresses past the size limit: a decompression bomb?"
    detail = " ".join(str(exc).split())[:80]
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def _bookmarks(reader: object, warnings: list[str]) -> list[_Bookmark]:
    """Flatten the outline into (title, level, page) entries, in outline order."""
    found: list[_Bookmark] = []
    try:
        stack = [(item, 1) for item in reversed(reader.outline)]  # type: ignore[attr-defined]
        while stack and len(found) < _MAX_OUTLINE_ITEMS:
            item, level = stack.pop()
            if isinstance(item, list):
                stack.extend((sub, level + 1) for sub in reversed(item))
                continue
            page = reader.get_destination_page_number(item)  # type: ignore[attr-defined]
            title = clean_inline(str(getattr(item, "title", "") or ""))
            if title and page is not None and page >= 0:
                # a nested list follows its parent entry, so the parent's level is level
                found.append(_Bookmark(title, min(level, 6), page))
    except Exception as exc:  # noqa: BLE001 - a broken outline only loses headings
        warnings.append(f"outline ignored ({type(exc).__name__})")
    return found


def _page_blocks(text: str, bookmarks: list[_Bookmark]) -> list[BlockSpec]:
    """Split one page's text into paragraphs, turning bookmarked lines into headings.

    Bookmarks whose title is not a line of the page are placed at the page's start.
    """
    lines = [clean_inline(line) for line in text.split("\n")]
    width = max((len(line) for line in lines), default=0)
    at_line: dict[int, _Bookmark] = {}
    unmatched: list[_Bookmark] = []
    next_line = 0
    for bookmark in bookmarks:
        found = next((i for i in range(next_line, len(lines)) if lines[i] == bookmark.title), None)
        if found is None:
            unmatched.append(bookmark)
        else:
            at_line[found] = bookmark
            next_line = found + 1
    specs = [BlockSpec("heading", b.title, b.level) for b in unmatched]
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            specs.append(BlockSpec("paragraph", _join_lines(paragraph)))
            paragraph.clear()

    for number, line in enumerate(lines):
        if number in at_line:
            flush()
            specs.append(BlockSpec("heading", line, at_line[number].level))
        elif not line:
            flush()
        else:
            paragraph.append(line)
            # a line that ends a sentence well short of the text width ends a paragraph
            if _SENTENCE_END.search(line) and len(line) < 0.8 * width:
                flush()
    flush()
    return specs


def _join_lines(lines: list[str]) -> str:
    out = lines[0]
    for line in lines[1:]:
        if _HYPHENATED.search(out) and line[:1].islower():
            out = out[:-1] + line
        else:
            out = f"{out} {line}"
    return out
