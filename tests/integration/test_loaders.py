"""Each loader on real documents: structure, titles, metadata, exact code, offsets."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from ingest.errors import SkipFile
from ingest.loaders import load_document
from ingest.loaders.html import load_html
from ingest.loaders.markdown import load_markdown
from ingest.loaders.pdf import load_pdf
from ingest.loaders.rst import load_rst
from ingest.loaders.text import load_text
from ingest.models import Document
from ingest.safe_load import load_or_skip
from ingest.sniff import binary_kind, detect_format

DATA = Path(__file__).parents[1] / "data"


def load(path: Path, loader) -> Document:
    return loader(path.read_bytes(), doc_id=path.name, path=str(path))


def assert_offsets(doc: Document) -> None:
    """Blocks are the text's parts, in order, joined by blank lines."""
    assert doc.blocks
    assert doc.text == "\n\n".join(b.text for b in doc.blocks)
    for block in doc.blocks:
        assert doc.text[block.start : block.end] == block.text
        assert block.text.strip()


def kinds(doc: Document) -> set[str]:
    return {b.kind for b in doc.blocks}


def headings(doc: Document) -> list[tuple[int, str]]:
    return [(b.level, b.text) for b in doc.blocks if b.kind == "heading"]


# --- HTML ---------------------------------------------------------------------------


def test_sqlite_page_keeps_structure_and_drops_menus() -> None:
    doc = load(DATA / "html/sqlite_datatype3.html", load_html)
    assert_offsets(doc)
    assert doc.title == "Datatypes In SQLite"
    assert (1, "1. Datatypes In SQLite") in headings(doc)
    assert (3, "3.1.1. Affinity Name Examples") in headings(doc)
    assert kinds(doc) == {"heading", "paragraph", "code", "list", "table"}
    # the site menu, the search form, the table of contents and the scripts are gone
    for chrome in ("Choose any three", "Search Documentation", "Table Of Contents", "toggle_search", "antiRobot"):
        assert chrome not in doc.text
    assert doc.text.count("Storage Classes and Datatypes") == 1  # only the heading, not the TOC entry


def test_sqlite_pre_block_keeps_exact_whitespace() -> None:
    doc = load(DATA / "html/sqlite_datatype3.html", load_html)
    code = [b.text for b in doc.blocks if b.kind == "code"]
    create = next(c for c in code if "x INTEGER PRIMARY KEY" in c)
    assert create.startswith("CREATE TABLE t1(\n    x INTEGER PRIMARY KEY,\n")
    assert "a,                 /* collating sequence BINARY */" in create


def test_sqlite_table_rows_use_pipe_separators() -> None:
    doc = load(DATA / "html/sqlite_datatype3.html", load_html)
    tables = [b.text for b in doc.blocks if b.kind == "table"]
    rows = [row for t in tables for row in t.split("\n")]
    assert any(row.startswith("Example Typenames From The CREATE TABLE Statement or CAST Expression | Resulting Affinity") for row in rows)
    assert any(" | INTEGER | 1" in row for row in rows)


def test_sphinx_page_content_only_with_signatures_and_lists() -> None:
    doc = load(DATA / "html/python_json.html", load_html)
    assert_offsets(doc)
    # "<h1> — Python 3.11.2 documentation" in <title>: the h1 is the better title
    assert doc.title == "json — JSON encoder and decoder"
    assert headings(doc)[0] == (1, "json — JSON encoder and decoder")
    assert (2, "Basic Usage") in headings(doc)
    assert "¶" not in doc.text  # Sphinx header links
    for chrome in ("Table of Contents", "Previous topic", "Quick search", "Please donate", "Report a Bug"):
        assert chrome not in doc.text
    paragraphs = [b.text for b in doc.blocks if b.kind == "paragraph"]
    assert any(p.startswith("json.dump(obj, fp, *, skipkeys=False") for p in paragraphs)
    assert any(b.kind == "table" and "JSON | Python" in b.text for b in doc.blocks)


def test_site_name_before_the_h1_is_left_out_of_the_title() -> None:
    # openstackdocstheme titles every page "OpenStack Docs: <h1>"
    def title(page_title: str, h1: str) -> str | None:
        raw = f"<html><head><title>{page_title}</title></head><body><h1>{h1}</h1><p>Text.</p></body></html>"
        return load_html(raw.encode(), doc_id="p.html", path="/p.html").title

    assert title("OpenStack Docs: Log rotation", "Log rotation") == "Log rotation"
    assert title("Oslo | Conductors", "Conductors") == "Conductors"
    # no separator before the h1: the <title> says more than it
    assert title("Running Conductors", "Conductors") == "Running Conductors"
    assert title("Engines: Parallel", "Engines: Parallel") == "Engines: Parallel"


def test_markup_escaped_into_the_title_is_read_as_text() -> None:
    raw = (b'<html><head><title>OpenStack Docs: &lt;code class="xref py py-mod"&gt;&lt;span class="pre"&gt;initiator'
           b'&lt;/span&gt;&lt;/code&gt; \xe2\x80\x93 Initiator</title></head><body><h1>initiator \xe2\x80\x93 Initiator</h1>'
           b'<p>Brick initiator.</p></body></html>')
    assert load_html(raw, doc_id="i.html", path="/i.html").title == "initiator \u2013 Initiator"
    raw = b"<html><head><title>a &lt; b and c &gt; d</title></head><body><p>Text.</p></body></html>"
    assert load_html(raw, doc_id="c.html", path="/c.html").title == "a < b and c > d"


def test_sphinx_no_title_stand_in_is_no_title() -> None:
    raw = b"<html><head><title>&lt;no title&gt; - pytest documentation</title></head><body><p>Moved.</p></body></html>"
    assert load_html(raw, doc_id="recwarn.html", path="/docs/recwarn.html").title == "recwarn"


def test_openstack_theme_page_is_its_docs_body_only() -> None:
    raw = b"""<html><head><title>OpenStack Docs: Engines</title></head><body>
    <div class="container docs-book-wrapper"><div class="row"><div class="col-lg-9 col-md-8 col-sm-8 col-lg-push-3">
    <div class="docs-actions"><a href="#">report a bug</a></div><div class="docs-updated">updated: 2022-12-09 10:22</div>
    <div class="docs-body"><h1>Engines</h1><p>Engines are what really runs your atoms.</p></div>
    <div class="docs-footer">Except where otherwise noted, this document is licensed under Creative Commons.</div>
    </div><div class="col-lg-3"><div class="docs-sidebar-toc"><div class="docs-sidebar-section" id="local-table-of-contents">
    <h4 class="docs-sidebar-section-title">Page Contents</h4><ul><li><a href="#">Engines</a></li></ul></div></div></div>
    </div></div></body></html>"""
    doc = load_html(raw, doc_id="engines.html", path="/user/engines.html")
    assert doc.title == "Engines"
    assert doc.text == "Engines\n\nEngines are what really runs your atoms."


def test_docbook_chunked_page_without_its_navigation() -> None:
    # DocBook XSL's chunked HTML (Wireshark's user guide): a navigation table above and
    # below each page, which opened every page's text ("Prev | Chapter 8. Statistics")
    raw = """<html><head><title>8.2. The “Capture File Properties” Dialog</title></head><body>
    <div class="navheader"><table summary="Navigation header"><tr><th colspan="3">8.2. The “Capture File Properties” Dialog</th></tr>
    <tr><td><a accesskey="p" href="ChStatIntroduction.html">Prev</a> </td><th>Chapter 8. Statistics</th>
    <td> <a accesskey="n" href="ChStatHierarchy.html">Next</a></td></tr></table><hr></div>
    <div class="section"><div class="titlepage"><h2 class="title">8.2. The “Capture File Properties” Dialog</h2></div>
    <p>General information about the current capture file.</p></div>
    <div class="navfooter"><hr><table summary="Navigation footer"><tr><td><a href="ChStatIntroduction.html">Prev</a> </td>
    <td><a accesskey="u" href="ChStatistics.html">Up</a></td><td> <a href="ChStatHierarchy.html">Next</a></td></tr>
    <tr><td>8.1. Introduction </td><td><a accesskey="h" href="index.html">Home</a></td><td> 8.3. Resolved Addresses</td></tr></table></div>
    </body></html>""".encode()
    doc = load_html(raw, doc_id="ChStatCaptureFileProperties.html", path="/wsug/ChStatCaptureFileProperties.html")
    assert doc.text == "8.2. The “Capture File Properties” Dialog\n\nGeneral information about the current capture file."


def test_docbook_title_page_credits_are_no_section() -> None:
    # DocBook XSL sets a book's authors and subtitle as <h3 class="author">, <h2
    # class="subtitle">: a heading of names would become a section of the manual
    # ("Richard Sharpe, Ed Warnicke, Ulf Lamping")
    raw = """<html><head><title>Wireshark User’s Guide</title></head><body><div class="book">
    <div class="titlepage"><h1 class="title">Wireshark User’s Guide</h1><h2 class="subtitle">Version 4.0.17</h2>
    <h3 class="author"><span class="firstname">Richard</span> <span class="surname">Sharpe</span></h3>
    <h3 class="editor">Ed Warnicke</h3></div>
    <h2 class="title">Preface</h2><p>Wireshark is one of those programs.</p></div></body></html>""".encode()
    doc = load_html(raw, doc_id="index.html", path="/wsug/index.html")
    assert headings(doc) == [(1, "Wireshark User’s Guide"), (2, "Preface")]
    assert "Richard Sharpe" in doc.text and "Version 4.0.17" in doc.text  # still the page's words


def test_publican_page_without_its_banner_and_navigation() -> None:
    # Publican's DocBook pages (the Debian Administrator's Handbook): a banner, the
    # product's images and "Prev | The Debian Administrator's Handbook | Next" opened
    # every page's first chunk
    raw = """<html><head><title>Chapter 9. Unix Services</title></head><body>
    <div id="banner"><a href="http://debian-handbook.info/get/"><span class="text">Download the ebook</span></a></div>
    <ul class="docnav top"><li class="previous"><a accesskey="p" href="prev.html"><strong>Prev</strong></a></li>
    <li class="home">The Debian Administrator's Handbook</li><li class="next"><a accesskey="n" href="next.html"><strong>Next</strong></a></li></ul>
    <div class="chapter"><h1 class="title">Chapter 9. Unix Services</h1>
    <div class="para">This chapter covers a number of basic services.</div></div></body></html>""".encode()
    doc = load_html(raw, doc_id="unix-services.html", path="/handbook/unix-services.html")
    assert doc.text == "Chapter 9. Unix Services\n\nThis chapter covers a number of basic services."
    assert doc.nav_next == "next.html"  # the navigation is still read before it is dropped


def test_sphinx_tutorial_lists_and_code() -> None:
    doc = load(DATA / "html/python_controlflow.html", load_html)
    assert_offsets(doc)
    assert doc.title == "4. More Control Flow Tools"
    code = [b.text for b in doc.blocks if b.kind == "code"]
    assert any(">>> for n in range(2, 10):\n...     for x in range(2, n):\n" in c for c in code)
    lists = [b.text for b in doc.blocks if b.kind == "list"]
    assert any(line.startswith("- Use 4-space indentation, and no tabs.") for lst in lists for line in lst.split("\n"))


def test_html_nested_lists_breaks_and_layout() -> None:
    raw = b"""<html><head><title>T</title></head><body>
    <header><a href="/">Home</a></header><nav><a>Docs</a></nav>
    <div role="main"><h2>Install<a class="headerlink" href="#x">\xc2\xb6</a></h2>
    <p>First line<br>second line</p>
    <ol start="3"><li>three<ul><li>nested</li></ul></li><li value="9">four</li></ol>
    <aside class="footnote"><p>A footnote stays.</p></aside>
    <script>var x = 1;</script><div hidden>secret</div></div>
    <footer>Copyright</footer></body></html>"""
    doc = load_html(raw, doc_id="t.html", path="/t.html")
    assert [b.text for b in doc.blocks] == [
        "Install",
        "First line\nsecond line",
        "3. three\n  - nested\n9. four",
        "A footnote stays.",
    ]
    assert doc.title == "T"


def test_html_badly_closed_heading_does_not_swallow_the_page() -> None:
    raw = b"<html><body><h2 align=center>Keyword Index</h1><ul><li>ALTER TABLE<li>ANALYZE</ul><p>More.</p></body></html>"
    doc = load_html(raw, doc_id="k.html", path="/k.html")
    assert [(b.kind, b.text) for b in doc.blocks] == [
        ("heading", "Keyword Index"), ("list", "- ALTER TABLE\n- ANALYZE"), ("paragraph", "More.")
    ]


def test_html_declared_charset_and_xml_declaration() -> None:
    raw = (
        '<?xml version="1.0" encoding="iso-8859-1"?>\n<html><head>'
        '<meta http-equiv="content-type" content="text/html; charset=iso-8859-1"></head>'
        "<body><h1>Caf\u00e9</h1><p>cr\u00e8me br\u00fbl\u00e9e</p></body></html>"
    ).encode("latin-1")
    doc = load_html(raw, doc_id="c.html", path="/c.html")
    assert doc.text == "Caf\u00e9\n\ncr\u00e8me br\u00fbl\u00e9e"
    assert doc.warnings and "iso-8859-1" in doc.warnings[0]


def test_html_with_only_chrome_is_skipped() -> None:
    raw = b"<html><body><nav>Home | Docs</nav><script>x()</script></body></html>"
    with pytest.raises(SkipFile, match="no text content"):
        load_html(raw, doc_id="n.html", path="/n.html")


# --- Markdown -----------------------------------------------------------------------


def test_markdown_frontmatter_metadata_and_extras() -> None:
    doc = load(DATA / "markdown/backup_guide.md", load_markdown)
    assert_offsets(doc)
    assert doc.title == "Online Backup Guide"
    meta = doc.metadata
    assert meta.source == "ops-handbook"
    assert meta.version == "2.4"
    assert meta.valid_from == dt.date(2024, 3, 1) and meta.valid_to == dt.date(2025, 3, 1)
    assert meta.acl == ["dba-team", "sre"]
    assert meta.importance == 0.8
    extras = meta.model_extra or {}
    assert extras["owner"] == "storage-team"
    assert extras["review"] == {"cadence": "quarterly", "last": "2024-02-20"}
    assert "valid_from" not in doc.text and "---" not in doc.text


def test_markdown_structure() -> None:
    doc = load(DATA / "markdown/backup_guide.md", load_markdown)
    assert headings(doc) == [
        (1, "Online Backup Guide"),
        (2, "Preparing the host"),
        (2, "Running the backup"),
        (3, "Verifying the copy"),
    ]
    blocks = {b.kind: [] for b in doc.blocks}
    for b in doc.blocks:
        blocks[b.kind].append(b.text)
    assert blocks["list"] == [
        "1. Stop any job that rotates the backup directory.\n"
        "2. Confirm the account can read the database file.\n"
        "  - On Linux, the service account needs read permission.\n"
        "  - On Windows, grant Read on the folder.\n"
        "3. Create the target directory."
    ]
    assert blocks["table"][0].split("\n")[0] == "Setting | Default | Meaning"
    assert "backup.sleep | 250 | milliseconds to sleep between steps" in blocks["table"][0]
    fenced = blocks["code"][0]
    assert fenced.startswith("import sqlite3\n\ndef progress(status, remaining, total):\n    print(")
    assert blocks["code"][1] == 'sqlite3 app.db ".backup backup.db"'  # indented code block
    assert "Run an integrity check on the copy, never on the live file. Do not skip this step" in doc.text
    assert "A failed check means the copy is unusable." in blocks["paragraph"]


def test_real_model_card_keeps_unknown_keys_as_extras() -> None:
    doc = load(DATA / "markdown/all-MiniLM-L6-v2.md", load_markdown)
    assert_offsets(doc)
    assert doc.title == "all-MiniLM-L6-v2"
    extras = doc.metadata.model_extra or {}
    assert extras["license"] == "apache-2.0"
    assert "ms_marco" in extras["datasets"]
    assert doc.metadata.acl is None
    assert any(b.kind == "code" and b.text.startswith("from sentence_transformers import SentenceTransformer") for b in doc.blocks)


def test_markdown_bad_acl_fails_closed_and_bad_date_only_warns() -> None:
    bad_acl = b"---\nacl: {team: x}\n---\n# Secret\n\ntext\n"
    with pytest.raises(SkipFile, match="invalid acl in frontmatter"):
        load_markdown(bad_acl, doc_id="s.md", path="/s.md")
    with pytest.raises(SkipFile, match=r"'ops' is a text, not a list of principal names \(write acl: \[ops\]\)"):
        load_markdown(b"---\nacl: ops\n---\n# Secret\n\ntext\n", doc_id="s.md", path="/s.md")
    bad_date = b"---\nvalid_from: someday\nacl: [ops]\n---\n# Doc\n\ntext\n"
    doc = load_markdown(bad_date, doc_id="d.md", path="/d.md")
    assert doc.metadata.valid_from is None
    assert doc.metadata.acl == ["ops"]
    assert any("valid_from" in w for w in doc.warnings)


def test_markdown_frontmatter_yaml_errors_and_aliases_skip() -> None:
    with pytest.raises(SkipFile, match="invalid YAML in frontmatter"):
        load_markdown(b"---\nacl: [a, b\n---\ntext\n", doc_id="y.md", path="/y.md")
    bomb = b"---\ntitle: t\na: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n---\ntext\n"
    with pytest.raises(SkipFile, match="aliases are not allowed"):
        load_markdown(bomb, doc_id="b.md", path="/b.md")


def test_markdown_impossible_date_costs_only_that_key() -> None:
    doc = load_markdown(b"---\nvalid_from: 2024-13-45\nvalid_to: 2025-01-31\n---\nBody.\n", doc_id="d.md", path="/d.md")
    assert doc.metadata.valid_from is None and doc.metadata.valid_to == dt.date(2025, 1, 31)
    assert any("ignored invalid 'valid_from'" in w for w in doc.warnings)


def test_markdown_rules_around_text_are_not_frontmatter() -> None:
    doc = load_markdown(b"---\nNote: keep this: it matters\n---\nBody.\n", doc_id="r.md", path="/r.md")
    assert [b.text for b in doc.blocks] == ["Note: keep this: it matters", "Body."]
    assert doc.warnings == ["leading '---' block is not YAML frontmatter; kept as text"]


def test_markdown_version_keeps_its_text() -> None:
    doc = load_markdown(b"---\nversion: 3.10\n---\nBody text.\n", doc_id="v.md", path="/v.md")
    assert doc.metadata.version == "3.10"  # not the float 3.1


# --- plain text ---------------------------------------------------------------------


def test_text_paragraphs_and_safe_headings() -> None:
    doc = load(DATA / "text/apache-2.0.txt", load_text)
    assert_offsets(doc)
    assert doc.title == "Apache License"
    assert headings(doc) == [
        (1, "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION"),
        (1, "END OF TERMS AND CONDITIONS"),
    ]
    assert "1. Definitions." in [b.text for b in doc.blocks]  # a numbered item, not a heading
    assert not any(b.kind == "code" for b in doc.blocks)  # indented prose is not code


def test_text_underlined_and_numbered_headings_and_code() -> None:
    raw = (
        b"Installing\n==========\n\nRun the installer.\n\n2.1 Options\n\n"
        b"Pass flags like this:\n\n    tool --fast\n      --verbose\n\n1. Not a heading\n"
    )
    doc = load_text(raw, doc_id="i.txt", path="/i.txt")
    assert [(b.kind, b.level, b.text) for b in doc.blocks] == [
        ("heading", 1, "Installing"),
        ("paragraph", 0, "Run the installer."),
        ("heading", 2, "2.1 Options"),
        ("paragraph", 0, "Pass flags like this:"),
        ("code", 0, "tool --fast\n  --verbose"),
        ("paragraph", 0, "1. Not a heading"),
    ]


def test_text_non_utf8_decodes_with_warning() -> None:
    raw = "Caf\u00e9 cr\u00e8me \u201cquoted\u201d".encode("cp1252")
    doc = load_text(raw, doc_id="c.txt", path="/c.txt")
    assert doc.text == "Caf\u00e9 cr\u00e8me \u201cquoted\u201d"
    assert doc.warnings == ["not valid UTF-8 (byte 0xe9 at offset 3); decoded as cp1252 (fallback)"]
    # 0x81 is undefined in cp1252: latin-1 takes it
    doc = load_text(b"abc \x81 def", doc_id="l.txt", path="/l.txt")
    assert "latin-1" in doc.warnings[0]


def test_text_utf16_with_bom() -> None:
    raw = "Heading\n=======\n\nBody \u00e9.".encode("utf-16")
    assert binary_kind(raw[:1024]) is None  # NUL bytes, but a BOM says it is text
    doc = load_text(raw, doc_id="u.txt", path="/u.txt")
    assert [b.text for b in doc.blocks] == ["Heading", "Body \u00e9."]


# --- reStructuredText ---------------------------------------------------------------


def test_rst_real_sphinx_source() -> None:
    doc = load(DATA / "rst/python_json.rst", load_rst)
    assert_offsets(doc)
    assert doc.title == "json --- JSON encoder and decoder"
    assert (2, "Basic Usage") in headings(doc)
    texts = [b.text for b in doc.blocks]
    # Sphinx directives keep their signature and body; Sphinx roles keep their text
    assert any(t.startswith("dump(obj, fp, *, skipkeys=False, ensure_ascii=True,") for t in texts)
    assert any(t.startswith("JSONDecoder(*, object_hook=None") for t in texts)
    assert "Changed in version 3.6:" in texts
    assert "s can now be of type bytes or bytearray. The input encoding should be UTF-8, UTF-16 or UTF-32." in texts
    assert not any(":func:" in t or ":class:" in t for t in texts)
    assert any(b.kind == "table" and b.text.startswith("JSON | Python") for b in doc.blocks)
    assert any(b.kind == "code" and b.text.startswith(">>> import json\n>>> json.dumps(") for b in doc.blocks)


def test_rst_sphinx_directives_and_roles_parse_quietly() -> None:
    # A CMake-manual-style page: `.. only:: html` once left a stray "html" paragraph
    # and `.. include::` / a nested `.. contents::` made docutils warn (#38 item 10)
    doc = load(DATA / "rst/cmake_style_command.rst", load_rst)
    assert_offsets(doc)
    assert doc.warnings == []
    texts = [b.text for b in doc.blocks]
    assert "html" not in texts and "latex" not in texts
    assert texts[1].startswith("Declare a library of widgets")
    assert "This paragraph is for the printed manual only." in texts  # `only` keeps its content
    assert "New in version 3.21:" in texts and "Deprecated since version 3.27:" in texts
    assert any(t.startswith("The variable CMAKE_WIDGET_PREFIX names") and "WIDGET_KIND" in t and "$<CONFIG>" in t for t in texts)
    assert "Declare the library <name> from the given sources." in texts  # a domain directive keeps its body
    assert "The library is built before any target that links to it." in texts
    assert any(b.kind == "code" and b.text.startswith("add_widget_library(gadgets STATIC") for b in doc.blocks)
    assert "See the cmake-buildsystem(7) manual and CMP0028." in texts
    assert not any("/command/add_library" in t or "WIDGET_WARNING" in t or ":command:" in t for t in texts)


def test_rst_never_reads_other_files(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET CONTENT")
    raw = (
        f"Title\n=====\n\n.. include:: {secret}\n\n.. raw:: html\n   :file: {secret}\n\n"
        f".. literalinclude:: {secret}\n\nVisible paragraph.\n"
    ).encode()
    doc = load_rst(raw, doc_id="x.rst", path=str(tmp_path / "x.rst"))
    assert "TOP SECRET" not in doc.text
    assert "Visible paragraph." in doc.text


def test_rst_broken_markup_is_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    raw = b"Title\n===\n\n* item\ncontinued badly\n\n.. unknown-thing::\n\n`unclosed interpreted\n\n+--+\n| broken table\n"
    doc = load_rst(raw, doc_id="b.rst", path="/b.rst")
    assert "Title" in doc.text
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    assert any("markup problem" in w for w in doc.warnings)


# --- PDF ----------------------------------------------------------------------------


def test_pdf_text_layer_with_bookmarks_as_headings() -> None:
    doc = load(DATA / "pdf/sqlite_datatypes.pdf", load_pdf)
    assert_offsets(doc)
    assert doc.format == "pdf"
    assert doc.title == "Datatypes In SQLite"
    assert headings(doc)[:4] == [
        (1, "1. Datatypes In SQLite"),
        (1, "2. Storage Classes and Datatypes"),
        (2, "2.1. Boolean Datatype"),
        (2, "2.2. Date and Time Datatype"),
    ]
    assert (3, "3.1.1. Affinity Name Examples") in headings(doc)
    assert "SQLite uses a more general dynamic type system." in doc.text


def test_pdf_without_text_layer_is_skipped() -> None:
    with pytest.raises(SkipFile, match=r"no text layer \(scanned PDF\?\)"):
        load(DATA / "pdf/scanned.pdf", load_pdf)


def _one_page_pdf(content_stream: bytes) -> bytes:
    """A minimal valid PDF whose single page draws ``content_stream`` (FlateDecode)."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(content_stream) + content_stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def test_pdf_bomb_says_what_happened_not_scanned() -> None:
    import zlib

    drawing = b"BT /F1 12 Tf 72 720 Td (Hello from a page) Tj ET\n"
    assert "Hello from a page" in load_pdf(_one_page_pdf(zlib.compress(drawing)), doc_id="p.pdf", path="/p.pdf").text
    packer = zlib.compressobj(1)  # 80 MB of spaces after the text: past pypdf's 75 MB limit
    bomb = packer.compress(drawing) + b"".join(packer.compress(b" " * 2**20) for _ in range(80)) + packer.flush()
    with pytest.raises(SkipFile) as skipped:
        load_pdf(_one_page_pdf(bomb), doc_id="b.pdf", path="/b.pdf")
    assert skipped.value.reason == (
        "no text extracted: extraction failed on 1 of 1 page(s) "
        "(a stream decompresses past the size limit: a decompression bomb?)"
    )


@pytest.mark.parametrize("depth", [300, 10_000])
def test_deeply_nested_html_keeps_its_text(depth: int) -> None:
    # libxml2 gives up at 256 levels and keeps nothing from there on
    raw = f"<html><body><h1>Top</h1>{'<div>' * depth}<p>Deep text.</p>{'</div>' * depth}<p>After.</p></body></html>"
    doc = load_html(raw.encode(), doc_id="d.html", path="/d.html")
    assert doc.text == "Top\n\nDeep text.\n\nAfter."
    assert doc.warnings == ["markup nested deeper than 200 levels was flattened to its text"]


def test_truncated_pdf_is_a_clear_skip() -> None:
    raw = (DATA / "pdf/sqlite_datatypes.pdf").read_bytes()[:600]
    result = load_or_skip(raw, doc_id="t.pdf", path="/t.pdf", fmt="pdf")
    assert not isinstance(result, Document)
    assert result.reason.startswith(("malformed PDF", "unreadable PDF", "no text layer"))


# --- format detection ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "head", "expected"),
    [
        ("page.txt", b"<!DOCTYPE html>\n<html><body>x", "html"),
        ("notes.txt", b"plain words", "text"),
        ("json.rst.txt", b"json\n====\n", "rst"),
        ("README", b"# Project\n\ntext", "markdown"),
        ("CHANGES", b"Changes\n=======\n\n.. note:: x", "rst"),
        ("LICENSE", b"Permission is hereby granted", "text"),
        ("manual.bin", b"%PDF-1.7\n", "pdf"),
        ("page.php", b"<html><body>x", "html"),
        ("style.css", b"body { color: red }", None),
        ("guide.MD", b"anything", "markdown"),
        # the extension is trusted unless the bytes clearly contradict it
        ("pdf-notes.md", b"# PDF notes\n\nEvery PDF starts with %PDF-1.7 and a binary line.\n", "markdown"),
        ("pdf-notes.md", b"# Notes\n\n%PDF-1.7\n", "markdown"),
        ("pdf-notes.txt", b"Header:\n%PDF-1.4\n", "text"),
        ("README", b"Our files mention %PDF- in passing", "text"),
        ("disguised.md", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "pdf"),
        ("manual.bin", b"junk before the header\n%PDF-1.7\n", "pdf"),
    ],
)
def test_detect_format(name: str, head: bytes, expected: str | None) -> None:
    assert detect_format(name, head) == expected


def test_load_document_dispatches_by_format() -> None:
    doc = load_document(b"# Hi\n\nthere", doc_id="h", path="/h", fmt="markdown")
    assert doc.format == "markdown" and doc.title == "Hi"


def test_loader_sandbox_imports_no_chunking_or_collection_walk() -> None:
    """The sandbox worker imports only what parsing needs (it starts once per loader
    process, and a pool build runs one per worker)."""
    import subprocess
    import sys

    script = (
        "import sys; import ingest._worker, ingest.loaders, ingest.safe_load, ingest.sandbox; "
        "print(sorted(m for m in ('ingest.chunking', 'ingest.collection', 'ingest.tokens') if m in sys.modules))"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]", run.stdout + run.stderr
