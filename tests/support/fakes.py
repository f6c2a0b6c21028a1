"""Test doubles shared by the unit tests, in one place.

Only true external boundaries are faked. :class:`ScriptedChat` stands in for an LLM in
unit tests of prompt building and reply parsing; contract tests talk to the loopback
OpenAI-API server in ``llm_server.py`` through the real client instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


class ScriptedChat:
    """STAND-IN ChatModel (not a model): replies from a list, in order, or computed from
    the messages by a function; every call is recorded in :attr:`calls`."""

    def __init__(
        self, replies: Sequence[str] | Callable[[list[dict[str, str]]], str], model: str = "scripted"
    ) -> None:
        self.model = model
        self._replies = replies if callable(replies) else list(replies)
        self.calls: list[dict[str, Any]] = []

    @property
    def asked(self) -> list[list[dict[str, str]]]:
        """The messages of every call, in order."""
        return [call["messages"] for call in self.calls]

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        stage: str,
        json_schema: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> str:
        self.calls.append({"messages": list(messages), "stage": stage, "json_schema": json_schema})
        if callable(self._replies):
            return self._replies(messages)
        if not self._replies:
            raise AssertionError(f"ScriptedChat ran out of replies at call {len(self.calls)} ({stage})")
        return self._replies.pop(0)
