"""The one place a provider is built for an index: the OpenAI-compatible endpoint's,
or the in-process model's (``llm.model = "local"``).

A build and a knowledge base both get their chat model (and a build its embedder)
from :func:`open_provider`: checked before anything is opened, cached in the index's
``cache/llm.sqlite``, accounted in one :class:`LLMUsage`.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arborgraph.core.errors import install_hint
from arborgraph.index.layout import llm_cache_file
from arborgraph.llm.cache import LLMCache
from arborgraph.llm.config import LLMConfig, resolve_endpoint
from arborgraph.llm.usage import LLMUsage


class ProviderMissing(ImportError):
    """The optional ``openai`` package, or the local model's runtime or model package,
    is not installed (the message says how to install it)."""


@dataclass
class Provider:
    """A chat model and/or an embedder of one endpoint, sharing one cache and one usage."""

    chat: Any  # OpenAIChatModel | LocalChatModel | None
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

    Raises :class:`ProviderMissing` without the ``openai`` package (or, for the local
    model, without its runtime or model package) and ``ValueError`` when an endpoint
    cannot be used (no API key for the official one) or names no known local model,
    all before the cache is opened, so a misconfiguration leaves nothing behind.
    """
    env = os.environ if environ is None else environ
    make_chat: Callable[[LLMCache, LLMUsage], Any] | None = None
    if chat:
        make_chat = _local_chat(llm) if llm.is_local else _endpoint_chat(llm, env, environ)
    make_embedder = _endpoint_embedder(llm, env, environ) if embeddings else None
    cache = LLMCache(llm_cache_file(index_dir))
    usage = LLMUsage()
    return Provider(
        chat=make_chat(cache, usage) if make_chat is not None else None,
        embedder=make_embedder(cache, usage) if make_embedder is not None else None,
        usage=usage,
        cache=cache,
    )


def _openai_classes() -> Any:
    try:
        from arborgraph.llm import provider
    except ImportError as exc:
        raise ProviderMissing(str(exc)) from None
    return provider


def _endpoint_chat(
    llm: LLMConfig, env: Mapping[str, str], environ: Mapping[str, str] | None
) -> Callable[[LLMCache, LLMUsage], Any]:
    """A maker of the endpoint's chat model, once the package and endpoint are checked."""
    provider = _openai_classes()
    resolve_endpoint(llm, env)
    return lambda cache, usage: provider.OpenAIChatModel(llm, cache, usage, environ=environ)


def _endpoint_embedder(
    llm: LLMConfig, env: Mapping[str, str], environ: Mapping[str, str] | None
) -> Callable[[LLMCache, LLMUsage], Any]:
    provider = _openai_classes()
    resolve_endpoint(llm, env, embeddings=True)
    return lambda cache, usage: provider.OpenAIEmbedder(llm, cache, usage, environ=environ)


def _local_chat(llm: LLMConfig) -> Callable[[LLMCache, LLMUsage], Any]:
    """A maker of the local chat model, once its name, runtime and file are checked
    (the runtime is found, not imported: it loads on the first call)."""
    from arborgraph.llm.local_models import local_model_file, local_model_spec

    spec = local_model_spec(llm.model or "local")
    if importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("jsonschema") is None:
        raise ProviderMissing(f"the local model needs its runtime: {install_hint('local')}")
    try:
        local_model_file(spec)
    except ImportError as exc:  # LocalModelMissing: the model package is missing or differs
        raise ProviderMissing(str(exc)) from None
    from arborgraph.llm.local import LocalChatModel

    return lambda cache, usage: LocalChatModel(llm, cache, usage)
