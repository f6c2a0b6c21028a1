"""The one place the OpenAI-compatible provider is built for an index.

A build and a knowledge base both get their chat model (and a build its embedder)
from :func:`open_provider`: checked before anything is opened, cached in the index's
``cache/llm.sqlite``, accounted in one :class:`LLMUsage`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arborgraph.index.layout import llm_cache_file
from arborgraph.llm.cache import LLMCache
from arborgraph.llm.config import LLMConfig, resolve_endpoint
from arborgraph.llm.usage import LLMUsage


class ProviderMissing(ImportError):
    """The optional ``openai`` package is not installed (the message says how to)."""


@dataclass
class Provider:
    """A chat model and/or an embedder of one endpoint, sharing one cache and one usage."""

    chat: Any  # OpenAIChatModel | None
    embedder: Any  # OpenAIEmbedder | None
    usage: LLMUsage
    cache: LLMCache

    def close(self) -> None:
        self.cache.close()


def open_provider(
    llm: LLMConfig,
    index_dir: Path | str,
    *,
    chat: bool = True,
    embeddings: bool = False,
    environ: Mapping[str, str] | None = None,
) -> Provider:
    """The provider of ``llm`` for the index at ``index_dir``: its chat model (with
    ``chat``) and embedder (with ``embeddings``).

    Raises :class:`ProviderMissing` without the ``openai`` package and ``ValueError``
    when an endpoint cannot be used (no API key for the official one), both before the
    cache is opened, so a misconfiguration leaves nothing behind.
    """
    try:
        from arborgraph.llm.provider import OpenAIChatModel, OpenAIEmbedder
    except ImportError as exc:
        raise ProviderMissing(str(exc)) from None
    env = os.environ if environ is None else environ
    if chat:
        resolve_endpoint(llm, env)
    if embeddings:
        resolve_endpoint(llm, env, embeddings=True)
    cache = LLMCache(llm_cache_file(index_dir))
    usage = LLMUsage()
    return Provider(
        chat=OpenAIChatModel(llm, cache, usage, environ=environ) if chat else None,
        embedder=OpenAIEmbedder(llm, cache, usage, environ=environ) if embeddings else None,
        usage=usage,
        cache=cache,
    )
