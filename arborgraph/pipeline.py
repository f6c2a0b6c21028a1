"""The index build: a sequence of named stages, each a pure function plus thin I/O.

``build_index`` loads and chunks the documents, embeds the chunks (through the
embedding cache), builds the lexical index, the RAPTOR tree and the entity graph, and
writes everything as one new generation that replaces the live one only at the end.
Any failure or interruption leaves the previous index as it was.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
from pydantic import BaseModel, Field

from arborgraph.core.errors import BuildError, NoUsableDocuments  # noqa: F401 (re-exported)
from arborgraph import schema as S
from arborgraph import __version__
from arborgraph.config import Config
from arborgraph.contradictions import Contradiction, find_contradictions
from arborgraph.embedding import load_embedder
from arborgraph.core.errors import EmbedderUnavailable
from arborgraph.core.protocols import Embedder, ProgressCallback, no_progress
from arborgraph.embedding_cache import EmbeddingCache
from arborgraph.core.lexical import LexicalIndex
from arborgraph.store import CURRENT_FILE, BuildLock, GenerationWriter, cache_dir, check_index_dir
from arborgraph.core.protocols import Executor
from arborgraph.executor import chunk_batch, decode_chunks, make_executor, map_as_produced
from arborgraph.incremental import BuildStatus, DocumentStatus, fingerprint, load_graph_state, load_previous
from arborgraph.incremental import PreviousIndex
from arborgraph.scoped import load_scope_tree
from arborgraph.structures import partition_by_scope, run_graph_stage, run_tree_stage, scope_files
from ingest import chunk_document, iter_collection, load_token_counter
from ingest.collection import input_kilobytes as collection_kilobytes
from ingest.metadata import GivenMetadata
from ingest.models import Chunk, Document, SkippedFile
from ingest.parse_cache import ParseCache


# the progress stage reported once when a build waits for another build's lock
LOCK_WAIT_STAGE = "waiting for another build"


class BuildReport(BaseModel):
    """What a build did, for the CLI's closing report and the manifest."""

    index_dir: str
    generation: str = ""
    documents: int = 0
    chunks: int = 0
    skipped: list[SkippedFile] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    embedding: str | None = None
    embedding_fallback: str | None = None  # why retrieval is lexical-only
    embeddings_cached: int = 0
    embeddings_computed: int = 0
    lock_wait: str | None = None  # set when this build waited for another one to finish
    contradictions: list[Contradiction] = Field(default_factory=list)
    timings_s: dict[str, float] = Field(default_factory=dict)
    stages: dict[str, dict[str, Any]] = Field(default_factory=dict)


class _Timer:
    def __init__(self, report: BuildReport) -> None:
        self.report = report

    def __call__(self, name: str) -> "_Stage":
        return _Stage(self.report, name)


class _Stage:
    def __init__(self, report: BuildReport, name: str) -> None:
        self.report, self.name = report, name

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.report.timings_s[self.name] = round(time.perf_counter() - self.start, 3)


def documents_table(docs: Sequence[Document]) -> pa.Table:
    """The ``documents`` table: one row per loaded document, metadata as columns."""
    known = {"source", "version", "valid_from", "valid_to", "acl", "importance"}
    return pa.table(
        {
            S.DOC_ID: [d.doc_id for d in docs],
            S.DOC_PATH: [d.path for d in docs],
            S.DOC_TITLE: [d.title for d in docs],
            S.DOC_FORMAT: [d.format for d in docs],
            S.DOC_TEXT: [d.text for d in docs],
            S.DOC_HASH: [d.content_hash for d in docs],
            S.DOC_SOURCE: [d.metadata.source for d in docs],
            S.DOC_VERSION: [d.metadata.version for d in docs],
            S.DOC_VALID_FROM: pa.array([d.metadata.valid_from for d in docs], pa.date32()),
            S.DOC_VALID_TO: pa.array([d.metadata.valid_to for d in docs], pa.date32()),
            S.DOC_ACL: pa.array([d.metadata.acl for d in docs], pa.list_(pa.string())),
            S.DOC_IMPORTANCE: pa.array([d.metadata.importance for d in docs], pa.float64()),
            S.DOC_EXTRA: [
                json.dumps(d.metadata.model_dump(mode="json", exclude=known), sort_keys=True)
                for d in docs
            ],
            S.DOC_WARNINGS: pa.array([d.warnings for d in docs], pa.list_(pa.string())),
        }
    )


def chunks_table(chunks: Sequence[Chunk]) -> pa.Table:
    """The ``chunks`` table; its row order is the row order of the chunk vectors."""
    return pa.table(
        {
            S.CHUNK_ID: [c.chunk_id for c in chunks],
            S.CHUNK_DOC_ID: [c.doc_id for c in chunks],
            S.CHUNK_ORDINAL: pa.array([c.ordinal for c in chunks], pa.int32()),
            S.CHUNK_TEXT: [c.text for c in chunks],
            S.CHUNK_HEADING_PATH: pa.array([c.heading_path for c in chunks], pa.list_(pa.string())),
            S.CHUNK_START: pa.array([c.start for c in chunks], pa.int64()),
            S.CHUNK_END: pa.array([c.end for c in chunks], pa.int64()),
            S.CHUNK_TOKENS: pa.array([c.n_tokens for c in chunks], pa.int32()),
        }
    )


class Loaded(NamedTuple):
    """What :func:`load_documents` found."""

    docs: list[Document]
    skipped: list[SkippedFile]
    chunks: dict[str, list[Chunk]]  # by doc id: those kept from the previous index or cut on a pool
    reused: int  # documents whose chunks were kept from the previous index


# Chunking jobs sent to a pool while loading: big enough that a job's round trip is
# noise, small enough that the last one, sent when loading ends, is short.
CHUNK_JOB_CHARS = 200_000
# A document this long is chunked here rather than on a pool worker: shipping it would
# hold a second copy of its text and blocks (a 200 MB file's are over a gigabyte), for
# a speed-up of at most one document's worth.
LOCAL_CHUNK_CHARS = 8_000_000


def load_documents(
    inputs: Sequence[str | Path],
    config: Config,
    progress: ProgressCallback,
    *,
    executor: Executor | None = None,
    previous: PreviousIndex | None = None,
    parsed: ParseCache | None = None,
    metadata: GivenMetadata | None = None,
) -> Loaded:
    """Load every document of ``inputs``, in order.

    A document unchanged since ``previous`` (same content, same chunking settings)
    keeps its chunks; with a ``parsed`` cache, a file parsed before from the same bytes
    is not parsed again. On an ``executor`` with several workers every other document is
    chunked there while later files still load; otherwise the caller chunks them.
    """
    docs: list[Document] = []
    skipped: list[SkippedFile] = []
    chunks: dict[str, list[Chunk]] = {}
    chunking = config.chunking.model_dump(mode="json")
    max_bytes = int(config.ingest.max_file_mb * 2**20)

    parallel = executor is not None and executor.workers > 1
    # Parsers run in local sandbox processes, competing for the same cores as the pool's
    # workers that chunk what they parse; parsing and chunking cost about the same, so
    # one sandbox per two busy cores. On 2 cores a second sandbox measured slower
    # (bench_pool.py, 8 alternating runs: load + chunk 1.46-1.69x the serial wall with
    # one sandbox, 1.22-1.40x with two, the sample manual and 300 Python doc pages).
    busy_cores = min(executor.workers, os.cpu_count() or 1) if parallel and executor is not None else 1
    loaders = max(1, busy_cores // 2)

    def to_chunk() -> Iterator[Document]:
        for item in iter_collection(
            inputs, max_file_bytes=max_bytes, loaders=loaders, parsed=parsed, metadata=metadata,
            part_bytes=max(1, int(config.ingest.part_mb * 2**20)),
        ):
            if isinstance(item, SkippedFile):
                skipped.append(item)
            else:
                docs.append(item)
                kept = previous.reusable_chunks(item, chunking) if previous is not None else None
                if kept is None:
                    yield item
                else:
                    chunks[item.doc_id] = kept
            progress("load", len(docs) + len(skipped), None)

    reused = 0
    if parallel and executor is not None:
        groups: list[list[Document]] = []

        def jobs() -> Iterator[tuple[dict[str, Any], list[Document]]]:
            # the longest documents are left for chunk_remaining, in this process
            shippable = (d for d in to_chunk() if len(d.text) <= LOCAL_CHUNK_CHARS)
            for group in _by_size(shippable, CHUNK_JOB_CHARS):
                groups.append(group)
                yield chunking, group

        results = map_as_produced(executor, chunk_batch, jobs())
        reused = len(chunks)
        for group, rows in zip(groups, results):
            chunks.update({d.doc_id: decode_chunks(d, r) for d, r in zip(group, rows)})
    else:
        for _ in to_chunk():
            pass
        reused = len(chunks)
    return Loaded(docs, skipped, chunks, reused)


def chunk_remaining(
    docs: Sequence[Document],
    chunked: dict[str, list[Chunk]],
    config: Config,
    count_tokens: Callable[[str], int],
    progress: ProgressCallback = no_progress,
) -> list[Chunk]:
    """Chunk, here, the documents ``chunked`` has no chunks for (adding them to it);
    returns every chunk in document order."""
    todo = [d for d in docs if d.doc_id not in chunked]
    for n, doc in enumerate(todo, start=1):
        chunked[doc.doc_id] = chunk_document(doc, config.chunking, count_tokens)
        progress("chunk", n, len(todo))
    return [c for doc in docs for c in chunked[doc.doc_id]]


def _by_size(docs: Iterable[Document], chars: int) -> Iterator[list[Document]]:
    """Consecutive groups of documents holding about ``chars`` characters of text."""
    group: list[Document] = []
    size = 0
    for doc in docs:
        group.append(doc)
        size += len(doc.text)
        if size >= chars:
            yield group
            group, size = [], 0
    if group:
        yield group


def input_kilobytes(
    inputs: Sequence[str | Path], unchanged: Collection[str] = (), *, max_file_bytes: int | None = None
) -> int:
    """Kilobytes of the files a build would read from ``inputs`` (files, folders, glob
    patterns): the size an ``auto`` executor is chosen by, before anything is loaded.
    Files whose bytes hash to one of ``unchanged`` (the live index's documents) are not
    counted: an update reuses their chunks and extractions. Only files that pass the
    collection walk's checks are measured, so this never blocks on a FIFO or reads a
    device (see :func:`ingest.collection.input_kilobytes`)."""
    limit = {} if max_file_bytes is None else {"max_file_bytes": max_file_bytes}
    return collection_kilobytes(inputs, unchanged, **limit)


def try_load_embedder(config: Config) -> tuple[Embedder | None, str | None]:
    """The configured embedder, or (None, reason) so the build falls back to lexical."""
    try:
        return load_embedder(config.embedding), None
    except EmbedderUnavailable as exc:
        return None, str(exc)


def check_index_target(index_dir: Path) -> None:
    """Raise :class:`BuildError` unless ``index_dir`` is, or can be made, a writable directory."""
    for path in (index_dir, *index_dir.parents):
        if not path.exists():
            continue
        if not path.is_dir():
            raise BuildError(f"cannot build an index at {index_dir}: {path} is a file, not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise BuildError(f"cannot build an index at {index_dir}: {path} is not writable")
        return


def build_index(
    inputs: Sequence[str | Path],
    index_dir: str | Path,
    config: Config | None = None,
    *,
    metadata: Mapping[str, Mapping[str, Any]] | None = None,
    progress: ProgressCallback = no_progress,
    embedder_factory: Callable[[Config], tuple[Embedder | None, str | None]] = try_load_embedder,
    wait_for_lock: bool = False,
) -> BuildReport:
    """Build (or rebuild) the index at ``index_dir`` from ``inputs``.

    ``metadata`` maps doc ids (or ``fnmatch`` patterns over them) to document metadata
    (``acl``, ``version``, ``valid_from``, ``valid_to``, ``source``, ``title``, ...),
    validated like a sidecar and overriding the files' own; it is stored with each
    document, so a rebuild with the same mapping reuses all it can, and a changed
    ``acl`` moves the document to its new access scope.

    One build at a time writes an index: this one holds the index's build lock from
    before it reads the live generation until it has committed its own. When another
    build holds it, this one raises :class:`arborgraph.store.IndexBusy` at once, or
    with ``wait_for_lock`` waits for it (reporting ``progress(LOCK_WAIT_STAGE, 0,
    None)`` first, the holder's pid in :attr:`BuildReport.lock_wait`).

    Raises :class:`NoUsableDocuments` when nothing in ``inputs`` can be indexed; the
    previous index, if any, is left untouched in that case and on any other failure.
    """
    config = config or Config()
    index_dir = Path(index_dir)
    check_index_target(index_dir)
    check_index_dir(index_dir)
    # what this build creates before it knows there is anything to index
    created = index_dir if not index_dir.exists() else cache_dir(index_dir)
    created_now = not created.exists()
    waited: list[str] = []

    def on_wait(message: str) -> None:
        waited.append(message)
        progress(LOCK_WAIT_STAGE, 0, None)

    lock = BuildLock(index_dir, wait=wait_for_lock, on_wait=on_wait)
    try:
        return _build_locked(
            inputs, index_dir, config, lock, metadata=metadata, progress=progress,
            embedder_factory=embedder_factory, created=created, created_now=created_now,
            waited=waited,
        )
    finally:
        lock.release()


def _build_locked(
    inputs: Sequence[str | Path],
    index_dir: Path,
    config: Config,
    lock: BuildLock,
    *,
    metadata: Mapping[str, Mapping[str, Any]] | None,
    progress: ProgressCallback,
    embedder_factory: Callable[[Config], tuple[Embedder | None, str | None]],
    created: Path,
    created_now: bool,
    waited: list[str],
) -> BuildReport:
    """:func:`build_index` once it holds the index's build lock."""
    given = GivenMetadata(metadata)
    report = BuildReport(index_dir=str(index_dir), lock_wait=waited[0] if waited else None)
    timer = _Timer(report)
    started = time.perf_counter()

    previous = load_previous(index_dir)
    # made first: a pool's workers start, and chunk documents, while later files load
    unchanged = set(previous.doc_hashes.values()) if previous is not None else set()
    executor = make_executor(config.executor, input_kilobytes(inputs, unchanged, max_file_bytes=int(config.ingest.max_file_mb * 2**20)))
    try:
        with timer("load"):
            parsed = ParseCache(cache_dir(index_dir) / "parsed.sqlite")
            try:
                docs, skipped, chunked, reused_docs = load_documents(
                    inputs, config, progress, executor=executor, previous=previous, parsed=parsed,
                    metadata=given,
                )
            finally:
                parsed.close()
        report.skipped = skipped
        report.warnings = list(parsed.warnings)
        report.warnings += [f"{d.doc_id}: {w}" for d in docs for w in d.warnings]
        report.warnings += [
            f"build metadata for {p!r} matched no loaded document" for p in given.unmatched(d.doc_id for d in docs)
        ]
        if not docs:
            if created_now:  # a first build that found nothing leaves nothing behind
                shutil.rmtree(created, ignore_errors=True)
                if not (index_dir / CURRENT_FILE).exists():
                    lock.release(remove=True)
            reasons = "; ".join(f"{s.path}: {s.reason}" for s in skipped[:5]) or "no files found"
            raise NoUsableDocuments(f"no usable document in the inputs ({reasons})")
        status = BuildStatus(
            pid=os.getpid(),
            documents={
                **{s.path: DocumentStatus(status="skipped", reason=s.reason) for s in skipped},
                **{d.doc_id: DocumentStatus(status="pending", content_hash=d.content_hash) for d in docs},
            }
        )
        # before anything is written: a misconfigured endpoint leaves no generation behind
        chat, usage, llm_cache = _llm_for_build(config, index_dir)
        writer = GenerationWriter(index_dir, lock=lock)
        status.save(index_dir)
    except BaseException:
        executor.close()
        raise
    warmup: subprocess.Popen[bytes] | None = None
    try:
        report.stages["executor"] = {"name": executor.name, "workers": executor.workers}
        with timer("chunk"):  # what a pool has not chunked while loading
            count_tokens = load_token_counter()
            chunks = chunk_remaining(docs, chunked, config, count_tokens, progress)
            for doc in docs:
                status.documents[doc.doc_id].status = "processing"
            status.save(index_dir)
        report.documents, report.chunks = len(docs), len(chunks)
        warmup = _start_umap_warmup(config, len(chunks), fresh=previous is None)
        report.stages["documents"] = {
            **_document_changes(docs, previous, reused_docs),
            "parsed": parsed.misses, "parses_reused": parsed.hits,
        }
        with timer("contradictions"):
            versions = {
                d.doc_id: (d.metadata.source, d.metadata.version)
                for d in docs
                if d.metadata.source and d.metadata.version
            }
            report.contradictions = find_contradictions(chunks, versions=versions)
        context_texts = [c.context_text() for c in chunks]
        prefixes: list[str] | None = None
        if config.contextual_prefixes:
            if chat is None:
                raise BuildError("contextual_prefixes needs an LLM: pass --llm-model (or set llm.model)")
            with timer("contextual_prefixes"):
                prefixes = _contextual_prefixes(chat, docs, chunks, config, progress)
            context_texts = [f"{p}\n{t}" for p, t in zip(prefixes, context_texts)]

        with timer("embed"):
            if config.llm.embedding_model:
                embedder, why_not = _openai_embedder(config, llm_cache, usage), None
            else:
                embedder, why_not = embedder_factory(config)
            report.embedding, report.embedding_fallback = (
                (embedder.name, None) if embedder else (None, why_not)
            )
            vectors = None
            if embedder is not None:
                cache = EmbeddingCache(cache_dir(index_dir) / "embeddings.sqlite")
                try:
                    vectors = cache.embed(
                        embedder, context_texts, lambda d, t: progress("embed", d, t)
                    )
                finally:
                    cache.close()
                report.warnings += cache.warnings
                report.embeddings_cached, report.embeddings_computed = cache.hits, cache.misses

        with timer("lexical"):
            lexical = LexicalIndex.build(
                context_texts, k1=config.retrieval.bm25_k1, b=config.retrieval.bm25_b
            )
            lexical.save(writer.dir_for("bm25/chunks"))

        writer.write_table(S.DOCUMENTS, documents_table(docs))
        table = chunks_table(chunks)
        if prefixes is not None:
            table = table.append_column(S.CHUNK_PREFIX, pa.array(prefixes, pa.string()))
        writer.write_table(S.CHUNKS, table)
        if vectors is not None:
            writer.write_vectors(S.CHUNK_VECTORS, vectors)

        routes = ["lookup"]
        parts = partition_by_scope(docs, chunks)
        tree_settings = {"tree": config.tree.model_dump(mode="json"), "embedding": report.embedding, "llm": config.llm.model, "version": __version__}
        graph_settings = {"graph": config.graph.model_dump(mode="json"), "llm": config.llm.model, "version": __version__}
        scopes = [
            {
                "tag": p.tag, "scope": p.scope, "chunks": len(p.chunks),
                "tree_fingerprint": fingerprint(p.chunks, tree_settings, p.scope) if config.build_tree else None,
                "tree_settings": fingerprint([], tree_settings, p.scope),
                "graph_fingerprint": fingerprint(p.chunks, graph_settings, p.scope) if config.build_graph else None,
                "graph_settings": fingerprint([], graph_settings, p.scope),
            }
            for p in parts
        ]
        by_tag = {s["tag"]: s for s in scopes}

        def reusable(kind: str) -> Callable[[Any], bool]:
            def check(part: Any) -> bool:
                if previous is None:
                    return False
                old = next((s for s in previous.generation.manifest.get("scopes", []) if s["tag"] == part.tag), None)
                key = f"{kind}_fingerprint"
                if old is None or old.get(key) is None or old.get(key) != by_tag[part.tag][key]:
                    return False
                return writer.reuse(previous.generation, scope_files(kind, part.tag)) > 0

            return check

        def same_settings(part: Any, key: str) -> bool:
            """Whether the live index has this scope, built with the same ``key`` settings."""
            if previous is None:
                return False
            old = next((s for s in previous.generation.manifest.get("scopes", []) if s["tag"] == part.tag), None)
            return old is not None and old.get(key) == by_tag[part.tag][key]

        def previous_tree(part: Any) -> Any:
            """The previous tree of this scope when only its chunks changed, else None."""
            if previous is None or not config.build_tree or not same_settings(part, "tree_settings"):
                return None
            return load_scope_tree(previous.generation, part.tag)

        def previous_graph(part: Any) -> Any:
            """The previous graph state of this scope when only its chunks changed, else None."""
            if previous is None or not config.build_graph or not same_settings(part, "graph_settings"):
                return None
            return load_graph_state(previous.generation, part.tag)

        if config.build_tree:
            with timer("tree"):
                if warmup is not None:
                    try:
                        warmup.wait(timeout=300)
                    except subprocess.TimeoutExpired:  # a stuck warm-up must not stall the build
                        warmup.kill()
                cache = EmbeddingCache(cache_dir(index_dir) / "embeddings.sqlite") if embedder else None
                try:
                    report.stages["tree"] = run_tree_stage(
                        parts=parts, chunk_vectors=vectors, embedder=embedder, cache=cache,
                        count_tokens=count_tokens, config=config, writer=writer,
                        progress=progress, chat=chat, reusable=reusable("tree"),
                        previous_tree=previous_tree, drift_threshold=config.tree_drift_threshold,
                    )
                finally:
                    if cache is not None:
                        cache.close()
                        report.warnings += cache.warnings
            routes.append("tree")
        if config.build_graph:
            with timer("graph"):
                report.stages["graph"] = run_graph_stage(
                    parts=parts, config=config, writer=writer, progress=progress, chat=chat,
                    reusable=reusable("graph"), executor=executor,
                    previous_graph=previous_graph, drift_threshold=config.graph_drift_threshold,
                )
            routes.extend(["graph", "global"])

        report.timings_s["total"] = round(time.perf_counter() - started, 3)
        manifest = {
            "arborgraph_version": __version__,
            "built_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "config": config.to_manifest(),
            "mode": {
                "llm_model": config.llm.model,
                "embedding": report.embedding,
                "lexical_fallback": report.embedding is None,
                "lexical_fallback_reason": report.embedding_fallback,
            },
            "routes": routes,
            "scopes": scopes,
            "documents": {d.doc_id: d.content_hash for d in docs},
            "counts": {"documents": len(docs), "chunks": len(chunks), "skipped": len(skipped)},
            "timings_s": report.timings_s,
            "report": report.model_dump(mode="json", exclude={"timings_s"}),
            **(usage.to_dict() if usage is not None else {}),
        }
        executor.close()
        report.generation = writer.commit(manifest).name
        for doc in docs:
            status.documents[doc.doc_id].status = "done"
        status.state = "done"
        status.save(index_dir)
    except BaseException as exc:
        writer.abort()
        executor.close()
        if warmup is not None and warmup.poll() is None:
            warmup.kill()
        status.state = "failed"
        for record in status.documents.values():
            if record.status in ("pending", "processing"):
                record.reason = f"build stopped: {type(exc).__name__}: {exc}"[:300]
        status.save(index_dir)
        raise
    finally:
        if llm_cache is not None:
            llm_cache.close()
    if usage is not None:
        report.stages["llm"] = usage.to_dict()
    return report


def _start_umap_warmup(config: Config, n_chunks: int, *, fresh: bool) -> subprocess.Popen[bytes] | None:
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


def _contextual_prefixes(
    chat: Any, docs: Sequence[Document], chunks: Sequence[Chunk], config: Config, progress: ProgressCallback
) -> list[str]:
    """One LLM sentence per chunk situating it in its document (cached like every call).

    The prefix is embedded and BM25-indexed in front of the chunk; users still see the
    chunk alone.
    """
    from arborgraph.llm import contextual_prefixes

    by_doc: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    out: dict[str, str] = {}
    for n, doc in enumerate(docs, start=1):
        members = by_doc.get(doc.doc_id, [])
        outline = " / ".join(b.text for b in doc.blocks if b.kind == "heading")[:1500]
        excerpt = f"{outline}\n\n{doc.text[:2000]}"
        found = contextual_prefixes(
            chat, doc.title, excerpt, [(c.chunk_id, c.text) for c in members],
            concurrency=config.llm.concurrency,
        )
        out.update({c.chunk_id: p.strip() for c, p in zip(members, found)})
        progress("contextual_prefixes", n, len(docs))
    return [out[c.chunk_id] for c in chunks]


def _document_changes(docs: Sequence[Document], previous: Any, reused: int) -> dict[str, Any]:
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


def _llm_for_build(config: Config, index_dir: Path) -> tuple[Any, Any, Any]:
    """(chat model, usage, cache) when an LLM is configured, else (None, None, None).

    Every call is cached in the index's ``cache/llm.sqlite``, so a rebuild over
    unchanged input makes no call and an interrupted build resumes where it stopped.
    Raises ``BuildError`` before opening the cache when the endpoint cannot be used
    (no ``openai`` package, no API key for the official endpoint).
    """
    if not config.llm.model and not config.llm.embedding_model:
        return None, None, None
    import os

    from arborgraph.llm import LLMCache, LLMUsage
    from arborgraph.llm.config import resolve_endpoint

    try:
        from arborgraph.llm.provider import OpenAIChatModel
    except ImportError as exc:
        raise BuildError(str(exc)) from None
    try:
        if config.llm.model:
            resolve_endpoint(config.llm, os.environ)
        if config.llm.embedding_model:
            resolve_endpoint(config.llm, os.environ, embeddings=True)
    except ValueError as exc:
        raise BuildError(f"LLM mode: {exc}") from None
    cache = LLMCache(cache_dir(index_dir) / "llm.sqlite")
    usage = LLMUsage()
    chat = OpenAIChatModel(config.llm, cache, usage) if config.llm.model else None
    return chat, usage, cache


def _openai_embedder(config: Config, cache: Any, usage: Any) -> Embedder:
    from arborgraph.llm.provider import OpenAIEmbedder

    return OpenAIEmbedder(config.llm, cache, usage)


