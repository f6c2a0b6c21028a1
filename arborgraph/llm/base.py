"""Deprecated: import from arborgraph.core.protocols (ChatModel) and arborgraph.core.errors (LLMError); this module goes in 0.3."""

from arborgraph.core.errors import LLMError  # noqa: F401
from arborgraph.core.protocols import ChatModel  # noqa: F401

__all__ = ["ChatModel", "LLMError"]
