"""The tree's Arrow/Parquet tables round-trip; vectors stay a separate .npy array."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from raptor_corpus import built_tree

from raptor import schema as S
from raptor import tree_from_tables, tree_to_tables
from raptor.tables import tree_from_batches


def test_round_trip_through_parquet_and_npy(tmp_path: Path) -> None:
    tree = built_tree()
    tables = tree_to_tables(tree)
    assert list(tables) == [S.NODES_TABLE]
    for name, table in tables.items():
        pq.write_table(table, tmp_path / f"{name}.parquet")
    np.save(tmp_path / "vectors.npy", tree.node_vectors)

    read = {S.NODES_TABLE: pq.read_table(tmp_path / f"{S.NODES_TABLE}.parquet")}
    back = tree_from_tables(read, np.load(tmp_path / "vectors.npy", allow_pickle=False))
    assert back.nodes == tree.nodes
    assert back.root_id == tree.root_id
    assert np.array_equal(back.node_vectors, tree.node_vectors)



def test_read_batch_by_batch_the_tree_is_the_same_and_names_each_id_once(tmp_path: Path) -> None:
    tree = built_tree()
    pq.write_table(tree_to_tables(tree)[S.NODES_TABLE], tmp_path / "nodes.parquet")
    file = pq.ParquetFile(tmp_path / "nodes.parquet")
    back = tree_from_batches(file.schema_arrow, file.iter_batches(batch_size=7))
    assert back.nodes == tree.nodes and back.root_id == tree.root_id
    # a summary's covered chunks are the leaves' own id strings, not copies of them
    leaf_ids = {id(n.node_id) for n in back.leaves()}
    summary = back.root
    assert summary.chunk_ids and all(id(c) in leaf_ids for c in summary.chunk_ids)


def test_columns_are_the_schema_constants() -> None:
    table = tree_to_tables(built_tree())[S.NODES_TABLE]
    expected = [S.NODE_ID, S.LEVEL, S.TITLE, S.TEXT, S.CHILDREN, S.PARENTS, S.CHUNK_IDS, S.DOC_IDS,
                S.HEADING_PATH, S.SUMMARISER, S.CLUSTER, S.UMAP_X, S.UMAP_Y, S.START, S.END,
                S.ORIGIN, S.LABEL, S.COVERAGE]
    assert table.column_names == expected
    assert table.schema.field(S.CHILDREN).type == pa.list_(pa.string())
    assert table.num_rows == len(built_tree())
    leaf_rows = table.filter(pa.compute.equal(table[S.LEVEL], 0))
    assert all(s is None for s in leaf_rows[S.SUMMARISER].to_pylist())


def test_root_is_derived_when_metadata_is_lost() -> None:
    tree = built_tree()
    table = tree_to_tables(tree)[S.NODES_TABLE].replace_schema_metadata(None)
    assert tree_from_tables({S.NODES_TABLE: table}).root_id == tree.root_id


def test_bad_tables_are_rejected() -> None:
    table = tree_to_tables(built_tree())[S.NODES_TABLE]
    with pytest.raises(KeyError):
        tree_from_tables({})
    with pytest.raises(ValueError, match="lacks columns"):
        tree_from_tables({S.NODES_TABLE: table.drop_columns([S.PARENTS])})
    newer = table.replace_schema_metadata({S.META_SCHEMA_VERSION: b"99", S.META_ROOT_ID: b"L1:0"})
    with pytest.raises(ValueError, match="schema version"):
        tree_from_tables({S.NODES_TABLE: newer})
    with pytest.raises(ValueError, match="one row per node"):
        tree_from_tables({S.NODES_TABLE: table}, np.zeros((3, 4)))
