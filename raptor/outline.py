"""The manual's own outline over a tree's leaves: folders, pages and their sections.

Documents carry structure: each chunk's heading path (page title, then its headings)
and each document's place in the collection's folders. Read bottom-up, that is an
outline a reader already knows: chunks -> sections -> pages -> folders, each named
with the manual's own title. :func:`outline` recovers it from the leaves alone, as a
pure function, so the tree's lower levels follow the manual and clustering is needed
only above it, where the outline stops (the pages of one flat folder, several manuals
in one collection).

What is kept as a node: every page; a section or folder only when it gathers at least
two chunks or two children, because a node that holds one thing names nothing new. A
chain of sections each holding only the next is one node, under the outer title (the
author's name for the whole). A heading that recurs on many pages ("Overview",
"Options"), a generic one ("See also") and a one-word one ("Recovery") are qualified
with the nearest title above them that is not ("pg_resetwal: Options") so that they
name something on their own.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from raptor.text import clean_label
from raptor.tree import Leaf

Kind = Literal["folder", "page", "section"]

# Headings that name a part of something rather than a topic: alone, they say nothing.
_GENERIC = frozenset(
    """overview introduction description synopsis options parameters arguments examples example
    notes note usage syntax summary details background see also return value return values
    errors limitations remarks discussion history compatibility caveats bugs files environment
    author authors configuration requirements definition definitions purpose scope results
    output input general features example usage""".split()
)
_GENERIC_PHRASES = frozenset({"see also", "return value", "return values", "exit status", "known issues", "further reading"})
# A folder page that stands for the folder (its title names the folder).
_FOLDER_PAGES = frozenset({"index", "readme", "contents", "toc", "_index"})
_SPACE = re.compile(r"[\s_\-]+")
# Headings and folders deeper than this are read as this deep: no manual's outline
# is, and the outline is closed by recursion.
MAX_DEPTH = 24


@dataclass(eq=False)
class OutlineNode:
    """One node of the outline: a folder, a page or a section.

    ``items`` are its children in reading order: an ``int`` is leaf ``i`` of the leaves
    given, an :class:`OutlineNode` a node kept below it. ``leaves`` are the indices of
    every leaf under it, in reading order.
    """

    kind: Kind
    title: str
    heading_path: tuple[str, ...]
    doc_id: str
    items: list[OutlineNode | int] = field(default_factory=list)
    leaves: list[int] = field(default_factory=list)


@dataclass(eq=False)
class _Open:
    kind: Kind
    heading: str  # as the manual wrote it
    heading_path: tuple[str, ...]
    doc_id: str
    items: list[_Open | int] = field(default_factory=list)


def outline(leaves: Sequence[Leaf]) -> tuple[list[OutlineNode], list[OutlineNode]]:
    """The outline over ``leaves`` (in reading order): its nodes, children before
    parents, and its top nodes (those with no parent), in reading order.

    Every leaf lies under exactly one page. Deterministic: the same leaves give the same
    outline.
    """
    pages = _pages(leaves)
    recurring = _recurring_headings(pages)
    tops: list[OutlineNode] = []
    for node in _folders(_nested(pages, leaves)):
        tops.extend(n for n in _close(node, (), recurring) if isinstance(n, OutlineNode))
    ordered: list[OutlineNode] = []
    stack: list[tuple[OutlineNode, bool]] = [(t, False) for t in reversed(tops)]
    while stack:  # post-order without recursion: children before their parent
        node, expanded = stack.pop()
        if expanded:
            ordered.append(node)
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in reversed(node.items) if isinstance(c, OutlineNode))
    _numbered_where_alike(tops)
    for node in ordered:
        _numbered_where_alike([c for c in node.items if isinstance(c, OutlineNode)])
    return ordered, tops


def _numbered_where_alike(siblings: list[OutlineNode]) -> None:
    """Siblings whose titles differ only by their numbers ("1.4 Changelog", "1.3
    Changelog") keep their numbers: without them a reader sees one title many times."""
    by_title: dict[str, list[OutlineNode]] = {}
    for node in siblings:
        if node.kind != "folder" and node.heading_path and node.title == plain_title(node.heading_path[-1]):
            by_title.setdefault(node.title, []).append(node)
    for alike in by_title.values():
        raw = [" ".join(n.heading_path[-1].strip().rstrip("\u00b6").split()) for n in alike]
        if len(alike) > 1 and len(set(raw)) == len(raw):
            for node, title in zip(alike, raw, strict=True):
                node.title = title


def plain_title(heading: str) -> str:
    """A heading as a label: the manual's words without its section number."""
    return clean_label(heading)


def is_generic(heading: str, recurring: frozenset[str] = frozenset()) -> bool:
    """Whether ``heading`` names a part of something ("Options", "See also") rather than
    a topic, or recurs on many pages of this collection (``recurring``)."""
    key = _key(heading)
    return key in recurring or key in _GENERIC_PHRASES or (len(key.split()) == 1 and key in _GENERIC)


# -- reading the leaves --------------------------------------------------------


def _pages(leaves: Sequence[Leaf]) -> list[_Open]:
    """One open page per document, its sections nested by heading path, in reading order."""
    by_doc: dict[str, list[int]] = {}
    for i, leaf in enumerate(leaves):
        by_doc.setdefault(leaf.doc_id, []).append(i)
    pages: list[_Open] = []
    for doc_id, rows in by_doc.items():
        paths = [tuple(leaves[i].heading_path) for i in rows]
        firsts = {p[0] for p in paths if p}
        # the chunker starts every path with the page title when the page has one
        titled = len(firsts) == 1 and all(paths)
        title = next(iter(firsts)) if titled else _file_title(doc_id)
        page = _Open("page", title, (title,), doc_id)
        open_by_path: dict[tuple[str, ...], _Open] = {(): page}
        for i, path in zip(rows, paths, strict=True):
            headings = (path[1:] if titled else path)[:MAX_DEPTH]
            parent = page
            for depth in range(1, len(headings) + 1):
                key = headings[:depth]
                node = open_by_path.get(key)
                if node is None:
                    node = _Open("section", headings[depth - 1], (title, *key), doc_id)
                    open_by_path[key] = node
                    parent.items.append(node)
                parent = node
            parent.items.append(i)
        pages.append(page)
    return pages


def _nested(pages: list[_Open], leaves: Sequence[Leaf]) -> list[_Open]:
    """Pages put under the page their own navigation names above them (the nearest one
    in the collection, in the page's folder or the one above it), after their parent's
    own sections, in the manual's reading order (its "next" links); the pages with none
    above them, in that order. Without navigation: ``pages`` as they are."""
    first_leaf: dict[str, Leaf] = {}
    for leaf in leaves:
        first_leaf.setdefault(leaf.doc_id, leaf)
    known = {page.doc_id for page in pages}
    parent: dict[str, str] = {}
    for page in pages:
        up = next(
            (d for d in first_leaf[page.doc_id].nav_up if d in known and d != page.doc_id and _near(page.doc_id, d)),
            None,
        )
        if up is not None:
            parent[page.doc_id] = up
    if not parent and not any(first_leaf[p.doc_id].nav_next for p in pages):
        return pages
    for page in pages:  # a loop of "up" links, or a chain deeper than any outline: no parent
        seen = {page.doc_id}
        above = parent.get(page.doc_id)
        while above is not None:
            if above in seen or len(seen) > MAX_DEPTH:
                del parent[page.doc_id]
                break
            seen.add(above)
            above = parent.get(above)
    place = _reading_order(pages, {p.doc_id: first_leaf[p.doc_id].nav_next for p in pages}, known)
    ordered = sorted(pages, key=lambda p: place[p.doc_id])
    by_doc = {page.doc_id: page for page in pages}
    for page in ordered:
        if page.doc_id in parent:
            by_doc[parent[page.doc_id]].items.append(page)
    return [page for page in ordered if page.doc_id not in parent]


def _near(doc_id: str, up: str) -> bool:
    """Whether page ``up`` is in ``doc_id``'s folder or the one above it. A page's folder
    is its author's grouping too: navigation that skips over folders (a site's one index
    of all its source listings, three folders up) loses to them."""
    folder = PurePosixPath(doc_id).parent
    return PurePosixPath(up).parent in (folder, folder.parent)


def _reading_order(pages: list[_Open], nexts: dict[str, str | None], known: set[str]) -> dict[str, int]:
    """Each page's place when the manual is read by its "next" links, from every page
    no other page leads to (in collection order); pages no chain reaches follow."""
    following = {doc: nxt for doc, nxt in nexts.items() if nxt in known and nxt != doc}
    led_to = set(following.values())
    place: dict[str, int] = {}
    for heads_only in (True, False):
        for page in pages:
            current: str | None = page.doc_id
            if current in place or (heads_only and current in led_to):
                continue
            while current is not None and current not in place:
                place[current] = len(place)
                current = following.get(current)
    return place


def _file_title(doc_id: str) -> str:
    stem = PurePosixPath(doc_id).stem
    return _SPACE.sub(" ", stem).strip() or doc_id


def _folders(pages: list[_Open]) -> list[_Open]:
    """Pages grouped under their folders; a folder page (index, README) names its
    folder. Folders are kept only where the collection has more than one."""
    folders = {PurePosixPath(p.doc_id).parent.parts for p in pages}
    if len(folders) <= 1:
        return pages
    root = _Open("folder", "", (), "")
    open_by_parts: dict[tuple[str, ...], _Open] = {(): root}
    for page in pages:
        parts = PurePosixPath(page.doc_id).parent.parts[:MAX_DEPTH]
        parent = root
        for depth in range(1, len(parts) + 1):
            key = parts[:depth]
            node = open_by_parts.get(key)
            if node is None:
                node = _Open("folder", _SPACE.sub(" ", key[-1]).strip() or key[-1], (), "/".join(key))
                open_by_parts[key] = node
                parent.items.append(node)
            parent = node
        if PurePosixPath(page.doc_id).stem.lower() in _FOLDER_PAGES and parent is not root:
            parent.heading = page.heading  # the folder's own page names it
        parent.items.append(page)
    return [item for item in root.items if isinstance(item, _Open)]


def _recurring_headings(pages: list[_Open]) -> frozenset[str]:
    """Headings found on at least three pages (and on a tenth of them): parts of pages
    ("Examples", "Options"), not topics."""
    seen: Counter[str] = Counter()
    for page in pages:
        seen.update({_key(s.heading) for s in _sections_of(page)})
    need = max(3, len(pages) // 10)
    return frozenset(h for h, n in seen.items() if n >= need)


def _sections_of(node: _Open) -> list[_Open]:
    out: list[_Open] = []
    stack = [node]
    while stack:
        current = stack.pop()
        children = [item for item in current.items if isinstance(item, _Open)]
        out.extend(children)
        stack.extend(children)
    return out


def _key(heading: str) -> str:
    return " ".join(plain_title(heading).casefold().split())


# -- closing: pruning and naming -----------------------------------------------


def _close(node: _Open, context: tuple[str, ...], recurring: frozenset[str]) -> list[OutlineNode | int]:
    """``node`` closed: ``[kept node]``, or, when it holds too little to name anything
    new, its closed children in its place. ``context`` holds the plain titles above it,
    nearest last (a generic heading is qualified with the nearest that is not)."""
    title = _title(node, context, recurring)
    inner = (*context, plain_title(node.heading)) if node.kind != "folder" and node.heading else context
    items: list[OutlineNode | int] = []
    for child in node.items:
        items.extend(_close(child, inner, recurring) if isinstance(child, _Open) else [child])
    sub = [i for i in items if isinstance(i, OutlineNode)]
    if node.kind == "page" and len(items) == 1 and sub and sub[0].kind == "section":
        items = sub[0].items  # one section holding the whole page: the page is that node
    covered = sorted(i for item in items for i in ([item] if isinstance(item, int) else item.leaves))
    if node.kind == "section" and (len(covered) < 2 or (len(items) == 1 and sub)):
        return items  # one chunk, or one subsection holding all of it: nothing new to name
    if node.kind == "folder" and len(items) < 2:
        return items
    return [OutlineNode(node.kind, title, node.heading_path, node.doc_id, items, covered)]


def _title(node: _Open, context: tuple[str, ...], recurring: frozenset[str]) -> str:
    title = plain_title(node.heading) if node.heading else ""
    if node.kind == "section" and title and (is_generic(node.heading, recurring) or len(title.split()) == 1):
        owner = next((c for c in reversed(context) if not is_generic(c, recurring)), "")
        return f"{owner}: {title}" if owner else title
    return title
