"""Extractors: the rule-based default (no model) and the chat-model one."""

from graphrag.extract.base import CorpusAwareExtractor, Extractor
from graphrag.extract.llm import LLMExtractor, LLMExtractorConfig
from graphrag.extract.rules import RuleExtractor, RuleExtractorConfig

__all__ = ["CorpusAwareExtractor", "Extractor", "LLMExtractor", "LLMExtractorConfig", "RuleExtractor", "RuleExtractorConfig"]
