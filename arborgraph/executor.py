"""Where per-document and per-chunk work runs: in-process, a process pool, or Dask.

Every executor maps a top-level function over batches and returns the results in
input order, so the index a build writes does not depend on where the work ran.
Workers receive data and a function by reference; nothing is persisted with pickle
(the pool and Dask use it only to ship work between processes).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class ExecutorError(ValueError):
    """An executor spec a user got wrong, or a cluster that cannot be reached."""


class Executor(Protocol):
    name: str
    workers: int

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]: ...

    def close(self) -> None: ...


class SerialExecutor:
    name = "serial"
    workers = 1

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return [fn(item) for item in items]

    def close(self) -> None:
        pass


class ProcessExecutor:
    """A local process pool. Workers come from a fork server: forking the parent
    directly is unsafe once torch and ONNX Runtime have started their threads."""

    name = "process"

    def __init__(self, workers: int | None = None) -> None:
        from concurrent.futures import ProcessPoolExecutor

        self.workers = workers or max(1, os.cpu_count() or 1)
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["ingest", "graphrag"])
        self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=context)

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return list(self._pool.map(fn, items))

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class DaskExecutor:
    """Work on a Dask cluster: a new local one (``dask``) or an existing scheduler."""

    name = "dask"

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise ExecutorError("the dask executor needs the extra: pip install 'arborgraph[dask]'") from None
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

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        futures = self._client.map(fn, list(items), pure=False)
        return list(self._client.gather(futures))

    def close(self) -> None:
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()


def make_executor(spec: str, n_items: int) -> Executor:
    """``serial``, ``process``, ``dask`` (a local cluster), ``tcp://host:port`` (an
    existing scheduler) or ``auto`` (a process pool for large inputs on several cores)."""
    if spec == "auto":
        # Measured on the sample manual (benchmarks/results/incremental.json): on 2 cores
        # the pool made chunking + extraction slower (17.6 s vs 12.2 s serial) — the
        # fitted extractor and the results cross process boundaries — so "auto" stays
        # in-process until the pool pays for itself; "process" and Dask remain available.
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


def batches(items: Sequence[T], n_batches: int) -> list[list[T]]:
    """Split ``items`` into up to ``n_batches`` contiguous, order-preserving batches."""
    if not items:
        return []
    n_batches = max(1, min(n_batches, len(items)))
    size = -(-len(items) // n_batches)
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


# -- work functions (top level, so workers can import them) ---------------------------

_TOKEN_COUNTER: Any = None


def chunk_batch(job: tuple[list[Any], dict[str, Any]]) -> list[list[Any]]:
    """Chunk a batch of documents; each worker loads the token counter once."""
    from ingest import ChunkingConfig, chunk_document, load_token_counter

    global _TOKEN_COUNTER
    if _TOKEN_COUNTER is None:
        _TOKEN_COUNTER = load_token_counter()
    docs, chunking = job
    config = ChunkingConfig.model_validate(chunking)
    return [chunk_document(doc, config, _TOKEN_COUNTER) for doc in docs]


def extract_batch(job: tuple[Any, list[Any]]) -> list[Any]:
    """Run a (fitted) extractor over a batch of chunks."""
    extractor, chunks = job
    return [extractor.extract(chunk) for chunk in chunks]
