"""The interface every text embedder implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from arborgraph.core.errors import EmbedderUnavailable  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    # Annotations only: the token counter imports this module (through the model-file
    # checks) in pool workers that must not load numpy.
    import numpy as np


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    ``name`` identifies model *and* pipeline (e.g. "all-MiniLM-L6-v2/onnx-int8"), so the
    embedding cache never mixes vectors from two pipelines.
    """

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape (len(texts), dim), rows of unit length."""
        ...


