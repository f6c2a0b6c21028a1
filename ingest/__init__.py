"""Ingestion: loading a collection of documents and cutting them into chunks.

It imports only itself and ``arborgraph.core`` (``tests/test_layers.py`` keeps it so).

>>> from ingest import iter_collection, chunk_document, ChunkingConfig, load_token_counter
>>> count = load_token_counter()
>>> for item in iter_collection(["manuals/"]):          # doctest: +SKIP
...     if isinstance(item, Document):
...         chunks = chunk_document(item, ChunkingConfig(), count)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from arborgraph.core.lazy import lazy_exports

# Public names -> the module defining them. Imported on first use so that the loader
# sandbox, which only parses files, does not pay for chunking, the collection walk and
# their dependencies (~0.2 CPU-s of its start-up, paid once per sandbox).
_EXPORTS = {
    "Block": "ingest.models",
    "Chunk": "ingest.models",
    "ChunkingConfig": "ingest.chunking",
    "Document": "ingest.models",
    "DocumentMetadata": "ingest.models",
    "SkippedFile": "ingest.models",
    "TokenCounter": "ingest.tokens",
    "chunk_document": "ingest.chunking",
    "count_files": "ingest.collection",
    "estimate_wordpiece_tokens": "ingest.tokens",
    "iter_collection": "ingest.collection",
    "load_token_counter": "ingest.tokens",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from ingest.chunking import ChunkingConfig, chunk_document
    from ingest.collection import count_files, iter_collection
    from ingest.models import Block, Chunk, Document, DocumentMetadata, SkippedFile
    from ingest.tokens import TokenCounter, estimate_wordpiece_tokens, load_token_counter


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
