"""Stage ``tables`` (untimed): the documents and chunks tables and the chunk vectors,
written into the new generation."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from arborgraph.index import schema as S
from arborgraph.index.chunk_rows import chunks_table
from arborgraph.index.store import GenerationWriter
from ingest.models import Chunk, Document

# document metadata with a column of its own; the rest goes to the extra_json column
_METADATA_COLUMNS = {"source", "version", "valid_from", "valid_to", "acl", "importance"}


def documents_table(docs: Sequence[Document]) -> pa.Table:
    """The ``documents`` table: one row per loaded document, metadata as columns."""
    return pa.table(
        {
            S.DOC_ID: [d.doc_id for d in docs],
            S.DOC_PATH: [d.path for d in docs],
            S.DOC_TITLE: [d.title for d in docs],
            S.DOC_FORMAT: [d.format for d in docs],
            S.DOC_TEXT: [d.text for d in docs],
            S.DOC_HASH: [d.content_hash for d in docs],
            S.DOC_SOURCE: [d.metadata.source for d in docs],
            S.DOC_VERSION: [d.metadata.version for d in docs],
            S.DOC_VALID_FROM: pa.array([d.metadata.valid_from for d in docs], pa.date32()),
            S.DOC_VALID_TO: pa.array([d.metadata.valid_to for d in docs], pa.date32()),
            S.DOC_ACL: pa.array([d.metadata.acl for d in docs], pa.list_(pa.string())),
            S.DOC_IMPORTANCE: pa.array([d.metadata.importance for d in docs], pa.float64()),
            S.DOC_EXTRA: [
                json.dumps(d.metadata.model_dump(mode="json", exclude=_METADATA_COLUMNS), sort_keys=True)
                for d in docs
            ],
            S.DOC_WARNINGS: pa.array([d.warnings for d in docs], pa.list_(pa.string())),
        }
    )


def write_tables(
    writer: GenerationWriter,
    docs: Sequence[Document],
    chunks: Sequence[Chunk],
    prefixes: Sequence[str] | None,
    vectors: np.ndarray | None,
) -> None:
    """Write the documents and chunks tables (with the chunks' contextual prefixes, if
    any) and the chunk vectors (when the build has an embedder)."""
    writer.write_table(S.DOCUMENTS, documents_table(docs))
    writer.write_table(S.CHUNKS, chunks_table(chunks, prefixes))
    if vectors is not None:
        writer.write_vectors(S.CHUNK_VECTORS, vectors)
