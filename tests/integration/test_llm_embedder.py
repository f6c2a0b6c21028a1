"""Contract tests of OpenAIEmbedder against the loopback OpenAI stand-in (tests/support/llm_server.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import llm_server as stand_in
import numpy as np
import pytest
from llm_server import EMBEDDINGS_PATH, FakeOpenAIServer, Fault, fake_embedding

from arborgraph.core.protocols import Embedder
from arborgraph.llm import LLMCache, LLMConfig, LLMError, LLMUsage
from arborgraph.llm.provider import OpenAIEmbedder

# The fixture, bound here so these tests run whether or not conftest.py provides it.
llm_server = stand_in.llm_server


def build(
    server: FakeOpenAIServer, tmp_path: Path, **overrides: Any
) -> tuple[OpenAIEmbedder, LLMUsage]:
    config = LLMConfig(embedding_model="embed-small", base_url=server.base_url, **overrides)
    usage = LLMUsage()
    embedder = OpenAIEmbedder(
        config, LLMCache(tmp_path / "llm.sqlite"), usage, environ={}, sleep=lambda s: None
    )
    return embedder, usage


def expected(texts: list[str], dim: int = 8) -> np.ndarray:
    raw = np.array([fake_embedding(t, dim) for t in texts], dtype=np.float32)
    unit: np.ndarray = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    return unit


def test_encode_returns_unit_float32_rows_from_the_endpoint(
    llm_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    embedder, usage = build(llm_server, tmp_path)
    as_protocol: Embedder = embedder  # type-checked: the class implements Embedder
    texts = ["SSE2 supports 128-bit integer operations", "SSE4.1 adds string compare"]

    vectors = as_protocol.encode(texts)

    assert embedder.name == "openai/embed-small"
    assert vectors.shape == (2, 8) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(vectors, expected(texts), rtol=1e-6)
    assert embedder.dim == 8
    (request,) = llm_server.requests
    assert request.body == {"model": "embed-small", "input": texts, "encoding_format": "float"}
    assert usage.to_dict()["llm_by_stage"]["embedding"]["tokens_in"] == 9


def test_batches_dedupes_and_caches_per_text(llm_server: FakeOpenAIServer, tmp_path: Path) -> None:
    embedder, usage = build(llm_server, tmp_path, embedding_batch_size=4, concurrency=2)
    texts = [f"text number {i}" for i in range(10)]

    first = embedder.encode([*texts, texts[0]])

    assert llm_server.count(EMBEDDINGS_PATH) == 3  # 10 distinct texts in batches of 4
    # Batches go out concurrently, so the order they arrive in is not fixed.
    assert sorted(len(r.body["input"]) for r in llm_server.requests) == [2, 4, 4]
    np.testing.assert_array_equal(first[0], first[10])

    # A different mix of known and new texts embeds only the new one.
    second = embedder.encode([texts[5], "a new text", texts[2]])
    assert llm_server.count(EMBEDDINGS_PATH) == 4
    assert llm_server.requests[-1].body["input"] == ["a new text"]
    np.testing.assert_array_equal(second[0], first[5])
    np.testing.assert_allclose(second, expected([texts[5], "a new text", texts[2]]), rtol=1e-6)
    report = usage.to_dict()
    assert (report["llm_calls"], report["llm_cache_hits"]) == (4, 3)


def test_rerun_in_a_new_embedder_makes_zero_calls(
    llm_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    texts = ["alpha beta", "gamma"]
    first, _ = build(llm_server, tmp_path)
    vectors = first.encode(texts)
    first.cache.close()
    second, usage = build(llm_server, tmp_path)

    np.testing.assert_array_equal(second.encode(texts), vectors)
    assert llm_server.count() == 1
    assert usage.to_dict()["llm_calls"] == 0


def test_dim_probe_and_empty_input(llm_server: FakeOpenAIServer, tmp_path: Path) -> None:
    embedder, _ = build(llm_server, tmp_path)
    assert embedder.encode([]).shape == (0, 8)
    assert llm_server.count() == 1  # the probe, once
    assert embedder.dim == 8
    assert llm_server.count() == 1
    with pytest.raises(ValueError, match="text 1 is empty"):
        embedder.encode(["fine", "  "])


def test_failing_batch_raises_llm_error_after_retries(
    llm_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    embedder, usage = build(llm_server, tmp_path, max_retries=1)
    llm_server.add_faults(Fault(status=503), Fault(status=503))
    with pytest.raises(
        LLMError, match=r"embedding batch of 1 texts from 'lonely'.*HTTP 503.*2 attempts"
    ):
        embedder.encode(["lonely"])
    assert usage.to_dict()["llm_failures"] == 1
    assert len(embedder.cache) == 0


def test_429_on_embeddings_is_retried(llm_server: FakeOpenAIServer, tmp_path: Path) -> None:
    embedder, usage = build(llm_server, tmp_path)
    llm_server.add_faults(Fault(status=429, retry_after="1", path=EMBEDDINGS_PATH))
    np.testing.assert_allclose(embedder.encode(["x y"]), expected(["x y"]), rtol=1e-6)
    assert usage.to_dict()["llm_retries"] == 1


def test_embeddings_can_use_their_own_endpoint(
    llm_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    config = LLMConfig(
        embedding_model="embed-small",
        base_url="http://127.0.0.1:9/v1",  # the chat server, not running here
        embedding_base_url=llm_server.base_url,
        max_retries=0,
    )
    embedder = OpenAIEmbedder(config, LLMCache(tmp_path / "c.sqlite"), LLMUsage(), environ={})
    np.testing.assert_allclose(embedder.encode(["x"]), expected(["x"]), rtol=1e-6)
