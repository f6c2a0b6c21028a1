"""Where an HTML page sits in its manual, read from the page's own navigation.

A manual split into one HTML page per section (DocBook's chunked HTML, Sphinx, Texinfo,
latex2html) lays its pages out flat in one folder: the outline above the page lives only
in each page's navigation. Generators write it in a few well-known ways, and all of them
are read here:

- ``<link rel="up" href=...>`` in the head, or an ``<a rel="up">`` (DocBook, Texinfo);
- an ``<a accesskey="u">`` (Sphinx's and Texinfo's "Up" link);
- Sphinx's related bar: ``<li class="nav-item nav-item-N">`` links, the page's
  ancestors from the top down;
- breadcrumbs (an element whose class or ARIA label names a breadcrumb);
- latex2html's navigation panel: a link around an image whose ``alt`` is "up";
- Texinfo's older chapter-split style: a link titled "Up section".

"Next" is read the same ways (``rel="next"``, ``accesskey="n"``, an image "next", a link
titled "Next chapter" or "Next section in reading order"): the
manual's reading order. Links are resolved against the page's own ``doc_id`` and kept
only when they stay inside the collection; a link to the page itself says nothing.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import lxml.html

_NAV_ITEM = re.compile(r"\bnav-item-(\d+)\b")
_BREADCRUMB = re.compile(r"breadcrumb", re.I)
# how Texinfo's texi2html-style navigation titles its links
_UP_TITLES = frozenset({"up section", "up node"})
_NEXT_TITLES = frozenset({"next chapter", "next section in reading order", "next node"})


@dataclass(frozen=True)
class Navigation:
    """The pages above a page (nearest first) and the page after it, as doc_ids."""

    up: tuple[str, ...] = ()
    next: str | None = None


def read_navigation(root: lxml.html.HtmlElement, doc_id: str, text: str | None = None) -> Navigation:
    """The navigation of the parsed page ``root`` whose collection path is ``doc_id``.
    Given the page's ``text`` (its source), a page that never says "nav-item-" or
    "breadcrumb" is not searched for Sphinx's bar or a breadcrumb trail: on a page of a
    megabyte that search costs more than the rest of the navigation."""
    ups: list[str] = []
    nexts: list[str] = []
    for el in root.iter("link", "a"):
        href = el.get("href")
        if href is None:
            continue
        rel = (el.get("rel") or "").lower().split()
        key = (el.get("accesskey") or "").lower()
        alt = _image_alt(el) if el.tag == "a" else ""
        title = (el.get("title") or "").strip().lower()
        if "up" in rel or key == "u" or alt == "up" or title in _UP_TITLES:
            ups.append(href)
        elif "next" in rel or key == "n" or alt == "next" or title in _NEXT_TITLES:
            nexts.append(href)
    ancestors: list[str] = []
    if text is None or "nav-item-" in text:
        ancestors = _sphinx_ancestors(root)
    if not ancestors and (text is None or "readcrumb" in text):  # Breadcrumb, breadcrumbs
        ancestors = _breadcrumbs(root)
    up = _resolved([*ups, *reversed(ancestors)], doc_id)
    following = _resolved(nexts, doc_id)
    return Navigation(up=tuple(up), next=following[0] if following else None)


def _image_alt(a: lxml.html.HtmlElement) -> str:
    """latex2html's "up" and "next" links hold only an image saying so."""
    if (a.text or "").strip():
        return ""
    images = [c for c in a if isinstance(c.tag, str)]
    if len(images) != 1 or images[0].tag != "img":
        return ""
    return (images[0].get("alt") or "").strip().lower()


def _sphinx_ancestors(root: lxml.html.HtmlElement) -> list[str]:
    """The hrefs of Sphinx's related bar's ``nav-item-N`` links, top first: the first
    bar only (Sphinx writes it above and below the page; the second starts again at
    its top). One pass over the page's list items."""
    found: list[tuple[int, str]] = []
    for li in root.iter("li"):
        match = _NAV_ITEM.search(li.get("class") or "")
        link = li.find("a") if match else None
        if match is None or link is None or not link.get("href"):
            continue
        level = int(match.group(1))
        if found and level <= found[-1][0]:
            break
        found.append((level, link.get("href")))
    return [href for _, href in found]


def _breadcrumbs(root: lxml.html.HtmlElement) -> list[str]:
    """The links of the first breadcrumb trail, top first."""
    for el in root.iter():
        if isinstance(el.tag, str) and _BREADCRUMB.search(f"{el.get('class') or ''} {el.get('aria-label') or ''}"):
            return [a.get("href") for a in el.iter("a") if a.get("href")]
    return []


def _resolved(hrefs: list[str], doc_id: str) -> list[str]:
    """``hrefs`` as doc_ids of this collection, in order, once each; links out of the
    collection, to another site or to the page itself left out."""
    out: list[str] = []
    base = posixpath.dirname(doc_id)
    for href in hrefs:
        parts = urlsplit(href.strip())
        if parts.scheme or parts.netloc or not parts.path:
            continue  # another site, mail, or a place on this page
        path = unquote(parts.path)
        if path.startswith("/"):
            continue  # the site's root, not the collection's
        if path.endswith("/"):
            path += "index.html"
        target = posixpath.normpath(posixpath.join(base, path))
        if target == doc_id or target.startswith("../") or target == ".." or target in out:
            continue
        out.append(target)
    return out
