"""``build_index``: take the index's build lock, open what the build uses throughout
(:class:`~arborgraph.pipeline.stages.BuildContext`), run the stages in order
(:func:`~arborgraph.pipeline.stages.build_stages`), commit.

Any failure or interruption leaves the previous index as it was: the new generation is
written beside it and replaces it only at the commit, and a failed build records why in
the per-document status.
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import shutil
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arborgraph.core.version import __version__
from arborgraph.index import layout
from arborgraph.index.build_report import BuildReport
from arborgraph.config import Config
from arborgraph.core.errors import NoUsableDocuments, StorageError
from arborgraph.pipeline.executor import make_executor
from arborgraph.pipeline.incremental import load_previous
from ingest.parse_cache import loader_fingerprint
from arborgraph.index.manifest import BuildRecord, ModeRecord
from arborgraph.pipeline.embed import EmbedderFactory, Embedders, try_load_embedder
from arborgraph.pipeline.load import input_kilobytes
from arborgraph.pipeline.stages import BuildContext, Built, Unchanged, build_stages
from arborgraph.core.protocols import ProgressCallback, no_progress
from arborgraph.index.index_dir import check_build_target
from arborgraph.index.store import BuildLock
from ingest.metadata import GivenMetadata

# the progress stage reported once when a build waits for another build's lock
LOCK_WAIT_STAGE = "waiting for another build"


def build_index(
    inputs: Sequence[str | Path],
    index_dir: str | Path,
    config: Config | None = None,
    *,
    metadata: Mapping[str, Mapping[str, Any]] | None = None,
    progress: ProgressCallback = no_progress,
    embedder_factory: EmbedderFactory = try_load_embedder,
    wait_for_lock: bool = False,
    force: bool = False,
) -> BuildReport:
    """Build (or rebuild) the index at ``index_dir`` from ``inputs``.

    ``metadata`` maps doc ids (or ``fnmatch`` patterns over them) to document metadata
    (``acl``, ``version``, ``valid_from``, ``valid_to``, ``source``, ``title``, ...),
    validated like a sidecar and overriding the files' own; it is stored with each
    document, so a rebuild with the same mapping reuses all it can, and a changed
    ``acl`` moves the document to its new access scope.

    One build at a time writes an index: this one holds the index's build lock from
    before it reads the live generation until it has committed its own. When another
    build holds it, this one raises :class:`arborgraph.core.errors.IndexBusy` at once, or
    with ``wait_for_lock`` waits for it (reporting ``progress(LOCK_WAIT_STAGE, 0,
    None)`` first, the holder's pid in :attr:`BuildReport.lock_wait`).

    When nothing changed since the live generation (documents, their metadata and the
    config alike) no new generation is written: the report says ``unchanged`` and names
    the live one; ``force`` writes a new one all the same (reusing all it can).

    Raises :class:`NoUsableDocuments` when nothing in ``inputs`` can be indexed; the
    previous index, if any, is left untouched in that case and on any other failure.
    """
    config = config or Config()
    index_dir = Path(index_dir)
    check_build_target(index_dir)
    # what this build creates before it knows there is anything to index
    created = index_dir if not index_dir.exists() else layout.cache_dir(index_dir)
    created_now = not created.exists()
    waited: list[str] = []

    def on_wait(message: str) -> None:
        waited.append(message)
        progress(LOCK_WAIT_STAGE, 0, None)

    lock = BuildLock(index_dir, wait=wait_for_lock, on_wait=on_wait)
    try:
        started = time.perf_counter()  # the build's total time counts from here
        previous = load_previous(index_dir)
        # made first: a pool's workers start, and chunk documents, while later files load
        unchanged = set(previous.doc_hashes.values()) if previous is not None else set()
        max_file_bytes = int(config.ingest.max_file_mb * 2**20)
        executor = make_executor(config.executor, input_kilobytes(inputs, unchanged, max_file_bytes=max_file_bytes))
        report = BuildReport(index_dir=str(index_dir), lock_wait=waited[0] if waited else None)
        ctx = BuildContext(
            index_dir=index_dir, config=config, lock=lock, progress=progress, executor=executor,
            previous=previous, report=report, embedders=Embedders(embedder_factory, config, report),
            created=created, created_now=created_now,
        )
        return run_stages(ctx, inputs, GivenMetadata(metadata), force=force, started=started)
    except (OSError, sqlite3.Error) as exc:
        problem = storage_problem(exc)
        if problem is None:
            raise
        raise StorageError(f"{index_dir}: {problem}; the build stopped and the previous index is unchanged") from None
    finally:
        lock.release()


# errno values that mean the storage, not the input, stopped a build
_STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG}


def storage_problem(exc: BaseException) -> str | None:
    """What the disk did, in a few words, when ``exc`` (or what it was raised from) is
    the storage failing a write; None for anything else. SQLite (the build's caches)
    reports a full disk as "database or disk is full" or "disk I/O error"."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in _STORAGE_ERRNOS:
            where = f" writing {Path(seen.filename).name}" if seen.filename else ""
            return f"the disk refused a write{where} ({seen.strerror or os.strerror(seen.errno)})"
        if isinstance(seen, sqlite3.Error) and any(
            words in str(seen).lower() for words in ("disk is full", "disk i/o error", "readonly database", "read-only")
        ):
            return f"the disk refused a write to a build cache ({seen})"
        seen = seen.__cause__ or seen.__context__
    return None


def run_stages(
    ctx: BuildContext, inputs: Sequence[str | Path], metadata: GivenMetadata, *, force: bool, started: float
) -> BuildReport:
    """Run the stages (:func:`~arborgraph.pipeline.stages.build_stages`), then commit the
    new generation; on any failure, abort it and record why. ``started`` (a
    ``time.perf_counter()``) is when the build began, for its total time."""
    report = ctx.report
    try:
        built = build_stages(ctx, inputs, metadata, force=force)
        report.timings_s["total"] = round(time.perf_counter() - started, 3)
        commit(ctx, built)
    except Unchanged as same:
        fail(ctx, same)  # the new generation is dropped, the live one stays
        report.unchanged, report.generation = True, str(same)
        report.timings_s["total"] = round(time.perf_counter() - started, 3)
    except BaseException as exc:
        fail(ctx, exc)
        raise
    finally:
        ctx.close()
        provider = ctx.prepared.provider if ctx.prepared is not None else None
        if provider is not None:
            provider.close()
    provider = ctx.prepared.provider if ctx.prepared is not None else None
    if provider is not None:
        report.stages["llm"] = provider.usage.to_dict()
    return report


def manifest_record(ctx: BuildContext, built: Built) -> BuildRecord:
    """What the build records in the new generation's manifest."""
    config, report, loaded = ctx.config, ctx.report, built.loaded
    provider = ctx.prepared.provider if ctx.prepared is not None else None
    return BuildRecord(
        arborgraph_version=__version__,
        built_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        config=config.to_manifest(),
        mode=ModeRecord(
            # the model as the mode label names it ("local: SmolLM2-135M-Instruct Q4_1")
            llm_model=provider.chat.description if provider is not None and provider.chat is not None else config.llm.model,
            embedding=report.embedding,
            embedding_identity=report.embedding_identity,
            lexical_fallback=report.embedding is None,
            lexical_fallback_reason=report.embedding_fallback,
        ),
        routes=built.routes,
        scopes=built.scopes.records,
        documents={d.doc_id: d.content_hash for d in loaded.docs},
        loader=loader_fingerprint(),
        counts={"documents": len(loaded.docs), "chunks": len(built.chunked.chunks), "skipped": len(loaded.skipped)},
        timings_s=report.timings_s,
        full_build_timings_s=_full_build_timings(ctx),
        report=report.stored(),
        **(provider.usage.to_dict() if provider is not None else {}),
    )


def _full_build_timings(ctx: BuildContext) -> dict[str, float]:
    """This build's timings if it reused no document, else the previous generation's
    record of its last full build (its own timings when it predates the record)."""
    reused = ctx.report.stages.get("documents", {}).get("unchanged", 0)
    if ctx.previous is None or not reused:
        return dict(ctx.report.timings_s)
    before = ctx.previous.manifest
    return dict(before.full_build_timings_s or before.timings_s)


def commit(ctx: BuildContext, built: Built) -> None:
    """Write the manifest and make the new generation the live index."""
    prepared = ctx.prepared
    if prepared is None:
        raise RuntimeError("stage 'prepare' has not run")
    record = manifest_record(ctx, built)
    ctx.executor.close()
    ctx.report.generation = prepared.writer.commit(record.to_json()).name
    status = prepared.status
    for doc in built.loaded.docs:
        status.documents[doc.doc_id].status = "done"
    status.state = "done"
    status.save(ctx.index_dir)


def fail(ctx: BuildContext, exc: BaseException) -> None:
    """Undo a failed build: abort its generation, stop its workers, and record why in
    the status of every document it had not finished (when it had started writing)."""
    prepared = ctx.prepared
    if prepared is not None:
        prepared.writer.abort()
    ctx.executor.close()
    if ctx.warmup is not None and ctx.warmup.poll() is None:
        ctx.warmup.kill()
    if isinstance(exc, NoUsableDocuments) and ctx.created_now:
        shutil.rmtree(ctx.created, ignore_errors=True)  # a first build that found nothing leaves nothing behind
        return
    if prepared is not None and isinstance(exc, Unchanged):
        prepared.status.state = "done"
        for doc_id in exc.doc_ids:
            prepared.status.documents[doc_id].status = "done"
        prepared.status.save(ctx.index_dir)
    elif prepared is not None:
        status = prepared.status
        status.state = "failed"
        for record in status.documents.values():
            if record.status in ("pending", "processing"):
                record.reason = f"build stopped: {type(exc).__name__}: {exc}"[:300]
        status.save(ctx.index_dir)
