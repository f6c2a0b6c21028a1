"""Stages ``contextual_prefixes`` (with an LLM, when asked), ``embed`` and ``lexical``:
the text every chunk is indexed by, its vector (through the embedding cache) and the
BM25 index over those texts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from arborgraph.config import Config
from arborgraph.models.embedding import load_embedder
from arborgraph.core.errors import EmbedderUnavailable
from arborgraph.index.build_report import BuildReport
from arborgraph.core.protocols import Embedder
from arborgraph.pipeline.embedding_cache import EmbeddingCache
from arborgraph.pipeline.shared_embedding_cache import SharedCacheOpening, SharedEmbeddingCache, open_shared_cache
from arborgraph.core.lexical import LexicalIndex
from arborgraph.core.protocols import ProgressCallback
from ingest.models import Chunk, Document

# what a build loads its embedder with: the embedder, or None and why not
EmbedderFactory = Callable[[Config], tuple[Embedder | None, str | None]]


def try_load_embedder(config: Config) -> tuple[Embedder | None, str | None]:
    """The configured embedder, or (None, reason) so the build falls back to lexical."""
    try:
        return load_embedder(config.embedding), None
    except EmbedderUnavailable as exc:
        return None, str(exc)


class Embedders:
    """The embedder this build uses (or why there is none), loaded once: the check for
    an unchanged index needs its name, and stage ``embed`` its vectors; and the
    user-level embedding cache, opened once per build by the first stage that embeds."""

    def __init__(self, factory: EmbedderFactory, config: Config, report: BuildReport) -> None:
        self._factory = factory
        self._config = config
        self._report = report
        self._local: tuple[Embedder | None, str | None] | None = None
        self._shared: SharedCacheOpening | None = None

    def local(self) -> tuple[Embedder | None, str | None]:
        if self._local is None:
            self._local = self._factory(self._config)
        return self._local

    def shared_cache(self, embedder: Embedder) -> SharedEmbeddingCache | None:
        """The user-level embedding cache for ``embedder``; None when it is off, cannot key
        this embedder, or cannot be used, which the report says (a note, or a warning)."""
        if self._shared is None:
            self._shared = opening = open_shared_cache(self._config.embedding, embedder)
            self._report.shared_embedding_cache_note = opening.note
            if opening.warning:
                self._report.warnings.append(opening.warning)
            if opening.cache is not None:
                self._report.shared_embedding_cache = str(opening.cache.path)
        return self._shared.cache

    def close(self) -> None:
        """Release the shared cache, if a stage opened it."""
        if self._shared is not None and self._shared.cache is not None:
            self._shared.cache.close()

def contextual_prefixes(
    chat: Any, docs: Sequence[Document], chunks: Sequence[Chunk], config: Config, progress: ProgressCallback
) -> list[str]:
    """One LLM sentence per chunk situating it in its document (cached like every call).

    The prefix is embedded and BM25-indexed in front of the chunk; users still see the
    chunk alone.
    """
    from arborgraph.llm import contextual_prefixes as ask

    by_doc: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    out: dict[str, str] = {}
    for n, doc in enumerate(docs, start=1):
        members = by_doc.get(doc.doc_id, [])
        outline = " / ".join(b.text for b in doc.blocks if b.kind == "heading")[:1500]
        excerpt = f"{outline}\n\n{doc.text[:2000]}"
        found = ask(
            chat, doc.title, excerpt, [(c.chunk_id, c.text) for c in members],
            concurrency=config.llm.concurrency,
        )
        out.update({c.chunk_id: p.strip() for c, p in zip(members, found)})
        progress("contextual_prefixes", n, len(docs))
    return [out[c.chunk_id] for c in chunks]


@dataclass(frozen=True)
class Embedded:
    """What stage ``embed`` made: the embedder (None: lexical-only, and why), the chunk
    vectors in chunk order, where they came from (the index's embedding cache, the
    shared user-level one, computed) and the caches' warnings."""

    embedder: Embedder | None
    fallback: str | None = None
    vectors: np.ndarray | None = None
    cached: int = 0
    shared: int = 0
    computed: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def name(self) -> str | None:
        """The embedder's name (None: lexical-only), as the manifest records it."""
        return self.embedder.name if self.embedder is not None else None


def embed_texts(
    texts: Sequence[str], embedder: Embedder | None, why_not: str | None, cache_file: Path,
    progress: ProgressCallback, shared: SharedEmbeddingCache | None = None,
) -> Embedded:
    """Embed ``texts`` with ``embedder`` through the embedding cache at ``cache_file``
    and behind it the ``shared`` one, if any (nothing to do without an embedder: the
    build is lexical-only, for ``why_not``)."""
    if embedder is None:
        return Embedded(embedder=None, fallback=why_not)
    cache = EmbeddingCache(cache_file)
    try:
        vectors = cache.embed(embedder, list(texts), lambda d, t: progress("embed", d, t), shared=shared)
    finally:
        cache.close()
    return Embedded(
        embedder=embedder, vectors=vectors, cached=cache.hits, shared=cache.shared_hits, computed=cache.misses,
        warnings=list(cache.warnings),
    )


def build_lexical(texts: Sequence[str], config: Config, target: Path) -> None:
    """The BM25 index over the chunks' indexed texts, saved in ``target``."""
    LexicalIndex.build(list(texts), k1=config.retrieval.bm25_k1, b=config.retrieval.bm25_b).save(target)
