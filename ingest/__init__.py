"""Ingestion: loading a collection of documents and cutting them into chunks."""

from ingest.collection import iter_collection
from ingest.models import Block, Chunk, Document, DocumentMetadata, SkippedFile

__all__ = [
    "Block",
    "Chunk",
    "Document",
    "DocumentMetadata",
    "SkippedFile",
    "iter_collection",
]
