"""The small interface the pipeline uses to talk to a chat model.

Summarisers, extractors, the router and answer generation depend on this protocol
only; the OpenAI-compatible implementation (cached, retried, accounted) lives in
``arborgraph.llm.provider``.
"""

from __future__ import annotations

from typing import Any, Protocol

from arborgraph.core.errors import LLMError  # noqa: F401 (re-exported)


class ChatModel(Protocol):
    """A chat model. ``stage`` names the pipeline stage, for accounting."""

    model: str

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        stage: str,
        json_schema: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> str:
        """Return the reply text; with ``json_schema`` the reply is JSON valid against it."""
        ...
