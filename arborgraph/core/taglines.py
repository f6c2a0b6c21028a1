"""What pages open with: the site's banner many share, and a module page's tagline; and
the sentences many pages share anywhere.

A site often opens every page with the same banner ("This document describes the current
stable version of Celery (5.2). For development docs, go here."): :func:`banner_sentences`
finds it, so that no digest, lead or name quotes it as if it said what a page is about.

An API reference often titles its pages by a module's dotted name ("celery.utils.log",
"amqp.channel", "oslo_log.formatters") and opens each with the module's one-line
summary ("Logging utilities."). The bare name tells a reader who does not know the
package nothing (blind raters marked such community titles 2 of 5); the manual's own
summary after it does, as the Python manual titles its pages ("logging — Logging
facility for Python"). :func:`page_taglines` finds those summaries; a page whose text
opens otherwise gets none.

A sentence many pages carry anywhere (:func:`shared_sentences`: an inherited docstring, a
footer) fits each of them alike: blind raters marked digests quoting them down (1 of 5
for fontTools' pens, whose every page said "Draw a cubic bezier ..."), so digests and
reports pass over them where a page has words of its own.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from arborgraph.core.leads import normalise_space, split_units

# a module's dotted path ("celery.utils.log") or one snake_case name ("oslo_log")
_IDENTIFIER_TITLE = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$|^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
# a one-line summary is short; past this it is the first sentence of the prose
MAX_TAGLINE_WORDS = 10
# what a phrase of prose does not hold: calls, signatures, assignments, markup
_CODE_CHARS = re.compile(r"[()\[\]{}<>=`|\\]")
# a page's chunks its opening is read from: a banner may fill the first
OPENING_CHUNKS = 2
# the opening sentences read on each page: enough to pass a banner the site puts first
_OPENING_UNITS = 4
# a sentence more pages than this open with is the site's banner (as a heading more pages
# than this use is page structure: graphrag.naming.MAX_HEADING_DOCS)
BANNER_PAGES = 3
# the separator between a page's name and its tagline, as the Python manual writes it
SEPARATOR = " — "


def is_identifier_title(title: str) -> bool:
    """Whether ``title`` is a code name alone: a dotted path or a snake_case name."""
    return bool(_IDENTIFIER_TITLE.match(title.strip()))


def opening_chunks(chunks: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """Document -> the texts of its first :data:`OPENING_CHUNKS` chunks, from
    ``(document, text)`` pairs in reading order: what :func:`page_opening` reads."""
    out: dict[str, list[str]] = {}
    for document, text in chunks:
        texts = out.setdefault(document, [])
        if len(texts) < OPENING_CHUNKS:
            texts.append(text)
    return out


def page_opening(texts: Sequence[str]) -> list[str]:
    """The first few sentences of a page (its first :data:`OPENING_CHUNKS` chunks'
    ``texts`` in reading order), list items left out: where a banner or a module's
    one-line summary is."""
    units: list[str] = []
    for text in texts:
        units.extend(u.text for u in split_units(text) if not u.is_list_item)
        if len(units) >= _OPENING_UNITS:
            break
    return units[:_OPENING_UNITS]


def banner_sentences(openings: Iterable[Sequence[str]], max_shared: int = BANNER_PAGES) -> frozenset[str]:
    """The sentences (as :func:`banner_key` gives them) that more than ``max_shared`` of
    the pages open with (``openings``: each page's :func:`page_opening`): the site's
    banner, not what any page is about."""
    shared: Counter[str] = Counter()
    for opening in openings:
        shared.update({banner_key(sentence) for sentence in opening})
    return frozenset(key for key, pages in shared.items() if pages > max_shared)


def shared_sentences(chunks: Iterable[tuple[str, str]], max_shared: int = BANNER_PAGES) -> frozenset[str]:
    """The sentences (as :func:`banner_key` gives them) that more than ``max_shared``
    documents carry anywhere, from ``(document, text)`` chunk pairs: a docstring every
    subclass inherits ("You must call either pen.closePath() or pen.endPath() after each
    sub path." on 25 of fontTools' pen pages), a footer, a section included whole in
    several pages. Such a sentence fits any of its pages, so it tells none apart."""
    carriers: dict[str, set[str]] = {}
    for document, text in chunks:
        for unit in split_units(text):
            carriers.setdefault(banner_key(unit.text), set()).add(document)
    return frozenset(key for key, documents in carriers.items() if len(documents) > max_shared)


def banner_key(sentence: str) -> str:
    """A sentence as banners are compared: spacing and case aside."""
    return normalise_space(sentence).lower()


def page_taglines(pages: Iterable[tuple[str, Sequence[str]]], max_shared: int = BANNER_PAGES) -> dict[str, str]:
    """Page title -> tagline, for the pages titled by an identifier whose text opens with
    a one-line summary.

    ``pages``: one (title, its chunks' texts in reading order) per page; the first few
    texts are read. The site's banner (:func:`banner_sentences`) is passed over. The
    page's first other sentence is its tagline when it is a short phrase of prose: at
    most :data:`MAX_TAGLINE_WORDS` words, capitalised, no code, not naming the page
    itself; else the page has none (what follows a module's summary is about its
    classes, not the module). A title two pages carry (a page copied with its title
    unchanged: Celery's "celery.events.state" over the dispatcher's page too) gets none:
    whose would it be?"""
    openings = [(title, page_opening(texts)) for title, texts in pages]
    carried = Counter(title for title, _ in openings)
    banner = banner_sentences((units for _, units in openings), max_shared)
    out: dict[str, str] = {}
    for title, units in openings:
        if carried[title] > 1 or not is_identifier_title(title):
            continue
        first = next((u for u in units if banner_key(u) not in banner), None)
        if first is not None and (tagline := _tagline(first, title)):
            out[title] = tagline
    return out


def _tagline(sentence: str, title: str) -> str | None:
    text = sentence.strip()
    words = text.split()
    if not words or len(words) > MAX_TAGLINE_WORDS or not words[0][:1].isupper():
        return None
    if _CODE_CHARS.search(text) or title.lower() in text.lower() or text.endswith((":", "?")):
        return None
    return text.rstrip(".").strip() or None


def with_tagline(title: str, tagline: str | None) -> str:
    """``title`` followed by its tagline, when it has one."""
    return f"{title}{SEPARATOR}{tagline}" if tagline else title
