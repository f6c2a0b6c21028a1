"""Deprecated: import from arborgraph.core.concurrency; this module goes in 0.3."""

from arborgraph.core.concurrency import chat_concurrency, run_ordered, workers_for  # noqa: F401

__all__ = ["chat_concurrency", "run_ordered", "workers_for"]
