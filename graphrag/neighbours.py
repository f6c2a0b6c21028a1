"""Where graph search gets each entity's relations: the in-memory adjacency, or a
graph server (:class:`arborgraph.neo4j.backend.Neo4jGraphBackend`).

A backend answers one batched question — the relations touching each of some
entities, strongest first, at most ``limit`` each — so a server answers a whole hop
of the walk in one round trip.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from graphrag.graph import KnowledgeGraph
    from graphrag.model import Relation


class GraphBackend(Protocol):
    """Relations touching each entity, strongest first: ``(-weight, id)`` order, at most
    ``limit`` each (None: all). Entities with no relation may be absent."""

    def neighbours(self, entity_ids: Sequence[str], limit: int | None) -> dict[str, list[Relation]]: ...


class MemoryGraphBackend:
    """The lookup on an in-memory graph: ``kg.adjacency[e][:limit]``."""

    def __init__(self, kg: KnowledgeGraph) -> None:
        self.kg = kg

    def neighbours(self, entity_ids: Sequence[str], limit: int | None) -> dict[str, list[Relation]]:
        adjacency = self.kg.adjacency
        return {e: adjacency[e][:limit] for e in dict.fromkeys(entity_ids) if e in adjacency}


__all__ = ["GraphBackend", "MemoryGraphBackend"]
