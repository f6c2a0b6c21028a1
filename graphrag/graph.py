"""The knowledge graph: entities, relations, communities and reports, plus indexes.

Records are plain dataclasses (:mod:`graphrag.model`); the igraph view and the lookup
indexes are built lazily and never stored.
"""

from __future__ import annotations

from collections import defaultdict
from functools import cached_property
from typing import TYPE_CHECKING, Any

import igraph as ig

from graphrag.communities import aggregate_edges
from graphrag.model import Community, CommunityReport, Entity, Relation
from graphrag.text import entity_key

if TYPE_CHECKING:
    import networkx as nx


class KnowledgeGraph:
    """Entities and relations (by id), communities and their reports (by community id).

    ``meta`` holds build facts as strings (extractor name, seed, schema version).
    """

    def __init__(
        self,
        entities: dict[str, Entity],
        relations: dict[str, Relation],
        communities: dict[int, Community] | None = None,
        reports: dict[int, CommunityReport] | None = None,
        meta: dict[str, str] | None = None,
    ) -> None:
        self.entities = entities
        self.relations = relations
        self.communities = communities or {}
        self.reports = reports or {}
        self.meta = meta or {}

    def __repr__(self) -> str:
        return (
            f"KnowledgeGraph({len(self.entities)} entities, {len(self.relations)} relations, "
            f"{len(self.communities)} communities, {len(self.reports)} reports)"
        )

    # -- indexes ----------------------------------------------------------------

    @cached_property
    def adjacency(self) -> dict[str, list[Relation]]:
        """Entity id -> relations touching it (either end), strongest first."""
        adj: dict[str, list[Relation]] = defaultdict(list)
        for rel in self.relations.values():
            adj[rel.source].append(rel)
            adj[rel.target].append(rel)
        for rels in adj.values():
            rels.sort(key=lambda r: (-r.weight, r.id))
        return dict(adj)

    @cached_property
    def chunk_entities(self) -> dict[str, list[str]]:
        """Chunk id -> ids of the entities it mentions."""
        out: dict[str, list[str]] = defaultdict(list)
        for eid, ent in self.entities.items():
            for m in ent.mentions:
                out[m.chunk_id].append(eid)
        return dict(out)

    @cached_property
    def name_index(self) -> dict[str, list[str]]:
        """Normalised name or alias (see :func:`entity_key`) -> entity ids."""
        out: dict[str, list[str]] = defaultdict(list)
        for eid, ent in self.entities.items():
            for n in [ent.name, *ent.aliases]:
                k = entity_key(n)
                if k and eid not in out[k]:
                    out[k].append(eid)
        return dict(out)

    @cached_property
    def word_keys(self) -> dict[tuple[str, int], list[str]]:
        """One-word name keys grouped by (first letter, length), for fuzzy matching."""
        out: dict[tuple[str, int], list[str]] = defaultdict(list)
        for k in sorted(self.name_index):
            if " " not in k:
                out[(k[:1], len(k))].append(k)
        return dict(out)

    @cached_property
    def membership(self) -> dict[str, list[int]]:
        """Entity id -> community ids containing it, top level first."""
        out: dict[str, list[int]] = defaultdict(list)
        for com in sorted(self.communities.values(), key=lambda c: (c.level, c.id)):
            for m in com.members:
                out[m].append(com.id)
        return dict(out)

    def home_chunks(self, entity_id: str) -> list[str]:
        """Chunks that are about the entity: the sections it heads (a mention at (0, 0)
        marks the section heading), then the chunk whose sentence defines it."""
        ent = self.entities[entity_id]
        out = [m.chunk_id for m in ent.mentions if m.start == 0 and m.end == 0]
        if ent.description_chunk and ent.description_chunk not in out:
            out.append(ent.description_chunk)
        return out

    def find(self, name: str) -> list[Entity]:
        """Entities whose name or alias matches ``name`` (case, plural, ``_`` ignored)."""
        if name in self.entities:
            return [self.entities[name]]
        return [self.entities[e] for e in self.name_index.get(entity_key(name), [])]

    @property
    def levels(self) -> list[int]:
        return sorted({c.level for c in self.communities.values()})

    def community_cut(self, level: int) -> list[Community]:
        """A partition of the clustered entities at ``level``: the communities of that
        level plus the leaves of shallower levels (those never split)."""
        return sorted(
            (c for c in self.communities.values() if c.level == level or (c.level < level and not c.children)),
            key=lambda c: c.id,
        )

    # -- graph views ------------------------------------------------------------

    @cached_property
    def graph(self) -> ig.Graph:
        """Directed igraph multigraph: one vertex per entity (sorted by id), one edge
        per relation; co-occurrences point from the smaller id to the larger."""
        ids = sorted(self.entities)
        index = {e: i for i, e in enumerate(ids)}
        rels = sorted(self.relations.values(), key=lambda r: r.id)
        g = ig.Graph(n=len(ids), edges=[(index[r.source], index[r.target]) for r in rels], directed=True)
        g.vs["name"] = ids
        g.vs["label"] = [self.entities[e].name for e in ids]
        g.vs["type"] = [self.entities[e].type for e in ids]
        g.es["id"] = [r.id for r in rels]
        g.es["type"] = [r.type for r in rels]
        g.es["weight"] = [r.weight for r in rels]
        return g

    @cached_property
    def undirected(self) -> ig.Graph:
        """Undirected simple graph with summed relation weights (for walks and paths)."""
        ids = sorted(self.entities)
        index = {e: i for i, e in enumerate(ids)}
        agg = aggregate_edges((r.source, r.target, r.weight) for r in self.relations.values())
        g = ig.Graph(n=len(ids), edges=[(index[a], index[b]) for a, b, _ in agg], directed=False)
        g.vs["name"] = ids
        g.es["weight"] = [w for _, _, w in agg]
        return g

    def to_networkx(self) -> nx.MultiDiGraph:
        """A networkx MultiDiGraph with every entity and relation attribute."""
        import networkx as nx

        g = nx.MultiDiGraph()
        for eid in sorted(self.entities):
            e = self.entities[eid]
            g.add_node(
                eid,
                name=e.name,
                type=e.type,
                aliases=list(e.aliases),
                description=e.description,
                chunk_ids=e.chunk_ids,
                communities=self.membership.get(eid, []),
            )
        for rid in sorted(self.relations):
            r = self.relations[rid]
            g.add_edge(
                r.source,
                r.target,
                key=rid,
                type=r.type,
                weight=r.weight,
                description=r.description,
                chunk_ids=list(r.chunk_ids),
            )
        return g

    def degree(self, entity_id: str) -> int:
        """Number of distinct neighbours."""
        seen = {r.target if r.source == entity_id else r.source for r in self.adjacency.get(entity_id, [])}
        return len(seen)

    def stats(self) -> dict[str, Any]:
        """Counts for build reports."""
        return {
            "entities": len(self.entities),
            "relations": len(self.relations),
            "communities": len(self.communities),
            "levels": len(self.levels),
            "reports": len(self.reports),
        }
