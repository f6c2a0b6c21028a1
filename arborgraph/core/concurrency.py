"""Run a function over items on a few threads and keep the input order, and name the
item an LLM error came from."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any, TypeVar

from arborgraph.core.errors import LLMError

T = TypeVar("T")
R = TypeVar("R")


def chat_concurrency(chat: Any) -> int:
    """How many calls ``chat`` takes at once: its provider config's ``concurrency``,
    or 1 for a chat model without one (a test double, a custom model)."""
    config = getattr(chat, "config", None)
    return max(1, int(getattr(config, "concurrency", 1) or 1))


def workers_for(stage_object: Any) -> int:
    """Threads a build loop may use for a summariser, extractor or report writer: its
    ``concurrency`` attribute (the LLM-backed ones set it), else 1 (serial), so that
    rule-based and extractive stages keep running in order on one thread."""
    return max(1, int(getattr(stage_object, "concurrency", 1) or 1))


def run_ordered(
    fn: Callable[[T], R],
    items: Sequence[T],
    workers: int,
    *,
    stop_on_error: bool = False,
    done: Callable[[int], None] | None = None,
) -> list[R]:
    """Return ``[fn(item) for item in items]`` computed on up to ``workers`` threads.

    By default every item is attempted even when some fail, so that all replies that
    can be had are obtained (and cached) in one pass; then the first failure is raised.
    Several ``LLMError`` failures are summarised in one ``LLMError`` naming how many
    failed. With ``stop_on_error`` (builds) no new item starts after a failure; the
    ones already running finish (their replies are cached) and the first failure in
    input order is raised.

    ``done(n)`` is called on the calling thread each time an item finishes, with the
    number finished so far (for progress reports).
    """
    if not items:
        return []
    if workers <= 1 or len(items) == 1:
        return _run_serial(fn, items, stop_on_error=stop_on_error, done=done)
    futures = _run_windowed(fn, items, min(workers, len(items)), stop_on_error=stop_on_error, done=done)
    failed = [e for e in (f.exception() for f in futures) if e is not None]
    if failed:
        _raise_failures(failed, len(items))
    return [f.result() for f in futures]


def _run_windowed(
    fn: Callable[[T], R],
    items: Sequence[T],
    workers: int,
    *,
    stop_on_error: bool,
    done: Callable[[int], None] | None,
) -> list[Future[R]]:
    """Futures of the items started, in input order. An item is submitted only when a
    worker is free, so after a failure (with ``stop_on_error``) nothing new starts."""
    futures: list[Future[R]] = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: set[Future[R]] = set()
        finished = 0
        stopped = False
        while True:
            while not stopped and len(pending) < workers and len(futures) < len(items):
                future = pool.submit(fn, items[len(futures)])
                futures.append(future)
                pending.add(future)
            if not pending:
                return futures
            ready, pending = wait(pending, return_when=FIRST_COMPLETED)
            finished += len(ready)
            if done is not None:
                done(finished)
            stopped = stopped or (stop_on_error and any(f.exception() is not None for f in ready))


def _run_serial(
    fn: Callable[[T], R],
    items: Sequence[T],
    *,
    stop_on_error: bool,
    done: Callable[[int], None] | None,
) -> list[R]:
    results: list[R] = []
    failed: list[BaseException] = []
    for n, item in enumerate(items, start=1):
        try:
            results.append(fn(item))
        except Exception as exc:  # collected and re-raised below, never swallowed
            if stop_on_error:
                raise
            failed.append(exc)
        if done is not None:
            done(n)
    if failed:
        _raise_failures(failed, len(items))
    return results


def _raise_failures(failed: list[BaseException], total: int) -> None:
    first = failed[0]
    if len(failed) == 1 or not all(isinstance(e, LLMError) for e in failed):
        raise first
    shown = "; ".join(str(e) for e in failed[:3])
    more = f" (and {len(failed) - 3} more)" if len(failed) > 3 else ""
    raise LLMError(f"{len(failed)} of {total} model calls failed: {shown}{more}") from first


@contextmanager
def naming_item(label: str) -> Iterator[None]:
    """Re-raise an ``LLMError`` from the block with ``label`` (e.g. a chunk id) in front.

    The ``ChatModel`` protocol has no item argument, so helpers built on it name the
    item this way; the original error stays chained as the cause, and the new one is of
    its class (an ``UnusableReply`` stays one).
    """
    try:
        yield
    except LLMError as exc:
        raise type(exc)(f"{label}: {exc}") from exc
