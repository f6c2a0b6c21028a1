"""Configuration of the OpenAI-compatible provider, and where endpoint and key come from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

JsonMode = Literal["auto", "json_schema", "json_object", "none"]

# Local servers (Ollama, vLLM without --api-key, llama.cpp without --api-key) ignore
# the key, but the openai client refuses to start without one.
PLACEHOLDER_API_KEY = "not-needed"


class LocalModelConfig(BaseModel):
    """How the in-process model (``llm.model = "local"``) runs and decodes.

    Every structured call is decoded under its JSON schema (a grammar), with the
    schema's strings and arrays bounded as given here when the schema leaves them open,
    so that a small model can neither break the JSON nor loop until ``max_tokens``.
    """

    model_config = ConfigDict(extra="forbid")

    threads: int = Field(default=1, ge=1, le=64)
    """CPU threads of generation and prompt reading. One was the fastest for the 135M
    model on 2 cores (benchmarks/bench_local_model.py): its matrices are too small to
    pay for the threads' synchronisation, which is ruinous on a busy machine."""
    context_tokens: int = Field(default=8192, ge=512)
    """Context window (prompt and reply); SmolLM2 was trained with 8,192."""
    max_tokens: int = Field(default=400, ge=16)
    """Longest free-text reply (an answer), whatever the call asks for. A structured
    reply has no token limit: its bounded schema has a longest reply, and one cut
    short would not be JSON."""
    repeat_penalty: float = Field(default=1.1, ge=1.0, le=2.0)
    """Penalty on tokens of the last ``repeat_last_n`` (1.0 is none)."""
    repeat_last_n: int = Field(default=64, ge=0)
    max_string_chars: int = Field(default=160, ge=8)
    """Longest string a schema's open strings may take (known fields have their own
    bounds: a title 80 characters, a summary text 700)."""
    max_items: int = Field(default=6, ge=1)
    """Most items a schema's open arrays may take."""
    seed: int = Field(default=0, ge=0)
    min_grounding: float = Field(default=0.5, ge=0.0, le=1.0)
    """A tree summary, or a community report's title, with a smaller share of its terms
    in what the model was shown is refused like a malformed reply; an extraction keeps
    only entities the chunk names."""
    retries: int = Field(default=1, ge=0)
    """Further attempts at an extraction or report whose reply the checks refuse
    (a tree summary gets one repair round, as with endpoints)."""
    gleaning: bool = False
    """Ask once more per chunk for missed entities: off, as the small model's second
    answer was no better than its first."""


class LLMConfig(BaseModel):
    """Settings for chat and embedding calls against an OpenAI-compatible endpoint, or
    for the in-process model (``model = "local"``).

    ``base_url`` and ``api_key`` left as ``None`` are taken from ``OPENAI_BASE_URL`` and
    ``OPENAI_API_KEY`` when a provider is constructed (never at import).
    """

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    """Chat model name, e.g. "gpt-4o-mini", "llama3.1:8b"; "local" (or "local:<name>")
    for the model that runs in-process (the ``local`` extra)."""
    embedding_model: str | None = None
    """Embedding model name, e.g. "text-embedding-3-small", "nomic-embed-text"."""
    base_url: str | None = None
    """Endpoint root including the version path, e.g. "http://localhost:11434/v1"."""
    embedding_base_url: str | None = None
    """Endpoint for embeddings when it is not ``base_url`` (llama.cpp and vLLM serve one
    model per server, so chat and embeddings often live on two ports)."""
    api_key: str | None = Field(default=None, repr=False)
    timeout_s: float = Field(default=120.0, gt=0)
    """Per-request timeout; a request that times out is retried like a 5xx."""
    max_retries: int = Field(default=4, ge=0)
    """Retries after the first attempt, on 408/409/429/5xx, timeouts and connection errors."""
    concurrency: int = Field(default=8, ge=1)
    """At most this many requests in flight per provider object."""
    temperature: float = Field(default=0.0, ge=0)
    """Default temperature when a call does not give one."""
    json_mode: JsonMode = "auto"
    """How structured output is requested; "auto" tries json_schema, falls back to
    json_object when the endpoint answers 400, and keeps that choice."""
    backoff_initial_s: float = Field(default=0.5, ge=0)
    """First backoff delay; doubled per retry, when the server sends no Retry-After."""
    backoff_max_s: float = Field(default=30.0, ge=0)
    max_retry_after_s: float = Field(default=120.0, ge=0)
    """A longer Retry-After from the server is cut to this."""
    embedding_batch_size: int = Field(default=64, ge=1)
    """Texts per embeddings request."""
    local: LocalModelConfig = Field(default_factory=LocalModelConfig)
    """The in-process model's settings (used when ``model`` is "local")."""
    fallback: bool = True
    """A build item (tree summary, chunk extraction, community report) whose replies
    stay unusable after the repair rounds gets the no-LLM result instead, counted as a
    fallback; with ``False`` the build fails on it. A failed call always fails."""

    @property
    def is_local(self) -> bool:
        """Whether the chat model runs in-process."""
        return is_local_model(self.model)


def is_local_model(name: str | None) -> bool:
    """Whether a chat model name asks for the in-process model ("local", "local:...")."""
    return name is not None and (name == "local" or name.startswith("local:"))


@dataclass(frozen=True)
class Endpoint:
    """Where requests go and with which key, after config and environment are merged."""

    base_url: str | None
    api_key: str

    def __repr__(self) -> str:
        return f"Endpoint(base_url={self.base_url!r}, api_key=<hidden>)"


def resolve_endpoint(
    config: LLMConfig, environ: Mapping[str, str], *, embeddings: bool = False
) -> Endpoint:
    """Merge config with ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``; config wins.

    With ``embeddings=True`` a set ``embedding_base_url`` takes precedence.

    Without any key, a custom base URL gets a placeholder key (local servers ignore it);
    the official endpoint without a key is a configuration error.
    """
    own = config.embedding_base_url if embeddings else None
    base_url = own or config.base_url or environ.get("OPENAI_BASE_URL") or None
    api_key = config.api_key or environ.get("OPENAI_API_KEY") or None
    if api_key is None:
        if base_url is None:
            raise ValueError(
                "no API key for the OpenAI endpoint: set OPENAI_API_KEY or LLMConfig.api_key, "
                "or point OPENAI_BASE_URL / LLMConfig.base_url at a local server"
            )
        api_key = PLACEHOLDER_API_KEY
    return Endpoint(base_url=base_url, api_key=api_key)
