"""LLM access: a protocol the pipeline codes against, and the OpenAI-compatible provider."""

from arborgraph.llm.base import ChatModel, LLMError

__all__ = ["ChatModel", "LLMError"]
