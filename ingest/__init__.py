"""Ingestion: loading a collection of documents and cutting them into chunks.

>>> from ingest import iter_collection, chunk_document, ChunkingConfig, load_token_counter
>>> count = load_token_counter()
>>> for item in iter_collection(["manuals/"]):          # doctest: +SKIP
...     if isinstance(item, Document):
...         chunks = chunk_document(item, ChunkingConfig(), count)
"""

from ingest.chunking import ChunkingConfig, chunk_document
from ingest.collection import iter_collection
from ingest.models import Block, Chunk, Document, DocumentMetadata, SkippedFile
from ingest.tokens import TokenCounter, estimate_wordpiece_tokens, load_token_counter

__all__ = [
    "Block",
    "Chunk",
    "ChunkingConfig",
    "Document",
    "DocumentMetadata",
    "SkippedFile",
    "TokenCounter",
    "chunk_document",
    "estimate_wordpiece_tokens",
    "iter_collection",
    "load_token_counter",
]
