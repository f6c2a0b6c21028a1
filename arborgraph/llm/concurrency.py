"""Run a function over items on a few threads and keep the input order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from arborgraph.llm.base import LLMError

T = TypeVar("T")
R = TypeVar("R")


def run_ordered(fn: Callable[[T], R], items: Sequence[T], workers: int) -> list[R]:
    """Return ``[fn(item) for item in items]`` computed on up to ``workers`` threads.

    Every item is attempted even when some fail, so that all replies that can be had
    are obtained (and cached) in one pass; then the first failure is raised. Several
    ``LLMError`` failures are summarised in one ``LLMError`` naming how many failed.
    """
    if not items:
        return []
    if workers <= 1 or len(items) == 1:
        return _run_serial(fn, items)
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        futures = [pool.submit(fn, item) for item in items]
        errors = [f.exception() for f in futures]
    failed = [e for e in errors if e is not None]
    if failed:
        _raise_failures(failed, len(items))
    return [f.result() for f in futures]


def _run_serial(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    results: list[R] = []
    failed: list[BaseException] = []
    for item in items:
        try:
            results.append(fn(item))
        except Exception as exc:  # collected and re-raised below, never swallowed
            failed.append(exc)
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
