"""The interfaces every layer codes against: embedder, chat model, executor, progress.

Summarisers, extractors, retrievers and the build depend on these protocols only; the
implementations (the ONNX and OpenAI-compatible embedders, the cached and retried
chat model, the process pool and Dask executors) live above them, in ``arborgraph``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    # Annotations only: the token counter imports the model-file checks in pool
    # workers that must not load numpy.
    import numpy as np

T = TypeVar("T")
R = TypeVar("R")


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    ``name`` identifies model *and* pipeline (e.g. "all-MiniLM-L6-v2/onnx-fp16-weights@eab16f7d3847",
    with the model file's digest), so the embedding cache never mixes vectors from two
    pipelines and a query is refused against an index another one embedded. An embedder
    may also declare an ``identity`` (:class:`arborgraph.core.embedding_identity.EmbeddingIdentity`),
    which the index manifest records.
    """

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape (len(texts), dim), rows of unit length."""
        ...


class ChatModel(Protocol):
    """A chat model. ``stage`` names the pipeline stage, for accounting.

    The OpenAI-compatible implementation (cached, retried, accounted) lives in
    ``arborgraph.llm.provider``.
    """

    model: str

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        stage: str,
        json_schema: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> str:
        """Return the reply text; with ``json_schema`` the reply is JSON valid against it."""
        ...


class Executor(Protocol):
    """Where per-document and per-chunk work runs (``arborgraph.pipeline.executor`` has them)."""

    name: str
    workers: int

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """``fn`` of every item, in order; a pool starts work on an item as soon as an
        iterator yields it."""
        ...

    def imap(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """:meth:`map`, each result yielded as soon as it and those before it are done
        (the caller uses the first results while workers compute the last)."""
        ...

    def close(self) -> None: ...


# Progress reporting as data: library code calls a callback, front-ends render it.
class ProgressCallback(Protocol):
    def __call__(self, stage: str, done: int, total: int | None) -> None: ...


def no_progress(stage: str, done: int, total: int | None) -> None:
    """The default callback: report nothing."""
