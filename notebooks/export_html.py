"""Export notebooks to HTML pages that work offline.

    python notebooks/export_html.py 02_tree.ipynb [03_communities.ipynb ...] [--out DIR]

nbconvert's default HTML template loads require.js, MathJax and mermaid from a CDN: a
page saved that way shows a console error and waits on the network when opened
offline. This exporter uses JupyterLab's template without those three scripts (the
notebooks need none of them: their figures are plotly, whose JS the first cell inlines
once, see ``nbsupport.init_offline``), so a page needs nothing but itself. Run the
notebook first (the export shows its saved outputs).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

# JupyterLab's export template, minus the scripts it loads from a CDN
OFFLINE_TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""


def offline_html(nb: Any) -> str:
    """The HTML page of a notebook node (``nbformat``), loading nothing from the network."""
    import nbconvert
    from jinja2 import DictLoader

    exporter = nbconvert.HTMLExporter(
        template_name="lab", template_file="offline.html.j2",
        extra_loaders=[DictLoader({"offline.html.j2": OFFLINE_TEMPLATE})],
    )
    body, _ = exporter.from_notebook_node(nb)
    return str(body)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Export notebooks to HTML pages that work offline.")
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, help="folder for the pages (default: beside each notebook)")
    args = parser.parse_args(argv)
    import nbformat

    for path in args.notebooks:
        if not path.is_file():
            print(f"{path}: no such notebook", file=sys.stderr)
            return 2
        page = (args.out or path.parent) / path.with_suffix(".html").name
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(offline_html(nbformat.read(path, as_version=4)), encoding="utf-8")
        print(f"wrote {page}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
