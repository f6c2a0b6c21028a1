"""Deprecated: import from arborgraph.core.lexical (LexicalIndex) and arborgraph.core.text (analyse); this module goes in 0.3."""

from arborgraph.core.lexical import LexicalIndex  # noqa: F401
from arborgraph.core.text import analyse  # noqa: F401

__all__ = ["LexicalIndex", "analyse"]
