"""Compact HTML cards for notebook display of tree nodes, entities, communities and reports.

One renderer for every record kind keeps the cards consistent; the records' own
``_repr_html_`` methods call into it.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Protocol


class CommunityLike(Protocol):
    """What a community card shows of a community (``graphrag.model.Community`` is one)."""

    @property
    def id(self) -> int: ...
    @property
    def level(self) -> int: ...
    @property
    def parent(self) -> int | None: ...
    @property
    def children(self) -> Sequence[int]: ...
    @property
    def members(self) -> Sequence[str]: ...


class ReportLike(Protocol):
    """What a community card shows of a report (``graphrag.model.CommunityReport`` is one)."""

    @property
    def title(self) -> str: ...
    @property
    def summary(self) -> str: ...
    @property
    def rank(self) -> float: ...


# A root summary's title joins its sections' titles (2,700 characters on the sample
# manual): a card's title line shows the start, the body and the record have the rest.
TITLE_CHARS = 120


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


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
        f"<div><b>{html.escape(shorten(title, TITLE_CHARS))}</b> <span style='color:#777'>{html.escape(subtitle)}</span></div>"
        f"<table style='font-size:90%'>{cells}</table>"
        + (f"<div style='white-space:pre-wrap;margin-top:4px'>{html.escape(text)}</div>" if text else "")
        + "</div>"
    )


def short_list(items: Sequence[str], n: int = 8) -> str:
    shown = ", ".join(items[:n])
    return shown + (f" … (+{len(items) - n})" if len(items) > n else "")


def community_card(
    community: CommunityLike, members: Sequence[str], report: ReportLike | None, *, members_label: str = "members"
) -> str:
    """A community: its report's title and summary when it has one, ``members`` listed."""
    title = f"community {community.id}" + (f": {report.title}" if report else "")
    subtitle = f"level {community.level} · {len(community.members)} members"
    if report:
        subtitle += f" · rank {report.rank:.1f}"
    return card(title, subtitle, [
        ("parent", "(top level)" if community.parent is None else str(community.parent)),
        ("children", short_list([str(c) for c in community.children])),
        (members_label, short_list(list(members), 12)),
    ], report.summary if report else "")
