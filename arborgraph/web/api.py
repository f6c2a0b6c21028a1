"""The few list endpoints the explorer needs beyond the service's own API: the tree as
one compact JSON (for the icicle), communities by level, an entity search by name, and
a community's entities with the relations between them.

Each computes from the same per-principal views (``kb.explorer.tree_view(principal)``,
``kb.explorer.graph_view(principal)``) the service's routes use, so they show no more than the
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
    view = kb.explorer.tree_view(principal, scope=scope)
    root = view.tree.root_id
    seen = {root}
    order: list[dict[str, Any]] = []
    # steps from the root, not levels: an outline tree's pages hold sections of any level
    queue = deque([(root, 0)])
    truncated = False
    while queue:
        node_id, steps = queue.popleft()
        node = view.node(node_id)
        if len(order) >= max_nodes:
            truncated = True
            break
        kids = [c for c in node.children if c not in seen] if steps < depth else []
        seen.update(kids)
        queue.extend((k, steps + 1) for k in kids)
        order.append({
            "id": node.node_id, "level": node.level, "title": node.title,
            "children": kids, "child_count": len(node.children), "chunks": len(node.chunk_ids),
            "origin": node.origin, "label": node.label, "coverage": node.coverage,
        })
    kept = {n["id"] for n in order}
    for n in order:
        n["children"] = [c for c in n["children"] if c in kept]
    return {"root": root, "nodes": order, "truncated": truncated, "generation": generation_name(kb)}


def communities(kb: KnowledgeBase, principal: str | None, scope: str | None, level: int) -> dict[str, Any]:
    """The communities of one level (shallower leaves included), largest rank first."""
    view = kb.explorer.graph_view(principal, scope=scope)
    levels = list(view.kg.levels)
    rows = view.communities(level).to_pylist() if level in levels else []
    rows.sort(key=lambda r: (-(r["rank"] or 0), -r["size"], r["id"]))
    return {"level": level, "levels": levels, "communities": rows, "generation": generation_name(kb)}


def search_entities(kb: KnowledgeBase, principal: str | None, scope: str | None, text: str, limit: int) -> dict[str, Any]:
    """Entities whose name or an alias contains ``text`` (case ignored); exact matches
    first, then the most connected."""
    view = kb.explorer.graph_view(principal, scope=scope)
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
    view = kb.explorer.graph_view(principal, scope=scope)
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


def graph_overview(
    kb: KnowledgeBase, principal: str | None, scope: str | None, *, level: int, max_nodes: int,
    label: str | None = None, focus: str | None = None, depth: int = 1, min_degree: int = 0,
) -> dict[str, Any]:
    """The readable entity graph for the Graph page, each entity with its community at
    ``level``.

    With neither ``focus`` nor ``label``: the ``max_nodes`` most connected entities of at
    least ``min_degree`` relations (the whole graph when it is smaller). With ``focus``
    (an entity id, name or alias) or ``label`` (text in a name or alias): those entities and their neighbours up to
    ``depth`` hops, nearest and most connected first, at most ``max_nodes``. The
    relations are those among the entities kept; ``entities`` counts the readable
    graph's, so "N of M" is always true.
    """
    view = kb.explorer.graph_view(principal, scope=scope)
    kg = view.kg
    levels = list(kg.levels)
    cut = kg.community_cut(level) if level in levels else []
    home = {m: c.id for c in cut for m in c.members}
    by_degree = lambda ids: sorted(ids, key=lambda e: (-kg.degree(e), kg.entities[e].name, e))  # noqa: E731
    seeds: list[str] = []
    if focus is not None:
        try:
            seeds = [view.entity(focus).id]
        except KeyError:
            raise NotFound(f"no entity {focus!r} in the graph readable by this caller") from None
    elif label:
        needle = label.casefold()
        seeds = by_degree([
            e.id for e in kg.entities.values() if any(needle in n.casefold() for n in (e.name, *e.aliases))
        ])
    if focus is None and not label:
        kept = [e for e in by_degree(kg.entities) if kg.degree(e) >= min_degree][:max_nodes]
        truncated = len(kg.entities) > len(kept)
    else:
        kept, truncated = _around(kg, seeds, depth, max_nodes, by_degree)
    chosen = set(kept)
    edges = []
    for source in kept:
        for rel in kg.adjacency.get(source, []):
            if rel.source == source and rel.target in chosen:
                edges.append({"source": rel.source, "target": rel.target, "relation": rel.type,
                              "phrase": relation_words(rel.type), "weight": rel.weight})
    shown = {home[e] for e in kept if e in home}
    reports = kg.reports
    return {
        "level": level,
        "levels": levels,
        "nodes": [
            {"id": e, "name": kg.entities[e].name, "type": kg.entities[e].type, "degree": kg.degree(e),
             "community": home.get(e), "seed": e in seeds}
            for e in kept
        ],
        "edges": edges,
        "communities": [
            {"id": c.id, "title": reports[c.id].title if c.id in reports else "", "size": len(c.members)}
            for c in sorted(cut, key=lambda c: (-len(c.members), c.id)) if c.id in shown
        ],
        "entities": len(kg.entities),
        "truncated": truncated,
        "generation": generation_name(kb),
    }


def _around(kg: Any, seeds: list[str], depth: int, limit: int, by_degree: Any) -> tuple[list[str], bool]:
    """``seeds`` and their neighbours breadth first up to ``depth`` hops, at most ``limit``
    (each ring the most connected first); True when the limit cut something off."""
    kept = list(dict.fromkeys(seeds))[:limit]
    truncated = len(seeds) > len(kept)
    seen = set(kept)
    ring = list(kept)
    for _ in range(depth):
        nxt = by_degree({
            (rel.target if rel.source == e else rel.source)
            for e in ring for rel in kg.adjacency.get(e, [])
        } - seen)
        room = limit - len(kept)
        if len(nxt) > room:
            truncated = True
            nxt = nxt[:room]
        kept.extend(nxt)
        seen.update(nxt)
        ring = nxt
        if not ring:
            break
    return kept, truncated
