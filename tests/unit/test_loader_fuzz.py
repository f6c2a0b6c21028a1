"""Malformed input: no loader may raise, hang, or give an unclear reason.

Hypothesis builds broken HTML, Markdown, reST and PDF bytes from fragments of each
format (random bytes alone would rarely reach past the first parser check), and
``load_or_skip`` must return a valid Document or a SkippedFile with a readable
reason. The last test pushes seeded mutations of the real test files through the
full, time-bounded collection walk.
"""

from __future__ import annotations

import random
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest import Document, SkippedFile, iter_collection
from ingest.safe_load import load_or_skip

DATA = Path(__file__).parents[1] / "data"
FUZZ = settings(max_examples=120, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def check_parsed(result: Document | SkippedFile) -> None:
    """For parsers that accept any input (lxml, markdown-it): a "malformed" skip is our bug."""
    check(result)
    if isinstance(result, SkippedFile):
        assert not result.reason.startswith("malformed"), result.reason


def check(result: Document | SkippedFile) -> None:
    if isinstance(result, Document):
        assert result.blocks
        assert result.text == "\n\n".join(b.text for b in result.blocks)
        for block in result.blocks:
            assert result.text[block.start : block.end] == block.text
    else:
        reason = result.reason
        assert reason and "\n" not in reason and "Traceback" not in reason and len(reason) <= 300


def soup(fragments: list[str]) -> st.SearchStrategy[bytes]:
    """Byte strings made of format fragments, free text and the odd raw byte."""
    piece = st.one_of(
        st.sampled_from(fragments),
        st.text(max_size=12),
        st.binary(max_size=3),
    )
    return st.lists(piece, max_size=60).map(
        lambda parts: b"".join(p if isinstance(p, bytes) else p.encode("utf-8", "surrogatepass") for p in parts)
    )


HTML = [
    "<html>", "</html>", "<head><title>", "</title></head>", "<body>", "<div>", "</div>", "<p>", "</p>",
    "<pre>", "</pre>", "<table>", "<tr>", "<td>", "</td>", "<th>", "<ul>", "<ol start='x'>", "<li>", "</li>",
    "<dl><dt>", "<dd>", "<h1>", "</h1>", "<h3>", "<br>", "<nav>", "<script>", "</script>", "<style>", "<!--",
    "-->", "<![CDATA[", "]]>", "&amp;", "&#0;", "&#xD800;", "&bogus;", "<", ">", "\"", "<?xml version='1.0' encoding='x'?>",
    "<meta charset='nonsense'>", "<meta charset=utf-16>", "<a href=", "<div role=main>", "<main>", "<svg>", "\x00", "\r\n",
]
MARKDOWN = [
    "---\n", "title: x\n", "acl: [a\n", "acl: {a: 1}\n", "valid_from: 2024-13-45\n", "&a [1]\n", "*a\n", "# ", "###### ",
    "\n", "\n\n", "```", "~~~", "    ", "- ", "* ", "1. ", "99999999999999999999. ", "> ", "| a | b |\n", "|---|---|\n",
    "<div>", "</div>", "<!--", "[x](", ")", "![img](u)", "`", "**", "_", "\\", "===\n", "---\n", "\t", "\x00", "\ufeff",
]
RST = [
    "Title\n=====\n\n", "=====\n", "-----\n", "\n", "\n\n", "   ", ".. function:: f(x)\n", ".. class:: C(y)\n",
    "   :noindex:\n", ".. versionchanged:: 3.2 text\n", ".. include:: /etc/passwd\n", ".. raw:: html\n   :file: /etc/hosts\n",
    ".. code-block:: python\n\n   x = 1\n", "::\n\n    code\n", "* item\n", "#. auto\n", "+--+--+\n", "| a | b |\n",
    "+==+==+\n", ":func:`x`", ":ref:`t <l>`", "`", "``", "|sub|", ".. |sub| replace:: x\n", "[1]_", ".. [1] note\n",
    "__", "_`t`", ".. note::\n", ".. image:: x.png\n", ".. csv-table::\n   :file: /etc/passwd\n", ":field: value\n",
    "term\n   definition\n", "-o  option\n", "| line\n", ">>> 1\n", "\t", "\x00",
]
PDF_SOURCE = (DATA / "pdf/sqlite_datatypes.pdf").read_bytes()


@FUZZ
@given(raw=soup(HTML))
def test_malformed_html(raw: bytes) -> None:
    check_parsed(load_or_skip(raw, doc_id="f.html", path="/f.html", fmt="html"))


@FUZZ
@given(raw=soup(MARKDOWN))
def test_malformed_markdown(raw: bytes) -> None:
    check_parsed(load_or_skip(raw, doc_id="f.md", path="/f.md", fmt="markdown"))


@FUZZ
@given(raw=soup(RST))
def test_malformed_rst(raw: bytes) -> None:
    result = load_or_skip(raw, doc_id="f.rst", path="/f.rst", fmt="rst")
    check(result)
    if isinstance(result, SkippedFile):  # docutils itself never raises with halt_level 5
        assert result.reason in ("no text content", "malformed reStructuredText: nesting too deep to parse"), result.reason


@FUZZ
@given(raw=soup(MARKDOWN + HTML))
def test_malformed_text(raw: bytes) -> None:
    check_parsed(load_or_skip(raw, doc_id="f.txt", path="/f.txt", fmt="text"))


@st.composite
def mutated_pdf(draw: st.DrawFn) -> bytes:
    data = bytearray(PDF_SOURCE)
    for _ in range(draw(st.integers(1, 8))):
        op = draw(st.sampled_from(["flip", "cut", "splice", "truncate"]))
        at = draw(st.integers(0, len(data) - 1))
        if op == "flip":
            data[at] = draw(st.integers(0, 255))
        elif op == "cut":
            del data[at : at + draw(st.integers(1, 200))]
        elif op == "splice":
            data[at:at] = draw(st.sampled_from([b"obj", b"endobj", b"<<", b">>", b"/Length 999999", b"R", b"[", b"stream", b"xref", b"%%EOF"]))
        else:
            del data[max(at, 16) :]
        if not data:
            break
    return bytes(data)


@settings(max_examples=80, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=mutated_pdf())
def test_mutated_pdf(raw: bytes) -> None:
    check(load_or_skip(raw, doc_id="f.pdf", path="/f.pdf", fmt="pdf"))


def test_collection_walk_over_mutated_files_is_bounded(tmp_path: Path) -> None:
    rng = random.Random(1234)
    sources = [
        DATA / "html/python_json.html", DATA / "markdown/backup_guide.md", DATA / "rst/python_json.rst",
        DATA / "pdf/sqlite_datatypes.pdf", DATA / "text/apache-2.0.txt",
    ]
    names = []
    for source in sources:
        raw = source.read_bytes()
        for i in range(4):
            data = bytearray(raw)
            for _ in range(rng.randint(1, 40)):
                at = rng.randrange(len(data))
                if rng.random() < 0.5:
                    data[at] = rng.randrange(256)
                else:
                    del data[at : at + rng.randint(1, 500)]
            name = f"{source.stem}_{i}{source.suffix}"
            (tmp_path / name).write_bytes(bytes(data))
            names.append(name)
    results = list(iter_collection([tmp_path], load_timeout_s=20))
    assert sorted(Path(r.path).name for r in results) == sorted(names)
    for result in results:
        check(result)
    assert sum(isinstance(r, Document) for r in results) >= len(names) // 2  # most damage is survivable
