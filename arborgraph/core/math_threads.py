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


@contextmanager
def one_math_thread() -> Iterator[None]:
    """BLAS on one thread inside the block; blocks nest and may run on several threads
    at once, and the setting from before the first comes back when the last is done.

    Every thread that enters sets the limit, not only the first: the OpenBLAS numpy
    ships does not always let a setting made on one thread reach another thread."""
    global _answering, _first, _controller
    with _lock:
        if _controller is None:
            from threadpoolctl import ThreadpoolController

            # finding the loaded libraries is the slow part: done once per process
            _controller = ThreadpoolController()
        limited = _controller.limit(limits=1, user_api="blas")
        if _answering == 0:
            _first = limited
        _answering += 1
    try:
        yield
    finally:
        with _lock:
            _answering -= 1
            if _answering == 0:
                _first.restore_original_limits()
                _first = None


F = TypeVar("F", bound=Callable[..., Any])


def on_one_math_thread(fn: F) -> F:
    """``fn`` run inside :func:`one_math_thread`."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with one_math_thread():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
