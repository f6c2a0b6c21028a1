"""An index in Neo4j: an incremental Bolt export, CSV files for ``neo4j-admin``, and
the graph route's neighbour lookups on the exported graph.

The property graph (every node also carries the label ``Arborgraph`` and a unique
``uid``; every node and relationship carries ``ag_hash``, a hash of its content)::

    (:Document)-[:HAS_CHUNK {ordinal}]->(:Chunk)
    (:Chunk|TreeNode)-[:CHILD_OF]->(:TreeNode)           RAPTOR tree, leaves are chunks
    (:Chunk)-[:MENTIONS {count, start, end}]->(:Entity)
    (:Entity)-[:RELATES_TO {id, type, weight, weight_key, description, chunk_ids}]->(:Entity)
    (:Entity)-[:IN_COMMUNITY {level}]->(:Community)      community reports are properties
    (:Community)-[:PARENT_COMMUNITY]->(:Community)       child -> parent

Trees, entities and communities exist once per access scope (see
:mod:`arborgraph.pipeline.structures`), so their uids carry a scope key; every such node has a
``scope`` property.

The modules, in the order data flows through them:

- :mod:`.records`: names, property types, uids, content hashes, weight keys.
- :mod:`.convert`: an index's tables as records (the one module that reads the index).
- :mod:`.cypher`: the statement type and the Cypher templates over map rows.
- :mod:`.plan`: the diff against the server's state and the statements per stage.
- :mod:`.servers`: what each server needs, behind :class:`ServerDialect`: Neo4j gets
  plain batched ``UNWIND $rows AS row`` of maps; every FalkorDB workaround (escaping,
  byte budget, positional packed rows, CREATE of new records, small reply records,
  no-op transactions, one session) is in :class:`FalkorDBDialect`.
- :mod:`.connection`: the driver (imported on first use), connecting, verifying.
- :mod:`.export`: the Bolt export itself (:func:`export_index`).
- :mod:`.csv_export`: files for ``neo4j-admin database import full``.
- :mod:`.backend`: the graph route's neighbour lookups on the server.
- :mod:`.gds`: communities in the database (GDS's hierarchical Leiden), beside the index's.
- :mod:`.hierarchy`: GDS's ids per level laid out as the index's community table (pure).
- :mod:`.adopt`: the index adopts GDS's communities (a new generation, reports rebuilt).
- :mod:`.store`: a question's flat candidates from the database's vector and full-text indexes.

Servers: Neo4j (4.4+, 5.x, 2025.x) and FalkorDB's experimental Bolt layer, told apart
by a probe (:func:`detect_dialect`); the tests run Neo4j 5.26 with GDS 2.13
(``scripts/neo4j-server``) and FalkorDB for its dialect. The command line is ``arborgraph export-neo4j``
(:mod:`arborgraph.cli`); nothing here imports typer or, until a connection is made,
the ``neo4j`` driver.
"""

from arborgraph.core.errors import ExportError, GraphBackendError
from arborgraph.neo4j.backend import (
    ExpandedEdge,
    GraphServer,
    Neo4jGraphBackend,
    cypher_expand,
    graph_server,
    memory_expand,
    relations_among,
    walk,
)
from arborgraph.neo4j.connection import BOLT_SCHEMES, CONNECT_TIMEOUT, connect, verify
from arborgraph.neo4j.convert import ScopeTables, index_records, records_from_tables
from arborgraph.neo4j.csv_export import CsvReport, write_csv
from arborgraph.neo4j.cypher import (
    DEFAULT_BATCH,
    Statement,
    ident,
    neighbours_cypher,
    node_append_cypher,
    node_delete_cypher,
    node_hash_cypher,
    node_state_cypher,
    node_upsert_cypher,
    rel_append_cypher,
    rel_delete_cypher,
    rel_hash_cypher,
    rel_state_cypher,
    rel_upsert_cypher,
)
from arborgraph.neo4j.gds import (
    COMMUNITIES_PROPERTY,
    COMMUNITY_PROPERTY,
    GdsLeidenOutcome,
    GdsLeidenReport,
    GdsLeidenRun,
    LeidenSettings,
    SkippedScope,
    compare_with_index,
    gds_leiden_index,
    index_settings,
    partitioned_scopes,
    partition_modularity,
    run_gds_leiden,
    top_level_partition,
)
from arborgraph.neo4j.hierarchy import HierarchyError, gds_hierarchy, level_groups, split_communities
from arborgraph.neo4j.adopt import AdoptedScope, AdoptOutcome, adopt_gds_communities
from arborgraph.neo4j.store import Neo4jStore, SearchExport, export_search, lucene_query, open_store
from arborgraph.neo4j.export import DEFAULT_WORKERS, ExportReport, export_index, export_records, read_state, run_stage
from arborgraph.neo4j.plan import (
    STAGE_DELETIONS,
    STAGE_NODES,
    STAGE_RELATIONSHIPS,
    Counts,
    ExportPlan,
    delete_statements,
    iter_stages,
    plan_export,
    plan_stages,
    plan_statements,
)
from arborgraph.neo4j.records import (
    CHILD_OF,
    CHUNK,
    COMMUNITY,
    DOCUMENT,
    DOUBLE,
    ENTITY,
    HAS_CHUNK,
    HASH,
    IN_COMMUNITY,
    LONG,
    MARK,
    MENTIONS,
    NODE_LABELS,
    NODE_PROPERTIES,
    PARENT_COMMUNITY,
    PUBLIC,
    REL_PROPERTIES,
    REL_TYPES,
    RELATES_TO,
    STR,
    STR_LIST,
    TREE_NODE,
    UID,
    WEIGHT_KEY,
    GraphRecords,
    Node,
    Rel,
    chunk_uid,
    community_uid,
    content_hash,
    document_uid,
    entity_uid,
    make_node,
    make_rel,
    rel_uid,
    scope_key,
    tree_uid,
    weight_from_key,
    weight_key,
)
from arborgraph.neo4j.servers import NEO4J, FalkorDBDialect, Neo4jDialect, ServerDialect, detect_dialect

__all__ = [
    "ExportError", "GraphBackendError",
    # records
    "MARK", "UID", "HASH", "WEIGHT_KEY", "PUBLIC", "DOCUMENT", "CHUNK", "TREE_NODE", "ENTITY", "COMMUNITY",
    "NODE_LABELS", "HAS_CHUNK", "CHILD_OF", "MENTIONS", "RELATES_TO", "IN_COMMUNITY", "PARENT_COMMUNITY",
    "REL_TYPES", "STR", "LONG", "DOUBLE", "STR_LIST", "NODE_PROPERTIES", "REL_PROPERTIES",
    "Node", "Rel", "GraphRecords", "make_node", "make_rel", "content_hash", "scope_key", "document_uid",
    "chunk_uid", "tree_uid", "entity_uid", "community_uid", "rel_uid", "weight_key", "weight_from_key",
    # conversion
    "ScopeTables", "records_from_tables", "index_records",
    # cypher
    "DEFAULT_BATCH", "Statement", "ident", "node_upsert_cypher", "rel_upsert_cypher", "node_delete_cypher",
    "rel_delete_cypher", "node_append_cypher", "rel_append_cypher", "node_hash_cypher", "rel_hash_cypher",
    "node_state_cypher", "rel_state_cypher", "neighbours_cypher",
    # planning
    "Counts", "ExportPlan", "plan_export", "delete_statements", "iter_stages", "plan_stages", "plan_statements",
    "STAGE_NODES", "STAGE_RELATIONSHIPS", "STAGE_DELETIONS",
    # servers
    "ServerDialect", "Neo4jDialect", "FalkorDBDialect", "NEO4J", "detect_dialect",
    # connection and export
    "BOLT_SCHEMES", "CONNECT_TIMEOUT", "connect", "verify", "DEFAULT_WORKERS", "ExportReport", "read_state",
    "run_stage", "export_records", "export_index",
    # CSV
    "CsvReport", "write_csv",
    # communities in the database (GDS)
    "LeidenSettings", "GdsLeidenRun", "GdsLeidenReport", "GdsLeidenOutcome", "SkippedScope", "run_gds_leiden",
    "gds_leiden_index", "compare_with_index",
    "partition_modularity", "top_level_partition", "COMMUNITIES_PROPERTY", "COMMUNITY_PROPERTY",
    "index_settings", "partitioned_scopes",
    # the index adopts GDS's communities
    "gds_hierarchy", "level_groups", "split_communities", "HierarchyError", "adopt_gds_communities", "AdoptOutcome", "AdoptedScope",
    # the store (lookup on the database's search indexes)
    "Neo4jStore", "SearchExport", "export_search", "lucene_query", "open_store",
    # graph backend
    "Neo4jGraphBackend", "GraphServer", "graph_server", "ExpandedEdge", "walk", "cypher_expand",
    "memory_expand", "relations_among",
]
