"""Extractors: the rule-based default (no model) and the chat-model one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from arborgraph.core.lazy import lazy_exports

# Imported on first use: a pool worker (and the fork server that preloads the rule
# extractor for it) never needs the chat-model extractor and its LLM client
# (~0.1 CPU-s of imports).
_EXPORTS = {
    "CorpusAwareExtractor": "graphrag.extract.base",
    "Extractor": "graphrag.extract.base",
    "LLMExtractor": "graphrag.extract.llm",
    "LLMExtractorConfig": "graphrag.extract.llm",
    "RuleExtractor": "graphrag.extract.rules",
    "RuleExtractorConfig": "graphrag.extract.rules",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from graphrag.extract.base import CorpusAwareExtractor, Extractor
    from graphrag.extract.llm import LLMExtractor, LLMExtractorConfig
    from graphrag.extract.rules import RuleExtractor, RuleExtractorConfig


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
