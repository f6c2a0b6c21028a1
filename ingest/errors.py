"""Exceptions that turn a file into a ``SkippedFile`` instead of a ``Document``."""

from __future__ import annotations


class SkipFile(Exception):
    """A loader's verdict that a file holds nothing usable; ``reason`` is shown to users.

    Loaders raise it for expected conditions (a scanned PDF, a page with no text);
    any other exception from a loader is reported as a loader failure.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
