"""Chunks to rows and back, in one place: the ``chunks`` table of an index, its columns
for the query-time store, and the compact rows a pool worker sends back.

Light on purpose: pool workers import it, so pyarrow is imported only by the functions
that build or read tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from arborgraph.index import schema as S
from ingest.models import Chunk, Document

if TYPE_CHECKING:
    import pyarrow as pa

# the chunk fields stored as columns, in table order (each column is named like its field)
CHUNK_COLUMNS = (
    S.CHUNK_ID, S.CHUNK_DOC_ID, S.CHUNK_ORDINAL, S.CHUNK_TEXT, S.CHUNK_HEADING_PATH,
    S.CHUNK_START, S.CHUNK_END, S.CHUNK_TOKENS,
)

# What a pool worker sends back per chunk: (chunk_id, ordinal, text or None when it is
# the document's own text[start:end], heading_path, start, end, n_tokens). Leaving out
# the text that the parent already holds halves what crosses the process boundary.
ChunkRow = tuple[str, int, str | None, list[str], int, int, int]


def _arrow_types() -> dict[str, "pa.DataType"]:
    import pyarrow as pa

    return {
        S.CHUNK_ORDINAL: pa.int32(),
        S.CHUNK_HEADING_PATH: pa.list_(pa.string()),
        S.CHUNK_START: pa.int64(),
        S.CHUNK_END: pa.int64(),
        S.CHUNK_TOKENS: pa.int32(),
    }


def chunks_table(chunks: Sequence[Chunk], prefixes: Sequence[str] | None = None) -> "pa.Table":
    """The ``chunks`` table; its row order is the row order of the chunk vectors. With
    ``prefixes`` (LLM contextual prefixes), their column comes last."""
    import pyarrow as pa

    types = _arrow_types()
    columns = {
        name: pa.array([getattr(c, name) for c in chunks], types[name]) if name in types
        else [getattr(c, name) for c in chunks]
        for name in CHUNK_COLUMNS
    }
    if prefixes is not None:
        columns[S.CHUNK_PREFIX] = pa.array(list(prefixes), pa.string())
    return pa.table(columns)


def chunks_from_table(table: "pa.Table") -> list[Chunk]:
    """The chunks of a ``chunks`` table, in row order."""
    return [Chunk(**row) for row in table.select(list(CHUNK_COLUMNS)).to_pylist()]


def encode_chunks(doc: Document, chunks: Sequence[Chunk]) -> list[ChunkRow]:
    """The rows of ``doc``'s chunks for :func:`decode_chunks`."""
    return [
        (
            c.chunk_id, c.ordinal, None if doc.text[c.start : c.end] == c.text else c.text,
            c.heading_path, c.start, c.end, c.n_tokens,
        )
        for c in chunks
    ]


def decode_chunks(doc: Document, rows: Sequence[ChunkRow]) -> list[Chunk]:
    """The chunks of ``doc`` from the rows :func:`encode_chunks` made."""
    return [
        Chunk(
            chunk_id=chunk_id, doc_id=doc.doc_id, ordinal=ordinal,
            text=doc.text[start:end] if text is None else text,
            heading_path=heading_path, start=start, end=end, n_tokens=n_tokens,
        )
        for chunk_id, ordinal, text, heading_path, start, end, n_tokens in rows
    ]
