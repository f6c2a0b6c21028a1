"""Cooperative cancellation: work checks, at its steps, whether its caller gave up.

A thread cannot be killed safely, so a service request past its time limit is answered
at once while its worker thread carries on; :func:`checkpoint` calls inside long work
(a query's steps, the graph walk, the ranking loop) then end it with :class:`Cancelled`
soon after, instead of letting it run to the end for nobody. The flag travels in a
context variable set by :func:`cancellable` around the work, so code in between needs no
extra parameter; outside such a block, :func:`checkpoint` does nothing. Work that
blocks where it cannot check (a request to a model endpoint) asks :func:`time_left`
for the deadline the flag will be set at, and waits no longer.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Iterator

from arborgraph.core.errors import Cancelled

_flag: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("arborgraph_cancel", default=None)
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("arborgraph_deadline", default=None)


@contextlib.contextmanager
def cancellable(flag: threading.Event, deadline: float | None = None) -> Iterator[None]:
    """Within the block, :func:`checkpoint` raises :class:`Cancelled` once ``flag`` is set;
    ``deadline`` (a ``time.monotonic()`` value) is when the caller will set it, if known."""
    token = _flag.set(flag)
    limit = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(limit)
        _flag.reset(token)


def checkpoint() -> None:
    """Raise :class:`Cancelled` if the work running in this context was given up."""
    flag = _flag.get()
    if flag is not None and flag.is_set():
        raise Cancelled("stopped: the caller gave up waiting (time limit)")


def cancelled() -> bool:
    """Whether the work running in this context was given up (for loops that stop early)."""
    flag = _flag.get()
    return flag is not None and flag.is_set()


def time_left() -> float | None:
    """Seconds until the work running in this context is given up (None: no limit known)."""
    deadline = _deadline.get()
    return None if deadline is None else deadline - time.monotonic()
