"""Progress reporting as data: library code calls a callback, front-ends render it."""

from __future__ import annotations

from typing import Protocol


class ProgressCallback(Protocol):
    def __call__(self, stage: str, done: int, total: int | None) -> None: ...


def no_progress(stage: str, done: int, total: int | None) -> None:
    """The default callback: report nothing."""
