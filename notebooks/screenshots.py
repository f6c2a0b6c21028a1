"""Regenerate the notebook figures shown in the docs (docs/images/tree.png, layout.png,
community.png, overview.png).

    python notebooks/screenshots.py [--chromium PATH]

Opens (or builds) the notebooks' index, writes the tree sunburst with a drill-down
path highlighted, the tree's layout with its clusters named, the subgraph of WAL's
community and the community overview as standalone HTML pages, and photographs them
with headless Chromium (Debian: ``apt-get install -y chromium``).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbsupport

OUT = nbsupport.ROOT / "docs" / "images"
QUESTION = "Explain how write-ahead logging works in SQLite"


def chromium_flags(profile: Path) -> list[str]:
    """Headless, no sandbox (containers), no network at all: pages must be self-contained."""
    return [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--user-data-dir={profile}",
    ]


def trim_bottom(png: Path, margin: int = 16) -> None:
    """Cut the blank rows under the figure (plotly sizes to the window, not the plot)."""
    try:
        from PIL import Image, ImageChops
    except ImportError:  # the picture is still right, only taller
        return
    with Image.open(png) as image:
        rgb = image.convert("RGB")
    box = ImageChops.difference(rgb, Image.new("RGB", rgb.size, (255, 255, 255))).getbbox()
    if box is not None:
        rgb.crop((0, 0, rgb.width, min(rgb.height, box[3] + margin))).save(png)


def screenshot(chromium: str, page: Path, png: Path, size: tuple[int, int]) -> None:
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                chromium, *chromium_flags(Path(profile)), "--virtual-time-budget=10000",
                f"--window-size={size[0]},{size[1]}", f"--screenshot={png}", page.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    trim_bottom(png)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser"))
    args = parser.parse_args()
    if not args.chromium:
        print("no chromium found: apt-get install -y chromium", file=sys.stderr)
        return 1
    import raptor

    kb = nbsupport.open_or_build(build=True)  # this command is the request to build
    tree = kb.explorer.tree_view()
    res = kb.query(QUESTION, route="tree")
    highlight = nbsupport.ids_on_path(step for c in res.contexts for step in c.trace)
    highlight += [c.node_id for c in res.contexts if c.kind == "chunk"]
    sunburst = tree.plot_sunburst(highlight=highlight)
    sunburst.update_layout(title=f"RAPTOR tree of {len(kb.index.store.docs)} pages of the SQLite manual; red: the path of “{QUESTION}”")

    graph = kb.explorer.graph_view()
    community = graph.community_of("WAL", level=0)
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        pages = Path(tmp)
        (pages / "tree.html").write_text(raptor.figure_html(sunburst), encoding="utf-8")
        (pages / "layout.html").write_text(raptor.figure_html(tree.plot_layout()), encoding="utf-8")
        (pages / "overview.html").write_text(raptor.figure_html(graph.plot_overview(level=0)), encoding="utf-8")
        graph.plot_community(community.id, pages / "community.html")
        screenshot(args.chromium, pages / "tree.html", OUT / "tree.png", (1000, 900))
        screenshot(args.chromium, pages / "layout.html", OUT / "layout.png", (1200, 700))
        screenshot(args.chromium, pages / "community.html", OUT / "community.png", (1200, 850))
        screenshot(args.chromium, pages / "overview.html", OUT / "overview.png", (1200, 850))
    print("wrote", ", ".join(str(OUT / n) for n in ("tree.png", "layout.png", "community.png", "overview.png")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
