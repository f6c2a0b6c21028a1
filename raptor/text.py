"""Text helpers for extractive summaries: sentence units, key terms, heading labels.

A *unit* is a sentence of prose or one list item, whitespace-normalised, so that it
is a verbatim (up to whitespace) span of the text it came from. Summaries join their
units with newlines, and ``split_units`` recovers exactly those units from a summary,
which keeps higher-level summaries made of the manual's own sentences too.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from arborgraph.core.leads import Unit, normalise_space, split_units
from arborgraph.core.text import SUMMARY_STOPWORDS

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[.\-][A-Za-z0-9_]+)*")
# "2.1.", "A.", "F.21." and DocBook's "Chapter 12.", "Appendix A.", "Part III."
_NUMBERING = re.compile(
    r"^\s*(?:(?:Chapter|Appendix|Part)\s+(?:\d+|[A-Z]|[IVXLC]+)[.:]\s+)?(?:(?:\d+(?:\.\d+)*\.?|[A-Z](?:\.\d+)*\.)\s+)?"
)

# How an extractive summary marks the page its next sentences come from, and the
# section of that page when they share one.
PAGE_MARK = "## "
SECTION_MARK = "›"


def page_line(title: str) -> str:
    """The line that opens a summary's group of sentences from page ``title``."""
    return PAGE_MARK + normalise_space(title)


def paged_units(text: str, page: str = "") -> list[tuple[str, Unit]]:
    """The units of a summary's ``text``, each with the page its group is under (the
    last :func:`page_line` before it; ``page`` before any), positions counted over
    the whole text."""
    out: list[tuple[str, Unit]] = []
    block: list[str] = []

    def flush() -> None:
        for unit in split_units("\n".join(block)):
            out.append((page, Unit(unit.text, len(out), unit.is_list_item)))
        block.clear()

    for line in text.splitlines():
        if line.startswith(PAGE_MARK):
            flush()
            page = line[len(PAGE_MARK) :].strip()
        else:
            block.append(line)
    flush()
    return out


def terms(text: str) -> list[str]:
    """Content words and identifiers of ``text``, lower-cased, stopwords removed
    (:data:`arborgraph.core.text.SUMMARY_STOPWORDS`)."""
    out = []
    for w in _WORD.findall(text):
        lw = w.lower()
        if len(lw) >= 3 and lw not in SUMMARY_STOPWORDS:
            out.append(lw)
    return out


def key_terms(texts: Sequence[str], n: int = 10) -> list[tuple[str, float]]:
    """Terms that characterise a group of texts: frequent *and* spread across members.

    Weight = (members containing the term) * log(1 + occurrences); ties broken
    alphabetically so the result is deterministic.
    """
    spread: Counter[str] = Counter()
    count: Counter[str] = Counter()
    for text in texts:
        ts = terms(text)
        count.update(ts)
        spread.update(set(ts))
    weighted = [(t, spread[t] * math.log1p(count[t])) for t in count]
    weighted.sort(key=lambda tw: (-tw[1], tw[0]))
    return weighted[:n]


def clean_label(label: str) -> str:
    """A heading without its section number ("2.1. Foo", "F.21. Foo", "Chapter 8. Foo"
    -> "Foo") or the pilcrow a web page puts after it as its link ("Binary operators ¶")."""
    bare = label.strip().rstrip("¶").strip()
    cleaned = _NUMBERING.sub("", bare).strip()
    return cleaned or bare or label.strip()


def dominant_path(paths: Sequence[Sequence[str]], share: float = 0.5) -> tuple[str, ...]:
    """The longest heading path that is a prefix of more than ``share`` of ``paths``."""
    if not paths:
        return ()
    prefix: tuple[str, ...] = ()
    need = share * len(paths) + 1e-9
    while True:
        depth = len(prefix) + 1
        counts = Counter(tuple(p[:depth]) for p in paths if len(p) >= depth and tuple(p[: depth - 1]) == prefix)
        if not counts:
            return prefix
        best, hits = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        if hits <= need:
            return prefix
        prefix = best


def heading_label(paths: Sequence[Sequence[str]]) -> str:
    """A short label for a group of nodes from their heading paths.

    With a dominant path: its last heading, after its parent heading when there is
    one ("UPSERT › Description"). Otherwise the top-level headings (document titles)
    shared by most members, up to three.
    """
    dom = dominant_path(paths)
    if dom:
        return " › ".join(clean_label(h) for h in dom[-2:])
    coverage: Counter[str] = Counter(clean_label(p[0]) for p in paths if p)
    top = sorted(coverage.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    return " · ".join(label for label, _ in top)
