"""The one result type every retriever returns, and the query result around it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

ContextKind = Literal["chunk", "summary", "entity", "relation", "community_report"]
Route = Literal["lookup", "tree", "graph", "global"]


class Context(BaseModel):
    """One retrieved passage, whatever structure it came from.

    ``trace`` records how it was found (retriever, ranks, path taken) so that
    ``explain()`` and notebooks can show it; ``provenance`` lists the chunk ids
    whose text grounds it (a chunk grounds itself).
    """

    text: str
    source: str  # document id (for derived content: the main source document)
    heading_path: list[str] = Field(default_factory=list)
    kind: ContextKind = "chunk"
    score: float = 0.0
    node_id: str  # chunk id, tree node id, entity id, relation id or community id
    start: int | None = None
    end: int | None = None
    level: int | None = None  # tree level or community level
    provenance: list[str] = Field(default_factory=list)
    trace: list[str] = Field(default_factory=list)
    flags: list[str] = Field(default_factory=list)  # e.g. "possible_injection"
    extra: dict[str, Any] = Field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
