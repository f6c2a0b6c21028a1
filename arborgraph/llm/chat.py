"""What every chat model of ours shares: the reply cache, the accounting, ``chat_many``
and the JSON validation with one repair round.

A provider (the OpenAI-compatible endpoint in ``provider``, the in-process model in
``local``) implements only :meth:`CachedChatModel._complete`: one completion of a list
of messages. Every message it is given has had its chat-template markers neutralised
(:mod:`arborgraph.llm.control_tokens`): text from documents, questions and earlier
answers never reaches a tokenizer as a control token. Importing this module needs
neither ``openai`` nor a model runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arborgraph.core.concurrency import run_ordered
from arborgraph.core.errors import LLMError, MalformedReply, UnusableReply
from arborgraph.llm.cache import LLMCache, request_key
from arborgraph.llm.config import LLMConfig
from arborgraph.llm.control_tokens import neutralise_messages
from arborgraph.llm.structured import check_json_reply, repair_messages
from arborgraph.llm.usage import LLMUsage

__all__ = ["CachedChatModel", "ChatCall", "ChatRequest"]


@dataclass(frozen=True)
class ChatRequest:
    """One call for ``chat_many``; ``item`` labels it in errors."""

    messages: list[dict[str, str]]
    json_schema: dict[str, Any] | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    item: str | None = None


@dataclass(frozen=True)
class ChatCall:
    """One chat call being answered: the request and who it is for."""

    messages: list[dict[str, str]]
    json_schema: dict[str, Any] | None
    temperature: float
    max_tokens: int | None
    stage: str
    label: str


class CachedChatModel:
    """``ChatModel`` with a persistent reply cache, accounting and checked JSON replies.

    Every reply is cached by a hash of (model, messages, temperature, max_tokens, JSON
    schema, and what :meth:`_key_extra` adds); a cached request makes no call. A call
    that fails raises ``LLMError`` naming the item, and nothing is cached for it. With a
    JSON schema, a reply that is not valid JSON against it gets one repair round; a
    second bad reply raises :class:`UnusableReply`.
    """

    model: str
    config: LLMConfig

    def __init__(self, model: str, config: LLMConfig, cache: LLMCache, usage: LLMUsage) -> None:
        self.model = model
        self.config = config
        self.cache = cache
        self.usage = usage

    @property
    def description(self) -> str:
        """What the mode label says of this model (the model's name here)."""
        return self.model

    def _key_extra(self) -> dict[str, Any]:
        """What else decides a reply, for the cache key (nothing by default)."""
        return {}

    def control_tokens(self) -> frozenset[str]:
        """The model's own control tokens, broken in every message besides the template
        families' (none known by default: an endpoint does not say)."""
        return frozenset()

    def plain(self, messages: list[dict[str, str]]) -> list[dict[str, str]]:
        """``messages`` as they are sent: no content can be read as a control token."""
        return neutralise_messages(messages, self.control_tokens())

    def _complete(self, call: ChatCall, messages: list[dict[str, str]]) -> str:
        """One completion of ``messages`` for ``call``; records its usage."""
        raise NotImplementedError

    def request_key(
        self,
        messages: list[dict[str, str]],
        *,
        json_schema: dict[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """The cache key of a chat request (as ``chat`` would compute it): that of the
        messages as they are sent."""
        return request_key(
            {
                "kind": "chat",
                "model": self.model,
                "messages": self.plain(messages),
                "temperature": self._temperature(temperature),
                "max_tokens": max_tokens,
                "json_schema": json_schema,
                **self._key_extra(),
            }
        )

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        stage: str,
        json_schema: dict[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        item: str | None = None,
    ) -> str:
        """Return the reply text; with ``json_schema`` the JSON text, valid against it.

        ``temperature=None`` means ``config.temperature``. ``item`` (e.g. a chunk id)
        names the request in an ``LLMError``.
        """
        messages = self.plain(messages)
        key = self.request_key(
            messages, json_schema=json_schema, temperature=temperature, max_tokens=max_tokens
        )
        cached = self.cache.get(key)
        if cached is not None:
            self.usage.record_cache_hit(stage)
            return str(cached["content"])
        call = ChatCall(
            messages=messages,
            json_schema=json_schema,
            temperature=self._temperature(temperature),
            max_tokens=max_tokens,
            stage=stage,
            label=item if item is not None else f"request {key[:12]}",
        )
        try:
            content = self._answer(call)
        except LLMError:
            self.usage.record_failure(stage)
            raise
        self.cache.put(key, {"content": content}, kind="chat")
        return content

    def chat_many(
        self, requests: Sequence[ChatRequest | list[dict[str, str]]], *, stage: str
    ) -> list[str]:
        """Answer many requests concurrently (up to ``config.concurrency``), in order.

        A plain message list is a request with default parameters. Identical requests
        are sent once (the repeats count as cache hits). Every request is attempted even
        if some fail, so all obtainable replies are cached; then an ``LLMError`` is
        raised naming the failed items.
        """
        normalised = [
            r if isinstance(r, ChatRequest) else ChatRequest(messages=r) for r in requests
        ]
        keys = [
            self.request_key(
                r.messages,
                json_schema=r.json_schema,
                temperature=r.temperature,
                max_tokens=r.max_tokens,
            )
            for r in normalised
        ]
        first_of: dict[str, ChatRequest] = {}
        for key, request in zip(keys, normalised):
            first_of.setdefault(key, request)
        if len(first_of) < len(normalised):
            self.usage.record_cache_hit(stage, len(normalised) - len(first_of))

        def answer(request: ChatRequest) -> str:
            return self.chat(
                request.messages,
                stage=stage,
                json_schema=request.json_schema,
                temperature=request.temperature,
                max_tokens=request.max_tokens,
                item=request.item,
            )

        unique_keys = list(first_of)
        replies = run_ordered(answer, [first_of[k] for k in unique_keys], self.config.concurrency)
        by_key = dict(zip(unique_keys, replies))
        return [by_key[key] for key in keys]

    def _temperature(self, temperature: float | None) -> float:
        return self.config.temperature if temperature is None else temperature

    def _answer(self, call: ChatCall) -> str:
        content = self._complete(call, call.messages)
        if call.json_schema is None:
            return content
        try:
            return check_json_reply(content, call.json_schema)
        except MalformedReply as problem:
            self.usage.record_repair(call.stage)
            # the reply is quoted back: a marker the model wrote is text too
            repaired = self._complete(call, self.plain(repair_messages(call.messages, content, str(problem))))
            try:
                return check_json_reply(repaired, call.json_schema)
            except MalformedReply as exc:
                raise UnusableReply(
                    f"{call.label}: stage {call.stage!r}: malformed JSON reply after one repair: {exc}"
                ) from exc
