"""Stages ``load`` and ``chunk``: read every input file (through the parse cache), keep
the chunks of documents unchanged since the live index, and chunk the rest, on a pool's
workers while later files still load, or here."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from arborgraph.index.chunk_rows import decode_chunks
from arborgraph.config import Config
from arborgraph.core.protocols import Executor
from arborgraph.pipeline.executor import chunk_batch, map_as_produced
from arborgraph.pipeline.incremental import PreviousIndex
from arborgraph.core.protocols import ProgressCallback, no_progress
from ingest import chunk_document, count_files, iter_collection
from ingest.collection import input_kilobytes as collection_kilobytes
from ingest.metadata import GivenMetadata
from ingest.models import Chunk, Document, SkippedFile
from ingest.parse_cache import ParseCache


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

    total = count_files(inputs)  # a walk of the folders only: progress shows "n of total"

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
            progress("load", len(docs) + len(skipped), total)

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
