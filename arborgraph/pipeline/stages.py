"""The build's named stages, in order: each a function from typed inputs to a typed
output, and :func:`build_stages`, the driver that calls them and hands each one's output
to the stages that need it.

What lives for the whole build (the lock, the executor, the report being written, the
embedders and the user-level embedding cache, the new generation once stage ``prepare``
opened it, the UMAP warm-up) is in one :class:`BuildContext`; what the stages make
(:class:`Parsed`, ``Loaded``, :class:`Chunked`, :class:`Texts`, ``Embedded``,
``Scopes``) is returned, never stored in it. The stage functions call the work in
``load``, ``embed``, ``tables``, ``dense_index``, ``scopes`` and
:mod:`arborgraph.pipeline.structures`.
:data:`STAGES` lists the stages in build order: which ones a config builds, and which
are timed (wall time in ``BuildReport.timings_s[name]``); the untimed ones are quick
bookkeeping between them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from arborgraph.index import layout
from arborgraph.index import schema as S
from arborgraph.index.build_report import BuildReport
from arborgraph.config import Config
from arborgraph.pipeline.contradictions import find_contradictions
from arborgraph.pipeline.dense_index import dense_index
from arborgraph.core.embedding_identity import identity_of
from arborgraph.core.errors import BuildError, NoUsableDocuments
from arborgraph.pipeline.embedding_cache import EmbeddingCache
from arborgraph.core.protocols import Executor
from arborgraph.pipeline.incremental import BuildStatus, DocumentStatus, PreviousIndex, document_changes
from arborgraph.llm.factory import Provider, ProviderMissing, open_provider
from arborgraph.pipeline.embed import Embedded, Embedders, build_lexical, contextual_prefixes, embed_texts
from arborgraph.pipeline.load import Loaded, chunk_remaining, load_documents
from arborgraph.pipeline.scopes import Reuse, Scopes, scope_records
from arborgraph.pipeline.tables import documents_table, write_tables
from arborgraph.core.protocols import ProgressCallback
from arborgraph.index.store import BuildLock, GenerationWriter
from arborgraph.pipeline.structures import run_graph_stage, run_tree_stage
from ingest import load_token_counter
from ingest.metadata import GivenMetadata
from ingest.models import Chunk, Document
from ingest.parse_cache import ParseCache

T = TypeVar("T")


@dataclass(frozen=True)
class Stage:
    """One named step of the build: ``when`` says whether this config builds it;
    ``timed`` puts its wall time in the build report's timings under ``name``."""

    name: str
    when: Callable[[Config], bool] = lambda config: True
    timed: bool = True


STAGES: tuple[Stage, ...] = (
    Stage("load"),
    Stage("prepare", timed=False),
    Stage("chunk"),
    Stage("documents", timed=False),
    Stage("contradictions"),
    Stage("texts", timed=False),
    Stage("contextual_prefixes", lambda c: c.contextual_prefixes),
    Stage("embed"),
    Stage("lexical"),
    Stage("tables", timed=False),
    Stage("dense_index", timed=False),  # times itself: it runs for large collections only
    Stage("scopes", timed=False),
    Stage("tree", lambda c: c.build_tree),
    Stage("graph", lambda c: c.build_graph),
)
_STAGE = {stage.name: stage for stage in STAGES}

# stages that report no counts of their own say that they began, so a status (the CLI's
# bars, the service's rebuild) never sits on a finished stage; the others report as they
# go (and a build with nothing to load shows no progress line before its error)
ANNOUNCED = frozenset({"contradictions", "lexical", "dense_index", "tree", "graph"})


# -- what the stages make -------------------------------------------------------------


@dataclass(frozen=True)
class Parsed:
    """The parse cache's account of stage ``load``."""

    misses: int
    hits: int
    warnings: list[str]


@dataclass(frozen=True)
class Prepared:
    """What stage ``prepare`` opened once there is something to index: the per-document
    status on disk, the LLM provider (None without an LLM) and the new generation."""

    status: BuildStatus
    provider: Provider | None
    writer: GenerationWriter

    @property
    def chat(self) -> Any:
        return self.provider.chat if self.provider is not None else None


@dataclass(frozen=True)
class Chunked:
    """What stage ``chunk`` made: every chunk in document order and the token counter."""

    chunks: list[Chunk]
    count_tokens: Callable[[str], int]


@dataclass(frozen=True)
class Texts:
    """The text each chunk is embedded and BM25-indexed by (stage ``texts``), and the
    sentence stage ``contextual_prefixes`` put before each one (None without it)."""

    texts: list[str]
    prefixes: list[str] | None = None


@dataclass(frozen=True)
class Built:
    """What a build that ran to the end made, for its manifest and its commit."""

    loaded: Loaded
    chunked: Chunked
    scopes: Scopes
    routes: list[str]


class Unchanged(Exception):
    """Nothing changed since the live generation: documents, metadata and config alike.
    ``str()`` of it is the live generation's name; ``doc_ids`` are the documents loaded."""

    def __init__(self, generation: str, doc_ids: Sequence[str]) -> None:
        super().__init__(generation)
        self.doc_ids = list(doc_ids)


# -- what lives for the whole build ---------------------------------------------------


@dataclass
class BuildContext:
    """The resources of one build, not what its stages make. The driver sets
    ``prepared`` and ``warmup`` when the stages that open them return, so that a failed
    build aborts the generation and stops the warm-up (:func:`arborgraph.pipeline.run.fail`)."""

    index_dir: Path
    config: Config
    lock: BuildLock
    progress: ProgressCallback
    executor: Executor
    previous: PreviousIndex | None  # the live generation when the build began
    report: BuildReport  # written by the stages as they go
    embedders: Embedders
    # what the build made before it knew whether there is anything to index
    created: Path
    created_now: bool
    prepared: Prepared | None = None  # None until stage ``prepare`` (a failure before leaves no generation)
    warmup: subprocess.Popen[bytes] | None = None

    def builds(self, name: str) -> bool:
        """Whether this build's config builds stage ``name``."""
        return _STAGE[name].when(self.config)

    def stage(self, name: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` as stage ``name``: announced when it reports no counts
        of its own, and timed when the stage is."""
        if name in ANNOUNCED:
            self.progress(name, 0, None)
        begun = time.perf_counter()
        out = fn(*args, **kwargs)
        if _STAGE[name].timed:
            self.report.timings_s[name] = round(time.perf_counter() - begun, 3)
        return out

    def close(self) -> None:
        """Release what the stages kept open for the whole build (the shared cache)."""
        self.embedders.close()


# -- the driver -----------------------------------------------------------------------


def build_stages(
    ctx: BuildContext, inputs: Sequence[str | Path], metadata: GivenMetadata, *, force: bool = False
) -> Built:
    """Run the stages in order, each given what earlier ones made; raises
    :class:`Unchanged` (unless ``force``) when nothing changed since the live index."""
    config = ctx.config
    loaded, parsed = ctx.stage("load", load, ctx, inputs, metadata)
    ctx.prepared = prepared = ctx.stage("prepare", prepare, ctx, loaded, parsed, metadata)
    prepared.status.save(ctx.index_dir)  # once held here: a failure to write it aborts the generation
    chunked = ctx.stage("chunk", chunk, ctx, prepared.status, loaded.docs, loaded.chunks)
    ctx.warmup = ctx.stage("documents", documents, ctx, loaded, parsed, chunked.chunks, force=force)
    ctx.stage("contradictions", contradictions, ctx.report, loaded.docs, chunked.chunks)
    texts = ctx.stage("texts", chunk_texts, chunked.chunks)
    if ctx.builds("contextual_prefixes"):
        texts = ctx.stage(
            "contextual_prefixes", add_contextual_prefixes, prepared.chat, loaded.docs, chunked.chunks, texts,
            config, ctx.progress,
        )
    embedded = ctx.stage("embed", embed, ctx, prepared.provider, texts.texts)
    ctx.stage("lexical", build_lexical, texts.texts, config, prepared.writer.dir_for(layout.CHUNKS_BM25))
    ctx.stage("tables", write_tables, prepared.writer, loaded.docs, chunked.chunks, texts.prefixes, embedded.vectors)
    ctx.stage(
        "dense_index", dense_index, config.vectors, ctx.previous, prepared.writer, chunked.chunks, embedded.vectors,
        ctx.report,
    )
    scopes = ctx.stage("scopes", scope_records, loaded.docs, chunked.chunks, config, embedded.name)
    routes = ["lookup"]
    if ctx.builds("tree"):
        ctx.stage("tree", tree, ctx, prepared, scopes, embedded, chunked.count_tokens, ctx.warmup)
        routes.append("tree")
    if ctx.builds("graph"):
        ctx.stage("graph", graph, ctx, prepared, scopes)
        routes.extend(["graph", "global"])
    return Built(loaded=loaded, chunked=chunked, scopes=scopes, routes=routes)


# -- the stages, in build order -------------------------------------------------------


def load(ctx: BuildContext, inputs: Sequence[str | Path], metadata: GivenMetadata) -> tuple[Loaded, Parsed]:
    """Stage ``load``: the documents read and parsed (through the parse cache), and what
    the parse cache did."""
    parse_cache = ParseCache(layout.parse_cache_file(ctx.index_dir))
    try:
        loaded = load_documents(
            inputs, ctx.config, ctx.progress, executor=ctx.executor, previous=ctx.previous, parsed=parse_cache,
            metadata=metadata,
        )
    finally:
        parse_cache.close()
    return loaded, Parsed(misses=parse_cache.misses, hits=parse_cache.hits, warnings=list(parse_cache.warnings))


def prepare(ctx: BuildContext, loaded: Loaded, parsed: Parsed, metadata: GivenMetadata) -> Prepared:
    """Stage ``prepare``: refuse an input with nothing to index, then open what the build
    writes to (the driver saves the status once it holds them)."""
    docs, skipped = loaded.docs, loaded.skipped
    report = ctx.report
    report.skipped = skipped
    report.warnings = list(parsed.warnings)
    report.warnings += [f"{d.doc_id}: {w}" for d in docs for w in d.warnings]
    report.warnings += [
        f"build metadata for {p!r} matched no loaded document" for p in metadata.unmatched(d.doc_id for d in docs)
    ]
    if not docs:
        if ctx.created_now:  # a first build that found nothing leaves nothing behind
            shutil.rmtree(ctx.created, ignore_errors=True)
            if not (ctx.index_dir / layout.CURRENT).exists():
                ctx.lock.release(remove=True)
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
    provider = llm_provider(ctx.config, ctx.index_dir)
    try:
        writer = GenerationWriter(ctx.index_dir, lock=ctx.lock)
    except BaseException:
        if provider is not None:
            provider.close()
        raise
    report.stages["executor"] = {"name": ctx.executor.name, "workers": ctx.executor.workers}
    return Prepared(status=status, provider=provider, writer=writer)


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


def chunk(
    ctx: BuildContext, status: BuildStatus, docs: Sequence[Document], chunked: dict[str, list[Chunk]]
) -> Chunked:
    """Stage ``chunk``: what a pool has not chunked while loading (``chunked``, by doc id,
    holds what it has, and what the previous index kept)."""
    count_tokens = load_token_counter()
    chunks = chunk_remaining(docs, chunked, ctx.config, count_tokens, ctx.progress)
    if not chunks and not ctx.config.allow_empty:
        raise NoUsableDocuments(
            f"the {len(docs)} usable document(s) hold no text to index (0 chunks: headings or markup only?); "
            "pass --allow-empty to build an empty index anyway"
        )
    for doc in docs:
        status.documents[doc.doc_id].status = "processing"
    status.save(ctx.index_dir)
    return Chunked(chunks=chunks, count_tokens=count_tokens)


def documents(
    ctx: BuildContext, loaded: Loaded, parsed: Parsed, chunks: Sequence[Chunk], *, force: bool
) -> subprocess.Popen[bytes] | None:
    """Stage ``documents``: count what was loaded and chunked, stop when nothing changed
    since the live index (:class:`Unchanged`; unless ``force``), and start the UMAP
    warm-up beside what follows (the process, or None)."""
    docs, previous, report = loaded.docs, ctx.previous, ctx.report
    report.documents, report.chunks = len(docs), len(chunks)
    changes = document_changes(docs, previous, loaded.reused)
    report.stages["documents"] = {**changes, "parsed": parsed.misses, "parses_reused": parsed.hits}
    if not force and previous is not None and not (changes["added"] or changes["changed"] or changes["removed"]):
        live = previous.generation
        same_config = previous.manifest.config == ctx.config.to_manifest()
        if same_config and live.table(S.DOCUMENTS).equals(documents_table(docs)) and same_embedder(ctx):
            raise Unchanged(live.name, [d.doc_id for d in docs])
    return start_umap_warmup(ctx.config, len(chunks), fresh=previous is None)


def same_embedder(ctx: BuildContext) -> bool:
    """Whether the live index's vectors came from the embedder this build would use (an
    index embedded by another model, or lexical-only for want of one, is rebuilt)."""
    if ctx.previous is None:
        return False
    if ctx.config.llm.embedding_model:
        return True  # an endpoint's model: named in the config, which is unchanged
    embedder, _ = ctx.embedders.local()
    return ctx.previous.manifest.mode.embedding == (embedder.name if embedder is not None else None)


def contradictions(report: BuildReport, docs: Sequence[Document], chunks: Sequence[Chunk]) -> None:
    """Stage ``contradictions``: candidate contradictions between versioned documents,
    into the report."""
    versions = {d.doc_id: (d.metadata.source, d.metadata.version) for d in docs if d.metadata.source and d.metadata.version}
    report.contradictions = find_contradictions(chunks, versions=versions)


def chunk_texts(chunks: Sequence[Chunk]) -> Texts:
    """Stage ``texts``: the text each chunk is embedded and BM25-indexed by, its heading
    path and text."""
    return Texts(texts=[c.context_text() for c in chunks])


def add_contextual_prefixes(
    chat: Any, docs: Sequence[Document], chunks: Sequence[Chunk], texts: Texts, config: Config,
    progress: ProgressCallback,
) -> Texts:
    """Stage ``contextual_prefixes``: a sentence from the LLM situating each chunk in its
    document, put before its text."""
    if chat is None:
        raise BuildError("contextual_prefixes needs an LLM: pass --llm-model (or set llm.model)")
    prefixes = contextual_prefixes(chat, docs, chunks, config, progress)
    return Texts(texts=[f"{p}\n{t}" for p, t in zip(prefixes, texts.texts)], prefixes=prefixes)


def embed(ctx: BuildContext, provider: Provider | None, texts: Sequence[str]) -> Embedded:
    """Stage ``embed``: the chunk vectors, by the endpoint's embedding model when one is
    configured, else the local one (None: lexical-only), through the index's embedding
    cache and the shared one."""
    if ctx.config.llm.embedding_model and provider is not None:
        embedder, why_not = provider.embedder, None
    else:
        embedder, why_not = ctx.embedders.local()
    shared = ctx.embedders.shared_cache(embedder) if embedder is not None else None
    embedded = embed_texts(texts, embedder, why_not, layout.embedding_cache_file(ctx.index_dir), ctx.progress, shared)
    report = ctx.report
    report.embedding, report.embedding_fallback = (embedder.name, None) if embedder else (None, why_not)
    if embedder is not None:
        report.embedding_identity = identity_of(embedder)
        report.warnings += embedded.warnings
        if shared is not None:
            report.warnings += shared.take_warnings()
        report.embeddings_cached, report.embeddings_computed = embedded.cached + embedded.shared, embedded.computed
        report.embeddings_from_index_cache = embedded.cached
        report.embeddings_from_shared_cache = embedded.shared
        # the cache is keyed by the embedder's name, so none of the old vectors was reused
        before = ctx.previous.manifest.mode.embedding if ctx.previous is not None else None
        if before is not None and before != embedder.name:
            report.embedding_replaced = before
    return embedded


def tree(
    ctx: BuildContext, prepared: Prepared, scopes: Scopes, embedded: Embedded, count_tokens: Callable[[str], int],
    warmup: subprocess.Popen[bytes] | None,
) -> None:
    """Stage ``tree``: a RAPTOR tree per scope, kept, updated or built (after the UMAP
    warm-up, if one runs); its account goes into the report."""
    if warmup is not None:
        try:
            warmup.wait(timeout=300)
        except subprocess.TimeoutExpired:  # a stuck warm-up must not stall the build
            warmup.kill()
    embedder, config, report = embedded.embedder, ctx.config, ctx.report
    reuse = Reuse(ctx.previous, scopes, config)
    cache = EmbeddingCache(layout.embedding_cache_file(ctx.index_dir)) if embedder else None
    shared = ctx.embedders.shared_cache(embedder) if embedder else None
    try:
        report.stages["tree"] = run_tree_stage(
            parts=scopes.parts, chunk_vectors=embedded.vectors, embedder=embedder, cache=cache, shared=shared,
            count_tokens=count_tokens, config=config, writer=prepared.writer,
            progress=ctx.progress, chat=prepared.chat, reusable=reuse.reusable("tree", prepared.writer),
            previous_tree=reuse.previous_tree, drift_threshold=config.tree_drift_threshold,
        )
    finally:
        if cache is not None:
            cache.close()
            report.warnings += cache.warnings
        if shared is not None:
            report.warnings += shared.take_warnings()


def graph(ctx: BuildContext, prepared: Prepared, scopes: Scopes) -> None:
    """Stage ``graph``: an entity graph per scope, kept, updated or built; its account
    goes into the report."""
    config = ctx.config
    reuse = Reuse(ctx.previous, scopes, config)
    ctx.report.stages["graph"] = run_graph_stage(
        parts=scopes.parts, config=config, writer=prepared.writer, progress=ctx.progress,
        chat=prepared.chat, reusable=reuse.reusable("graph", prepared.writer), executor=ctx.executor,
        previous_graph=reuse.previous_graph, drift_threshold=config.graph_drift_threshold,
    )


# -- helpers of the stages ------------------------------------------------------------


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
