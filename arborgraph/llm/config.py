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


class LLMConfig(BaseModel):
    """Settings for chat and embedding calls against an OpenAI-compatible endpoint.

    ``base_url`` and ``api_key`` left as ``None`` are taken from ``OPENAI_BASE_URL`` and
    ``OPENAI_API_KEY`` when a provider is constructed (never at import).
    """

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    """Chat model name, e.g. "gpt-4o-mini", "llama3.1:8b"."""
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
