"""Compact HTML cards for notebook display of tree nodes, entities, communities and reports.

One renderer for every record kind keeps the cards consistent; the records' own
``_repr_html_`` methods call into it.
"""

from __future__ import annotations

import html
from collections.abc import Sequence


def card(title: str, subtitle: str, rows: Sequence[tuple[str, str]], body: str = "", limit: int = 700) -> str:
    """A bordered card: a title line, a grey subtitle, key/value rows and a text body."""
    text = body if len(body) <= limit else body[:limit] + " …"
    cells = "".join(
        f"<tr><th style='text-align:left;padding-right:1em;vertical-align:top'>{html.escape(k)}</th>"
        f"<td>{html.escape(v)}</td></tr>"
        for k, v in rows
        if v
    )
    return (
        "<div style='border:1px solid #ccc;border-radius:6px;padding:8px 12px;margin:4px 0;max-width:900px'>"
        f"<div><b>{html.escape(title)}</b> <span style='color:#777'>{html.escape(subtitle)}</span></div>"
        f"<table style='font-size:90%'>{cells}</table>"
        + (f"<div style='white-space:pre-wrap;margin-top:4px'>{html.escape(text)}</div>" if text else "")
        + "</div>"
    )


def short_list(items: Sequence[str], n: int = 8) -> str:
    shown = ", ".join(items[:n])
    return shown + (f" … (+{len(items) - n})" if len(items) > n else "")
