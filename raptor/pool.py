"""Helper processes for a tree build: independent jobs shared between the build's own
process and ``workers - 1`` helpers.

The heavy parts of a tree build (UMAP's numba kernels, scikit-learn's many small
mixture fits) hold the GIL, so threads would not run them side by side: the helpers
are processes. They come from a fork server, as :class:`arborgraph.pipeline.executor.ProcessExecutor`'s
do: forking the build's process itself is unsafe once ONNX Runtime, torch or numba's
parallel kernels have started their threads. Helpers start (and import what their
jobs need) when the pool is made, while the build's process is still busy with its
first global pass; with ``NUMBA_CACHE_DIR`` set, helpers inherit it (they get the
environment) and load UMAP's compiled kernels from the same cache.
"""

from __future__ import annotations

import importlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any


class TreePool:
    """Runs a build's independent jobs on its own process and ``workers - 1`` helpers.

    Use as a context manager (helpers are stopped on exit). Results never depend on
    where a job ran: jobs are pure functions of their arguments, single-threaded.
    """

    def __init__(self, workers: int, imports: Sequence[str] = ("raptor.cluster",)) -> None:
        """``imports``: modules every helper imports as it starts, before any job."""
        if workers < 2:
            raise ValueError("a TreePool needs at least 2 workers (the build's process and a helper)")
        self.workers = workers
        # CPU seconds the helpers spent on jobs (their start-up not included), and
        # seconds this process waited for a helper's result with nothing else to do
        self.helper_cpu_s = 0.0
        self.waited_s = 0.0
        self._lock = threading.Lock()
        self._busy = 0  # jobs on helpers, started or queued
        from arborgraph.core.processes import worker_context

        context = worker_context()  # a fork server whose helpers never import __main__
        self._pool = ProcessPoolExecutor(max_workers=workers - 1, mp_context=context, initializer=_import_all, initargs=(tuple(imports),))
        # Jobs go to helpers only once they are up: until then (a second or more: the
        # fork server, imports) this process does them itself rather than wait.
        self._ready = threading.Event()
        self._deferred: list[Deferred] = []
        # Start the helpers now, so their imports overlap the build's first global pass;
        # from a thread, because starting one waits for the fork server to come up.
        self._starting = threading.Thread(target=self._start_helpers, daemon=True)
        self._starting.start()

    def _start_helpers(self) -> None:
        wait([self._pool.submit(_noop) for _ in range(self.workers - 1)])
        with self._lock:
            self._ready.set()
            deferred, self._deferred = self._deferred, []
        for job in deferred:
            job.hand_over(self)

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait until the helpers are up (jobs then go to them); False on timeout."""
        return self._ready.wait(timeout)

    def defer(self, fn: Callable[..., Any], *args: Any) -> Deferred:
        """``fn(*args)`` on a helper once one is up; ``result()`` runs it here if none
        has taken it by then."""
        job = Deferred(fn, args)
        with self._lock:
            if not self._ready.is_set():
                self._deferred.append(job)
                return job
        job.hand_over(self)
        return job

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """Run ``fn(*args)`` on a helper."""
        future: Future[Any] = Future()

        def settle(job: Future[tuple[Any, float]]) -> None:
            with self._lock:
                self._busy -= 1
            try:
                result, cpu = job.result()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller as is
                future.set_exception(exc)
                return
            with self._lock:
                self.helper_cpu_s += cpu
            future.set_result(result)

        with self._lock:
            self._busy += 1
        self._pool.submit(_timed, fn, *args).add_done_callback(settle)
        return future

    def run_all(self, fn: Callable[..., Any], jobs: Sequence[tuple[Any, ...]], cost: Sequence[float]) -> list[Any]:
        """``[fn(*job) for job in jobs]``, shared out: idle helpers take the costliest
        jobs, this process the cheapest (no pickling for those)."""
        order = deque(sorted(range(len(jobs)), key=lambda i: (-cost[i], i)))
        results: dict[int, Any] = {}
        running: dict[Future[Any], int] = {}
        while order or running:
            # Each helper gets one job to run and one queued (so it is not idle while this
            # process finishes a job of its own), never more: this process could end up
            # waiting for a job queued behind a long one.
            while self._ready.is_set() and order and self._busy < 2 * (self.workers - 1):
                i = order.popleft()
                running[self.submit(fn, *jobs[i])] = i
            if order:
                # with the helpers busy elsewhere, the costliest job is this process's
                i = order.pop() if running else order.popleft()
                results[i] = fn(*jobs[i])
                done = [f for f in running if f.done()]
            else:
                start = time.perf_counter()
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                self.waited_s += time.perf_counter() - start
            for future in done:
                results[running.pop(future)] = future.result()
        return [results[i] for i in range(len(jobs))]

    def imap(self, fn: Callable[..., Any], jobs: Sequence[tuple[Any, ...]]) -> Iterator[Any]:
        """``fn(*job)`` for each job, in order, with up to ``workers`` jobs computed ahead
        (by idle helpers, or by this process while it waits for a helper's). Stop
        iterating to drop the rest: jobs already started finish unused."""
        results: dict[int, Any] = {}
        ahead: dict[int, Future[Any]] = {}
        started = 0  # jobs [0, started) are done or under way somewhere
        for i in range(len(jobs)):
            while i not in results:
                if started == i:  # nobody has it: this process does it, helpers the next ones
                    started += 1
                    started = self._hand_out(fn, jobs, ahead, started, limit=i + self.workers)
                    results[i] = fn(*jobs[i])
                elif ahead[i].done() or started >= min(len(jobs), i + self.workers):
                    start = time.perf_counter()
                    results[i] = ahead.pop(i).result()
                    self.waited_s += time.perf_counter() - start
                else:  # rather than wait for the helper's job, do a later one
                    started += 1
                    results[started - 1] = fn(*jobs[started - 1])
            yield results.pop(i)
            started = self._hand_out(fn, jobs, ahead, started, limit=i + 1 + self.workers)

    def _hand_out(
        self, fn: Callable[..., Any], jobs: Sequence[tuple[Any, ...]], ahead: dict[int, Future[Any]], started: int, limit: int
    ) -> int:
        """Give idle helpers the next jobs below ``limit``; return the new ``started``."""
        while self._ready.is_set() and self._busy < self.workers - 1 and started < min(len(jobs), limit):
            ahead[started] = self.submit(fn, *jobs[started])
            started += 1
        return started

    def close(self) -> None:
        self._starting.join()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> TreePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Deferred:
    """A job for a helper that this process takes back if no helper has started it."""

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self._fn, self._args = fn, args
        self._lock = threading.Lock()
        self._future: Future[Any] | None = None
        self._claimed = False

    def hand_over(self, pool: TreePool) -> None:
        self._owner = pool
        with self._lock:
            if not self._claimed:
                self._claimed = True
                self._future = pool.submit(self._fn, *self._args)

    def result(self) -> Any:
        with self._lock:
            mine = not self._claimed
            self._claimed = True
        if mine:
            return self._fn(*self._args)
        start = time.perf_counter()
        try:
            return self._future.result()  # type: ignore[union-attr]
        finally:
            self._owner.waited_s += time.perf_counter() - start


def _import_all(modules: tuple[str, ...]) -> None:
    for name in modules:
        importlib.import_module(name)


def _timed(fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    start = time.process_time()
    result = fn(*args)
    return result, time.process_time() - start


def _noop() -> None:
    pass
