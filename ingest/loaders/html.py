"""HTML loader for manual pages: main content only, structure kept, chrome dropped."""

from __future__ import annotations

import re

import lxml.html
from lxml import etree

from ingest.errors import SkipFile
from ingest.loaders._common import BlockSpec, build_document, clean_code, clean_inline, decode_text
from ingest.loaders.html_navigation import read_navigation
from ingest.metadata import refuse_unread_acl
from ingest.models import Document

_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCK_TAGS = frozenset(
    "address article aside blockquote body center dd details dialog dir div dl dt fieldset "
    "figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr li main menu nav ol p "
    "pre section summary table tbody td tfoot th thead tr ul caption html".split()
)
# Elements that are never content.
_DROP_TAGS = frozenset(
    "script style noscript template nav form button input select textarea iframe svg "
    "canvas object embed map head link meta title".split()
)
_DROP_ROLES = frozenset(
    "navigation banner contentinfo search complementary menu menubar toolbar".split()
)
# Page chrome by class: Sphinx (related, sphinxsidebar, headerlink...), SQLite's
# docs (menu, searchmenu, nosearch, fancy_toc), DocBook's chunked HTML (navheader,
# navfooter: "Prev | Chapter 8. Statistics | Next" above and below every page; docnav,
# Publican's "Prev | The Debian Administrator's Handbook | Next") and common site
# templates.
_DROP_CLASSES = frozenset(
    "related sphinxsidebar sphinxsidebarwrapper headerlink footer mobile-nav menu-wrapper "
    "menu mainmenu submenu searchmenu nosearch fancy_toc toc breadcrumb breadcrumbs navbar "
    "sidebar skip-link copybutton navheader navfooter docnav".split()
)
# DocBook's title page sets its credits and subtitle as headings (<h3 class="author">
# Richard Sharpe, Ed Warnicke</h3>, <h2 class="subtitle">Version 4.0.17</h2>): names of
# people and a version, not sections of the manual; read as paragraphs
_TITLE_PAGE_CLASSES = frozenset("author editor othercredit corpauthor collab subtitle".split())
# (banner: a site's strip above every page, "Download the ebook")
_DROP_IDS = frozenset("sidebar sidebarbutton navigation searchbox searchmenu toc banner".split())
# Where the content lives, most specific first.
_MAIN_XPATHS = (
    "//main",
    "//*[@role='main']",
    "//div[contains(concat(' ', normalize-space(@class), ' '), ' body ')]",
    # openstackdocstheme: no role, and a sidebar, "updated:" line and table of contents
    # ("Page Contents") beside it in <body>
    "//div[contains(concat(' ', normalize-space(@class), ' '), ' docs-body ')]",
    "//article",
)
_LIST_TAGS = frozenset(("ul", "ol", "menu", "dir"))
_BR = "\ue000"  # marks <br> inside inline text until whitespace is collapsed
_MAX_DEPTH = 60  # deeper nesting is flattened to text instead of walked
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
# libxml2 stops at 256 levels of nesting and drops the whole page; deeper markup is
# flattened below this depth (its tags dropped, its text kept) and parsed again.
_MAX_PARSE_DEPTH = 200
_TAG = re.compile(r"<!--.*?-->|<(/?)([A-Za-z][\w:-]*)[^>]*?(/?)>", re.S)
_VOID_TAGS = frozenset("area base br col embed hr img input link meta param source track wbr".split())
_META_ACL = re.compile(r"""<meta\b[^>]{0,200}?\bname\s*=\s*["']?\s*acl\s*(?:["'\s/>])""", re.I)
_META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?([A-Za-z0-9_.:-]{1,40})""", re.I)


def load_html(raw: bytes, *, doc_id: str, path: str) -> Document:
    """Load an HTML page: headings, paragraphs, ``pre`` code, lists and tables as text."""
    declared = _META_CHARSET.search(raw[:4096])
    text, warnings = decode_text(raw, declared.group(1).decode("ascii") if declared else None)
    refuse_unread_acl(text, "HTML")
    if _META_ACL.search(text):
        raise SkipFile(
            "a <meta name=\"acl\"> tag is not read as an access list: put the acl in a "
            "<file>.meta.yaml sidecar or pass it to the build (not indexed, so that its access list cannot be lost)"
        )
    root, too_deep = _parse_page(text)
    if too_deep:
        root, too_deep = _parse_page(_flatten(text, _MAX_PARSE_DEPTH))
        if too_deep:  # (tags this count cannot see, implied by the parser)
            raise SkipFile("HTML nested too deep to parse (more than 256 levels), even with its deepest tags dropped")
        warnings.append(f"markup nested deeper than {_MAX_PARSE_DEPTH} levels was flattened to its text")
    page_title = _title_text(root)
    navigation = read_navigation(root, doc_id, text)  # before the chrome that holds it is dropped
    content = _main_content(root)
    _drop_chrome(content)
    specs: list[BlockSpec] = []
    _walk(content, specs, 0)
    first_h1 = next((s.text for s in specs if s.kind == "heading" and s.level == 1), None)
    document = build_document(
        specs, raw=raw, doc_id=doc_id, path=path, fmt="html",
        title=_choose_title(page_title, first_h1), warnings=warnings,
    )
    return document.model_copy(update={"nav_up": list(navigation.up), "nav_next": navigation.next})


def html_fragment_text(fragment: str) -> str:
    """The visible text of an HTML snippet (e.g. raw HTML inside Markdown)."""
    if not fragment.strip():
        return ""
    try:
        root = _parse(f"<div>{fragment}</div>")
    except SkipFile:
        return ""
    for el in root.iter(*_DROP_TAGS):
        el.drop_tree()
    return _inline_text(root)


def _parse(text: str) -> lxml.html.HtmlElement:
    return _parse_page(text)[0]


def _parse_page(text: str) -> tuple[lxml.html.HtmlElement, bool]:
    """The parsed page, and whether libxml2 gave up at its nesting limit (it then drops
    everything from there on)."""
    parser = lxml.html.HTMLParser(remove_comments=True, remove_pis=True, no_network=True)
    try:
        root = lxml.html.document_fromstring(_XML_DECLARATION.sub("", text, count=1), parser=parser)
    except (etree.ParserError, ValueError) as exc:
        raise SkipFile(f"no text content ({exc})") from None
    too_deep = any(e.type == etree.ErrorTypes.ERR_RESOURCE_LIMIT for e in parser.error_log)
    return root, too_deep


def _flatten(text: str, limit: int) -> str:
    """``text`` without the tags nested deeper than ``limit`` (their text stays)."""
    out: list[str] = []
    depth = 0
    last = 0
    for match in _TAG.finditer(text):
        closing, name, self_closing = match.group(1), match.group(2), match.group(3)
        if name is None or name.lower() in _VOID_TAGS or self_closing:
            continue
        keep = (depth if closing else depth + 1) <= limit
        depth = max(0, depth - 1) if closing else depth + 1
        if not keep:
            out.append(text[last : match.start()])
            out.append(" ")
            last = match.end()
    out.append(text[last:])
    return "".join(out)


# Sphinx's stand-in for a page without a heading
_NO_TITLE = "<no title>"
# markup escaped into a <title> ("OpenStack Docs: &lt;code class=...&gt;initiator&lt;/code&gt;")
_ESCAPED_TAG = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?>")


def _title_text(root: lxml.html.HtmlElement) -> str | None:
    titles = root.xpath("//title")
    if not titles:
        return None
    text = clean_inline(titles[0].text_content())
    if _NO_TITLE in text:
        return None  # Sphinx's stand-in for a page without a heading
    # a Sphinx theme may escape a heading's markup into the <title>: its text is the title
    return clean_inline(html_fragment_text(text)) if _ESCAPED_TAG.search(text) else text


# what sets a site's name off from a page's in a <title>: "OpenStack Docs: TaskFlow"
_SITE_SEPARATOR = re.compile(r"(?::|\s[-\u2013\u2014|\u00b7])\s*$")


def _choose_title(page_title: str | None, first_h1: str | None) -> str | None:
    # A <title> is often "<h1> — Site name", or "Site name: <h1>"; the h1 alone is the
    # better title then (the site's name would open every page's title).
    if page_title and first_h1:
        if page_title.startswith(first_h1):
            return first_h1
        if page_title.endswith(first_h1) and _SITE_SEPARATOR.search(page_title[: -len(first_h1)]):
            return first_h1
    return page_title or first_h1


def _main_content(root: lxml.html.HtmlElement) -> lxml.html.HtmlElement:
    for xpath in _MAIN_XPATHS:
        found = root.xpath(xpath)
        if len(found) == 1:
            return found[0]
    body = root.find("body")
    return body if body is not None else root


def _is_chrome(el: lxml.html.HtmlElement) -> bool:
    if el.tag in _DROP_TAGS or el.get("hidden") is not None or el.get("aria-hidden") == "true":
        return True
    if el.tag in ("header", "footer"):
        # An article's own <header> carries its title; a page-level one is chrome.
        return el.tag == "footer" or not any(a.tag in ("article", "main") for a in el.iterancestors())
    if (el.get("role") or "").lower() in _DROP_ROLES:
        return True
    if el.get("id") in _DROP_IDS:
        return True
    classes = (el.get("class") or "").split()
    return any(c in _DROP_CLASSES for c in classes)


def _drop_chrome(content: lxml.html.HtmlElement) -> None:
    doomed = [el for el in content.iter() if isinstance(el.tag, str) and el is not content and _is_chrome(el)]
    for el in doomed:
        if el.getparent() is not None:
            el.drop_tree()  # keeps the element's tail text


def _has_block_child(el: lxml.html.HtmlElement) -> bool:
    return any(isinstance(d.tag, str) and d.tag in _BLOCK_TAGS for d in el.iterdescendants())


def _inline_text(el: lxml.html.HtmlElement, skip: list[lxml.html.HtmlElement] | None = None) -> str:
    """Visible text of an element, block boundaries as spaces, <br> as line breaks.

    Subtrees in ``skip`` are left out (their tails are kept).
    """
    parts: list[str] = []
    walker = etree.iterwalk(el, events=("start", "end"))
    for event, node in walker:
        if skip and event == "start" and any(node is s for s in skip):
            walker.skip_subtree()
            continue
        if not isinstance(node.tag, str):
            if event == "end" and node is not el and node.tail:
                parts.append(node.tail)
            continue
        if event == "start":
            if node.tag == "br":
                parts.append(_BR)
            elif node.tag in _BLOCK_TAGS:
                parts.append(" ")
            if node.text:
                parts.append(node.text)
        else:
            if node.tag in _BLOCK_TAGS:
                parts.append(" ")
            if node is not el and node.tail:
                parts.append(node.tail)
    return "\n".join(line for line in (clean_inline(p) for p in "".join(parts).split(_BR)) if line)


def _walk(container: lxml.html.HtmlElement, out: list[BlockSpec], depth: int, *, loose_text: bool = True) -> None:
    """Append the blocks of ``container``'s children, gathering loose inline content.

    With ``loose_text=False`` only block children count (their text was used already).
    """
    if depth > _MAX_DEPTH:
        out.append(BlockSpec("paragraph", _inline_text(container)))
        return
    pending: list[str] = []

    def flush() -> None:
        text = "\n".join(line for line in (clean_inline(p) for p in "".join(pending).split(_BR)) if line)
        if text and loose_text:
            out.append(BlockSpec("paragraph", text))
        pending.clear()

    if container.text:
        pending.append(container.text)
    for child in container:
        if not isinstance(child.tag, str):  # comments, processing instructions
            pass
        elif child.tag in _HEADINGS and _TITLE_PAGE_CLASSES.isdisjoint((child.get("class") or "").split()):
            flush()
            # badly closed markup (`<h2>Index</h1>`) can put a whole page inside a heading
            blocks_inside = [d for d in child.iterdescendants() if isinstance(d.tag, str) and d.tag in _BLOCK_TAGS]
            out.append(BlockSpec("heading", _inline_text(child, skip=blocks_inside).replace("\n", " "), _HEADINGS[child.tag]))
            if blocks_inside:
                _walk(child, out, depth + 1, loose_text=False)
        elif child.tag == "pre":
            flush()
            out.append(BlockSpec("code", _pre_text(child)))
        elif child.tag in _LIST_TAGS:
            flush()
            out.append(BlockSpec("list", "\n".join(_list_lines(child, 0))))
        elif child.tag == "table":
            flush()
            _table(child, out, depth)
        elif child.tag == "dt":
            flush()
            out.append(BlockSpec("paragraph", _inline_text(child)))
        elif child.tag == "br":
            pending.append(_BR)
        elif child.tag == "hr":
            flush()
        elif child.tag in _BLOCK_TAGS or _has_block_child(child):
            flush()
            if child.tag in ("p", "li", "dd", "td", "th", "caption", "figcaption", "summary") and not _has_block_child(child):
                out.append(BlockSpec("paragraph", _inline_text(child)))
            else:
                _walk(child, out, depth + 1)
        else:
            pending.append(_inline_text(child).replace("\n", _BR))
            pending.append(" " if child.tag == "img" else "")
        if child.tail:
            pending.append(child.tail)
    flush()


def _pre_text(pre: lxml.html.HtmlElement) -> str:
    parts: list[str] = [pre.text or ""]
    for node in pre.iterdescendants():
        if node.tag == "br":
            parts.append("\n")
        elif isinstance(node.tag, str) and node.text:
            parts.append(node.text)
        if node.tail:
            parts.append(node.tail)
    return clean_code("".join(parts))


def _list_lines(lst: lxml.html.HtmlElement, depth: int) -> list[str]:
    """Render a list as lines, nested lists indented beneath their item."""
    ordered = lst.tag == "ol"
    try:
        number = int(lst.get("start", "1"))
    except ValueError:
        number = 1
    indent = "  " * depth
    lines: list[str] = []
    for item in lst:
        if not isinstance(item.tag, str):
            continue
        nested = [d for d in item if isinstance(d.tag, str) and d.tag in _LIST_TAGS] if depth < 20 else []
        own = _inline_text(item, skip=nested)
        value = (item.get("value") or "").strip()
        if ordered and value.lstrip("-").isdigit():
            number = int(value)  # <li value="0">: explicit numbering, e.g. enum values
        if own:
            first, *rest = own.split("\n")
            lines.append(f"{indent}{f'{number}.' if ordered else '-'} {first}")
            lines.extend(f"{indent}  {extra}" for extra in rest)
            number += 1
        for sub in nested:
            lines.extend(_list_lines(sub, depth + 1))
    return lines


def _table(table: lxml.html.HtmlElement, out: list[BlockSpec], depth: int) -> None:
    rows = table.xpath("./tr|./thead/tr|./tbody/tr|./tfoot/tr")
    cells = [row.xpath("./td|./th") for row in rows]
    if len(rows) == 1 and len(cells[0]) == 1:
        _walk(cells[0][0], out, depth + 1)  # a one-cell layout table is just a container
        return
    caption = table.find("caption")
    if caption is not None and _inline_text(caption):
        out.append(BlockSpec("paragraph", _inline_text(caption)))
    lines = []
    for row in cells:
        texts = [_inline_text(cell).replace("\n", " ") for cell in row]
        if any(texts):
            lines.append(" | ".join(texts))
    out.append(BlockSpec("table", "\n".join(lines)))
