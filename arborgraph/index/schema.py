"""Names of the index's tables and columns, and the schema version, in one place.

RAPTOR and GraphRAG tables keep their column names in ``raptor/schema.py`` and
``graphrag/schema.py``; this module names the tables themselves. The manifest's typed
shape is :mod:`arborgraph.index.manifest`.
"""

from __future__ import annotations

SCHEMA_VERSION = 2  # of the whole index; arborgraph.index.manifest checks it on every open

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
DOC_NAV_UP = "nav_up"  # list<string>: the pages above it by its own navigation, nearest first
DOC_NAV_NEXT = "nav_next"

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

