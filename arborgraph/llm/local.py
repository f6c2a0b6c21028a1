"""The in-process chat model: a GGUF model shipped in a registry package, run by
llama.cpp's server engine through ``xllamacpp`` (the ``local`` extra).

No endpoint, no key, no network: the engine runs in this process. It loads on the
first call, once per process and settings, however many knowledge bases and builds
use it. Every structured call is decoded under its JSON schema, bounded
(:mod:`arborgraph.llm.schema_bounds`), with a repetition penalty; cache, accounting and
the repair round are those of every :class:`~arborgraph.llm.chat.CachedChatModel`.

A call stops when its caller gives up (:mod:`arborgraph.core.cancel`: a service request
past its time limit): the reply is streamed from the engine, and the first piece after
that, a token or the progress report of a batch of prompt tokens, ends the engine's
work on it. A call waiting for its turn at the engine gives up there too.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arborgraph.core.cancel import cancelled, checkpoint
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
# Prompt tokens the engine evaluates between two looks at its requests: a request that
# is stopped ends after the batch under way. 128 is about a second of prompt on one
# thread of a 2-core machine (2048, the engine's default, was half a minute), and no
# slower overall. The batch size changes the arithmetic, so it is in the cache key.
BATCH_TOKENS = 128
_TURN_WAIT_S = 0.05  # how often a call waiting for the engine looks whether it was given up


@dataclass(frozen=True)
class _EngineKey:
    path: Path
    threads: int
    context_tokens: int


_engines: dict[_EngineKey, Any] = {}
_engines_lock = threading.Lock()
# One sequence at a time in the process: a call waits its turn here, where it can give
# up, rather than in the engine's queue, where it would be evaluated for nobody.
_turn = threading.Lock()


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
    params.n_batch = params.n_ubatch = BATCH_TOKENS
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
                "batch_tokens": BATCH_TOKENS,
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
        with _engine_turn():
            began = time.perf_counter()
            reply = _streamed(engine, self.request_body(call, messages))
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


@contextlib.contextmanager
def _engine_turn() -> Iterator[None]:
    while not _turn.acquire(timeout=_TURN_WAIT_S):
        checkpoint()
    try:
        checkpoint()
        yield
    finally:
        _turn.release()


def _streamed(engine: Any, body: dict[str, Any]) -> Any:
    """The engine's reply to ``body`` as its non-streamed form (or its error), streamed
    so that it can stop: raises ``Cancelled`` once the caller gave up."""
    text: list[str] = []
    finish: list[str] = []
    usage: dict[str, Any] = {}
    error: list[Any] = []

    def piece(chunk: Any) -> bool:
        # called by the engine for each piece; True ends the request (an exception here
        # would be swallowed by the binding and end it too, unexplained)
        if not isinstance(chunk, dict) or "error" in chunk:
            error.append(chunk)
            return True
        for choice in chunk.get("choices") or []:
            text.append((choice.get("delta") or {}).get("content") or "")
            if choice.get("finish_reason"):
                finish.append(choice["finish_reason"])
        usage.update(chunk.get("usage") or {})
        return cancelled()

    streamed = {**body, "stream": True, "return_progress": True, "stream_options": {"include_usage": True}}
    engine.handle_chat_completions(streamed, piece)
    checkpoint()
    if error:
        return error[0]
    if not finish:  # a piece the binding could not read ends the stream early
        return {"error": {"message": "the reply ended before it was finished"}}
    return {"choices": [{"message": {"content": "".join(text)}, "finish_reason": finish[-1]}], "usage": usage}


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
