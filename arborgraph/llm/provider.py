"""Chat and embeddings against any OpenAI-compatible endpoint: cached, retried, accounted.

Needs the optional ``openai`` package (the ``llm`` extra). Everything
else in ``arborgraph.llm`` works without it.
"""

from __future__ import annotations

import base64
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

import numpy as np

from arborgraph.core.cancel import checkpoint, time_left
from arborgraph.core.errors import Cancelled, LLMError, install_hint

try:
    import openai
except ImportError as _exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "arborgraph.llm.provider needs the optional 'openai' package; "
        f"install it with: {install_hint('llm')}"
    ) from _exc

from arborgraph.llm.cache import LLMCache, request_key
from arborgraph.core.concurrency import run_ordered
from arborgraph.llm.config import LLMConfig, resolve_endpoint
from arborgraph.llm.retry import backoff_delay, is_retryable_status, parse_retry_after
from arborgraph.llm.chat import CachedChatModel, ChatCall
from arborgraph.llm.structured import response_format, with_schema_instruction
from arborgraph.llm.usage import LLMUsage

__all__ = ["OpenAIChatModel", "OpenAIEmbedder"]

T = TypeVar("T")

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"


class _Transport:
    """One openai client, the concurrency limit, and the retry loop around each request."""

    def __init__(
        self,
        config: LLMConfig,
        usage: LLMUsage,
        environ: Mapping[str, str] | None,
        sleep: Callable[[float], None],
        *,
        embeddings: bool = False,
    ) -> None:
        endpoint = resolve_endpoint(
            config, os.environ if environ is None else environ, embeddings=embeddings
        )
        self.config = config
        self.usage = usage
        self._sleep = sleep
        self._slots = threading.BoundedSemaphore(config.concurrency)
        # Retries are ours (max_retries=0 in the client) so that every attempt is
        # counted, Retry-After is honoured the same way for every endpoint, and the
        # final failure names the item.
        self.client = openai.OpenAI(
            api_key=endpoint.api_key,
            # Explicit default: the client would otherwise read OPENAI_BASE_URL itself,
            # bypassing a caller-given environment.
            base_url=endpoint.base_url or OPENAI_DEFAULT_BASE_URL,
            timeout=config.timeout_s,
            max_retries=0,
        )

    def call(self, request: Callable[..., T], *, stage: str, label: str) -> T:
        """Run ``request(timeout=seconds)`` under the concurrency limit, retrying
        transient failures.

        Raises ``LLMError`` (caused by the last openai exception) when the request
        fails for good. The limit is not held while waiting to retry. Work with a time
        limit (:func:`~arborgraph.core.cancel.time_left`: a service request) waits for
        no reply, and no retry, past it: it raises ``Cancelled`` there, and the endpoint
        sees the connection close.
        """
        attempt = 0
        while True:
            retry_after: float | None = None
            checkpoint()
            left = time_left()
            if left is not None and left <= 0:
                raise Cancelled(f"{label}: stage {stage!r}: no time left within the time limit")
            timeout = self.config.timeout_s if left is None else min(left, self.config.timeout_s)
            cut = timeout < self.config.timeout_s
            try:
                with self._slots:
                    return request(timeout=timeout)
            except openai.APIStatusError as exc:
                if not is_retryable_status(exc.status_code) or attempt >= self.config.max_retries:
                    raise self._error(exc, stage, label, attempt) from exc
                retry_after = parse_retry_after(exc.response.headers, time.time())
            except openai.APITimeoutError as exc:
                if cut:  # the time limit's timeout, not the endpoint's slowness
                    raise Cancelled(f"{label}: stage {stage!r}: no reply within the time limit") from exc
                if attempt >= self.config.max_retries:
                    raise self._error(exc, stage, label, attempt) from exc
            except openai.APIConnectionError as exc:
                if attempt >= self.config.max_retries:
                    raise self._error(exc, stage, label, attempt) from exc
            except openai.OpenAIError as exc:
                raise self._error(exc, stage, label, attempt) from exc
            self.usage.record_retry(stage)
            delay = backoff_delay(
                attempt,
                retry_after,
                initial_s=self.config.backoff_initial_s,
                max_s=self.config.backoff_max_s,
                max_retry_after_s=self.config.max_retry_after_s,
            )
            left = time_left()
            if left is not None and left <= delay:
                raise Cancelled(f"{label}: stage {stage!r}: no time left to retry within the time limit")
            self._sleep(delay)
            attempt += 1

    def _error(self, exc: Exception, stage: str, label: str, attempt: int) -> LLMError:
        if isinstance(exc, openai.APITimeoutError):
            what = f"timed out after {self.config.timeout_s:g} s"
        elif isinstance(exc, openai.APIStatusError):
            what = f"HTTP {exc.status_code}: {exc.message}"
        else:
            what = f"{type(exc).__name__}: {exc}"
        tries = "1 attempt" if attempt == 0 else f"{attempt + 1} attempts"
        return LLMError(f"{label}: stage {stage!r}: {what} ({tries})")


class OpenAIChatModel(CachedChatModel):
    """``ChatModel`` over an OpenAI-compatible chat completions endpoint.

    Cached, accounted and checked as every :class:`CachedChatModel`. Transient failures
    are retried with backoff; a request that still fails raises ``LLMError`` naming the
    item. ``sleep`` is injectable so tests can observe backoff delays.
    """

    def __init__(
        self,
        config: LLMConfig,
        cache: LLMCache,
        usage: LLMUsage,
        *,
        environ: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not config.model:
            raise ValueError("LLMConfig.model is not set: name the chat model to use")
        super().__init__(config.model, config, cache, usage)
        self._transport = _Transport(config, usage, environ, sleep)
        self._mode_lock = threading.Lock()
        self._json_mode: str = config.json_mode

    @property
    def json_mode_in_use(self) -> str:
        """The JSON mode requests use now; "auto" until the endpoint has answered one."""
        return self._json_mode

    def _complete(self, call: ChatCall, messages: list[dict[str, str]]) -> str:
        """One chat completion of ``messages`` (with retries and the JSON-mode fallback)."""
        while True:
            mode = self._json_mode if call.json_schema is not None else "none"
            body = self._request_body(call, messages, mode)
            began = time.perf_counter()
            try:
                response = self._transport.call(
                    partial(self._transport.client.chat.completions.create, **body),
                    stage=call.stage,
                    label=call.label,
                )
            except LLMError as err:
                if mode == "auto" and isinstance(err.__cause__, openai.BadRequestError):
                    # The endpoint does not take json_schema: use JSON mode from now on.
                    self._settle_json_mode("json_object")
                    continue
                raise
            if mode == "auto":
                self._settle_json_mode("json_schema")
            tokens_in = response.usage.prompt_tokens if response.usage else 0
            tokens_out = response.usage.completion_tokens if response.usage else 0
            self.usage.record_call(call.stage, tokens_in, tokens_out, seconds=time.perf_counter() - began)
            if not response.choices or response.choices[0].message.content is None:
                reason = response.choices[0].finish_reason if response.choices else "no choices"
                raise LLMError(f"{call.label}: stage {call.stage!r}: reply has no text ({reason})")
            return str(response.choices[0].message.content)

    def _request_body(
        self, call: ChatCall, messages: list[dict[str, str]], mode: str
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "temperature": call.temperature}
        if call.max_tokens is not None:
            body["max_tokens"] = call.max_tokens
        if call.json_schema is None:
            body["messages"] = messages
            return body
        effective = "json_schema" if mode == "auto" else mode
        fmt = response_format(effective, call.json_schema)
        if fmt is not None:
            body["response_format"] = fmt
        # With json_schema the endpoint gets the schema itself; otherwise the model
        # must read it from the prompt.
        body["messages"] = (
            messages
            if effective == "json_schema"
            else with_schema_instruction(messages, call.json_schema)
        )
        return body

    def _settle_json_mode(self, mode: str) -> None:
        with self._mode_lock:
            if self._json_mode == "auto" or mode == "json_object":
                self._json_mode = mode


class OpenAIEmbedder:
    """``Embedder`` over an OpenAI-compatible embeddings endpoint, batched and cached.

    Each text's vector is cached on its own (key: model and text), so batch composition
    does not matter and a rerun embeds only new texts. Rows are L2-normalised float32.
    ``dim`` is learnt from the first reply; reading it before any ``encode`` embeds a
    short probe text once (cached too).
    """

    def __init__(
        self,
        config: LLMConfig,
        cache: LLMCache,
        usage: LLMUsage,
        *,
        stage: str = "embedding",
        dim: int | None = None,
        environ: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not config.embedding_model:
            raise ValueError("LLMConfig.embedding_model is not set: name the embedding model")
        self.model: str = config.embedding_model
        self.name: str = f"openai/{self.model}"
        self.config = config
        self.cache = cache
        self.usage = usage
        self.stage = stage
        self._dim = dim
        self._transport = _Transport(config, usage, environ, sleep, embeddings=True)

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._raw_vectors(["dimension probe"])[0].shape[0])
        return self._dim

    @dim.setter
    def dim(self, value: int) -> None:
        # Settable, as the Embedder protocol declares it: a known dimension saves the probe.
        self._dim = value

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape (len(texts), dim) of unit-length float32 rows."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        matrix = np.vstack(self._raw_vectors(texts)).astype(np.float32)
        if self._dim is None:
            self._dim = int(matrix.shape[1])
        elif matrix.shape[1] != self._dim:
            raise LLMError(f"{self.name}: got {matrix.shape[1]}-d vectors, expected {self._dim}")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if np.any(norms == 0):
            bad = int(np.flatnonzero(norms[:, 0] == 0)[0])
            raise LLMError(f"{self.name}: zero vector for text {bad}: {texts[bad][:60]!r}")
        normalised: np.ndarray = matrix / norms
        return normalised

    def _key(self, text: str) -> str:
        return request_key({"kind": "embedding", "model": self.model, "input": text})

    def _raw_vectors(self, texts: list[str]) -> list[np.ndarray]:
        for index, text in enumerate(texts):
            if not text.strip():
                # The OpenAI API rejects empty input; a silent stand-in would hide a bug.
                raise ValueError(f"text {index} is empty; embeddings need non-empty text")
        keys = [self._key(t) for t in texts]
        stored = self.cache.get_many(keys)
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in stored))
        self.usage.record_cache_hit(self.stage, len(texts) - len(missing))
        size = self.config.embedding_batch_size
        batches = [missing[i : i + size] for i in range(0, len(missing), size)]
        for batch_values in run_ordered(self._embed_batch, batches, self.config.concurrency):
            stored.update(batch_values)
        return [_decode_vector(stored[k]) for k in keys]

    def _embed_batch(self, batch: list[str]) -> dict[str, Any]:
        label = f"embedding batch of {len(batch)} texts from {batch[0][:40]!r}"
        try:
            response = self._transport.call(
                partial(self._transport.client.embeddings.create, model=self.model, input=batch, encoding_format="float"),
                stage=self.stage,
                label=label,
            )
            if len(response.data) != len(batch):
                raise LLMError(f"{label}: {len(response.data)} vectors for {len(batch)} texts")
        except LLMError:
            self.usage.record_failure(self.stage)
            raise
        tokens_in = response.usage.prompt_tokens if response.usage else 0
        self.usage.record_call(self.stage, tokens_in, 0)
        values: dict[str, Any] = {}
        for datum in sorted(response.data, key=lambda d: d.index):
            text = batch[datum.index]
            value = _encode_vector(np.asarray(datum.embedding, dtype=np.float32))
            key = self._key(text)
            self.cache.put(key, value, kind="embedding")
            values[key] = value
        return values


def _encode_vector(vector: np.ndarray) -> dict[str, str]:
    # Little-endian float32 as base64: exact and a quarter the size of a JSON float list.
    return {"f32le": base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")}


def _decode_vector(value: dict[str, str]) -> np.ndarray:
    return np.frombuffer(base64.b64decode(value["f32le"]), dtype="<f4").astype(np.float32)
