"""The example notebooks: committed without outputs, run top to bottom on a slice of the
sample manual, show what they promise, and their HTML export draws its figures in a
browser with no network at all.

The four notebooks share one index (``ARBORGRAPH_NB_INDEX``): the quickstart builds it
(``ARBORGRAPH_NB_BUILD=1``) over the 28-page slice (``ARBORGRAPH_NB_SUBSET=1``; users
get the whole manual), the others open it. Each runs in a fresh kernel of this interpreter, as in Jupyter; the
quickstart's figure cell then runs a second time, as a user re-running it would.

Without Chromium the rendering tests skip, except on CI (``$CI`` set), where they fail.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = ["01_quickstart.ipynb", "02_tree.ipynb", "03_communities.ipynb", "04_router.ipynb"]
ROUTES = ["lookup", "tree", "graph", "global"]
SYSTEMS = ["auto", *ROUTES, "baseline:bm25", "baseline:dense", "baseline:hybrid"]
KERNEL = "arborgraph-notebook-test"
PLOTLY_BANNER = "* plotly.js v"  # the licence header at the top of the inlined bundle
CHROMIUM_HINT = "apt-get install -y chromium"


def test_committed_notebooks_have_no_outputs() -> None:
    assert sorted(p.name for p in NOTEBOOK_DIR.glob("*.ipynb")) == NOTEBOOKS
    for name in NOTEBOOKS:
        nb = nbformat.read(NOTEBOOK_DIR / name, as_version=4)
        nbformat.validate(nb)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                assert cell.outputs == [], f"{name} cell {i} has outputs: strip them"
                assert cell.execution_count is None, f"{name} cell {i} has an execution count"
            assert "attachments" not in cell, f"{name} cell {i} has attachments"
        assert "widgets" not in nb.metadata, f"{name} carries widget state"


# -- running them ----------------------------------------------------------------------


def _kernel_spec(where: Path) -> Path:
    """A kernel spec for this interpreter, so the notebooks run in the test's venv."""
    spec = where / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "arborgraph tests",
                "language": "python",
            }
        ),
        encoding="utf-8",
    )
    return where


def _figure_cells(nb: Any) -> list[int]:
    return [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and "nbsupport.show(" in cell.source]


def _run(nb: Any, rerun: list[int]) -> None:
    """Every cell in order in one fresh kernel, then the cells ``rerun`` once more."""
    from nbclient import NotebookClient

    client = NotebookClient(
        nb,
        kernel_name=KERNEL,
        timeout=900,  # the quickstart's build cell; every other cell takes seconds
        startup_timeout=120,
        allow_errors=True,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    client.reset_execution_trackers()
    with client.setup_kernel():
        for i in [*range(len(nb.cells)), *rerun]:
            client.execute_cell(nb.cells[i], i, execution_count=client.code_cells_executed + 1)


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Each notebook executed in order in its own kernel, errors kept as outputs; the
    quickstart's figure cells run twice."""
    work = tmp_path_factory.mktemp("notebooks")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", str(_kernel_spec(work / "jupyter")))
        mp.setenv("ARBORGRAPH_NB_INDEX", str(work / "index"))
        mp.setenv("ARBORGRAPH_NB_SUBSET", "1")
        mp.setenv("ARBORGRAPH_NB_BUILD", "1")
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        done = {}
        for name in NOTEBOOKS:
            nb = nbformat.read(NOTEBOOK_DIR / name, as_version=4)
            _run(nb, _figure_cells(nb) if name == NOTEBOOKS[0] else [])
            done[name] = nb
        yield done


def test_a_relative_index_path_is_taken_from_where_jupyter_started_and_never_built_unasked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ARBORGRAPH_NB_INDEX=.demo-index jupyter nbconvert --execute notebooks/01_...``
    from the repository once looked under notebooks/ (the kernel's folder) and silently
    began building all 290 pages there (#38 item 4)."""
    monkeypatch.setenv("JUPYTER_PATH", str(_kernel_spec(tmp_path / "jupyter")))
    monkeypatch.setenv("ARBORGRAPH_NB_INDEX", "no-such-index")
    monkeypatch.setenv("PWD", str(tmp_path))  # what the shell sets where nbconvert is typed
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name in ("ARBORGRAPH_NB_BUILD", "ARBORGRAPH_NB_SUBSET"):
        monkeypatch.delenv(name, raising=False)
    nb = nbformat.read(NOTEBOOK_DIR / NOTEBOOKS[0], as_version=4)
    opening = next(i for i, cell in enumerate(nb.cells) if "nbsupport.open_or_build(" in cell.source)
    code = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and i <= opening]
    nb.cells = [nb.cells[i] for i in code]
    _run(nb, [])  # in the notebook's folder, as nbconvert runs it
    errors = [out for _, out in _outputs(nb) if out.output_type == "error"]
    assert [e.ename for e in errors] == ["NoIndex"]
    wanted = tmp_path / "no-such-index"
    assert errors[0].evalue.startswith(f"no index at {wanted}: build one with scripts/demo")
    assert "ARBORGRAPH_NB_BUILD=1" in errors[0].evalue
    assert errors[0].traceback == [f"NoIndex: {errors[0].evalue}"]  # one line, no traceback
    assert "building" not in _text(nb)
    assert not wanted.exists() and not (NOTEBOOK_DIR / "no-such-index").exists()


def _outputs(nb: Any) -> Iterator[tuple[int, Any]]:
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            for out in cell.outputs:
                yield i, out


def _text(nb: Any) -> str:
    """Everything printed or returned as plain text."""
    parts = []
    for _, out in _outputs(nb):
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type in ("execute_result", "display_data"):
            parts.append(out.data.get("text/plain", ""))
    return "\n".join(parts)


def _html(nb: Any) -> list[str]:
    return [out.data["text/html"] for _, out in _outputs(nb) if "data" in out and "text/html" in out.data]


def _inline(nb: Any) -> list[str]:
    """HTML outputs drawn in the notebook's own page (not standalone pages in a frame)."""
    return [h for h in _html(nb) if "<iframe srcdoc=" not in h]


def _plotly_outputs(nb: Any) -> list[str]:
    return [h for h in _inline(nb) if "Plotly.newPlot" in h]


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_without_errors(executed: dict[str, Any], name: str) -> None:
    errors = [
        f"cell {i}: {out.ename}: {out.evalue}" for i, out in _outputs(executed[name]) if out.output_type == "error"
    ]
    assert not errors, "\n".join(errors)
    stderr = [out.text for _, out in _outputs(executed[name]) if out.output_type == "stream" and out.name == "stderr"]
    assert not stderr, "".join(stderr)


def _check_offline_figures(nb: Any, figures: int) -> list[str]:
    """``figures`` plotly figures, plotly.js inlined exactly once (by the first code cell,
    before any figure), no script from the network."""
    plots = _plotly_outputs(nb)
    assert len(plots) == figures
    assert sum(h.count(PLOTLY_BANNER) for h in _inline(nb)) == 1
    first_code = next(cell for cell in nb.cells if cell.cell_type == "code")
    assert any(PLOTLY_BANNER in out.get("data", {}).get("text/html", "") for out in first_code.outputs)
    for h in _inline(nb):
        assert not re.search(r"<script[^>]*\ssrc=", h), "a figure loads a script from elsewhere"
    return plots


@pytest.mark.slow
def test_rerunning_a_figure_cell_keeps_plotlyjs(executed: dict[str, Any], tmp_path: Path) -> None:
    """The quickstart as saved after its figure cell ran again still carries plotly.js
    (test_quickstart_html_export_draws_its_figure_offline draws it in a browser)."""
    nbformat.write(executed["01_quickstart.ipynb"], tmp_path / "saved.ipynb")
    nb = nbformat.read(tmp_path / "saved.ipynb", as_version=4)
    (figure,) = _figure_cells(nb)
    counts = [cell.execution_count for cell in nb.cells if cell.cell_type == "code"]
    assert nb.cells[figure].execution_count == max(counts) > len(counts)  # it ran last, a second time
    _check_offline_figures(nb, figures=1)


@pytest.mark.slow
def test_quickstart_outputs(executed: dict[str, Any]) -> None:
    nb = executed["01_quickstart.ipynb"]
    text, pages = _text(nb), "\n".join(_html(nb))
    assert re.search(r"^28 pages in \S+: autoinc.md, ", text, re.M)
    assert "Arborgraph knowledge base" in pages and "lookup, tree, graph, global" in pages
    assert re.search(r"^route: (lookup|tree|graph|global)\nwhy: +looks like", text, re.M)
    for route in ROUTES:
        assert f"route <b>{route}</b> (forced)" in pages
        assert re.search(rf"^\s*{route}: +\d+ contexts; auto would pick (lookup|tree|graph|global) ", text, re.M)
    assert "route: tree (forced" in text and re.search(r"tree: L\d+:\d+ -> L\d+:\d+", text)
    assert "route: graph (forced" in text and re.search(r"^  \[\d+\] relation \S+\|", text, re.M)
    assert "Maximum length of a string or BLOB" in text  # the cited chunk, read in full
    assert '"contexts": [' in text  # to_dict as JSON
    (bars,) = _check_offline_figures(nb, figures=1)
    assert '"type":"bar"' in bars


@pytest.mark.slow
def test_tree_notebook_outputs(executed: dict[str, Any]) -> None:
    nb = executed["02_tree.ipynb"]
    text = _text(nb)
    outline = next(
        out.text for _, out in _outputs(nb) if out.output_type == "stream" and out.text.startswith("[L")
    )
    assert "Foreign Key" in outline
    # each line says where its node comes from: the manual's outline, or a cluster and
    # what named it
    line_re = r"^\s*\[L\d+ (?:outline|cluster · (?:title|keyphrases))\] L\d+:\d+: (.*) \(\d+ chunks\)$"
    assert all(re.match(line_re, line) for line in outline.splitlines()), outline
    assert "outline]" in outline  # the manual's own pages show under the clusters
    # each node is named, never with page titles strung together
    names = [re.sub(line_re, r"\1", line) for line in outline.splitlines()]
    assert all(name.strip() and " · " not in name for name in names), names
    pages = "\n".join(_html(nb))
    assert "RAPTOR tree" in pages  # TreeView's HTML view
    assert pages.count("<span style='color:#777'>summary · level ") == 2  # two nodes' own cards
    path = re.search(r"the path to the summary the route settled on:\n((?:  level .*\n)+)", text)
    assert path is not None
    steps = re.findall(r"level (\d+) +(L\d+:\d+) ", path.group(1))
    levels = [int(level) for level, _ in steps]
    # root first, each step lower (an outline node's parent may be several levels up)
    assert levels == sorted(levels, reverse=True) and len(set(levels)) == len(levels) and levels[-1] >= 1
    visited = re.search(r"passed through to any returned context: (.+)", text).group(1).split(", ")  # type: ignore[union-attr]
    assert {node for _, node in steps} <= set(visited)
    assert all(re.fullmatch(r"L\d+:\d+", node) for node in visited)
    plots = _check_offline_figures(nb, figures=4)
    layout, sunburst, layout_path, sunburst_path = plots
    assert '"type":"scatter"' in layout and '"type":"sunburst"' in sunburst
    assert "#d62728" not in sunburst and "#d62728" in sunburst_path  # the path is highlighted
    ringed = re.compile(r'"line":\{"color":"black","width":\[[0-9,]*\b3\b')
    assert ringed.search(layout_path) and not ringed.search(layout)
    assert "plotly.js inlined: True" in text


@pytest.mark.slow
def test_communities_notebook_outputs(executed: dict[str, Any]) -> None:
    nb = executed["03_communities.ipynb"]
    text, pages = _text(nb), _html(nb)
    assert any(p.startswith("<div><b>Knowledge graph</b>") for p in pages)
    community = next(p for p in pages if re.search(r"<b>community \d+: .+</b> <span[^>]*>level 0 · ", p))
    assert re.search(r"<th[^>]*>members</th><td>[^<]*\bWAL\b", community)  # names, not ids
    title = re.search(r"<b>community (\d+): (.+?)</b>", community)
    report = next(p for p in pages if f"<span style='color:#777'>community {title.group(1)} · level 0 · rank" in p)  # type: ignore[union-attr]
    assert f"<b>{title.group(2)}</b>" in report and "grounded in" in report  # type: ignore[union-attr]
    assert any("<span style='color:#777'>entity · " in p and "<b>journal_mode</b>" in p for p in pages)
    assert "grounded in" in text
    treemap, overview = _check_offline_figures(nb, figures=2)
    assert '"type":"treemap"' in treemap
    # the community overview: one named disc per community, not every entity
    assert '"mode":"markers+text"' in overview and "Communities at level 0" in overview
    frames = [p for p in pages if "<iframe srcdoc=" in p]
    assert len(frames) == 1
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', frames[0]).group(1))  # type: ignore[union-attr]
    assert page.count(PLOTLY_BANNER) == 1 and not re.search(r"<script[^>]*\ssrc=", page)
    hops = re.findall(r"^(.+) —(.+)→ (.+)$", text, re.M)
    assert hops and hops[0][0] == "journal_mode" and hops[-1][2] == "sqlite3_wal_checkpoint_v2()"
    assert all(a[2] == b[0] for a, b in zip(hops, hops[1:], strict=False))  # the hops chain up
    assert re.search(r"sqlite3_busy_timeout: community \d+ \(level \d", text)
    assert "GraphML:" in text


@pytest.mark.slow
def test_router_notebook_outputs(executed: dict[str, Any]) -> None:
    nb = executed["04_router.ipynb"]
    text, pages = _text(nb), _html(nb)
    decisions = next(p for p in pages if "How does WAL mode work?" in p)
    for route in ROUTES:
        assert f"<th style='text-align:left'>{route}</th>" in decisions  # a score column
    assert decisions.count("<tr>") == 1 + 9  # the header, then one row per question
    assert re.search(r"^question: .+\nroute: \w+ \(auto, confidence", text, re.M)
    kept = re.search(r"^(\d+) of (\d+) questions have all their evidence in the 28 pages indexed", text, re.M)
    assert kept is not None and 10 <= int(kept.group(1)) < int(kept.group(2))
    report = next(p for p in pages if "evidence recall" in p and "p50 ms" in p)
    for system in SYSTEMS:
        assert f"<td style='text-align:left'>{html.escape(system)}</td>" in report
        assert re.search(rf"^{re.escape(system)} +\d", text, re.M)  # format_report's row
    heatmap, bars = _check_offline_figures(nb, figures=2)
    assert '"type":"heatmap"' in heatmap and '"type":"bar"' in bars
    for system in SYSTEMS:
        assert f'"{system}"' in bars


# -- the HTML export in a browser --------------------------------------------------------


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    missing = f"headless Chromium is not installed ({CHROMIUM_HINT}; scripts/test installs it)"
    if os.environ.get("CI"):
        pytest.fail(f"{missing}: CI must run the rendering tests")
    pytest.skip(missing)


def _render(page: Path, profile: Path) -> Any:
    """The DOM of ``page`` after its scripts ran, in a browser that cannot resolve any host."""
    from bs4 import BeautifulSoup

    run = subprocess.run(
        [
            _chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--host-resolver-rules=MAP * ~NOTFOUND", f"--user-data-dir={profile}",
            "--virtual-time-budget=10000", "--dump-dom", page.as_uri(),
        ],
        capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return BeautifulSoup(run.stdout, "lxml")


def _drawn(paths: list[Any]) -> list[Any]:
    """SVG paths with real geometry (plotly draws empty ones as ``M0,0Z``)."""
    return [p for p in paths if len(p.get("d", "")) > 8]


REMOTE_CODE = re.compile(r"""(\bsrc=|\bimport\()\s*["']https?:""")


def _export(nb: Any, out: Path) -> Path:
    """The notebook as notebooks/export_html.py exports it (what users run)."""
    pytest.importorskip("nbconvert", reason="the HTML export needs nbconvert")
    sys.path.insert(0, str(NOTEBOOK_DIR))
    try:
        from export_html import offline_html
    finally:
        sys.path.remove(str(NOTEBOOK_DIR))
    body = offline_html(nb)
    assert not REMOTE_CODE.search(body), "the export loads code from the network"
    assert not re.search(r"<script[^>]*\ssrc=[^>]*(mathjax|require|mermaid)", body, re.IGNORECASE)
    out.write_text(body, encoding="utf-8")
    return out


def test_the_export_script_writes_offline_pages(tmp_path: Path) -> None:
    """The command users run, on a committed notebook (no outputs: no figure either)."""
    run = subprocess.run(
        [sys.executable, str(NOTEBOOK_DIR / "export_html.py"), str(NOTEBOOK_DIR / NOTEBOOKS[1]), "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    page = (tmp_path / "02_tree.html").read_text(encoding="utf-8")
    assert "The RAPTOR tree" in page and not REMOTE_CODE.search(page)
    run = subprocess.run([sys.executable, str(NOTEBOOK_DIR / "export_html.py"), str(tmp_path / "none.ipynb")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stderr.count("\n") == 1


@pytest.mark.slow
def test_quickstart_html_export_draws_its_figure_offline(executed: dict[str, Any], tmp_path: Path) -> None:
    _chromium()
    page = _export(executed["01_quickstart.ipynb"], tmp_path / "quickstart.html")
    dom = _render(page, tmp_path / "profile")
    plots = dom.select("div.js-plotly-plot")
    assert len(plots) == 1
    assert plots[0].select("svg.main-svg")
    bars = _drawn(plots[0].select("g.point path"))
    assert len(bars) >= len(ROUTES)  # every route returned something
    assert {t.get_text() for t in plots[0].select("g.xtick text")} == set(ROUTES)


@pytest.mark.slow
def test_tree_html_export_draws_every_node_offline(executed: dict[str, Any], tmp_path: Path) -> None:
    _chromium()
    nb = executed["02_tree.ipynb"]
    nodes = int(re.search(r"'nodes': (\d+)", _text(nb)).group(1))  # type: ignore[union-attr]
    dom = _render(_export(nb, tmp_path / "tree.html"), tmp_path / "profile")
    plots = dom.select("div.js-plotly-plot")
    assert len(plots) == 4
    layout, sunburst = plots[0], plots[1]
    assert len(_drawn(layout.select("path.point"))) == nodes
    # the clusters under the root are named where their summaries sit, and in the legend
    named = [t.get_text() for t in layout.select("g.annotation text")]
    legend = [t.get_text() for t in layout.select("g.legend text.legendtext")]
    assert len(named) >= 2 and all(named) and set(named) <= set(legend)
    assert len(_drawn(sunburst.select("g.slice path.surface"))) == nodes


@pytest.mark.slow
def test_community_page_draws_offline(executed: dict[str, Any], tmp_path: Path) -> None:
    _chromium()
    frame = next(p for p in _html(executed["03_communities.ipynb"]) if "<iframe srcdoc=" in p)
    srcdoc = re.search(r'srcdoc="([^"]*)"', frame).group(1)  # type: ignore[union-attr]
    page = tmp_path / "community.html"
    page.write_text(html.unescape(srcdoc), encoding="utf-8")
    dom = _render(page, tmp_path / "profile")
    (plot,) = dom.select("div.js-plotly-plot")
    assert len(_drawn(plot.select("path.point"))) >= 10
    labels = [t.get_text() for t in plot.select("g.textpoint text") if t.get_text()]
    assert "WAL" in labels
    assert len(labels) <= 20 < len(_drawn(plot.select("path.point"))) or len(labels) == len(_drawn(plot.select("path.point")))


@pytest.mark.slow
def test_communities_html_export_draws_the_overview_offline(executed: dict[str, Any], tmp_path: Path) -> None:
    _chromium()
    dom = _render(_export(executed["03_communities.ipynb"], tmp_path / "communities.html"), tmp_path / "profile")
    plots = dom.select("div.js-plotly-plot")
    assert len(plots) == 2
    overview = plots[1]
    discs = _drawn(overview.select("path.point"))
    names = [t.get_text() for t in overview.select("g.textpoint text")]
    assert len(discs) >= 3 and len(names) == len(discs) and all(names)  # every community named
