"""The build's named stages, in order, and the typed state they hand on.

Each stage is a thin wrapper: it takes what it needs from the :class:`BuildRun` (the
inputs of the build and what earlier stages made), calls the stage's function (in
``load``, ``embed``, ``tables``, ``scopes``; the tree and graph builders in
:mod:`arborgraph.pipeline.structures`) and records what that returned. A stage with ``timed``
has its wall time in ``BuildReport.timings_s[name]``; the untimed ones are quick
bookkeeping between them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arborgraph.index import layout
from arborgraph.index import schema as S
from arborgraph.index.index_files import sha256_file
from arborgraph.index.vectors import ANN_MISSING, ann_available, build_ann, update_ann
from arborgraph.index.build_report import BuildReport
from arborgraph.config import Config
from arborgraph.pipeline.contradictions import find_contradictions
from arborgraph.core.embedding_identity import identity_of
from arborgraph.core.errors import BuildError, NoUsableDocuments
from arborgraph.core.protocols import Embedder
from arborgraph.pipeline.embedding_cache import EmbeddingCache
from arborgraph.pipeline.shared_embedding_cache import SharedCacheOpening, SharedEmbeddingCache, open_shared_cache
from arborgraph.core.protocols import Executor
from arborgraph.pipeline.incremental import BuildStatus, DocumentStatus, PreviousIndex
from arborgraph.llm.factory import Provider, ProviderMissing, open_provider
from arborgraph.pipeline.embed import Embedded, build_lexical, contextual_prefixes, embed_texts
from arborgraph.pipeline.load import Loaded, chunk_remaining, load_documents
from arborgraph.pipeline.scopes import Reuse, Scopes, scope_records
from arborgraph.pipeline.tables import documents_table, write_tables
from arborgraph.core.protocols import ProgressCallback
from arborgraph.index.store import BuildLock, GenerationWriter
from arborgraph.pipeline.structures import run_graph_stage, run_tree_stage
from ingest import load_token_counter
from ingest.metadata import GivenMetadata
from ingest.models import Chunk
from ingest.parse_cache import ParseCache

EmbedderFactory = Callable[[Config], tuple[Embedder | None, str | None]]


@dataclass
class Parsed:
    """The parse cache's account of stage ``load``."""

    misses: int
    hits: int
    warnings: list[str]


@dataclass
class Prepared:
    """What stage ``prepare`` opened once there is something to index: the per-document
    status on disk, the LLM provider (None without an LLM) and the new generation."""

    status: BuildStatus
    provider: Provider | None
    writer: GenerationWriter

    @property
    def chat(self) -> Any:
        return self.provider.chat if self.provider is not None else None


@dataclass
class Chunked:
    """What stage ``chunk`` made: every chunk in document order and the token counter;
    stage ``texts`` adds the texts they are indexed by, which stage
    ``contextual_prefixes`` may prefix."""

    chunks: list[Chunk]
    count_tokens: Callable[[str], int]
    texts: list[str]
    prefixes: list[str] | None = None


@dataclass
class BuildRun:
    """One build: its inputs, then what each stage made (set by that stage: reading a
    field before its stage ran is an error, an ``AttributeError``)."""

    inputs: Sequence[str | Path]
    index_dir: Path
    config: Config
    lock: BuildLock
    metadata: GivenMetadata
    progress: ProgressCallback
    embedder_factory: EmbedderFactory
    previous: PreviousIndex | None
    executor: Executor
    report: BuildReport
    # what the build made before it knew whether there is anything to index
    created: Path
    created_now: bool
    force: bool = False  # a new generation even when nothing changed
    routes: list[str] = field(default_factory=lambda: ["lookup"])
    warmup: subprocess.Popen[bytes] | None = None
    prepared: Prepared | None = None  # None until stage ``prepare`` (a failure before leaves no generation)
    # set by the stages
    loaded: Loaded = field(init=False)
    parsed: Parsed = field(init=False)
    chunked: Chunked = field(init=False)
    embedded: Embedded = field(init=False)
    scopes: Scopes = field(init=False)
    _embedder: tuple[Embedder | None, str | None] | None = field(default=None, init=False, repr=False)
    _shared: SharedCacheOpening | None = field(default=None, init=False, repr=False)

    def load_embedder(self) -> tuple[Embedder | None, str | None]:
        """The embedder this build uses (or why there is none), loaded once: the check for
        an unchanged index needs its name, and stage ``embed`` its vectors."""
        if self._embedder is None:
            self._embedder = self.embedder_factory(self.config)
        return self._embedder

    def shared_cache(self, embedder: Embedder) -> SharedEmbeddingCache | None:
        """The user-level embedding cache for ``embedder``, opened once per build (by the
        first stage that embeds); None when it is off, cannot key this embedder, or cannot
        be used, which the report says (a note, or a warning)."""
        if self._shared is None:
            self._shared = opening = open_shared_cache(self.config.embedding, embedder)
            self.report.shared_embedding_cache_note = opening.note
            if opening.warning:
                self.report.warnings.append(opening.warning)
            if opening.cache is not None:
                self.report.shared_embedding_cache = str(opening.cache.path)
        return self._shared.cache

    def close(self) -> None:
        """Release what the stages kept open for the whole build (the shared cache)."""
        if self._shared is not None and self._shared.cache is not None:
            self._shared.cache.close()

    @property
    def ready(self) -> Prepared:
        if self.prepared is None:
            raise RuntimeError("stage 'prepare' has not run")
        return self.prepared


@dataclass(frozen=True)
class Stage:
    """One named step of the build: ``run`` reads from and writes to the build;
    ``when`` says whether this config builds it; ``timed`` puts its wall time in the
    build report's timings under ``name``."""

    name: str
    run: Callable[[BuildRun], None]
    when: Callable[[Config], bool] = lambda config: True
    timed: bool = True


# -- the stages' wrappers, in build order ---------------------------------------------


def run_load(b: BuildRun) -> None:
    parsed = ParseCache(layout.parse_cache_file(b.index_dir))
    try:
        b.loaded = load_documents(
            b.inputs, b.config, b.progress, executor=b.executor, previous=b.previous, parsed=parsed,
            metadata=b.metadata,
        )
    finally:
        parsed.close()
    b.parsed = Parsed(misses=parsed.misses, hits=parsed.hits, warnings=list(parsed.warnings))


def run_prepare(b: BuildRun) -> None:
    """Refuse an input with nothing to index, then open what the build writes to."""
    docs, skipped = b.loaded.docs, b.loaded.skipped
    report = b.report
    report.skipped = skipped
    report.warnings = list(b.parsed.warnings)
    report.warnings += [f"{d.doc_id}: {w}" for d in docs for w in d.warnings]
    report.warnings += [
        f"build metadata for {p!r} matched no loaded document" for p in b.metadata.unmatched(d.doc_id for d in docs)
    ]
    if not docs:
        if b.created_now:  # a first build that found nothing leaves nothing behind
            shutil.rmtree(b.created, ignore_errors=True)
            if not (b.index_dir / layout.CURRENT).exists():
                b.lock.release(remove=True)
        reasons = "; ".join(f"{s.path}: {s.reason}" for s in skipped[:5]) or "no files found"
        raise NoUsableDocuments(f"no usable document in the inputs ({reasons})")
    status = BuildStatus(
        pid=os.getpid(),
        documents={
            **{s.path: DocumentStatus(status="skipped", reason=s.reason) for s in skipped},
            **{d.doc_id: DocumentStatus(status="pending", content_hash=d.content_hash) for d in docs},
        },
    )
    # before anything is written: a misconfigured endpoint leaves no generation behind
    provider = llm_provider(b.config, b.index_dir)
    try:
        writer = GenerationWriter(b.index_dir, lock=b.lock)
    except BaseException:
        if provider is not None:
            provider.close()
        raise
    b.prepared = Prepared(status=status, provider=provider, writer=writer)
    status.save(b.index_dir)
    report.stages["executor"] = {"name": b.executor.name, "workers": b.executor.workers}


def llm_provider(config: Config, index_dir: Path) -> Provider | None:
    """The build's LLM provider when an LLM is configured, else None.

    Every call is cached in the index's ``cache/llm.sqlite``, so a rebuild over
    unchanged input makes no call and an interrupted build resumes where it stopped.
    Raises ``BuildError`` before opening the cache when the endpoint cannot be used
    (no ``openai`` package, no API key for the official endpoint).
    """
    llm = config.llm
    if not llm.model and not llm.embedding_model:
        return None
    try:
        return open_provider(llm, index_dir, chat=bool(llm.model), embeddings=bool(llm.embedding_model))
    except ProviderMissing as exc:
        raise BuildError(str(exc)) from None
    except ValueError as exc:
        raise BuildError(f"LLM mode: {exc}") from None


def run_chunk(b: BuildRun) -> None:
    """What a pool has not chunked while loading."""
    status = b.ready.status
    docs = b.loaded.docs
    count_tokens = load_token_counter()
    chunks = chunk_remaining(docs, b.loaded.chunks, b.config, count_tokens, b.progress)
    if not chunks and not b.config.allow_empty:
        raise NoUsableDocuments(
            f"the {len(docs)} usable document(s) hold no text to index (0 chunks: headings or markup only?); "
            "pass --allow-empty to build an empty index anyway"
        )
    for doc in docs:
        status.documents[doc.doc_id].status = "processing"
    status.save(b.index_dir)
    b.chunked = Chunked(chunks=chunks, count_tokens=count_tokens, texts=[])


class Unchanged(Exception):
    """Nothing changed since the live generation: documents, metadata and config alike."""


def run_documents(b: BuildRun) -> None:
    """Count what was loaded and chunked, stop when nothing changed since the live index
    (:class:`Unchanged`), and start the UMAP warm-up beside what follows."""
    docs, chunks = b.loaded.docs, b.chunked.chunks
    b.report.documents, b.report.chunks = len(docs), len(chunks)
    changes = document_changes(docs, b.previous, b.loaded.reused)
    b.report.stages["documents"] = {**changes, "parsed": b.parsed.misses, "parses_reused": b.parsed.hits}
    if not b.force and b.previous is not None and not (changes["added"] or changes["changed"] or changes["removed"]):
        previous = b.previous.generation
        same_config = previous.manifest.get("config") == b.config.to_manifest()
        if same_config and previous.table(S.DOCUMENTS).equals(documents_table(docs)) and same_embedder(b):
            raise Unchanged(previous.name)
    b.warmup = start_umap_warmup(b.config, len(chunks), fresh=b.previous is None)


def same_embedder(b: BuildRun) -> bool:
    """Whether the live index's vectors came from the embedder this build would use (an
    index embedded by another model, or lexical-only for want of one, is rebuilt)."""
    if b.previous is None:
        return False
    if b.config.llm.embedding_model:
        return True  # an endpoint's model: named in the config, which is unchanged
    embedder, _ = b.load_embedder()
    return b.previous.manifest.mode.embedding == (embedder.name if embedder is not None else None)


def run_contradictions(b: BuildRun) -> None:
    versions = {
        d.doc_id: (d.metadata.source, d.metadata.version)
        for d in b.loaded.docs
        if d.metadata.source and d.metadata.version
    }
    b.report.contradictions = find_contradictions(b.chunked.chunks, versions=versions)


def run_texts(b: BuildRun) -> None:
    """The text each chunk is embedded and BM25-indexed by: its heading path and text."""
    b.chunked.texts = [c.context_text() for c in b.chunked.chunks]


def run_contextual_prefixes(b: BuildRun) -> None:
    if b.ready.chat is None:
        raise BuildError("contextual_prefixes needs an LLM: pass --llm-model (or set llm.model)")
    chunked = b.chunked
    chunked.prefixes = contextual_prefixes(b.ready.chat, b.loaded.docs, chunked.chunks, b.config, b.progress)
    chunked.texts = [f"{p}\n{t}" for p, t in zip(chunked.prefixes, chunked.texts)]


def run_embed(b: BuildRun) -> None:
    provider = b.ready.provider
    if b.config.llm.embedding_model and provider is not None:
        embedder, why_not = provider.embedder, None
    else:
        embedder, why_not = b.load_embedder()
    shared = b.shared_cache(embedder) if embedder is not None else None
    b.embedded = embedded = embed_texts(
        b.chunked.texts, embedder, why_not, layout.embedding_cache_file(b.index_dir), b.progress, shared
    )
    report = b.report
    report.embedding, report.embedding_fallback = (
        (embedder.name, None) if embedder else (None, why_not)
    )
    if embedder is not None:
        report.embedding_identity = identity_of(embedder)
        report.warnings += embedded.warnings
        if shared is not None:
            report.warnings += shared.take_warnings()
        report.embeddings_cached, report.embeddings_computed = embedded.cached + embedded.shared, embedded.computed
        report.embeddings_from_index_cache = embedded.cached
        report.embeddings_from_shared_cache = embedded.shared
        # the cache is keyed by the embedder's name, so none of the old vectors was reused
        before = b.previous.manifest.mode.embedding if b.previous is not None else None
        if before is not None and before != embedder.name:
            report.embedding_replaced = before


def run_lexical(b: BuildRun) -> None:
    build_lexical(b.chunked.texts, b.config, b.ready.writer.dir_for(layout.CHUNKS_BM25))


def run_tables(b: BuildRun) -> None:
    write_tables(b.ready.writer, b.loaded.docs, b.chunked.chunks, b.chunked.prefixes, b.embedded.vectors)


def run_dense_index(b: BuildRun) -> None:
    """The approximate nearest-neighbour index of the chunk vectors, for a collection of
    at least ``vectors.ann_min_rows`` chunks: taken over from the previous generation when
    its vectors are the same, updated from it when a small part changed, else built."""
    vectors = b.embedded.vectors
    settings = b.config.vectors
    if vectors is None or len(vectors) < settings.ann_min_rows:
        return
    if not ann_available():
        b.report.stages["dense_index"] = {"rows": int(len(vectors)), "skipped": ANN_MISSING}
        b.report.warnings.append(f"{len(vectors):,} chunks: {ANN_MISSING}")
        return
    writer = b.ready.writer
    written = sha256_file(writer.path / layout.vectors_file(S.CHUNK_VECTORS))
    previous = b.previous.generation if b.previous is not None else None
    before = previous.record.files if previous is not None else {}
    same_vectors = before.get(layout.vectors_file(S.CHUNK_VECTORS))
    same_settings = previous is not None and previous.manifest.get("config", {}).get("vectors") == settings.model_dump()
    if (
        previous is not None and layout.CHUNKS_ANN in before and same_vectors is not None
        and same_vectors.sha256 == written and same_settings
    ):
        writer.reuse(previous, (layout.CHUNKS_ANN,))
        b.report.stages["dense_index"] = {"rows": int(len(vectors)), "reused": 1}
        return
    began = time.perf_counter()
    updated = None
    if previous is not None and layout.CHUNKS_ANN in before and same_settings:
        # an update touches only what changed: a one-page change to a million chunks
        # costs that page's inserts, not the whole graph again
        updated = update_ann(
            previous.file(layout.CHUNKS_ANN), previous.table(S.CHUNKS, [S.CHUNK_ID])[S.CHUNK_ID].to_pylist(),
            previous.vectors(S.CHUNK_VECTORS, mmap=True), [c.chunk_id for c in b.chunked.chunks], vectors,
            writer.path / layout.CHUNKS_ANN,
        )
    if updated is None:
        build_ann(vectors, writer.path / layout.CHUNKS_ANN, connectivity=settings.connectivity, expansion_add=settings.expansion_add)
    b.report.stages["dense_index"] = {
        "rows": int(len(vectors)), "reused": 0, "updated": int(updated is not None), **(updated or {}),
        "seconds": round(time.perf_counter() - began, 3),
    }


def run_scopes(b: BuildRun) -> None:
    b.scopes = scope_records(b.loaded.docs, b.chunked.chunks, b.config, b.report.embedding)


def run_tree(b: BuildRun) -> None:
    if b.warmup is not None:
        try:
            b.warmup.wait(timeout=300)
        except subprocess.TimeoutExpired:  # a stuck warm-up must not stall the build
            b.warmup.kill()
    embedder = b.embedded.embedder
    reuse = Reuse(b.previous, b.scopes, b.config)
    cache = EmbeddingCache(layout.embedding_cache_file(b.index_dir)) if embedder else None
    shared = b.shared_cache(embedder) if embedder else None
    try:
        b.report.stages["tree"] = run_tree_stage(
            parts=b.scopes.parts, chunk_vectors=b.embedded.vectors, embedder=embedder, cache=cache, shared=shared,
            count_tokens=b.chunked.count_tokens, config=b.config, writer=b.ready.writer,
            progress=b.progress, chat=b.ready.chat, reusable=reuse.reusable("tree", b.ready.writer),
            previous_tree=reuse.previous_tree, drift_threshold=b.config.tree_drift_threshold,
        )
    finally:
        if cache is not None:
            cache.close()
            b.report.warnings += cache.warnings
        if shared is not None:
            b.report.warnings += shared.take_warnings()
    b.routes.append("tree")


def run_graph(b: BuildRun) -> None:
    reuse = Reuse(b.previous, b.scopes, b.config)
    b.report.stages["graph"] = run_graph_stage(
        parts=b.scopes.parts, config=b.config, writer=b.ready.writer, progress=b.progress,
        chat=b.ready.chat, reusable=reuse.reusable("graph", b.ready.writer), executor=b.executor,
        previous_graph=reuse.previous_graph, drift_threshold=b.config.graph_drift_threshold,
    )
    b.routes.extend(["graph", "global"])


STAGES: tuple[Stage, ...] = (
    Stage("load", run_load),
    Stage("prepare", run_prepare, timed=False),
    Stage("chunk", run_chunk),
    Stage("documents", run_documents, timed=False),
    Stage("contradictions", run_contradictions),
    Stage("texts", run_texts, timed=False),
    Stage("contextual_prefixes", run_contextual_prefixes, lambda c: c.contextual_prefixes),
    Stage("embed", run_embed),
    Stage("lexical", run_lexical),
    Stage("tables", run_tables, timed=False),
    Stage("dense_index", run_dense_index, timed=False),  # times itself: it runs for large collections only
    Stage("scopes", run_scopes, timed=False),
    Stage("tree", run_tree, lambda c: c.build_tree),
    Stage("graph", run_graph, lambda c: c.build_graph),
)


# -- helpers of the wrappers ----------------------------------------------------------


def start_umap_warmup(config: Config, n_chunks: int, *, fresh: bool) -> subprocess.Popen[bytes] | None:
    """A background process filling numba's cache with UMAP's kernels while the build
    embeds, when this build's tree will run UMAP (None otherwise).

    In an empty cache (the first tree build after an install) UMAP's compile is
    25-30 s of the tree stage; run beside embedding it mostly overlaps. Updates of an
    existing index seldom re-cluster, and small inputs take the PCA path: no warm-up.
    """
    tree = config.tree
    uses_umap = tree.reducer == "umap" or (tree.reducer == "auto" and n_chunks >= tree.umap_min_points)
    if not (config.build_tree and fresh and uses_umap):
        return None
    from raptor.warmup import start_background_warmup

    return start_background_warmup()


def document_changes(docs: Sequence[Any], previous: PreviousIndex | None, reused: int) -> Mapping[str, int]:
    """What changed since the live index: added, changed, removed, unchanged documents."""
    if previous is None:
        return {"added": len(docs), "changed": 0, "removed": 0, "unchanged": 0, "chunks_reused_from": 0}
    old = previous.doc_hashes
    current = {d.doc_id: d.content_hash for d in docs}
    return {
        "added": sum(1 for d in current if d not in old),
        "changed": sum(1 for d, h in current.items() if d in old and old[d] != h),
        "removed": sum(1 for d in old if d not in current),
        "unchanged": sum(1 for d, h in current.items() if old.get(d) == h),
        "chunks_reused_from": reused,
    }
