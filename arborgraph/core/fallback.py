"""An LLM-written build item, or the no-LLM one when no reply for it was usable."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from arborgraph.core.errors import UnusableReply

T = TypeVar("T")
R = TypeVar("R")

OnFallback = Callable[[], None]


def usable_or_fallback(primary: Callable[[T], R], fallback: Callable[[T], R], item: T, on_fallback: OnFallback) -> R:
    """``primary(item)``, or ``fallback(item)`` when the model's replies for it stayed
    unusable (:class:`UnusableReply`); ``on_fallback()`` counts that. Any other failure
    (a call that failed) is raised: a build stops on it and resumes from its cache."""
    try:
        return primary(item)
    except UnusableReply:
        on_fallback()
        return fallback(item)
