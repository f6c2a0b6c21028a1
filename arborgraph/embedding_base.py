"""Deprecated: import from arborgraph.core.protocols (Embedder) and arborgraph.core.errors (EmbedderUnavailable); this module goes in 0.3."""

from arborgraph.core.errors import EmbedderUnavailable  # noqa: F401
from arborgraph.core.protocols import Embedder  # noqa: F401

__all__ = ["Embedder", "EmbedderUnavailable"]
