"""Tree <-> Arrow tables (Parquet-friendly); vectors stay a numpy array the store saves."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pyarrow as pa

from arborgraph.core.tables import records_table
from raptor import schema as S
from raptor.tree import Node, Tree

_LIST = pa.list_(pa.string())

NODE_SCHEMA = pa.schema(
    [
        pa.field(S.NODE_ID, pa.string(), nullable=False),
        pa.field(S.LEVEL, pa.int32(), nullable=False),
        pa.field(S.TITLE, pa.string(), nullable=False),
        pa.field(S.TEXT, pa.string(), nullable=False),
        pa.field(S.CHILDREN, _LIST, nullable=False),
        pa.field(S.PARENTS, _LIST, nullable=False),
        pa.field(S.CHUNK_IDS, _LIST, nullable=False),
        pa.field(S.DOC_IDS, _LIST, nullable=False),
        pa.field(S.HEADING_PATH, _LIST, nullable=False),
        pa.field(S.SUMMARISER, pa.string()),
        pa.field(S.CLUSTER, pa.int32(), nullable=False),
        pa.field(S.UMAP_X, pa.float64(), nullable=False),
        pa.field(S.UMAP_Y, pa.float64(), nullable=False),
        pa.field(S.START, pa.int64()),
        pa.field(S.END, pa.int64()),
        pa.field(S.ORIGIN, pa.string(), nullable=False),
        pa.field(S.LABEL, pa.string(), nullable=False),
        pa.field(S.COVERAGE, pa.float64()),
    ]
)


def tree_to_tables(tree: Tree) -> dict[str, pa.Table]:
    """The tree as named tables: ``{"raptor_nodes": table}``.

    Row ``i`` is ``tree.nodes[i]`` (and ``tree.vectors[i]``). The root id and the
    schema version are kept in the table's schema metadata.
    """
    metadata = {S.META_SCHEMA_VERSION: S.SCHEMA_VERSION.encode(), S.META_ROOT_ID: tree.root_id.encode()}
    return {S.NODES_TABLE: records_table(tree.nodes, NODE_SCHEMA.with_metadata(metadata))}


def tree_from_tables(tables: Mapping[str, pa.Table], vectors: np.ndarray | None = None) -> Tree:
    """Rebuild a tree from :func:`tree_to_tables` output (e.g. read back from Parquet).

    ``vectors``, if given, must be the array saved with the tree (one row per node).
    """
    if S.NODES_TABLE not in tables:
        raise KeyError(f"missing table {S.NODES_TABLE!r}")
    table = tables[S.NODES_TABLE]
    return tree_from_batches(table.schema, table.to_batches(max_chunksize=_BATCH_ROWS), vectors)


_BATCH_ROWS = 16_384


def tree_from_batches(schema: pa.Schema, batches: Iterable[pa.RecordBatch], vectors: np.ndarray | None = None) -> Tree:
    """Rebuild a tree from the record batches of its nodes table (``schema`` is the
    table's, with its metadata), one batch at a time: a large tree's table is never
    held whole beside its nodes (e.g. read from Parquet by
    ``pyarrow.parquet.ParquetFile.iter_batches``).

    Node ids named again as children, parents or covered chunks share the id's one
    string, as repeated document ids and headings do: a tree of 200,000 leaves names
    each leaf once per level above it."""
    missing = [name for name in NODE_SCHEMA.names if name not in schema.names]
    if missing:
        raise ValueError(f"{S.NODES_TABLE} lacks columns {missing}")
    meta = schema.metadata or {}
    # Metadata can be dropped by tools that rewrite the table; the root is derivable.
    version = meta.get(S.META_SCHEMA_VERSION, S.SCHEMA_VERSION.encode()).decode()
    if version != S.SCHEMA_VERSION:
        raise ValueError(f"{S.NODES_TABLE} has schema version {version!r}, expected {S.SCHEMA_VERSION!r}")
    shared: dict[str, str] = {}
    one = shared.setdefault

    def strings(values: list[str]) -> tuple[str, ...]:
        return tuple([one(v, v) for v in values])

    nodes: list[Node] = []
    for batch in batches:
        cols = {name: batch.column(name).to_pylist() for name in NODE_SCHEMA.names}
        nodes.extend(
            Node(
                node_id=one(cols[S.NODE_ID][i], cols[S.NODE_ID][i]),
                level=int(cols[S.LEVEL][i]),
                title=cols[S.TITLE][i],
                text=cols[S.TEXT][i],
                children=strings(cols[S.CHILDREN][i]),
                parents=strings(cols[S.PARENTS][i]),
                chunk_ids=strings(cols[S.CHUNK_IDS][i]),
                doc_ids=strings(cols[S.DOC_IDS][i]),
                heading_path=strings(cols[S.HEADING_PATH][i]),
                summariser=cols[S.SUMMARISER][i],
                cluster=int(cols[S.CLUSTER][i]),
                umap_x=float(cols[S.UMAP_X][i]),
                umap_y=float(cols[S.UMAP_Y][i]),
                start=cols[S.START][i],
                end=cols[S.END][i],
                origin=cols[S.ORIGIN][i],
                label=cols[S.LABEL][i],
                coverage=cols[S.COVERAGE][i],
            )
            for i in range(batch.num_rows)
        )
    root_id = meta.get(S.META_ROOT_ID, b"").decode()
    if not root_id:
        tops = [n for n in nodes if not n.parents]
        root_id = max(tops, key=lambda n: n.level).node_id if tops else ""
    return Tree(nodes=tuple(nodes), root_id=root_id, vectors=None if vectors is None else np.asarray(vectors))
