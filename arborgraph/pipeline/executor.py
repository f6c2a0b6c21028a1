"""Where per-document and per-chunk work runs: in-process, a process pool, or Dask.

Every executor maps a top-level function over batches and returns the results in
input order, so the index a build writes does not depend on where the work ran.
Workers receive data and a function by reference; nothing is persisted with pickle
(the pool and Dask use it only to ship work between processes).
"""

from __future__ import annotations

import gc
import os
import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from arborgraph.index.chunk_rows import ChunkRow, encode_chunks
from arborgraph.core.errors import ExecutorError, install_hint
from arborgraph.core.processes import available_cores, worker_context
from arborgraph.core.protocols import Executor
from graphrag.extract.encoding import ExtractionRow, decode_extraction, encode_extraction

T = TypeVar("T")
R = TypeVar("R")


class SerialExecutor:
    name = "serial"
    workers = 1

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        return [fn(item) for item in items]

    def imap(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        return (fn(item) for item in items)

    def close(self) -> None:
        pass


class ProcessExecutor:
    """A local process pool. Workers come from a fork server: forking the parent
    directly is unsafe once torch and ONNX Runtime have started their threads.

    Every worker is started (and warmed: imports, token counter) from a background
    thread as soon as the pool is made, so the fork server's imports and the workers'
    start-up overlap what the parent does before the first map (loading files).
    """

    name = "process"

    def __init__(self, workers: int | None = None) -> None:
        import threading
        from concurrent.futures import ProcessPoolExecutor

        self.workers = workers or available_cores()
        # imported once in the fork server, so each worker starts with what its work
        # functions need (chunking, token counting, the rule extractor) loaded
        context = worker_context(
            ["ingest.chunking", "ingest.tokens", "graphrag.extract.rules", "arborgraph.pipeline.executor"]
        )
        self._pool = ProcessPoolExecutor(
            max_workers=self.workers, mp_context=context, initializer=_warm_worker
        )
        # the pool spawns a worker per submission while none is idle; spawning waits
        # for the fork server's imports, hence a thread
        self._starting = threading.Thread(target=self._start_workers, daemon=True)
        self._starting.start()

    def _start_workers(self) -> None:
        for _ in range(self.workers):
            self._pool.submit(_noop)

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        return list(self._pool.map(fn, items))

    def imap(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        return self._pool.map(fn, items)

    def close(self) -> None:
        self._starting.join()
        self._pool.shutdown(wait=True, cancel_futures=True)


class DaskExecutor:
    """Work on a Dask cluster: a new local one (``dask``) or an existing scheduler."""

    name = "dask"

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise ExecutorError(f"the dask executor needs the 'dask' extra: {install_hint('dask')}") from None
        self._cluster = None
        try:
            if address is None:
                self._cluster = LocalCluster(
                    n_workers=workers or max(1, os.cpu_count() or 1), threads_per_worker=1,
                    processes=True, dashboard_address=None,
                )
                self._client = Client(self._cluster)
            else:
                self._client = Client(address, timeout="5s")
        except OSError as exc:
            raise ExecutorError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
        self.workers = max(1, len(self._client.scheduler_info().get("workers", {})))
        self.name = f"dask:{address or 'local'}"

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        futures = self._client.map(fn, list(items), pure=False)
        return list(self._client.gather(futures))

    def imap(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        futures = self._client.map(fn, list(items), pure=False)
        return (future.result() for future in futures)

    def close(self) -> None:
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()


# "auto" runs a pool from this much input on disk, on two or more cores. From
# benchmarks/bench_pool.py on the sample manual (2,992 KB): loading, chunking, fitting
# and rule extraction cost ~2 CPU-s per MB of input in one process and 1.1-1.2x that
# split over two workers; the pool's fixed cost is under 1 CPU-s (the fork server's
# imports, each worker's tokenizer), overlapping the parent's loading. From ~2 MB a
# 2-core machine builds these stages about 1.5-1.6x faster (runs vary by +-0.15 on
# this shared machine); on a machine other work keeps busy the pool gains little or
# nothing.
AUTO_POOL_MIN_KB = 2_000


def make_executor(spec: str, size_kb: int) -> Executor:
    """``serial``, ``process``, ``dask`` (a local cluster), ``tcp://host:port`` (an
    existing scheduler) or ``auto``: a process pool for inputs of ``size_kb`` at least
    :data:`AUTO_POOL_MIN_KB` on two or more cores, else in-process."""
    if spec == "auto":
        if size_kb >= AUTO_POOL_MIN_KB and available_cores() >= 2:
            return ProcessExecutor()
        return SerialExecutor()
    if spec == "serial":
        return SerialExecutor()
    if spec == "process":
        return ProcessExecutor()
    if spec == "dask":
        return DaskExecutor()
    if spec.startswith(("tcp://", "tls://", "ucx://")):
        return DaskExecutor(spec)
    raise ExecutorError(f"unknown executor '{spec}' (serial, process, auto, dask or tcp://host:port)")


# The smallest batch, as a share of all the work per worker: the workers finish within
# about one such batch of each other (1/64 of the work on 2 workers, ~0.06 CPU-s of
# rule extraction on the sample manual; 14 batches there instead of 8).
TAPER_FLOOR = 32


def tapering_batches(weights: Sequence[float], workers: int) -> list[range]:
    """Consecutive items in batches that shrink as the work runs out (guided
    self-scheduling): each holds about ``1 / (2 * workers)`` of the weight not yet
    batched, and at least ``1 / (TAPER_FLOOR * workers)`` of the whole.

    A free worker takes the next batch, so a batch that costs more than its weight
    said only delays work that another worker picks up meanwhile; the last batches
    are small, so the workers finish close together, with little left for the caller
    to rebuild after the last result. Weights below zero count as zero.
    """
    n = len(weights)
    if n == 0:
        return []
    workers = max(1, workers)
    total = float(sum(max(0.0, w) for w in weights))
    if total <= 0:
        weights, total = [1.0] * n, float(n)
    floor = total / (TAPER_FLOOR * workers)
    batches: list[range] = []
    start, remaining = 0, total
    while start < n:
        target = max(remaining / (2 * workers), floor)
        end, weight = start, 0.0
        while end < n and (weight < target or end == start):
            weight += max(0.0, weights[end])
            end += 1
        batches.append(range(start, end))
        start, remaining = end, remaining - weight
    return batches


C = TypeVar("C")


def imap_batches(
    executor: Executor, fn: Callable[[tuple[C, list[T]]], R], context: C, batches: Iterable[list[T]]
) -> Iterator[R]:
    """``fn((context, batch))`` of every batch on ``executor``, results in order as they
    come. ``context`` (a fitted extractor, say) is pickled once and unpickled once per
    worker, not with every batch; ``fn`` must not change it."""
    if isinstance(executor, SerialExecutor):
        return (fn((context, batch)) for batch in batches)
    blob = pickle.dumps(context, protocol=pickle.HIGHEST_PROTOCOL)
    return executor.imap(_run_batch, ((fn, blob, batch) for batch in batches))


_CONTEXT: tuple[bytes, Any] = (b"", None)


def _run_batch(job: tuple[Callable[[tuple[Any, list[Any]]], Any], bytes, list[Any]]) -> Any:
    global _CONTEXT
    fn, blob, batch = job
    cached = _CONTEXT  # read once: a Dask worker may run batches on several threads
    if cached[0] != blob:  # equal bytes: the same context as the last batch's
        cached = _CONTEXT = (blob, pickle.loads(blob))
    return fn((cached[1], batch))


def map_batched(
    executor: Executor,
    fn: Callable[[tuple[C, list[T]]], list[R]],
    context: C,
    items: Sequence[T],
    weights: Sequence[float],
    decode: Callable[[T, R], Any] | None = None,
) -> list[Any]:
    """``fn`` over ``items`` in :func:`tapering_batches` sent as ``(context, batch)``;
    one result per item, in input order whatever the batching. ``decode(item,
    result)``, if given, turns each batch's results as soon as that batch is back,
    while the workers still compute the others."""
    batches = tapering_batches(weights, executor.workers)
    parts = imap_batches(executor, fn, context, (list(items[b.start : b.stop]) for b in batches))
    out: list[Any] = []
    for batch, results in zip(batches, parts):
        if decode is None:
            out.extend(results)
        else:
            out.extend(decode(items[i], result) for i, result in zip(batch, results))
    return out


def map_as_produced(executor: Executor, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """``executor.map(fn, items)``, with ``items`` produced in this thread and handed
    over by another: producing them (loading files, say) never waits on the executor,
    whose first submissions wait for a pool's workers to start."""
    import queue
    import threading

    handed: queue.Queue[tuple[T] | None] = queue.Queue()
    outcome: list[Any] = []

    def consume() -> None:
        try:
            outcome.append(executor.map(fn, (box[0] for box in iter(handed.get, None))))
        except BaseException as exc:  # raised again in the caller's thread
            outcome.append(exc)

    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    try:
        for item in items:
            handed.put((item,))
    finally:
        handed.put(None)
        consumer.join()
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


# -- work functions (top level, so workers can import them) ---------------------------
#
# Results travel back as plain tuples, with text the parent already holds (a chunk's
# text, a relation's sentence) sent as offsets: chunks as arborgraph.index.chunk_rows
# encodes them, extractions as graphrag.extract.encoding does (pickling the slotted
# dataclasses of an extraction cost about as much as a third of the extraction itself).

_TOKEN_COUNTER: Any = None


def _token_counter() -> Any:
    global _TOKEN_COUNTER
    if _TOKEN_COUNTER is None:
        from ingest import load_token_counter

        _TOKEN_COUNTER = load_token_counter()
    return _TOKEN_COUNTER


def _warm_worker() -> None:
    _token_counter()
    gc.freeze()  # what the worker imported is never garbage: no collection rescans it


def _noop() -> None:
    pass


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: chunking and the graph stage make millions
    of small acyclic records, and the collector rescanning them took about half the
    time of a graph update of the sample manual. Reference counting still frees them.

    Here, not in :mod:`arborgraph.pipeline.structures`, so a pool worker using it does not import
    that module's dependencies (numpy, pyarrow, the RAPTOR and BM25 stacks: 0.6-1 CPU-s
    per worker).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def chunk_batch(job: tuple[dict[str, Any], list[Any]]) -> list[list[ChunkRow]]:
    """Chunk a batch of documents; per document, its chunks as rows for :func:`arborgraph.index.chunk_rows.decode_chunks`."""
    from ingest import ChunkingConfig, chunk_document

    chunking, docs = job
    config = ChunkingConfig.model_validate(chunking)
    with cyclic_gc_paused():
        return [encode_chunks(doc, chunk_document(doc, config, _token_counter())) for doc in docs]


def fit_on(executor: Executor, extractor: Any, chunks: Sequence[Any]) -> None:
    """Fit ``extractor`` on ``chunks``; a rule extractor's term statistics (most of
    its fit) are counted on ``executor``'s workers, in parts merged here."""
    if executor.workers <= 1 or len(chunks) <= 1 or not hasattr(extractor, "count_terms"):
        extractor.fit(chunks)
        return
    batches = tapering_batches([len(c.text) for c in chunks], executor.workers)
    texts = ([c.text for c in chunks[b.start : b.stop]] for b in batches)
    # the fit learns the heading terms while the workers count, then merges the parts
    # as they come back
    extractor.fit(chunks, counts=imap_batches(executor, count_terms_batch, extractor, texts))


def count_terms_batch(job: tuple[Any, list[str]]) -> Any:
    """A rule extractor's term statistics of a batch of chunk texts."""
    extractor, texts = job
    with cyclic_gc_paused():
        return extractor.count_terms(texts)


def fit_many_on(executor: Executor) -> Callable[[Any, Sequence[Any]], None]:
    """:func:`fit_on` ``executor``, as the graph build's ``fit_many`` hook."""
    return lambda extractor, chunks: fit_on(executor, extractor, chunks)


def extract_many_on(executor: Executor) -> Callable[[Any, Sequence[Any]], list[Any]]:
    """:func:`extract_on` ``executor`` (in-process for a single chunk), as the graph
    build's ``extract_many`` hook."""

    def extract_many(extractor: Any, chunks: Sequence[Any]) -> list[Any]:
        if len(chunks) <= 1:
            return [extractor.extract(c) for c in chunks]
        return extract_on(executor, extractor, chunks)

    return extract_many


def extract_on(executor: Executor, extractor: Any, chunks: Sequence[Any]) -> list[Any]:
    """A fitted extractor's results for ``chunks``, computed on ``executor``'s workers,
    in the order of ``chunks``."""
    return map_batched(
        executor, extract_batch, extractor, chunks, [len(c.text) for c in chunks], decode=decode_extraction
    )


def extract_batch(job: tuple[Any, list[Any]]) -> list[ExtractionRow]:
    """Run a (fitted) extractor over a batch of chunks; rows for
    :func:`graphrag.extract.encoding.decode_extraction`."""
    # the batch's records live until it returns: the cyclic collector rescanning them
    # cost the pool's extraction ~1.8x the CPU of the serial one (paused there too)
    extractor, chunks = job
    with cyclic_gc_paused():
        return [encode_extraction(chunk.text, extractor.extract(chunk)) for chunk in chunks]
