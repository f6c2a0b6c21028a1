"""Stage ``tables`` (untimed): the documents and chunks tables and the chunk vectors,
written into the new generation."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from arborgraph.core.tables import records_table
from arborgraph.index import schema as S
from arborgraph.index.chunk_rows import chunks_table
from arborgraph.index.store import GenerationWriter
from ingest.models import Chunk, Document

_STRINGS = pa.list_(pa.string())

# a column per Document attribute, or per DocumentMetadata attribute, of its name
DOCUMENTS_SCHEMA = pa.schema(
    [
        (S.DOC_ID, pa.string()),
        (S.DOC_PATH, pa.string()),
        (S.DOC_TITLE, pa.string()),
        (S.DOC_FORMAT, pa.string()),
        (S.DOC_TEXT, pa.string()),
        (S.DOC_HASH, pa.string()),
        (S.DOC_SOURCE, pa.string()),
        (S.DOC_VERSION, pa.string()),
        (S.DOC_VALID_FROM, pa.date32()),
        (S.DOC_VALID_TO, pa.date32()),
        (S.DOC_ACL, _STRINGS),
        (S.DOC_IMPORTANCE, pa.float64()),
        (S.DOC_EXTRA, pa.string()),  # the rest of the metadata, as JSON
        (S.DOC_WARNINGS, _STRINGS),
        (S.DOC_NAV_UP, _STRINGS),
        (S.DOC_NAV_NEXT, pa.string()),
    ]
)
# document metadata with a column of its own; the rest goes to the extra_json column
_METADATA_COLUMNS = (S.DOC_SOURCE, S.DOC_VERSION, S.DOC_VALID_FROM, S.DOC_VALID_TO, S.DOC_ACL, S.DOC_IMPORTANCE)


def documents_table(docs: Sequence[Document]) -> pa.Table:
    """The ``documents`` table: one row per loaded document, metadata as columns."""
    derived: dict[str, list[object]] = {
        name: [getattr(d.metadata, name) for d in docs] for name in _METADATA_COLUMNS
    }
    derived[S.DOC_EXTRA] = [
        json.dumps(d.metadata.model_dump(mode="json", exclude=set(_METADATA_COLUMNS)), sort_keys=True) for d in docs
    ]
    return records_table(docs, DOCUMENTS_SCHEMA, derived)


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
