"""Loaders, one per format: ``load_xxx(raw, *, doc_id, path) -> Document``.

A loader raises ``ingest.errors.SkipFile`` for an expected reason to skip a file;
any other exception means the file is malformed in a way the parser could not take.
"""

from __future__ import annotations

from collections.abc import Callable

from ingest.loaders._common import Format
from ingest.models import Document

Loader = Callable[..., Document]


def get_loader(fmt: Format) -> Loader:
    """The loader function for a format (imported on first use: parsers are heavy)."""
    if fmt == "markdown":
        from ingest.loaders.markdown import load_markdown

        return load_markdown
    if fmt == "html":
        from ingest.loaders.html import load_html

        return load_html
    if fmt == "text":
        from ingest.loaders.text import load_text

        return load_text
    if fmt == "rst":
        from ingest.loaders.rst import load_rst

        return load_rst
    if fmt == "pdf":
        from ingest.loaders.pdf import load_pdf

        return load_pdf
    raise ValueError(f"unknown format {fmt!r}")


def load_document(raw: bytes, *, doc_id: str, path: str, fmt: Format) -> Document:
    """Parse ``raw`` with the loader for ``fmt``."""
    return get_loader(fmt)(raw, doc_id=doc_id, path=path)


__all__ = ["Format", "Loader", "get_loader", "load_document"]
