"""Attach the caller's item label to errors raised by a ``ChatModel``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from arborgraph.llm.base import LLMError


@contextmanager
def naming_item(label: str) -> Iterator[None]:
    """Re-raise an ``LLMError`` from the block with ``label`` (e.g. a chunk id) in front.

    The ``ChatModel`` protocol has no item argument, so helpers built on it name the
    item this way; the original error stays chained as the cause.
    """
    try:
        yield
    except LLMError as exc:
        raise LLMError(f"{label}: {exc}") from exc
