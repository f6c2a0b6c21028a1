"""Exploring a tree in Python and Jupyter: navigation, an outline, HTML, graphs, plots.

Plots need the optional ``viz`` extra (plotly); it is imported only when a plot is
asked for. Figures written with :func:`figure_html` inline plotly's JavaScript, so the
HTML works offline.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from raptor.tree import Node, Tree

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx
    import plotly.graph_objects as go

_VIZ_HINT = "plots need the optional 'viz' extra: pip install 'arborgraph[viz]'"


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
        mean of its children): colour = the root's child each node lies under (its
        first parents up), named in the legend and written at that summary's place;
        symbol and size = level; ``highlight`` node ids (e.g. a drill-down path) are ringed."""
        go = _plotly()
        marks = set(highlight)
        tree = self.tree
        root = tree.root_id
        branches = list(tree.node(root).children) or [root]
        branch_of: dict[str, str] = {}

        def branch(node_id: str) -> str:
            seen = []
            while node_id not in branch_of and node_id != root and node_id not in branches:
                seen.append(node_id)
                parents = tree.node(node_id).parents
                if not parents:
                    break
                node_id = parents[0]
            found = branch_of.get(node_id, node_id if node_id in branches else root)
            for s in seen:
                branch_of[s] = found
            return found

        groups: dict[str, list[Node]] = {b: [] for b in [*branches, root]}
        for level, ids in sorted(self.levels.items()):
            if level == 0 and not show_leaves:
                continue
            for i in ids:
                groups[branch(i) if i != root else root].append(tree.node(i))
        fig = go.Figure()
        for k, (head, nodes) in enumerate(groups.items()):
            if not nodes:
                continue
            name = "root" if head == root else _short(tree.node(head).title or head, 36)
            colour = "#333333" if head == root else _PALETTE[k % len(_PALETTE)]
            fig.add_trace(
                go.Scatter(
                    x=[n.umap_x for n in nodes],
                    y=[n.umap_y for n in nodes],
                    mode="markers",
                    name=name,
                    text=[f"{n.node_id} (level {n.level}): {n.title}" for n in nodes],
                    hoverinfo="text",
                    marker={
                        "size": [5 + 4 * n.level for n in nodes],
                        "symbol": ["circle" if n.level == 0 else "diamond" for n in nodes],
                        "color": colour,
                        "opacity": [0.45 if n.level == 0 else 0.95 for n in nodes],
                        "line": {
                            "width": [3 if n.node_id in marks else 0 for n in nodes],
                            "color": "black",
                        },
                    },
                )
            )
            if head != root:  # the cluster's name where its summary sits
                top = tree.node(head)
                fig.add_annotation(x=top.umap_x, y=top.umap_y, text=f"<b>{html.escape(name)}</b>", showarrow=False,
                                   yshift=14, font={"size": 12, "color": colour}, bgcolor="rgba(255,255,255,0.75)")
        fig.update_layout(title="RAPTOR tree layout: the root's clusters, named by their summaries",
                          xaxis={"visible": False}, yaxis={"visible": False}, legend_title="cluster under the root")
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


# ten colours told apart on white (Tableau 10)
_PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#2f4b7c")


def _label(node: Node) -> str:
    kind = "chunk" if node.is_leaf else f"L{node.level}"
    title = node.title if not node.is_leaf else (node.title or node.node_id)
    return f"[{kind}] {node.node_id}: {_short(title, 80)} ({len(node.chunk_ids)} chunks)"


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
