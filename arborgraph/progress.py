"""Deprecated: import from arborgraph.core.protocols; this module goes in 0.3."""

from arborgraph.core.protocols import ProgressCallback, no_progress  # noqa: F401

__all__ = ["ProgressCallback", "no_progress"]
