"""Records produced by ingestion: documents, their structural blocks, and chunks.

Offsets (``start``/``end``) always index into ``Document.text``, the normalised text
that is stored in the index; a chunk's offsets therefore point back into the text a
user can read in the ``documents`` table.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

BlockKind = Literal["heading", "paragraph", "code", "list", "table"]
# characters a principal name may not contain (scope keys join names with commas)
PRINCIPAL_FORBIDDEN = (",", "\n", "\r")


class Block(BaseModel):
    """One structural unit of a document: a heading, a paragraph, a code block..."""

    model_config = ConfigDict(frozen=True)

    kind: BlockKind
    text: str
    level: int = 0  # heading depth (1 = top); 0 for non-headings
    start: int = 0  # offset of ``text`` in Document.text
    end: int = 0


class DocumentMetadata(BaseModel):
    """Metadata a user attaches through frontmatter, a sidecar or the API."""

    model_config = ConfigDict(extra="allow")

    source: str | None = None
    version: str | None = None
    valid_from: dt.date | None = None
    valid_to: dt.date | None = None
    acl: list[str] | None = None  # principals allowed to read; None = public, [] = nobody
    importance: float | None = None

    @field_validator("acl")
    @classmethod
    def _principal_names(cls, acl: list[str] | None) -> list[str] | None:
        # An access scope is keyed by its principals joined with commas: a comma in a
        # name would make two different lists one scope.
        for name in acl or []:
            if not name.strip():
                raise ValueError("a principal name is empty")
            if any(c in name for c in PRINCIPAL_FORBIDDEN):
                raise ValueError(f"principal name {name!r} contains ',' or a line break")
        return acl


class Document(BaseModel):
    """A loaded document: its text, its structure and its metadata."""

    doc_id: str  # path relative to the collection root, '/'-separated
    path: str  # absolute path it was read from
    title: str
    format: Literal["markdown", "html", "text", "rst", "pdf"]
    text: str
    blocks: list[Block]
    content_hash: str  # sha256 hex of the raw file bytes
    metadata: DocumentMetadata = Field(default_factory=DocumentMetadata)
    warnings: list[str] = Field(default_factory=list)  # e.g. "decoded as cp1252"
    # Where the page sits in its manual by its own navigation (HTML "up" and "next"
    # links, see ingest.loaders.html_navigation): the doc_ids of the pages above it,
    # nearest first, and of the page after it. Empty where the format has none.
    nav_up: list[str] = Field(default_factory=list)
    nav_next: str | None = None


class Chunk(BaseModel):
    """A retrievable span of a document."""

    chunk_id: str  # f"{doc_id}#{ordinal}"
    doc_id: str
    ordinal: int
    text: str  # what users see: the chunk alone
    heading_path: list[str]  # ["Title", "Chapter", "Section"]
    start: int
    end: int
    n_tokens: int

    def context_text(self) -> str:
        """The text that is embedded and BM25-indexed: heading path, then the chunk."""
        prefix = " > ".join(self.heading_path)
        return f"{prefix}\n{self.text}" if prefix else self.text


class SkippedFile(BaseModel):
    """A file the build could not use, with the reason, for the build report."""

    path: str
    reason: str
