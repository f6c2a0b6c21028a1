"""Column names of the RAPTOR node table, in one place.

The tree is persisted as one Parquet-friendly table, ``raptor_nodes``; row ``i`` of the
table is row ``i`` of the vector array the store saves next to it (``.npy``).
"""

from __future__ import annotations

SCHEMA_VERSION = "2"

NODES_TABLE = "raptor_nodes"

NODE_ID = "node_id"
LEVEL = "level"
TITLE = "title"
TEXT = "text"
CHILDREN = "children"
PARENTS = "parents"
CHUNK_IDS = "chunk_ids"
DOC_IDS = "doc_ids"
HEADING_PATH = "heading_path"
SUMMARISER = "summariser"
CLUSTER = "cluster"
UMAP_X = "umap_x"
UMAP_Y = "umap_y"
START = "start"
END = "end"
ORIGIN = "origin"
LABEL = "label"
COVERAGE = "coverage"

# Stored in the table's schema metadata.
META_SCHEMA_VERSION = b"raptor.schema_version"
META_ROOT_ID = b"raptor.root_id"
