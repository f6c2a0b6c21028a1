"""What the example notebooks share: the slice of the SQLite manual they index, where
that index lives, and offline display of plotly figures and of records that have no
HTML view of their own.

The notebooks build one index over :data:`SUBSET` (a few minutes for the whole manual
is too slow for a tour) into the directory named by ``ARBORGRAPH_NB_INDEX``, or a
fixed folder under the system temp directory. The first notebook to run builds it;
the others open it, or build it when it is missing, so each one runs on its own.
"""

from __future__ import annotations

import html
import json
import os
import tempfile
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

# tqdm.auto (imported by the embedding stack) warns in Jupyter when ipywidgets is
# missing; the notebooks show no progress bars, so the warning is only noise.
warnings.filterwarnings("ignore", message="IProgress not found")

import arborgraph  # noqa: E402
from arborgraph.config import Config  # noqa: E402
from arborgraph.kb import KnowledgeBase  # noqa: E402
from arborgraph.store import IndexError_  # noqa: E402
from raptor import RaptorConfig  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MANUAL = ROOT / "examples" / "sqlite"
QUESTIONS = ROOT / "benchmarks" / "questions" / "sqlite.jsonl"
INDEX_ENV = "ARBORGRAPH_NB_INDEX"

# Cross-linked pages about WAL, locking, transactions, busy handling, limits and table
# definitions: enough for every route to have something to find, and the pages the
# evidence of 19 questions of benchmarks/questions/sqlite.jsonl lives on.
SUBSET: tuple[str, ...] = (
    "wal.md", "lockingv3.md", "isolation.md", "whentouse.md", "tempfiles.md",
    "lang_transaction.md", "lang_savepoint.md", "lang_vacuum.md", "transactional.md",
    "c3ref_busy_timeout.md", "c3ref_busy_handler.md", "c3ref_wal_autocheckpoint.md",
    "c3ref_wal_checkpoint_v2.md", "c3ref_wal_hook.md", "c3ref_c_checkpoint_full.md",
    "c3ref_commit_hook.md", "c3ref_txn_state.md", "c3ref_get_autocommit.md",
    "c3ref_interrupt.md", "autoinc.md", "withoutrowid.md", "stricttables.md",
    "foreignkeys.md", "limits.md", "c3ref_limit.md", "c3ref_c_limit_attached.md",
    "security.md", "c3ref_set_authorizer.md",
)


def index_dir() -> Path:
    """Where the notebooks' index lives: ``$ARBORGRAPH_NB_INDEX`` or a temp folder."""
    chosen = os.environ.get(INDEX_ENV)
    if chosen:
        return Path(chosen)
    return Path(tempfile.gettempdir()) / "arborgraph-notebooks" / "index"


def subset_paths() -> list[Path]:
    """The manual pages the notebooks index."""
    return [MANUAL / name for name in SUBSET]


def build_config() -> Config:
    """Default settings, except that the tree uses UMAP from 200 points on.

    By default UMAP starts at 500 points (below that a seeded PCA is cheaper than
    numba's compile); the slice has about 300 chunks and the notebooks want the UMAP
    layout, so the threshold is lowered. Small local clusters still use PCA.
    """
    return Config(tree=RaptorConfig(umap_min_points=200))


def index_ready(path: Path | None = None) -> bool:
    """True when ``path`` holds a usable index of exactly the subset."""
    try:
        kb = arborgraph.open(path or index_dir())
    except IndexError_:
        return False
    return set(kb.store.docs) == set(SUBSET)


def open_or_build(path: Path | None = None) -> KnowledgeBase:
    """Open the notebooks' index, building it first when it is missing or stale."""
    path = path or index_dir()
    if index_ready(path):
        print(f"opened the index at {path}")
        return arborgraph.open(path)
    print(f"building the index at {path} from {len(SUBSET)} pages (about a minute) ...")
    started = time.perf_counter()
    kb = arborgraph.build(subset_paths(), path, build_config())
    print(f"built in {time.perf_counter() - started:.0f} s")
    return kb


# -- display ---------------------------------------------------------------------

_plotlyjs_shown = False


def show(fig: Any, *, height: int | None = None) -> None:
    """Display a plotly figure so that it also renders offline once exported to HTML.

    The HTML view carries plotly.js inline with the first figure a kernel shows (later
    figures reuse it) and no CDN or MathJax link; JupyterLab and VS Code draw the
    plotly JSON view instead, which needs no script at all.
    """
    from IPython.display import display

    global _plotlyjs_shown
    if height is not None:
        fig.update_layout(height=height)
    page = fig.to_html(
        include_plotlyjs=not _plotlyjs_shown,
        include_mathjax=False,
        full_html=False,
        default_width="100%",
        default_height=height or 500,
    )
    _plotlyjs_shown = True
    display({"application/vnd.plotly.v1+json": json.loads(fig.to_json()), "text/html": page}, raw=True)


def show_page(page: str, *, height: int = 640) -> None:
    """Display a standalone HTML page (e.g. ``GraphView.plot_community``) in a frame."""
    from IPython.display import HTML, display

    display(
        HTML(
            f'<div><iframe srcdoc="{html.escape(page, quote=True)}" sandbox="allow-scripts" '
            f'style="width:100%;height:{height}px;border:1px solid #ddd"></iframe></div>'
        )
    )


def table(rows: Any, columns: Sequence[str] | None = None, *, max_width: int = 90) -> Any:
    """An HTML table of a pyarrow table or a list of dicts (long cells shortened)."""
    from IPython.display import HTML

    if hasattr(rows, "to_pylist"):
        rows = rows.to_pylist()
    rows = list(rows)
    columns = list(columns or (rows[0].keys() if rows else []))
    head = "".join(f"<th style='text-align:left'>{html.escape(str(c))}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td style='text-align:left'>{html.escape(_cell(r.get(c), max_width))}</td>" for c in columns) + "</tr>"
        for r in rows
    )
    return HTML(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def _cell(value: Any, width: int) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, (list, tuple)):
        value = ", ".join(str(v) for v in value)
    text = " ".join(str("" if value is None else value).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _card(title: str, fields: Mapping[str, Any], text: str = "") -> Any:
    from IPython.display import HTML

    rows = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th>"
        f"<td style='text-align:left'>{html.escape(_cell(v, 200))}</td></tr>"
        for k, v in fields.items()
    )
    body = f"<div style='white-space:pre-wrap;margin-top:6px'>{html.escape(text)}</div>" if text else ""
    return HTML(
        "<div style='border:1px solid #ccc;border-radius:6px;padding:8px;max-width:760px'>"
        f"<b>{html.escape(title)}</b><table>{rows}</table>{body}</div>"
    )


def node_card(node: Any, *, text_chars: int = 600) -> Any:
    """HTML view of a tree node (``raptor.Node`` has no ``_repr_html_``)."""
    text = node.text if len(node.text) <= text_chars else node.text[:text_chars] + " …"
    return _card(
        f"{node.node_id}: {node.title}",
        {
            "level": node.level,
            "cluster": node.cluster,
            "children": len(node.children),
            "parents": node.parents,
            "chunks covered": len(node.chunk_ids),
            "documents": node.doc_ids,
            "summariser": node.summariser or "(leaf chunk)",
        },
        text,
    )


def entity_card(entity: Any, degree: int | None = None) -> Any:
    """HTML view of a graph entity (``graphrag.Entity`` has no ``_repr_html_``)."""
    fields: dict[str, Any] = {"id": entity.id, "type": entity.type, "aliases": entity.aliases}
    if degree is not None:
        fields["degree"] = degree
    fields["mentioned in"] = f"{len(entity.mentions)} chunks"
    return _card(entity.name, fields, entity.description)


def community_card(info: Mapping[str, Any], *, members: int = 25, report_chars: int = 400) -> Any:
    """HTML view of ``GraphView.community(id)`` (communities have no ``_repr_html_``)."""
    shown = list(info["members"])[:members]
    more = len(info["members"]) - len(shown)
    report = info["report"] or "(no report)"
    return _card(
        f"community {info['id']} (level {info['level']})",
        {
            "parent": "(top level)" if info["parent"] is None else info["parent"],
            "children": info["children"] or "(none)",
            "members": ", ".join(shown) + (f" … and {more} more" if more > 0 else ""),
            "findings": len(info["findings"]),
        },
        report if len(report) <= report_chars else report[:report_chars] + " …",
    )


def ids_on_path(traces: Iterable[str]) -> list[str]:
    """Tree node ids named in ``tree: A -> B -> ... -> chunk`` traces, in order, once.

    Other steps (``lookup/...``, ``tree: leaf outside the beam``, ...) name no path.
    """
    out: list[str] = []
    for step in traces:
        if not step.startswith("tree:") or "->" not in step:
            continue
        for part in step.removeprefix("tree:").split("->"):
            part = part.strip()
            if part and part != "chunk" and part not in out:
                out.append(part)
    return out
