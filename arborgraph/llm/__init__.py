"""LLM access: a protocol the pipeline codes against, and the OpenAI-compatible provider.

The provider classes (``OpenAIChatModel``, ``OpenAIEmbedder``) live in
``arborgraph.llm.provider`` and need the ``[llm]`` extra; nothing imported here does.
"""

from arborgraph.core.errors import LLMError
from arborgraph.core.protocols import ChatModel
from arborgraph.llm.cache import LLMCache
from arborgraph.llm.config import LLMConfig
from arborgraph.llm.contextual import contextual_prefix, contextual_prefixes
from arborgraph.llm.structured import structured_chat
from arborgraph.llm.usage import LLMUsage

__all__ = [
    "ChatModel",
    "LLMCache",
    "LLMConfig",
    "LLMError",
    "LLMUsage",
    "contextual_prefix",
    "contextual_prefixes",
    "structured_chat",
]
