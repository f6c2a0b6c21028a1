"""Exploring a knowledge graph from Python or Jupyter.

>>> view = GraphView(kg, chunk_text=chunks_by_id)        # doctest: +SKIP
>>> view.neighbours("journal_mode")[:3]                   # doctest: +SKIP
>>> view.community(view.community_of("WAL").id).report   # doctest: +SKIP

Plots need the ``viz`` extra (plotly); they are written as self-contained HTML
(plotly's JavaScript inlined), so they open offline.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from arborgraph.core.errors import install_hint
from graphrag.chunks import ChunkFetcher, ChunkSource
from graphrag.graph import KnowledgeGraph
from graphrag.model import Community, CommunityReport, Entity, Finding
from graphrag.lexicon import inverse_relation_words, relation_words


@dataclass(frozen=True, slots=True)
class CommunityDetail:
    """A community as :meth:`GraphView.community` returns it: the record, its members
    by name (most connected first) and its report (None when it has none)."""

    community: Community
    members: list[str]
    report: CommunityReport | None

    @property
    def id(self) -> int:
        return self.community.id

    @property
    def level(self) -> int:
        return self.community.level

    @property
    def parent(self) -> int | None:
        return self.community.parent

    @property
    def children(self) -> list[int]:
        return list(self.community.children)

    @property
    def findings(self) -> list[Finding]:
        return list(self.report.findings) if self.report else []

    def _repr_html_(self) -> str:
        from arborgraph.core.cards import community_card

        return community_card(self.community, self.members, self.report)


class GraphView:
    """Read-only views of a :class:`KnowledgeGraph` (tables, neighbours, paths,
    communities), with the manual's text when ``chunk_text`` is given."""

    def __init__(self, kg: KnowledgeGraph, chunk_text: ChunkSource | None = None) -> None:
        self.kg = kg
        self._fetch = ChunkFetcher(chunk_text) if chunk_text is not None else None

    # -- entities ---------------------------------------------------------------

    def entity(self, name: str) -> Entity:
        """The entity with this id, name or alias (the most mentioned one if several)."""
        found = self.kg.find(name)
        if not found:
            raise KeyError(f"no entity named {name!r}")
        return max(found, key=lambda e: (len(e.mentions), e.id))

    def entities(self, type: str | None = None, limit: int | None = None) -> pa.Table:
        """Entities as a table, most connected first (``.to_pandas()`` with the ``[notebooks]`` extra)."""
        kg = self.kg
        rows = [e for e in kg.entities.values() if type is None or e.type == type]
        rows.sort(key=lambda e: (-kg.degree(e.id), e.id))
        rows = rows[:limit] if limit else rows
        deepest = {e.id: (kg.membership.get(e.id) or [None])[-1] for e in rows}
        return pa.table(
            {
                "id": [e.id for e in rows],
                "name": [e.name for e in rows],
                "type": [e.type for e in rows],
                "aliases": [list(e.aliases) for e in rows],
                "degree": [kg.degree(e.id) for e in rows],
                "chunks": [len(e.mentions) for e in rows],
                "community": pa.array([deepest[e.id] for e in rows], type=pa.int32()),
                "description": [e.description for e in rows],
            }
        )

    def neighbours(self, name: str, *, limit: int = 20, type: str | None = None) -> list[dict[str, Any]]:
        """Strongest relations of an entity: who, how (``relation``: the type; ``phrase``:
        how it reads from source to target), how strongly, stated where."""
        ent = self.entity(name)
        out = []
        for rel in self.kg.adjacency.get(ent.id, []):
            if type is not None and rel.type != type:
                continue
            other = rel.target if rel.source == ent.id else rel.source
            out.append(
                {
                    "id": other,
                    "name": self.kg.entities[other].name,
                    "relation": rel.type,
                    # how it reads from source to target: "requires", "is stored in"
                    "phrase": relation_words(rel.type),
                    "direction": "out" if rel.source == ent.id else "in",
                    "weight": rel.weight,
                    "sentence": rel.description,
                    "chunk_ids": rel.chunk_ids[:5],
                }
            )
            if len(out) >= limit:
                break
        return out

    def path(self, a: str, b: str, *, max_len: int = 4) -> list[dict[str, Any]]:
        """Hops of the strongest short path from ``a`` to ``b`` (empty if none); each
        hop's ``relation`` reads from its ``from`` to its ``to``."""
        from graphrag.search_index import path_index

        ea, eb = self.entity(a), self.entity(b)
        ids = path_index(self.kg).shortest(ea.id, eb.id, max_len)  # the graph route's own paths
        hops = []
        for x, y in zip(ids, ids[1:]):
            rels = [r for r in self.kg.adjacency.get(x, []) if {r.source, r.target} == {x, y}]
            rel = max(rels, key=lambda r: (r.weight, r.id))
            hops.append(
                {
                    "from": self.kg.entities[x].name,
                    # a hop against the relation's direction reads backwards
                    "relation": relation_words(rel.type) if rel.source == x else inverse_relation_words(rel.type),
                    "to": self.kg.entities[y].name,
                    "sentence": rel.description,
                    "chunk_ids": rel.chunk_ids[:3],
                }
            )
        return hops

    def text(self, chunk_id: str) -> str:
        """The manual's own text of a chunk (needs ``chunk_text``)."""
        if self._fetch is None:
            raise ValueError("GraphView was created without chunk_text")
        ref = self._fetch.get(chunk_id)
        if ref is None:
            raise KeyError(chunk_id)
        return ref.text

    # -- communities ------------------------------------------------------------

    def communities(self, level: int = 0) -> pa.Table:
        """The partition at ``level`` (shallower leaves included) with report titles."""
        cut = self.kg.community_cut(level)
        reps = self.kg.reports
        return pa.table(
            {
                "id": pa.array([c.id for c in cut], type=pa.int32()),
                "level": pa.array([c.level for c in cut], type=pa.int32()),
                "size": [len(c.members) for c in cut],
                "parent": pa.array([c.parent for c in cut], type=pa.int32()),
                "children": [len(c.children) for c in cut],
                "title": [reps[c.id].title if c.id in reps else "" for c in cut],
                "rank": [reps[c.id].rank if c.id in reps else None for c in cut],
            }
        )

    def community(self, community_id: int) -> CommunityDetail:
        """A community with its members' names and its report (an HTML card in Jupyter)."""
        kg = self.kg
        com = self._community(community_id)
        ranked = sorted(com.members, key=lambda m: (-kg.degree(m), m))
        return CommunityDetail(com, [kg.entities[m].name for m in ranked], kg.reports.get(community_id))

    def _community(self, community_id: int) -> Community:
        com = self.kg.communities.get(community_id)
        if com is None:
            by_level: dict[int, list[int]] = {}
            for c in self.kg.communities.values():
                by_level.setdefault(c.level, []).append(c.id)
            held = ", ".join(f"level {lv}: {min(ids)}-{max(ids)}" for lv, ids in sorted(by_level.items()))
            raise KeyError(f"no community {community_id!r} (ids by level: {held or 'the graph has none'})")
        return com

    def community_of(self, name: str, level: int | None = None) -> Community | None:
        """The entity's community at ``level`` (default: the deepest one)."""
        ids = self.kg.membership.get(self.entity(name).id, [])
        coms = [self.kg.communities[c] for c in ids]
        if level is not None:
            coms = [c for c in coms if c.level <= level]
        return coms[-1] if coms else None

    # -- export -----------------------------------------------------------------

    def to_networkx(self) -> Any:
        return self.kg.to_networkx()

    def to_graphml(self, path: str | Path) -> Path:
        """Write GraphML for Gephi: scalar attributes only (lists joined with ``|``)."""
        import networkx as nx

        g = nx.DiGraph()
        kg = self.kg
        for eid in sorted(kg.entities):
            e = kg.entities[eid]
            com = kg.membership.get(eid, [])
            g.add_node(
                eid,
                label=e.name,
                type=e.type,
                aliases="|".join(e.aliases),
                description=e.description,
                chunks=len(e.mentions),
                community=com[-1] if com else -1,
                top_community=com[0] if com else -1,
            )
        # Gephi wants one edge per pair: keep the strongest relation, sum the weights
        for rid in sorted(kg.relations):
            r = kg.relations[rid]
            if g.has_edge(r.source, r.target):
                d = g.edges[r.source, r.target]
                d["weight"] += r.weight
                if r.weight > d["main_weight"]:
                    d.update(type=r.type, main_weight=r.weight, description=r.description)
            else:
                g.add_edge(r.source, r.target, type=r.type, weight=r.weight, main_weight=r.weight, description=r.description)
        for _u, _v, d in g.edges(data=True):
            del d["main_weight"]
        out = Path(path)
        nx.write_graphml(g, out)
        return out

    def plot_overview(self, level: int = 0, *, max_communities: int = 40) -> Any:
        """The graph at community scale, a plotly figure: one disc per community of
        ``level`` (the ``max_communities`` largest), sized by its members and named by its
        report's title, joined by lines as thick as the relations between their members."""
        try:
            import plotly.graph_objects as go
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(f"plotting needs the 'viz' extra: {install_hint('viz')}") from exc
        import igraph as ig

        kg = self.kg
        cut = sorted(kg.community_cut(level), key=lambda c: (-len(c.members), c.id))[:max_communities]
        home = {m: i for i, c in enumerate(cut) for m in c.members}
        links: dict[tuple[int, int], int] = {}
        for r in kg.relations.values():
            a, b = home.get(r.source), home.get(r.target)
            if a is not None and b is not None and a != b:
                key = (min(a, b), max(a, b))
                links[key] = links.get(key, 0) + 1
        g = ig.Graph(n=len(cut), edges=sorted(links))
        # Kamada-Kawai starts from a circle: the same picture every time
        coords = g.layout_kamada_kawai() if len(cut) > 1 else [[0.0, 0.0]] * len(cut)
        ex: list[float | None] = []
        ey: list[float | None] = []
        widths = []
        for (a, b), n in sorted(links.items()):
            ex += [coords[a][0], coords[b][0], None]
            ey += [coords[a][1], coords[b][1], None]
            widths.append(n)
        reps = kg.reports
        # a community without a report is named by its most connected member
        titles = [
            _short_title(reps[c.id].title if c.id in reps
                         else kg.entities[min(c.members, key=lambda m: (-kg.degree(m), m))].name + (f" +{len(c.members) - 1}" if len(c.members) > 1 else ""))
            for c in cut
        ]
        sizes = [len(c.members) for c in cut]
        biggest = max(sizes, default=1)
        lines = [
            go.Scatter(x=ex[3 * i: 3 * i + 3], y=ey[3 * i: 3 * i + 3], mode="lines", hoverinfo="skip",
                       line={"width": min(8.0, 0.8 + n ** 0.5), "color": "#c3ccc7"}, showlegend=False)
            for i, n in enumerate(widths)
        ]
        discs = go.Scatter(
            x=[xy[0] for xy in coords], y=[xy[1] for xy in coords], mode="markers+text",
            text=titles, textposition="top center", textfont={"size": 11},
            hovertext=[f"community {c.id}: {t} ({s} entities)" for c, t, s in zip(cut, titles, sizes)],
            hoverinfo="text", showlegend=False,
            marker={"size": [12 + 38 * (s / biggest) ** 0.5 for s in sizes], "color": list(range(len(cut))),
                    "colorscale": "Viridis", "line": {"width": 1, "color": "#333"}, "opacity": 0.85},
        )
        fig = go.Figure([*lines, discs])
        fig.update_layout(
            title=f"Communities at level {level}: size = entities, lines = relations between them",
            xaxis={"visible": False}, yaxis={"visible": False}, margin={"t": 40, "l": 10, "r": 10, "b": 10},
        )
        return fig

    def plot_community(self, community_id: int, path: str | Path | None = None, *, max_nodes: int = 150) -> str:
        """Self-contained HTML of a community's subgraph: nodes coloured by
        sub-community, sized by degree, the most connected named. Written to ``path`` if
        given; returned."""
        try:
            import plotly.graph_objects as go
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(f"plotting needs the 'viz' extra: {install_hint('viz')}") from exc
        kg = self.kg
        com = self._community(community_id)
        members = sorted(com.members, key=lambda m: (-kg.degree(m), m))[:max_nodes]
        sub_of = {m: -1 for m in members}
        for i, child in enumerate(com.children):
            for m in kg.communities[child].members:
                if m in sub_of:
                    sub_of[m] = i
        pos = _layout(kg, members)
        mset = set(members)
        ex: list[float | None] = []
        ey: list[float | None] = []
        for rid in sorted(kg.relations):
            r = kg.relations[rid]
            if r.source in mset and r.target in mset:
                (x0, y0), (x1, y1) = pos[r.source], pos[r.target]
                ex += [x0, x1, None]
                ey += [y0, y1, None]
        degree = [kg.degree(m) for m in members]
        top = max(degree) or 1
        # names on the most connected members only: every label at once is unreadable
        named = set(members[:LABELLED])
        fig = go.Figure(
            [
                go.Scatter(x=ex, y=ey, mode="lines", line={"width": 0.5, "color": "#bbb"}, hoverinfo="skip"),
                go.Scatter(
                    x=[pos[m][0] for m in members],
                    y=[pos[m][1] for m in members],
                    mode="markers+text",
                    text=[kg.entities[m].name if m in named else "" for m in members],
                    textposition="top center",
                    hovertext=[f"{kg.entities[m].name} ({kg.entities[m].type}), degree {d}" for m, d in zip(members, degree)],
                    hoverinfo="text",
                    marker={
                        "size": [8 + 30 * d / top for d in degree],
                        "color": [sub_of[m] for m in members],
                        "colorscale": "Turbo",
                        "line": {"width": 0.5, "color": "#333"},
                    },
                ),
            ]
        )
        title = kg.reports[community_id].title if community_id in kg.reports else f"community {community_id}"
        fig.update_layout(
            title=f"Community {community_id} (level {com.level}): {title}",
            showlegend=False,
            xaxis={"visible": False},
            yaxis={"visible": False},
        )
        page = fig.to_html(include_plotlyjs=True, full_html=True)
        if path is not None:
            Path(path).write_text(page, encoding="utf-8")
        return page

    # -- Jupyter ----------------------------------------------------------------

    def _repr_html_(self) -> str:
        kg = self.kg
        stats = kg.stats()
        rows = "".join(
            f"<tr><td>{html.escape(e.name)}</td><td>{html.escape(e.type)}</td><td>{kg.degree(e.id)}</td></tr>"
            for e in sorted(kg.entities.values(), key=lambda e: (-kg.degree(e.id), e.id))[:10]
        )
        return (
            f"<div><b>Knowledge graph</b>: {stats['entities']} entities, {stats['relations']} relations, "
            f"{stats['communities']} communities on {stats['levels']} levels, {stats['reports']} reports"
            f"<table><tr><th>entity</th><th>type</th><th>degree</th></tr>{rows}</table></div>"
        )

    def __repr__(self) -> str:
        return f"GraphView({self.kg!r})"


LABELLED = 20  # plot_community names this many members, the most connected


def _short_title(text: str, width: int = 34) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _layout(kg: KnowledgeGraph, members: Sequence[str]) -> dict[str, tuple[float, float]]:
    """Deterministic 2-D positions (Kamada-Kawai starts from a circle, no randomness)."""
    import igraph as ig

    index = {m: i for i, m in enumerate(members)}
    edges = sorted(
        {(min(index[r.source], index[r.target]), max(index[r.source], index[r.target]))
         for m in members for r in kg.adjacency.get(m, []) if r.source in index and r.target in index and r.source != r.target}
    )
    g = ig.Graph(n=len(members), edges=edges)
    coords = g.layout_kamada_kawai() if len(members) > 1 else [[0.0, 0.0]]
    return {m: (float(coords[i][0]), float(coords[i][1])) for m, i in index.items()}
