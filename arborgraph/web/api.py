"""The few list endpoints the explorer needs beyond the service's own API: the tree as
one compact JSON (for the icicle), communities by level, an entity search by name, and
a community's entities with the relations between them.

Each computes from the same per-principal views (``kb.tree_view(principal)``,
``kb.graph_view(principal)``) the service's routes use, so they show no more than the
caller may read.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from arborgraph.kb import KnowledgeBase
from graphrag.lexicon import relation_words
from arborgraph.service.swap import generation_name
from arborgraph.service.views import NotFound


def tree_nodes(kb: KnowledgeBase, principal: str | None, scope: str | None, depth: int, max_nodes: int) -> dict[str, Any]:
    """The tree from its root, breadth first, ``depth`` levels down, at most ``max_nodes``
    nodes; each node once (a node with several parents is listed under its first)."""
    view = kb.tree_view(principal, scope=scope)
    root = view.tree.root_id
    root_level = view.node(root).level
    seen = {root}
    order: list[dict[str, Any]] = []
    queue = deque([root])
    truncated = False
    while queue:
        node = view.node(queue.popleft())
        if len(order) >= max_nodes:
            truncated = True
            break
        below = root_level - node.level < depth
        kids = [c for c in node.children if c not in seen] if below else []
        seen.update(kids)
        queue.extend(kids)
        order.append({
            "id": node.node_id, "level": node.level, "title": node.title,
            "children": kids, "child_count": len(node.children), "chunks": len(node.chunk_ids),
        })
    kept = {n["id"] for n in order}
    for n in order:
        n["children"] = [c for c in n["children"] if c in kept]
    return {"root": root, "nodes": order, "truncated": truncated, "generation": generation_name(kb)}


def communities(kb: KnowledgeBase, principal: str | None, scope: str | None, level: int) -> dict[str, Any]:
    """The communities of one level (shallower leaves included), largest rank first."""
    view = kb.graph_view(principal, scope=scope)
    levels = list(view.kg.levels)
    rows = view.communities(level).to_pylist() if level in levels else []
    rows.sort(key=lambda r: (-(r["rank"] or 0), -r["size"], r["id"]))
    return {"level": level, "levels": levels, "communities": rows, "generation": generation_name(kb)}


def search_entities(kb: KnowledgeBase, principal: str | None, scope: str | None, text: str, limit: int) -> dict[str, Any]:
    """Entities whose name or an alias contains ``text`` (case ignored); exact matches
    first, then the most connected."""
    view = kb.graph_view(principal, scope=scope)
    kg = view.kg
    needle = text.casefold()
    hits = []
    for ent in kg.entities.values():
        names = [ent.name, *ent.aliases]
        if any(needle in n.casefold() for n in names):
            exact = any(needle == n.casefold() for n in names)
            hits.append((not exact, -kg.degree(ent.id), ent.name, ent))
    hits.sort(key=lambda h: h[:3])
    return {
        "query": text,
        "entities": [
            {"id": e.id, "name": e.name, "type": e.type, "degree": kg.degree(e.id)} for *_, e in hits[:limit]
        ],
        "total": len(hits),
        "generation": generation_name(kb),
    }


def community_graph(kb: KnowledgeBase, principal: str | None, scope: str | None, community_id: int, max_nodes: int) -> dict[str, Any]:
    """A community's most connected entities and the relations among them."""
    view = kb.graph_view(principal, scope=scope)
    kg = view.kg
    try:
        detail = view.community(community_id)
    except KeyError:
        raise NotFound(f"no community {community_id} in the graph readable by this caller") from None
    members = sorted(detail.community.members, key=lambda m: (-kg.degree(m), m))[:max_nodes]
    kept = set(members)
    edges = []
    for source in members:
        for rel in kg.adjacency.get(source, []):
            if rel.source == source and rel.target in kept:
                edges.append({
                    "source": rel.source, "target": rel.target, "relation": rel.type,
                    "phrase": relation_words(rel.type), "sentence": rel.description, "weight": rel.weight,
                })
    return {
        "id": community_id,
        "nodes": [{"id": m, "name": kg.entities[m].name, "type": kg.entities[m].type, "degree": kg.degree(m)} for m in members],
        "edges": edges,
        "members": len(detail.community.members),
        "generation": generation_name(kb),
    }
