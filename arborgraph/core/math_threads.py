"""Linear algebra on the calling thread while questions are answered.

A question's matrix work is small (a question vector against a few thousand rows), and
OpenBLAS splitting it over its own threads costs more than it saves; on two busy cores
(a service answering several questions at once, or a build beside it) it cost tens of
times as much as on one thread in a trial. While questions are
answered, the BLAS libraries the process has loaded use one thread; when the last is
done, the setting from before comes back (a build keeps its threads).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

_lock = threading.Lock()
_answering = 0  # blocks open, in every thread
_first: Any = None  # the limit the first open block set: undone when the last closes
_controller: Any = None
_for_good = False  # set by one_math_thread_from_now: nothing is restored any more


@contextmanager
def one_math_thread() -> Iterator[None]:
    """BLAS on one thread inside the block; blocks nest and may run on several threads
    at once, and the setting from before the first comes back when the last is done.

    Every thread that enters sets the limit, not only the first: the OpenBLAS numpy
    ships does not always let a setting made on one thread reach another thread."""
    global _answering, _first
    with _lock:
        limited = _blas_controller().limit(limits=1, user_api="blas")
        if _answering == 0 and not _for_good:
            _first = limited
        _answering += 1
    try:
        yield
    finally:
        with _lock:
            _answering -= 1
            if _answering == 0 and _first is not None:
                _first.restore_original_limits()
                _first = None


def _blas_controller() -> Any:
    global _controller
    if _controller is None:
        import numpy  # noqa: F401  (loads its OpenBLAS: a controller made before would not know it)
        from threadpoolctl import ThreadpoolController

        # finding the loaded libraries is the slow part: done once per process
        _controller = ThreadpoolController()
    return _controller


def one_math_thread_from_now() -> None:
    """BLAS on one thread for the rest of this process: for a process whose work is
    answering questions (the service's). Between questions :func:`one_math_thread`
    gives the earlier setting back, and OpenBLAS's own thread, woken by it, then spins
    on the other core (its ``blas_thread_server``, seen busy under ``serve --workers 2``):
    the core the other worker needs. Each thread still sets the limit as it enters :func:`one_math_thread`
    (a setting made on one thread does not always reach another), and none gives it back.
    Call it once the index is open: only the libraries loaded by then are limited."""
    global _for_good
    with _lock:
        _blas_controller().limit(limits=1, user_api="blas")
        _for_good = True


F = TypeVar("F", bound=Callable[..., Any])


def on_one_math_thread(fn: F) -> F:
    """``fn`` run inside :func:`one_math_thread`."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with one_math_thread():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
