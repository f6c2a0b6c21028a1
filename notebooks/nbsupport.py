"""What the example notebooks share: which index they explore, offline display of
plotly figures, tables, and the tree path named in a query's traces.

The notebooks explore the index at ``$ARBORGRAPH_NB_INDEX``, or ``.demo-index`` in the
repository (what ``scripts/demo`` builds). A relative ``$ARBORGRAPH_NB_INDEX`` is taken
from the directory Jupyter (or nbconvert) was started in, not the notebook's folder the
kernel runs in. An index already there is opened as it is, never rebuilt; when there is
none, a notebook stops with an error naming the path, unless ``ARBORGRAPH_NB_BUILD=1``
asks it to build the whole sample manual there. ``ARBORGRAPH_NB_SUBSET=1`` builds
:data:`SUBSET` (28 pages) instead: the test suite runs the notebooks on that slice to
stay within its time budget.
"""

from __future__ import annotations

import html
import json
import os
import time
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

# tqdm.auto (imported by the embedding stack) warns in Jupyter when ipywidgets is
# missing; the notebooks show no progress bars, so the warning is only noise.
warnings.filterwarnings("ignore", message="IProgress not found")

import arborgraph  # noqa: E402
from arborgraph.config import Config  # noqa: E402
from arborgraph.kb import KnowledgeBase  # noqa: E402
from arborgraph.index.layout import CURRENT  # noqa: E402
from raptor import RaptorConfig  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MANUAL = ROOT / "examples" / "sqlite"
QUESTIONS = ROOT / "benchmarks" / "questions" / "sqlite.jsonl"
INDEX_ENV = "ARBORGRAPH_NB_INDEX"
SUBSET_ENV = "ARBORGRAPH_NB_SUBSET"
BUILD_ENV = "ARBORGRAPH_NB_BUILD"
DEMO_INDEX = ROOT / ".demo-index"

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


class NoIndex(RuntimeError):
    """There is no index where the notebooks look, and no build was asked for."""

    def _render_traceback_(self) -> list[str]:  # IPython shows this instead of a traceback
        return [f"NoIndex: {self}"]


def started_in() -> Path:
    """The directory Jupyter or nbconvert was started in.

    Both run the kernel in the notebook's folder, but the kernel inherits the caller's
    environment, whose ``$PWD`` the shell set to where the command was typed.
    """
    pwd = os.environ.get("PWD", "")
    if pwd and Path(pwd).is_absolute() and Path(pwd).is_dir():
        return Path(pwd)
    return Path.cwd()


def index_dir() -> Path:
    """Where the notebooks' index lives: ``$ARBORGRAPH_NB_INDEX`` (a relative path taken
    from :func:`started_in`) or ``.demo-index`` in the repository."""
    chosen = os.environ.get(INDEX_ENV)
    if not chosen:
        return DEMO_INDEX
    path = Path(chosen).expanduser()
    return path if path.is_absolute() else started_in() / path


def build_requested() -> bool:
    """True when ``$ARBORGRAPH_NB_BUILD`` asks a notebook to build a missing index."""
    return os.environ.get(BUILD_ENV, "") not in ("", "0")


def subset_only() -> bool:
    """True when ``$ARBORGRAPH_NB_SUBSET`` asks for the 28-page slice (the tests do)."""
    return os.environ.get(SUBSET_ENV, "") not in ("", "0")


def pages() -> list[Path]:
    """The manual pages a build indexes: the slice, or every page of the sample manual."""
    if subset_only():
        return [MANUAL / name for name in SUBSET]
    return sorted(MANUAL.glob("*.md"))


def build_config() -> Config:
    """Default settings; on the slice the tree uses UMAP from 200 points on.

    By default UMAP starts at 500 points (below that a seeded PCA is cheaper than
    numba's compile); the slice has about 300 chunks and the notebooks want the UMAP
    layout, so there the threshold is lowered. Small local clusters still use PCA.
    """
    return Config(tree=RaptorConfig(umap_min_points=200)) if subset_only() else Config()


def has_index(path: Path) -> bool:
    """True when a build has completed at ``path`` (it names a live generation).

    Such an index is only ever opened: if it cannot be, the error says why, rather
    than a build replacing it with another one.
    """
    return (path / CURRENT).is_file()


def open_or_build(path: Path | None = None, *, build: bool | None = None) -> KnowledgeBase:
    """Open the index at ``path`` (default :func:`index_dir`); when there is none, build
    it if ``build`` (default: ``$ARBORGRAPH_NB_BUILD``) asks, else raise :class:`NoIndex`
    naming the path.

    A build takes minutes and a few processes: it never starts unasked (a mistyped
    path would otherwise silently begin indexing the whole manual somewhere else).
    """
    path = path or index_dir()
    if has_index(path):
        kb = arborgraph.open(path)
        print(f"opened the index at {path} ({len(kb.index.store.docs)} pages)")
        return kb
    chosen = pages()
    if not (build_requested() if build is None else build):
        raise NoIndex(
            f"no index at {path}: build one with scripts/demo (it makes .demo-index), point "
            f"{INDEX_ENV} at an index (a relative path is taken from {started_in()}), or set "
            f"{BUILD_ENV}=1 before starting Jupyter to build {len(chosen)} pages of the sample manual there"
        )
    print(f"no index at {path}: building {len(chosen)} pages of the sample manual ...")
    started = time.perf_counter()
    kb = arborgraph.build(chosen, path, build_config())
    print(f"built in {time.perf_counter() - started:.0f} s")
    return kb


# -- display ---------------------------------------------------------------------


def init_offline() -> None:
    """Display plotly.js itself, inlined: call it once in a notebook's first code cell.

    Every :func:`show` after it relies on this output for the notebook's HTML view and
    its export, so re-running any figure cell keeps the script in the saved notebook;
    re-running this cell replaces its own output, still once. JupyterLab and VS Code
    draw the plotly JSON view of each figure instead and need no script.
    """
    from IPython.display import HTML, display
    from plotly.offline import get_plotlyjs

    display(
        HTML(
            "<script type='text/javascript'>window.PlotlyConfig = {MathJaxConfig: 'local'};</script>"
            f"<script type='text/javascript'>{get_plotlyjs()}</script>"
        ),
        metadata={"arborgraph": "plotly.js"},
    )


def show(fig: Any, *, height: int | None = None) -> None:
    """Display a plotly figure that also draws offline once exported to HTML.

    The HTML view links no CDN and no MathJax and carries no plotly.js: the bundle is
    the output of :func:`init_offline`, earlier in the page.
    """
    from IPython.display import display

    if height is not None:
        fig.update_layout(height=height)
    page = fig.to_html(
        include_plotlyjs=False,
        include_mathjax=False,
        full_html=False,
        default_width="100%",
        default_height=height or 500,
    )
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
