"""Names of the graph tables and their columns: the one place they are spelled.

``graph_to_tables`` / ``graph_from_tables`` and anything that reads the stored
Parquet files use these constants, never string literals.
"""

from __future__ import annotations

SCHEMA_VERSION = 1

# Table names
ENTITIES = "entities"
RELATIONSHIPS = "relationships"
COMMUNITIES = "communities"
COMMUNITY_REPORTS = "community_reports"
ENTITY_CHUNKS = "entity_chunks"
TABLE_NAMES = (ENTITIES, RELATIONSHIPS, COMMUNITIES, COMMUNITY_REPORTS, ENTITY_CHUNKS)

# What an update of the graph reuses (see graphrag.update); not part of the graph itself
EXTRACTIONS = "graph_extractions"  # one row per chunk: what the extractor found in it
EXTRACTOR_STATE = "graph_extractor"  # the fitted extractor's learned statistics
UPDATE_TABLE_NAMES = (EXTRACTIONS, EXTRACTOR_STATE)

# Shared column names
ID = "id"
CHUNK_IDS = "chunk_ids"
DESCRIPTION = "description"
LEVEL = "level"

# entities
NAME = "name"
TYPE = "type"
ALIASES = "aliases"
DEGREE = "degree"
DESCRIPTION_CHUNK = "description_chunk"  # the chunk the description quotes

# relationships
SOURCE = "source"
TARGET = "target"
WEIGHT = "weight"
EVIDENCE = "evidence"  # list<struct<chunk_id, start, end>>: verbatim sentences

# communities
PARENT = "parent"  # -1 for a top-level community
CHILDREN = "children"
MEMBERS = "members"

# community_reports
COMMUNITY_ID = "community_id"
TITLE = "title"
SUMMARY = "summary"
FINDINGS = "findings"  # list<struct<text, chunk_ids>>
RANK = "rank"
PAGES = "pages"  # list<string>: ids of the documents to read, best first
# (and NAME: the community's name, which an extractive report's title is)

# entity_chunks (one row per entity and chunk that mentions it)
ENTITY_ID = "entity_id"
CHUNK_ID = "chunk_id"
START = "start"  # first mention, offset in the chunk text
END = "end"
COUNT = "count"  # number of mentions in that chunk

# graph_extractions
CHUNK_HASH = "chunk_hash"  # hash of everything of the chunk the extractor reads
RELATIONS = "relations"  # list<struct<source, target, type, weight, description, span>>
SPANS = "spans"  # list<struct<start, end>>: mentions, offsets in the chunk text
SPAN = "span"  # struct<start, end> or null

# graph_extractor (one row per learned item)
KIND = "kind"  # e.g. "terms", "generic_headings"
KEY = "key"
VALUE = "value"

# struct fields
FINDING_TEXT = "text"

# Schema metadata keys: SCHEMA_VERSION, and the graph's build facts as JSON
META_SCHEMA_VERSION = b"arborgraph.graph_schema_version"
META_GRAPH = b"arborgraph.graph_meta"
META_EXTRACTOR = b"arborgraph.extractor"  # name of the extractor that made the extractions
