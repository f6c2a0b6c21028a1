"""Deprecated: import from arborgraph.core.results; this module goes in 0.3."""

from arborgraph.core.results import (  # noqa: F401
    BuildMode,
    Context,
    ContextKind,
    QueryResult,
    Route,
    RoutingDecision,
    final_scores,
)

__all__ = ["BuildMode", "Context", "ContextKind", "QueryResult", "Route", "RoutingDecision", "final_scores"]
