"""Build the bundled sample manual: SQLite's HTML documentation as Markdown.

Reads the HTML pages installed by the Debian package ``sqlite3-doc`` (public
domain), converts a curated subset into Markdown files with YAML frontmatter
and writes them to ``examples/sqlite/``.  The output is deterministic: the same
input directory always produces byte-identical files.

Usage::

    apt-get install -y sqlite3-doc
    python examples/build_sample_manual.py            # defaults below
    python examples/build_sample_manual.py --src /usr/share/doc/sqlite3 --out examples/sqlite

Pages under ``c3ref/`` (the C API reference) are written flat as
``c3ref_<name>.md`` because several of them share a base name with a
top-level page (``backup``, ``vfs``, ``vtab``, ...).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from bs4 import BeautifulSoup, NavigableString, Tag
from bs4.element import Comment, Doctype, ProcessingInstruction

DEFAULT_SRC = Path("/usr/share/doc/sqlite3")
DEFAULT_OUT = Path(__file__).resolve().parent / "sqlite"
BASE_URL = "https://sqlite.org/"

# --- The curated subset --------------------------------------------------
# Top-level pages: the SQL language reference, pragmas, core concepts
# (storage, locking, transactions, query planning), extensions, the CLI and
# tools, C API overviews.  Left out on purpose: change logs, release notes,
# news, download/support/consortium pages, the generated cross-reference and
# keyword indexes, requirements.html and capi3ref.html (machine-generated
# concatenations of other pages), fileformat.html (duplicate of
# fileformat2.html) and pages about the obsolete SQLite version 2.
TOP_LEVEL_PAGES: tuple[str, ...] = (
    # SQL language
    "lang_aggfunc", "lang_altertable", "lang_analyze", "lang_attach",
    "lang_comment", "lang_conflict", "lang_corefunc", "lang_createindex",
    "lang_createtable", "lang_createtrigger", "lang_createview",
    "lang_createvtab", "lang_datefunc", "lang_delete", "lang_detach",
    "lang_dropindex", "lang_droptable", "lang_droptrigger", "lang_dropview",
    "lang_explain", "lang_expr", "lang_indexedby", "lang_insert",
    "lang_keywords", "lang_mathfunc", "lang_naming", "lang_reindex",
    "lang_replace", "lang_returning", "lang_savepoint", "lang_select",
    "lang_transaction", "lang_update", "lang_upsert", "lang_vacuum",
    "lang_with",
    "pragma", "windowfunctions", "json1", "datatype3", "stricttables",
    "gencol", "rowvalue", "partialindex", "expridx", "foreignkeys",
    "autoinc", "rowidtable", "withoutrowid", "nulls", "conflict",
    "schematab", "printf", "deterministic", "floatingpoint", "flextypegood",
    "quirks", "omitted", "fullsql", "nulinstr", "invalidutf", "uintcseq",
    # Storage, transactions, concurrency
    "fileformat2", "atomiccommit", "lockingv3", "wal", "walformat",
    "isolation", "transactional", "tempfiles", "inmemorydb", "mmap", "psow",
    "sharedcache", "threadsafe", "unlock_notify", "backup", "howtocorrupt",
    "recovery", "pgszchng2016", "shortnames", "useovernet", "uri",
    "intern-v-extern-blob", "fasterthanfs",
    # Query planning and the bytecode engine
    "queryplanner", "queryplanner-ng", "optoverview", "eqp", "opcode",
    "np1queryprob", "cpu", "bytecodevtab",
    # Extensions and virtual tables
    "fts3", "fts5", "rtree", "geopoly", "vtab", "vtablist", "csv", "carray",
    "series", "completion", "dbstat", "dbpage", "memstat", "stmt",
    "unionvtab", "swarmvtab", "spellfix1", "zipfile", "sqlar", "session",
    "sessionintro", "rbu", "cksumvfs", "loadext", "appfunc", "bindptr",
    "imposter",
    # C API overviews and internals
    "cintro", "arch", "howitworks", "vfs", "malloc", "errlog", "rescode",
    "limits", "compile", "custombuild", "footprint", "assert", "asyncvfs",
    "debugging", "undoredo", "tclsqlite", "amalgamation", "howtocompile",
    "version3", "versionnumbers",
    # Tools
    "cli", "sqlanalyze", "sqldiff", "dbhash", "lemon",
    # About SQLite, design rationale, quality
    "about", "features", "different", "whentouse", "serverless",
    "zeroconf", "selfcontained", "onefile", "appfileformat", "aff_short",
    "affcase1", "security", "testing", "th3", "qmplan", "whyc", "faq",
    "copyright", "cves", "hirely", "lts", "quickstart", "formatchng",
    "locrsf", "mostdeployed",
)

# The most-used part of the C API reference, plus its introduction.
C3REF_PAGES: tuple[str, ...] = (
    "intro", "sqlite3", "stmt", "open", "close", "prepare", "step",
    "finalize", "reset", "exec", "bind_blob", "bind_parameter_count",
    "bind_parameter_index", "bind_parameter_name", "clear_bindings",
    "column_blob", "column_count", "column_name", "column_decltype",
    "column_database_name", "data_count", "errcode", "c_abort",
    "c_abort_rollback", "extended_result_codes", "busy_handler",
    "busy_timeout", "interrupt", "progress_handler", "changes",
    "total_changes", "last_insert_rowid", "get_autocommit", "txn_state",
    "create_function", "create_collation", "collation_needed",
    "aggregate_context", "result_blob", "value_blob", "value", "context",
    "user_data", "get_auxdata", "c_deterministic", "create_module",
    "module", "vtab", "vtab_cursor", "index_info", "declare_vtab",
    "vtab_config", "vtab_on_conflict", "vtab_in", "vtab_rhs_value",
    "blob_open", "blob_read", "blob_write", "blob_close", "blob_bytes",
    "blob_reopen", "backup_finish", "wal_checkpoint_v2",
    "wal_autocheckpoint", "wal_hook", "c_checkpoint_full", "snapshot_get",
    "snapshot_open", "config", "c_config_covering_index_scan", "db_config",
    "c_dbconfig_defensive", "initialize", "limit", "c_limit_attached",
    "threadsafe", "mutex_alloc", "vfs", "io_methods", "file_control",
    "c_fcntl_begin_atomic_write", "free", "mem_methods",
    "hard_heap_limit64", "release_memory", "db_release_memory", "status",
    "c_status_malloc_count", "db_status", "c_dbstatus_options",
    "stmt_status", "c_stmtstatus_counter", "set_authorizer",
    "c_alter_table", "c_deny", "trace_v2", "c_trace", "commit_hook",
    "update_hook", "preupdate_blobwrite", "unlock_notify", "load_extension",
    "enable_load_extension", "auto_extension", "enable_shared_cache",
    "serialize", "deserialize", "expanded_sql", "stmt_readonly", "complete",
    "mprintf", "libversion", "c_source_id", "compileoption_get",
    "db_filename", "uri_boolean", "temp_directory", "table_column_metadata",
    "pcache_methods2", "c_blob",
)

# Elements that never carry manual content.
_DROP_TAGS = ("script", "style", "svg", "button", "form", "img", "noscript",
              "select", "input", "iframe", "map", "area", "head")
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_BLOCK_TAGS = {
    "p", "pre", "ul", "ol", "dl", "table", "blockquote", "div", "center",
    "hr", "section", "article", "body", "html", "main", "font", "form",
    "dd", "dt", "li", "tr", "td", "th", "tbody", "thead", "tfoot", "caption",
    *_HEADINGS,
}
_CODE_TAGS = {"code", "tt", "kbd", "samp", "var"}
# Block content found inside an inline element means broken markup (an
# unclosed tag swallowing the rest of the page); such elements are unwrapped.
_STRUCTURAL_TAGS = ["p", "pre", "ul", "ol", "dl", "table", "blockquote", "div", *_HEADINGS]
# A line beginning like this would be misread as Markdown structure.
_LINE_START_MARKUP = re.compile(r"^(#{1,6}\s|>|[-+*]\s|\d+[.)]\s|```|~~~|\|)")
_FOOTER_TEXT = "This page last modified on"
_C3REF_SEE_ALSO = re.compile(r"^See also lists of\s+Objects,\s+Constants,\s+and\s+Functions\.?$")


@dataclass(frozen=True)
class Page:
    """One converted page: where it came from and its Markdown."""

    rel_path: str  # path inside the docs directory, e.g. "c3ref/open.html"
    out_name: str  # file name under the output directory
    title: str
    markdown: str

    @property
    def source_url(self) -> str:
        return BASE_URL + self.rel_path


# --- HTML -> Markdown ----------------------------------------------------

def _collapse(text: str) -> str:
    return re.sub(r"[ \t\r\n\f\v\u00a0]+", " ", text)


def _code_span(text: str) -> str:
    text = _collapse(text).strip()
    if not text:
        return ""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _inline(node: Tag | NavigableString, in_table: bool = False) -> str:
    """Render a node as inline Markdown (text, code spans, line breaks)."""
    if isinstance(node, (Comment, Doctype, ProcessingInstruction)):
        return ""
    if isinstance(node, NavigableString):
        return _collapse(str(node))
    name = node.name
    if name == "br":
        return " <br> " if in_table else "\n"
    if name in _CODE_TAGS:
        return _code_span(node.get_text())
    if name == "sup":
        # Exponents: "2<sup>31</sup>-1" must not read as "231-1".
        return "^" + "".join(_inline(child, in_table) for child in node.children)
    if name == "pre":
        # A <pre> inside a table cell or a paragraph-like context.
        return " " + _code_span(node.get_text()) + " "
    parts = [_inline(child, in_table) for child in node.children]
    text = "".join(parts)
    if name in _BLOCK_TAGS:
        # Keep words of adjacent blocks apart when flattened.
        return f" {text} "
    return text


def _clean_paragraph(text: str) -> str:
    lines = [re.sub(r" {2,}", " ", ln).strip() for ln in text.split("\n")]
    lines = [ln for ln in lines if ln]
    out = []
    for ln in lines:
        if _LINE_START_MARKUP.match(ln):
            ln = "\\" + ln
        out.append(ln)
    return "\n".join(out)


def _fence(code: str) -> str:
    code = code.replace("\r\n", "\n").replace("\u00a0", " ")
    lines = [ln.rstrip() for ln in code.split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return ""
    body = "\n".join(lines)
    fence = "~~~~" if "```" in body else "```"
    return f"{fence}\n{body}\n{fence}"


def _indent(block: str, prefix: str) -> str:
    return "\n".join(prefix + ln if ln else ln for ln in block.split("\n"))


class _Converter:
    """Turns a cleaned HTML tree into a list of Markdown blocks."""

    def __init__(self, heading_shift: int) -> None:
        self.heading_shift = heading_shift
        self.last_level = 0  # level of the latest numbered heading written

    def heading(self, node: Tag) -> str:
        text = _clean_paragraph(_collapse(_inline(node))).replace("\n", " ").lstrip("\\")
        if not text:
            return ""
        if node.name == "h":
            # pragma.html marks each pragma with a level-less (hidden) <h>;
            # it belongs one level under the section it appears in.
            level = self.last_level + 1
        else:
            level = _HEADINGS[node.name] - self.heading_shift
            self.last_level = level
        return "#" * min(6, max(1, level)) + " " + text

    def blocks(self, node: Tag) -> list[str]:
        out: list[str] = []
        run: list[str] = []  # pending inline content

        def flush() -> None:
            if run:
                para = _clean_paragraph("".join(run))
                if para:
                    out.append(para)
                run.clear()

        for child in node.children:
            if isinstance(child, (Comment, Doctype, ProcessingInstruction)):
                continue
            if isinstance(child, NavigableString):
                run.append(_collapse(str(child)))
                continue
            name = child.name
            if name in _HEADINGS or name == "h":
                flush()
                heading = self.heading(child)
                if heading:
                    out.append(heading)
            elif name == "p":
                flush()
                out.extend(self.blocks(child))
            elif name == "pre":
                flush()
                fenced = _fence(child.get_text())
                if fenced:
                    out.append(fenced)
            elif name in ("ul", "ol"):
                flush()
                lst = self.list_block(child, ordered=(name == "ol"))
                if lst:
                    out.append(lst)
            elif name == "dl":
                flush()
                lst = self.definition_list(child)
                if lst:
                    out.append(lst)
            elif name == "table":
                flush()
                out.extend(self.table(child))
            elif name == "hr":
                flush()
            elif name in _BLOCK_TAGS or child.find(_STRUCTURAL_TAGS) is not None:
                # Containers (div, blockquote, center, font, ...) are unwrapped:
                # in these docs they indent or style, they do not quote.
                flush()
                out.extend(self.blocks(child))
            else:
                run.append(_inline(child))
        flush()
        return out

    def list_block(self, node: Tag, ordered: bool) -> str:
        items: list[str] = []
        number = 1
        start = node.get("start")
        if ordered and isinstance(start, str) and start.isdigit():
            number = int(start)
        for li in node.find_all("li", recursive=False):
            value = li.get("value")
            if ordered and isinstance(value, str) and value.strip().isdigit():
                number = int(value)  # e.g. tempfiles.html numbers a list from 0
            marker = f"{number}. " if ordered else "- "
            number += 1
            inner = self.blocks(li)
            if not inner:
                continue
            pad = " " * len(marker)
            first = _indent(inner[0], pad)[len(pad):] if inner[0] else ""
            text = marker + first
            for block in inner[1:]:
                text += "\n\n" + _indent(block, pad)
            items.append(text)
        # Loose list (blank line between items) when any item has several blocks.
        sep = "\n\n" if any("\n\n" in it for it in items) else "\n"
        return sep.join(items)

    def definition_list(self, node: Tag) -> str:
        # Markdown has no definition lists: each term becomes a list item and
        # its definition the item's indented body.
        entries: list[list[str]] = []
        for child in node.children:
            if not isinstance(child, Tag):
                continue
            if child.name == "dt":
                term = _clean_paragraph(_inline(child)).replace("\n", " ")
                if term:
                    entries.append(["- " + term])
            elif child.name == "dd":
                body = self.blocks(child)
                if entries:
                    entries[-1].extend(_indent(b, "  ") for b in body)
                else:
                    entries.append(body)
        return "\n\n".join("\n\n".join(e) for e in entries if e)

    def layout_table(self, rows: list[list[Tag]], two_columns: bool) -> list[str]:
        """Cells holding block content cannot become a pipe table.

        A two-column table of that kind (term, description: the opcode list,
        for one) is rendered like a definition list; anything else is read
        cell by cell, in document order.
        """
        out: list[str] = []
        for row in rows:
            if two_columns and row and all(c.name == "th" for c in row):
                continue  # column captions mean nothing once the grid is gone
            first = row[0] if row else None
            if two_columns and len(row) == 2 and first is not None and first.find(_STRUCTURAL_TAGS) is None:
                term = _collapse(_inline(first)).strip()
                if 0 < len(term) <= 80:
                    body = self.blocks(row[1])
                    out.append("\n\n".join(["- " + term, *(_indent(b, "  ") for b in body)]))
                    continue
            for cell in row:
                out.extend(self.blocks(cell))
        return out

    def table(self, node: Tag) -> list[str]:
        rows = [tr for tr in node.find_all("tr") if tr.find_parent("table") is node]
        cells_by_row = [
            [c for c in tr.find_all(["td", "th"], recursive=False)] for tr in rows
        ]
        nested = node.find(["table", "pre", "ul", "ol", "dl", "h1", "h2", "h3", "h4"])
        ncols = max((sum(int(c.get("colspan", 1) or 1) for c in r) for r in cells_by_row), default=0)
        if nested is not None or ncols <= 1 or len(rows) < 2:
            return self.layout_table(cells_by_row, two_columns=(ncols == 2 and len(rows) >= 2))
        grid: list[list[str]] = []
        for row in cells_by_row:
            line: list[str] = []
            for cell in row:
                text = _collapse(_inline(cell, in_table=True)).strip()
                text = re.sub(r"(\s*<br>\s*)+", " <br> ", text).strip()
                text = re.sub(r"^(<br>\s*)+|(\s*<br>)+$", "", text).strip()
                line.append(text.replace("|", "\\|"))
                line.extend("" for _ in range(int(cell.get("colspan", 1) or 1) - 1))
            line.extend("" for _ in range(ncols - len(line)))
            grid.append(line[:ncols])
        grid = [r for r in grid if any(r)]
        if len(grid) < 2:
            return [_clean_paragraph(" ".join(" ".join(r) for r in grid))] if grid else []
        lines = ["| " + " | ".join(grid[0]) + " |", "|" + "---|" * ncols]
        lines += ["| " + " | ".join(r) + " |" for r in grid[1:]]
        return ["\n".join(lines)]


def _strip_chrome(soup: BeautifulSoup) -> None:
    """Remove navigation, menus, search, syntax-diagram images and footers."""
    for tag in soup.find_all(_DROP_TAGS):
        tag.decompose()
    for cls in ("nosearch", "imgcontainer", "fancy_toc", "menu", "searchmenu"):
        for tag in soup.find_all(class_=cls):
            tag.decompose()
    for small in soup.find_all(["p", "small"]):
        if small.decomposed:
            continue
        # Test the start and the length: with broken markup a <p> can enclose
        # the rest of the page, footer included.
        text = _collapse(small.get_text()).strip()
        if text.startswith(_FOOTER_TEXT) and len(text) < 200:
            small.decompose()
    for p in soup.find_all("p"):
        if p.decomposed:
            continue
        text = _collapse(p.get_text()).strip()
        if _C3REF_SEE_ALSO.match(text):
            p.decompose()
            continue
        # Labels of the (removed) syntax diagrams: "select-stmt:" linked to syntax/.
        links = p.find_all("a")
        if (
            links
            and all(str(a.get("href", "")).startswith(("syntax/", "../syntax/")) for a in links)
            and text.endswith(":")
            and _collapse(" ".join(a.get_text() for a in links)).strip() == text
        ):
            p.decompose()


def convert_html(html: str) -> tuple[str, str]:
    """Convert one SQLite documentation page; return (title, markdown body)."""
    soup = BeautifulSoup(html, "lxml")
    title_tag = soup.find("title")
    title = _collapse(title_tag.get_text()).strip() if title_tag else ""
    _strip_chrome(soup)
    body = soup.body or soup
    levels = [_HEADINGS[h.name] for h in body.find_all(list(_HEADINGS))]
    shift = (min(levels) - 1) if levels else 0
    blocks = _Converter(shift).blocks(body)
    markdown = "\n\n".join(b for b in blocks if b.strip())
    return title, markdown.strip() + "\n"


def frontmatter(title: str, source: str, version: str) -> str:
    # JSON strings are valid YAML double-quoted scalars, so this is safe YAML.
    return (
        "---\n"
        f"title: {json.dumps(title, ensure_ascii=False)}\n"
        f"source: {source}\n"
        f"version: {json.dumps(version)}\n"
        "---\n\n"
    )


def docs_version(src: Path) -> str:
    """Upstream SQLite version of the installed Debian sqlite3-doc package."""
    changelog = src / "changelog.Debian.gz"
    with gzip.open(changelog, "rt", encoding="utf-8") as fh:
        first = fh.readline()
    match = re.match(r"^\S+ \((?:\d+:)?([0-9.]+)[-+~]", first)
    if not match:
        raise ValueError(f"cannot read a version from {changelog}: {first!r}")
    return match.group(1)


def selected_pages() -> list[tuple[str, str]]:
    """(relative html path, output file name) for every page in the subset."""
    pages = [(f"{name}.html", f"{name}.md") for name in TOP_LEVEL_PAGES]
    pages += [(f"c3ref/{name}.html", f"c3ref_{name}.md") for name in C3REF_PAGES]
    names = [out for _, out in pages]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise ValueError(f"pages listed twice: {sorted(dupes)}")
    return sorted(pages, key=lambda p: p[1])


def build(src: Path, out: Path, version: str | None = None) -> list[Page]:
    """Convert the subset from ``src`` into ``out``; return the pages written.

    Markdown files in ``out`` that are not part of the subset are removed so
    the directory always mirrors the current page list.
    """
    version = version or docs_version(src)
    out.mkdir(parents=True, exist_ok=True)
    pages: list[Page] = []
    for rel, out_name in selected_pages():
        html = (src / rel).read_text(encoding="utf-8", errors="replace")
        title, body = convert_html(html)
        if not title:
            raise ValueError(f"{rel}: page has no <title>")
        page = Page(rel_path=rel, out_name=out_name, title=title, markdown=body)
        text = frontmatter(title, page.source_url, version) + body
        (out / out_name).write_text(text, encoding="utf-8")
        pages.append(page)
    wanted = {p.out_name for p in pages}
    for stale in out.glob("*.md"):
        if stale.name not in wanted:
            stale.unlink()
    return pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", type=Path, default=DEFAULT_SRC,
                        help="sqlite3-doc HTML directory (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="output directory (default: examples/sqlite)")
    parser.add_argument("--version", default=None,
                        help="docs version for the frontmatter (default: read from the Debian changelog)")
    args = parser.parse_args(argv)
    if not (args.src / "lang_select.html").exists():
        print(f"{args.src} does not look like sqlite3-doc; run: apt-get install -y sqlite3-doc",
              file=sys.stderr)
        return 2
    pages = build(args.src, args.out, args.version)
    words = sum(len(p.markdown.split()) for p in pages)
    print(f"wrote {len(pages)} pages, {words} words, to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
