"""Chunks of pages of the bundled SQLite manual, made by the real loaders and chunker."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ingest import ChunkingConfig, Document, chunk_document, iter_collection, load_token_counter
from ingest.models import Chunk

MANUAL = Path(__file__).resolve().parents[2] / "examples" / "sqlite"


def manual_chunks(pages: Sequence[str]) -> list[Chunk]:
    """The default chunking of ``pages`` (file names in the manual), in page order."""
    count = load_token_counter()
    out: list[Chunk] = []
    for item in iter_collection([MANUAL / page for page in pages]):
        assert isinstance(item, Document), item
        out.extend(chunk_document(item, ChunkingConfig(), count))
    return out
