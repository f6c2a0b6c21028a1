"""What exactly made an index's vectors: the embedding identity a build records.

An embedder's ``name`` is the key: the embedding cache, the index manifest and the query
side compare it, so it must change whenever the vectors can (the ONNX embedders put
their model file's SHA-256 in it). :class:`EmbeddingIdentity` holds the name and the facts
behind it, for people reading a manifest: which model, stored how, which file, which
pooling and length limit, and the runtime that ran it (recorded, not compared: the
shipped model's vectors agree across CPUs and runtime releases far closer than retrieval
can tell apart).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from arborgraph.core.protocols import Embedder

__all__ = ["EmbeddingIdentity", "identity_of"]


class EmbeddingIdentity(BaseModel):
    """The identity of an embedding pipeline; ``name`` is what is compared."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    dim: int = Field(ge=1)
    model: str | None = None
    backend: str | None = None
    precision: str | None = None
    model_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    pooling: str | None = None
    max_seq_length: int | None = Field(default=None, ge=1)
    lowercase: bool | None = None
    runtime: dict[str, str] = Field(default_factory=dict)


def identity_of(embedder: Embedder) -> EmbeddingIdentity:
    """The identity an embedder declares (its ``identity`` attribute), else its name and
    dimension alone (an embedder plugged in by the caller, an OpenAI-compatible one)."""
    declared = getattr(embedder, "identity", None)
    if isinstance(declared, EmbeddingIdentity):
        return declared
    return EmbeddingIdentity(name=embedder.name, dim=embedder.dim)
