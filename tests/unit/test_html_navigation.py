"""A page's place in its manual, read from its own HTML navigation: the pages above it
(nearest first) and the page after it, as doc_ids of the collection."""

from __future__ import annotations

from pathlib import Path

import lxml.html

from ingest.loaders.html import load_html
from ingest.loaders.html_navigation import Navigation, read_navigation

DATA = Path(__file__).parents[1] / "data" / "html"


def nav(html: str, doc_id: str) -> Navigation:
    return read_navigation(lxml.html.document_fromstring(html), doc_id)


def test_docbook_head_links_name_the_chapter_above_and_the_next_section() -> None:
    # DocBook XSL's chunked HTML, as the Debian Administrator's Handbook and Wireshark's
    # user guide write it
    page = """<html><head><title>6.2. aptitude, apt-get, and apt Commands</title>
    <link rel="home" href="index.html" title="The Debian Administrator's Handbook"/>
    <link rel="up" href="apt.html" title="Chapter 6. Maintenance and Updates"/>
    <link rel="prev" href="apt.html"/><link rel="next" href="sect.apt-cache.html"/>
    <link rel="canonical" href="https://debian-handbook.info/browse/stable/sect.apt-get.html"/>
    </head><body><p>Text.</p></body></html>"""
    assert nav(page, "en-US/sect.apt-get.html") == Navigation(up=("en-US/apt.html",), next="en-US/sect.apt-cache.html")


def test_docbook_footer_access_keys_when_the_head_has_no_links() -> None:
    page = """<html><body><p>General information.</p><div class="navfooter"><table><tr>
    <td><a accesskey="p" href="ChStatIntroduction.html">Prev</a></td>
    <td><a accesskey="u" href="ChStatistics.html">Up</a></td>
    <td><a accesskey="n" href="ChStatHierarchy.html">Next</a></td>
    <td><a accesskey="h" href="index.html">Home</a></td></tr></table></div></body></html>"""
    assert nav(page, "ChStatCaptureFileProperties.html") == Navigation(up=("ChStatistics.html",), next="ChStatHierarchy.html")


def test_sphinx_related_bar_gives_every_ancestor_nearest_first() -> None:
    # a real page of Python's documentation: the bar says Library > Internet Data Handling
    page = (DATA / "python_json.html").read_text(encoding="utf-8")
    assert nav(page, "library/json.html") == Navigation(
        up=("library/netdata.html", "library/index.html"), next="library/mailbox.html"
    )


def test_the_loader_keeps_the_navigation_on_the_document() -> None:
    path = DATA / "python_json.html"
    doc = load_html(path.read_bytes(), doc_id="library/json.html", path=str(path))
    assert doc.nav_up == ["library/netdata.html", "library/index.html"]
    assert doc.nav_next == "library/mailbox.html"
    assert "Internet Data Handling" not in doc.text  # the bar itself is still chrome


def test_breadcrumbs_and_latex2html_image_links() -> None:
    crumbs = """<html><body><nav aria-label="breadcrumb"><ol>
    <li><a href="../index.html">Docs</a></li><li><a href="index.html">Guide</a></li>
    <li>This page</li></ol></nav><p>Text.</p></body></html>"""
    assert nav(crumbs, "guide/page.html").up == ("guide/index.html", "index.html")
    # the loader gives the page's source too: a trail named "Breadcrumb" is still found
    root = lxml.html.document_fromstring(crumbs.replace("breadcrumb", "Breadcrumb"))
    assert read_navigation(root, "guide/page.html", crumbs.replace("breadcrumb", "Breadcrumb")).up == (
        "guide/index.html", "index.html"
    )
    latex2html = """<html><body><div class="navigation">
    <a href="node11.html"><img alt="next" src="next.png"></a>
    <a href="node6.html"><img alt="up" src="up.png"></a>
    <a href="node9.html"><img alt="previous" src="prev.png"></a></div><p>Text.</p></body></html>"""
    assert nav(latex2html, "node10.html") == Navigation(up=("node6.html",), next="node11.html")


def test_links_out_of_the_collection_to_the_page_itself_or_to_a_place_on_it_say_nothing() -> None:
    page = """<html><head>
    <link rel="up" href="https://example.org/manual/index.html"/>
    <link rel="up" href="#top"/><link rel="up" href="page.html#a"/>
    <link rel="up" href="../../outside.html"/><link rel="up" href="/site-root.html"/>
    <link rel="up" href="mailto:someone@example.org"/>
    <link rel="up" href="part%201/index.html?x=1#y"/>
    <link rel="next" href="./"/>
    </head><body><p>Text.</p></body></html>"""
    # only the one link that stays inside the collection, unquoted, a folder as its index
    assert nav(page, "guide/page.html") == Navigation(up=("guide/part 1/index.html",), next="guide/index.html")
    assert nav("<html><body><p>No navigation.</p></body></html>", "a.html") == Navigation()


def test_texinfo_chapter_split_pages_name_their_links_by_title() -> None:
    # zsh's manual (Texinfo 6.8, texi2html style): links inside the page come first
    page = """<html><body><table class="header"><tr>
    <td>[<a href="Files.html#Files-2" title="Previous section in reading order"> &lt; </a>]</td>
    <td>[<a href="index.html" title="Up section"> Up </a>]</td>
    <td>[<a href="#Simple-Commands" title="Next section in reading order"> &gt; </a>]</td>
    <td>[<a href="Redirection.html#Redirection" title="Next chapter"> &gt;&gt; </a>]</td>
    <td>[<a href="zsh_toc.html#SEC_Contents" title="Table of contents">Contents</a>]</td></tr></table>
    <h1>6 Shell Grammar</h1><p>Text.</p>
    <table><tr><td>[<a href="#Shell-Grammar" title="Up section"> Up </a>]</td></tr></table></body></html>"""
    assert nav(page, "Shell-Grammar.html") == Navigation(up=("index.html",), next="Redirection.html")
