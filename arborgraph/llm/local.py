"""The in-process chat model: a GGUF model shipped in a registry package, run by
llama.cpp's server engine through ``xllamacpp`` (the ``local`` extra).

No endpoint, no key, no network: the engine runs in this process. It loads on the
first call, once per process and settings, however many knowledge bases and builds
use it. Every structured call is decoded under its JSON schema, bounded
(:mod:`arborgraph.llm.schema_bounds`), with a repetition penalty; cache, accounting and
the repair round are those of every :class:`~arborgraph.llm.chat.CachedChatModel`.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arborgraph.core.errors import LLMError, UnusableReply, install_hint
from arborgraph.llm.cache import LLMCache
from arborgraph.llm.chat import CachedChatModel, ChatCall
from arborgraph.llm.config import LLMConfig, LocalModelConfig
from arborgraph.llm.gguf_vocab import special_tokens
from arborgraph.llm.local_models import LocalModelMissing, LocalModelSpec, local_model_file, local_model_spec
from arborgraph.llm.schema_bounds import SchemaBounds, bound_schema, clamp_numbers
from arborgraph.llm.usage import LLMUsage

__all__ = ["LocalChatModel", "local_engine"]

# What the runtime was checked with: its sampling, grammar and chat-template code
# decide the replies, so a new release is a new measurement (and new cache keys).
RUNTIME = "xllamacpp==2026.10.11549"


@dataclass(frozen=True)
class _EngineKey:
    path: Path
    threads: int
    context_tokens: int


_engines: dict[_EngineKey, Any] = {}
_engines_lock = threading.Lock()


def local_engine(path: Path, settings: LocalModelConfig) -> Any:
    """The ``xllamacpp.Server`` running ``path`` with ``settings``' threads and
    context, started on first use and kept for the process (loading costs a second;
    the weights take ~100 MB). Raises :class:`LocalModelMissing` without xllamacpp."""
    key = _EngineKey(path, settings.threads, settings.context_tokens)
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _engines[key] = _start(key)
        return engine


def _start(key: _EngineKey) -> Any:
    try:
        import xllamacpp
    except ImportError:
        raise LocalModelMissing(
            f"the local model runs on xllamacpp, which is not installed: {install_hint('local')}"
        ) from None
    params = xllamacpp.CommonParams()
    params.model.path = str(key.path)
    params.n_ctx = key.context_tokens
    # one sequence at a time: calls are answered in the order they come, so the
    # engine's prompt cache, and with it every reply, is the same on every run
    params.n_parallel = 1
    params.cpuparams.n_threads = key.threads
    params.cpuparams_batch.n_threads = key.threads
    params.verbosity = 0  # llama.cpp logs to stderr; library code prints nothing
    # The engine always serves HTTP too, on a loopback port of its choosing. Only this
    # process should use it: a random key closes it to other local users.
    params.hostnames = ["127.0.0.1"]
    params.api_keys = [secrets.token_urlsafe(32)]
    params.ui = False
    return xllamacpp.Server(params)


class LocalChatModel(CachedChatModel):
    """``ChatModel`` answered by the in-process model ``config.model`` ("local" or
    "local:<name>"), with ``config.local``'s decoding settings.

    Its ``concurrency`` is 1 whatever ``config.concurrency`` says: the engine answers
    one sequence at a time. ``description`` ("local: SmolLM2-135M-Instruct Q4_1") is
    what mode labels show. A reply cut at the token limit, or a prompt longer than the
    context, is an :class:`UnusableReply` (the stage may fall back); an engine error
    is an ``LLMError``.
    """

    def __init__(
        self,
        config: LLMConfig,
        cache: LLMCache,
        usage: LLMUsage,
        *,
        engine: Callable[[Path, LocalModelConfig], Any] = local_engine,
    ) -> None:
        name = config.model or "local"
        self.spec: LocalModelSpec = local_model_spec(name)
        self.path = local_model_file(self.spec)
        super().__init__(name, config.model_copy(update={"concurrency": 1}), cache, usage)
        self._engine_of = engine
        settings = config.local
        self.settings = settings
        self.bounds = SchemaBounds(max_chars=settings.max_string_chars, max_items=settings.max_items)

    @property
    def description(self) -> str:
        return f"local: {self.spec.label}"

    def _key_extra(self) -> dict[str, Any]:
        # the same messages give other replies with other weights, runtime or decoding
        s = self.settings
        return {
            "local": {
                "sha256": self.spec.sha256, "runtime": RUNTIME, "max_tokens": s.max_tokens,
                "repeat_penalty": s.repeat_penalty, "repeat_last_n": s.repeat_last_n,
                "max_string_chars": s.max_string_chars, "max_items": s.max_items, "seed": s.seed,
            }
        }

    def control_tokens(self) -> frozenset[str]:
        # the template families' markers are not all: this vocabulary's own special
        # tokens (SmolLM2's <filename>, <gh_stars>...) are read as such wherever they appear
        return special_tokens(self.path)

    def request_body(self, call: ChatCall, messages: list[dict[str, str]]) -> dict[str, Any]:
        """What the engine is asked for one completion of ``messages``."""
        s = self.settings
        body: dict[str, Any] = {
            "messages": messages,
            "temperature": call.temperature,
            "seed": s.seed,
            "repeat_penalty": s.repeat_penalty,
            "repeat_last_n": s.repeat_last_n,
        }
        if call.json_schema is not None:
            # no token limit: the bounded schema's grammar has a longest reply, and a
            # reply cut before it would not be JSON
            body["json_schema"] = bound_schema(call.json_schema, self.bounds)
        else:
            body["max_tokens"] = min(call.max_tokens or s.max_tokens, s.max_tokens)
        return body

    def _complete(self, call: ChatCall, messages: list[dict[str, str]]) -> str:
        engine = self._engine_of(self.path, self.settings)
        began = time.perf_counter()
        reply = engine.handle_chat_completions(self.request_body(call, messages))
        seconds = time.perf_counter() - began
        problem = _engine_problem(reply)
        if problem is not None:
            if "context" in problem.lower():
                raise UnusableReply(f"{call.label}: stage {call.stage!r}: {problem}")
            raise LLMError(f"{call.label}: stage {call.stage!r}: the local model failed: {problem}")
        used = reply.get("usage") or {}
        self.usage.record_call(
            call.stage, int(used.get("prompt_tokens", 0)), int(used.get("completion_tokens", 0)), seconds=seconds
        )
        choice = reply["choices"][0]
        content = choice.get("message", {}).get("content")
        if not isinstance(content, str):
            raise LLMError(f"{call.label}: stage {call.stage!r}: reply has no text ({choice.get('finish_reason')})")
        if call.json_schema is not None:
            return _in_range(content, call.json_schema)
        return content


def _in_range(content: str, schema: dict[str, Any]) -> str:
    """The JSON reply with its numbers clamped into the schema's ranges (which the
    grammar does not enforce); a reply that is not JSON (cut at ``max_tokens``) is
    returned as it is, for the repair round."""
    try:
        value = json.loads(content)
    except json.JSONDecodeError:
        return content
    fixed = clamp_numbers(value, schema)
    return content if fixed == value else json.dumps(fixed, ensure_ascii=False)


def _engine_problem(reply: Any) -> str | None:
    """The engine's error message, when ``reply`` is an error rather than a completion."""
    if not isinstance(reply, dict):
        return f"unexpected reply of type {type(reply).__name__}"
    if reply.get("choices"):
        return None
    error = reply.get("error", reply)
    if isinstance(error, dict):
        return str(error.get("message") or error)[:300]
    return str(error)[:300]
