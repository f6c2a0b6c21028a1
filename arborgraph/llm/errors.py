"""Deprecated: import from arborgraph.core.concurrency; this module goes in 0.3."""

from arborgraph.core.concurrency import naming_item  # noqa: F401

__all__ = ["naming_item"]
