"""What a build did: the report :func:`arborgraph.pipeline.build_index` returns, the
CLI renders, and the manifest stores (without its timings, kept at its top level)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from arborgraph.core.embedding_identity import EmbeddingIdentity
from ingest.models import SkippedFile


class Claim(BaseModel):
    """One document's statement of a default: ``key`` is ``value``, with its sentence."""

    key: str
    value: str
    doc_id: str
    chunk_id: str
    sentence: str


class Contradiction(BaseModel):
    """Two documents stating different values for one key (found by pipeline.contradictions)."""

    key: str
    first: Claim
    second: Claim
    # both documents are versions of one ``source``: the newer supersedes the older at
    # query time, so differing is expected (reported for review all the same)
    between_versions: bool = False


# the report's account of the user-level embedding cache (left out of the manifest)
SHARED_CACHE_FIELDS = frozenset(
    {"embeddings_from_index_cache", "embeddings_from_shared_cache", "shared_embedding_cache", "shared_embedding_cache_note"}
)


class BuildReport(BaseModel):
    """What a build did, for the CLI's closing report and the manifest."""

    index_dir: str
    generation: str = ""
    documents: int = 0
    chunks: int = 0
    skipped: list[SkippedFile] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    embedding: str | None = None
    # what exactly made the vectors (the manifest records it under mode)
    embedding_identity: EmbeddingIdentity | None = None
    embedding_fallback: str | None = None  # why retrieval is lexical-only
    # the live index's embedder when this build's differs: every chunk was embedded again
    embedding_replaced: str | None = None
    # the chunk vectors of stage embed: from a cache (the two below together), or computed
    embeddings_cached: int = 0
    embeddings_computed: int = 0
    embeddings_from_index_cache: int = 0  # this index's own cache (cache/embeddings.sqlite)
    embeddings_from_shared_cache: int = 0  # the user-level cache that index folders share
    # that shared cache's file when this build used it; else None, and the note says why
    # (off, or an embedder it cannot key), or a warning that it could not be used
    shared_embedding_cache: str | None = None
    shared_embedding_cache_note: str | None = None
    lock_wait: str | None = None  # set when this build waited for another one to finish
    unchanged: bool = False  # nothing changed since the live generation: no new one was written
    contradictions: list[Contradiction] = Field(default_factory=list)
    timings_s: dict[str, float] = Field(default_factory=dict)
    stages: dict[str, dict[str, Any]] = Field(default_factory=dict)

    def stored(self) -> dict[str, Any]:
        """The report as the manifest stores it: its timings are the manifest's own field
        (and a stored report is never of an unchanged rebuild: none writes a manifest).
        What the shared embedding cache did is this machine's business, not the index's:
        the manifest keeps only how many vectors came from a cache."""
        return self.model_dump(mode="json", exclude={"timings_s", "unchanged", *SHARED_CACHE_FIELDS})
