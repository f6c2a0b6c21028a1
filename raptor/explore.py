"""Exploring a tree in Python and Jupyter: navigation, an outline, HTML, graphs, plots.

Plots need the optional ``viz`` extra (plotly); it is imported only when a plot is
asked for. Figures written with :func:`figure_html` inline plotly's JavaScript, so the
HTML works offline.
"""

from __future__ import annotations

import html
import statistics
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from arborgraph.core.errors import install_hint
from raptor.tree import Node, Tree

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx
    import plotly.graph_objects as go

_VIZ_HINT = f"plots need the optional 'viz' extra: {install_hint('viz')}"


def _plotly() -> Any:
    try:
        import plotly.graph_objects as go
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(_VIZ_HINT) from exc
    return go


def figure_html(fig: go.Figure) -> str:
    """A standalone HTML page for ``fig`` with plotly.js inlined (no CDN, works offline)."""
    return str(fig.to_html(include_plotlyjs=True, full_html=True))


class TreeView:
    """Read-only navigation over a :class:`Tree`. Methods take and return node ids."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        levels: dict[int, list[str]] = {}
        for node in tree.nodes:
            levels.setdefault(node.level, []).append(node.node_id)
        self._levels = levels

    # -- navigation ---------------------------------------------------------------

    @property
    def levels(self) -> dict[int, list[str]]:
        """Level -> node ids (0 = leaf chunks), highest level last."""
        return {lv: list(ids) for lv, ids in sorted(self._levels.items())}

    def node(self, node_id: str) -> Node:
        return self.tree.node(node_id)

    def children(self, node_id: str) -> list[str]:
        return list(self.tree.node(node_id).children)

    def parents(self, node_id: str) -> list[str]:
        return list(self.tree.node(node_id).parents)

    def path_to_root(self, node_id: str) -> list[str]:
        """``node_id``, its first parent, that node's first parent ... up to the root."""
        path = [node_id]
        while self.tree.node(path[-1]).parents:
            path.append(self.tree.node(path[-1]).parents[0])
        return path

    def subtree(self, node_id: str) -> list[str]:
        """``node_id`` and all its descendants, depth first, each once."""
        out: list[str] = []
        seen: set[str] = set()
        stack = [node_id]
        while stack:
            nid = stack.pop()
            if nid in seen:
                continue
            seen.add(nid)
            out.append(nid)
            stack.extend(reversed(self.tree.node(nid).children))
        return out

    # -- text and HTML ------------------------------------------------------------

    def outline(self, depth: int = 2) -> str:
        """An indented outline from the root down ``depth`` levels below it."""
        lines: list[str] = []

        def walk(nid: str, indent: int) -> None:
            node = self.tree.node(nid)
            lines.append(f"{'  ' * indent}{_label(node)}")
            if indent < depth:
                for child in node.children:
                    walk(child, indent + 1)

        walk(self.tree.root_id, 0)
        return "\n".join(lines)

    def stats(self) -> dict[str, Any]:
        leaves = self.tree.leaves()
        summarisers = Counter(n.summariser for n in self.tree.nodes if n.summariser)
        multi = sum(1 for n in self.tree.nodes if len(n.parents) > 1)
        return {
            "nodes": len(self.tree),
            "height": self.tree.height,
            "per_level": {lv: len(ids) for lv, ids in self.levels.items()},
            "documents": len({d for n in leaves for d in n.doc_ids}),
            "summarisers": dict(summarisers),
            "nodes_with_several_parents": multi,
        }

    def _repr_html_(self) -> str:
        st = self.stats()
        rows = "".join(
            f"<tr><td>{lv}</td><td>{count}</td></tr>" for lv, count in sorted(st["per_level"].items(), reverse=True)
        )
        root = self.tree.root
        top = "".join(
            f"<li><code>{html.escape(c)}</code> {html.escape(self.tree.node(c).title)} "
            f"<small>({len(self.tree.node(c).chunk_ids)} chunks)</small></li>"
            for c in root.children[:12]
        )
        more = f"<li>... {len(root.children) - 12} more</li>" if len(root.children) > 12 else ""
        summ = ", ".join(f"{html.escape(k)} ({v})" for k, v in st["summarisers"].items()) or "none"
        return (
            "<div style='font-family:sans-serif;font-size:13px;border:1px solid #ccc;"
            "border-radius:6px;padding:8px;max-width:720px'>"
            f"<b>RAPTOR tree</b> &middot; root <code>{html.escape(root.node_id)}</code> &middot; "
            f"{st['nodes']} nodes, height {st['height']}, {st['documents']} documents &middot; "
            f"summariser: {summ}"
            f"<div style='margin-top:4px'><i>{html.escape(root.title)}</i></div>"
            "<table style='margin-top:6px'><tr><th>level</th><th>nodes</th></tr>"
            f"{rows}</table><ul style='margin:6px 0 0 0'>{top}{more}</ul></div>"
        )

    def __repr__(self) -> str:
        st = self.stats()
        return f"TreeView(root={self.tree.root_id!r}, nodes={st['nodes']}, per_level={st['per_level']})"

    # -- graph and plots ----------------------------------------------------------

    def to_networkx(self) -> nx.DiGraph:
        """A directed graph parent -> child with node attributes (level, title, ...)."""
        import networkx as nx

        g = nx.DiGraph()
        for n in self.tree.nodes:
            g.add_node(
                n.node_id,
                level=n.level,
                title=n.title,
                summariser=n.summariser,
                cluster=n.cluster,
                n_chunks=len(n.chunk_ids),
                doc_ids=list(n.doc_ids),
            )
        for n in self.tree.nodes:
            for child in n.children:
                g.add_edge(n.node_id, child)
        return g

    def plot_layout(self, highlight: Iterable[str] = (), *, show_leaves: bool = True) -> go.Figure:
        """2-D layout of the nodes (leaves by UMAP or PCA, as built; each summary at the
        mean of its children): colour = the cluster a node lies in at the level of
        :func:`naming_level` (its first parents up), named in the legend and written
        where most of its chunks lie; symbol and size = level; ``highlight`` node ids (e.g. a
        drill-down path) are ringed."""
        go = _plotly()
        marks = set(highlight)
        tree = self.tree
        named_level = naming_level({level: len(ids) for level, ids in self.levels.items()})
        heads = list(self.levels.get(named_level, [tree.root_id]))
        head_of: dict[str, str] = {h: h for h in heads}

        def head(node_id: str) -> str | None:
            path = []
            while node_id not in head_of:
                node = tree.node(node_id)
                if node.level >= named_level or not node.parents:
                    head_of[node_id] = ""  # above the named clusters (or an orphan)
                    break
                path.append(node_id)
                node_id = node.parents[0]
            for p in path:
                head_of[p] = head_of[node_id]
            return head_of[node_id] or None

        groups: dict[str | None, list[Node]] = {h: [] for h in heads}
        groups[None] = []
        for level, ids in sorted(self.levels.items()):
            if level == 0 and not show_leaves:
                continue
            for i in ids:
                groups[head(i)].append(tree.node(i))
        fig = go.Figure()
        for k, (top_id, nodes) in enumerate(groups.items()):
            if not nodes:
                continue
            name = "summaries above them" if top_id is None else _short(tree.node(top_id).title or top_id, 36)
            colour = "#333333" if top_id is None else _PALETTE[k % len(_PALETTE)]
            fig.add_trace(
                go.Scatter(
                    x=[n.umap_x for n in nodes],
                    y=[n.umap_y for n in nodes],
                    mode="markers",
                    name=name,
                    text=[f"{n.node_id}: {n.title}" for n in nodes],
                    hoverinfo="text",
                    marker={
                        "size": [5 if n.level == 0 else 4 + 2 * n.level for n in nodes],
                        "symbol": ["circle" if n.level == 0 else "diamond" for n in nodes],
                        "color": colour,
                        "opacity": [0.6 if n.level == 0 else 0.9 for n in nodes],
                        "line": {
                            "width": [3 if n.node_id in marks else 0 for n in nodes],
                            "color": "black",
                        },
                    },
                )
            )
            if top_id is not None:
                # the name where most of the cluster's chunks lie (a summary sits at the mean
                # of its children, which a few far ones pull towards the middle of the plot)
                leaves = [n for n in nodes if n.level == 0] or nodes
                x, y = statistics.median(n.umap_x for n in leaves), statistics.median(n.umap_y for n in leaves)
                fig.add_annotation(x=x, y=y, text=f"<b>{html.escape(name)}</b>", showarrow=False,
                                   font={"size": 12, "color": colour}, bgcolor="rgba(255,255,255,0.8)")
        fig.update_layout(title=f"RAPTOR tree layout: the clusters of level {named_level}, named by their summaries",
                          xaxis={"visible": False}, yaxis={"visible": False}, legend_title=f"level {named_level} cluster")
        return fig

    def plot_sunburst(self, highlight: Iterable[str] = (), *, max_depth: int | None = None) -> go.Figure:
        """The tree as a sunburst of node titles (each node under its first parent);
        ``highlight`` node ids are drawn in a strong colour, the rest pale."""
        go = _plotly()
        marks = set(highlight)
        ids, parents, labels, hover, colours = [], [], [], [], []
        # highest level first, so that every first parent is placed before its children
        for node in sorted(self.tree.nodes, key=lambda n: (-n.level, self.tree.position(n.node_id))):
            nid = node.node_id
            parent = node.parents[0] if node.parents else ""
            ids.append(nid)
            parents.append(parent)
            labels.append(_short(node.title or nid, 40))
            hover.append(f"{nid} (level {node.level}, {len(node.chunk_ids)} chunks)")
            colours.append("#d62728" if nid in marks else ("#9ecae1" if node.level else "#deebf7"))
        fig = go.Figure(
            go.Sunburst(
                ids=ids,
                parents=parents,
                labels=labels,
                hovertext=hover,
                hoverinfo="label+text",
                marker={"colors": colours},
                maxdepth=max_depth if max_depth is not None else -1,
            )
        )
        fig.update_layout(title="RAPTOR tree", margin={"t": 40, "l": 0, "r": 0, "b": 0})
        return fig


def naming_level(sizes: dict[int, int], most: int = 16) -> int:
    """The level whose clusters name a layout's colours (``sizes``: nodes per level): the
    lowest summary level of 2 to ``most`` nodes (a longer legend is read by nobody), else
    the highest summary level of several nodes, else the top level."""
    several = sorted(level for level, n in sizes.items() if level > 0 and n > 1)
    fitting = [level for level in several if sizes[level] <= most]
    if fitting:
        return fitting[0]
    return several[-1] if several else max(sizes, default=0)


# sixteen colours told apart on white (Tableau 10 and six of Tableau 20), one per named cluster
_PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
            "#2f4b7c", "#499894", "#d37295", "#b6992d", "#8cd17d", "#86bcb6", "#bab0ac")


def _label(node: Node) -> str:
    # where a summary comes from: the manual's outline, or a cluster and what named it
    origin = f" {node.origin}" + (f" · {node.label}" if node.origin == "cluster" and node.label else "") if node.origin else ""
    kind = "chunk" if node.is_leaf else f"L{node.level}{origin}"
    title = node.title if not node.is_leaf else (node.title or node.node_id)
    return f"[{kind}] {node.node_id}: {_short(title, 80)} ({len(node.chunk_ids)} chunks)"


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
