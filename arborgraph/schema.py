"""Names of the index's tables and columns, and the schema version, in one place.

RAPTOR and GraphRAG tables keep their column names in ``raptor/schema.py`` and
``graphrag/schema.py``; this module names the tables themselves, and gives the
manifest its typed shape.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator

SCHEMA_VERSION = 1

# table names (files are tables/<name>.parquet)
DOCUMENTS = "documents"
CHUNKS = "chunks"

# documents columns
DOC_ID = "doc_id"
DOC_PATH = "path"
DOC_TITLE = "title"
DOC_FORMAT = "format"
DOC_TEXT = "text"
DOC_HASH = "content_hash"
DOC_SOURCE = "source"
DOC_VERSION = "version"
DOC_VALID_FROM = "valid_from"
DOC_VALID_TO = "valid_to"
DOC_ACL = "acl"  # list<string>, null = public
DOC_IMPORTANCE = "importance"
DOC_EXTRA = "extra_json"
DOC_WARNINGS = "warnings"

# chunks columns (row order = vector row order in vectors/chunks.npy)
CHUNK_ID = "chunk_id"
CHUNK_DOC_ID = "doc_id"
CHUNK_ORDINAL = "ordinal"
CHUNK_TEXT = "text"
CHUNK_HEADING_PATH = "heading_path"
CHUNK_START = "start"
CHUNK_END = "end"
CHUNK_TOKENS = "n_tokens"
CHUNK_PREFIX = "context_prefix"  # only with LLM contextual prefixes: what was indexed before the text

# vector files (vectors/<name>.npy)
CHUNK_VECTORS = "chunks"


# -- the manifest's shape ------------------------------------------------------------
# Checked on every open (arborgraph.store.open_generation): a manifest that does not
# have this shape is a damaged index, refused in one line, never read field by field
# until something raises.

GENERATION_PATTERN = r"^gen-\d{6}$"


class FileRecord(BaseModel):
    """One file of a generation: its checksum, size, and rows for tables and vectors."""

    model_config = ConfigDict(extra="forbid")

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: StrictInt = Field(ge=0)
    rows: StrictInt | None = Field(default=None, ge=0)


class StoreManifest(BaseModel):
    """What the store itself needs of a manifest: its version, its generation and the
    checksummed list of every file (no file outside the list is ever read)."""

    model_config = ConfigDict(extra="allow")

    schema_version: StrictInt
    generation: str = Field(pattern=GENERATION_PATTERN)
    files: dict[str, FileRecord] = Field(min_length=1)

    @field_validator("files")
    @classmethod
    def _relative_paths(cls, files: dict[str, FileRecord]) -> dict[str, FileRecord]:
        for rel in files:
            parts = rel.split("/")
            if rel.startswith("/") or "\\" in rel or any(p in ("", ".", "..") for p in parts):
                raise ValueError("a file path is not a plain relative path inside the generation")
        return files


class ModeRecord(BaseModel):
    model_config = ConfigDict(extra="allow")

    llm_model: str | None = None
    embedding: str | None = None
    lexical_fallback: StrictBool = False
    lexical_fallback_reason: str | None = None


class ScopeRecord(BaseModel):
    """One access scope: its tag (in table names), its scope key, its fingerprints."""

    model_config = ConfigDict(extra="allow")

    tag: str = Field(pattern=r"^s\d{1,6}$")
    scope: str = Field(min_length=1)
    chunks: StrictInt = Field(ge=0)
    tree_fingerprint: str | None = None
    graph_fingerprint: str | None = None


class IndexManifest(StoreManifest):
    """The manifest of an index a build wrote: the store's part and what queries read."""

    arborgraph_version: str
    built_at: str
    config: dict[str, Any]
    mode: ModeRecord
    routes: list[Literal["lookup", "tree", "graph", "global"]] = Field(min_length=1)
    scopes: list[ScopeRecord]
    documents: dict[str, str]
    counts: dict[str, StrictInt]
    timings_s: dict[str, float] = Field(default_factory=dict)
    report: dict[str, Any] = Field(default_factory=dict)

    @field_validator("files")
    @classmethod
    def _has_the_core_tables(cls, files: dict[str, FileRecord]) -> dict[str, FileRecord]:
        for rel in (f"tables/{DOCUMENTS}.parquet", f"tables/{CHUNKS}.parquet"):
            if rel not in files:
                raise ValueError(f"the file list has no {rel}")
        return files
