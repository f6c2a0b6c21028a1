"""The extraction interface: one chunk in, entities and relations out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from graphrag.model import ChunkExtraction
from ingest.models import Chunk


class Extractor(Protocol):
    """Finds entities and relations in one chunk. ``name`` identifies the extractor
    (and its version of rules or model) in build records."""

    name: str

    def extract(self, chunk: Chunk) -> ChunkExtraction: ...


@runtime_checkable
class CorpusAwareExtractor(Protocol):
    """An extractor that first learns from the whole collection (e.g. term statistics).

    ``build_graph`` calls ``fit`` once with all chunks before extracting any.
    """

    name: str

    def fit(self, chunks: Sequence[Chunk]) -> CorpusAwareExtractor: ...

    def extract(self, chunk: Chunk) -> ChunkExtraction: ...
