"""Markdown loader (CommonMark + GFM tables, YAML frontmatter) built on markdown-it-py."""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.token import Token

from ingest.loaders._common import BlockSpec, build_document, clean_code, clean_inline, decode_text
from ingest.loaders.html import html_fragment_text
from ingest.metadata import markdown_metadata
from ingest.models import Document

# markdown-it-py's block and inline parsers are linear in the input except for
# nesting, which maxNesting bounds.
_MAX_NESTING = 20


def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"maxNesting": _MAX_NESTING}).enable("table")


def load_markdown(raw: bytes, *, doc_id: str, path: str) -> Document:
    """Load a Markdown file: frontmatter metadata, headings, paragraphs, lists, tables, code."""
    text, warnings = decode_text(raw)
    title, metadata, meta_warnings, body = markdown_metadata(text)
    warnings += meta_warnings
    specs = markdown_blocks(body)
    return build_document(
        specs, raw=raw, doc_id=doc_id, path=path, fmt="markdown", title=title,
        metadata=metadata, warnings=warnings,
    )


def markdown_blocks(body: str) -> list[BlockSpec]:
    """Turn Markdown text (without frontmatter) into blocks."""
    tokens = _parser().parse(body)
    specs: list[BlockSpec] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.type == "heading_open":
            specs.append(BlockSpec("heading", _inline_text(tokens[i + 1]), int(tok.tag[1:])))
            i += 3
        elif tok.type == "paragraph_open":
            specs.append(BlockSpec("paragraph", _inline_text(tokens[i + 1])))
            i += 3
        elif tok.type in ("fence", "code_block"):
            specs.append(BlockSpec("code", clean_code(tok.content)))
            i += 1
        elif tok.type == "html_block":
            specs.append(BlockSpec("paragraph", html_fragment_text(tok.content)))
            i += 1
        elif tok.type in ("bullet_list_open", "ordered_list_open"):
            end = _matching_close(tokens, i)
            specs.append(BlockSpec("list", _render_list(tokens[i : end + 1])))
            i = end + 1
        elif tok.type == "table_open":
            end = _matching_close(tokens, i)
            specs.append(BlockSpec("table", _render_table(tokens[i : end + 1])))
            i = end + 1
        else:  # blockquote wrappers, hr, closing tokens: their content is handled above
            i += 1
    return specs


def _matching_close(tokens: list[Token], start: int) -> int:
    depth = 0
    for j in range(start, len(tokens)):
        depth += tokens[j].nesting
        if depth == 0:
            return j
    return len(tokens) - 1


def _inline_text(tok: Token) -> str:
    parts: list[str] = []
    for child in tok.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type == "softbreak":
            parts.append(" ")
        elif child.type == "hardbreak":
            parts.append("\n")
        elif child.type == "image":
            parts.append(child.content)  # the alt text
    return "\n".join(clean_inline(line) for line in "".join(parts).split("\n")).strip()


def _render_list(tokens: list[Token]) -> str:
    """Render a (nested) list as text lines: "- item", "1. item", indented by depth."""
    lines: list[str] = []
    depth = 0
    marker: str | None = None
    for tok in tokens:
        if tok.type in ("bullet_list_open", "ordered_list_open"):
            depth += 1
        elif tok.type in ("bullet_list_close", "ordered_list_close"):
            depth -= 1
        elif tok.type == "list_item_open":
            marker = f"{tok.info}{tok.markup}" if tok.info else "-"
        else:
            if tok.type == "inline":
                content = _inline_text(tok)
            elif tok.type in ("fence", "code_block"):
                content = clean_code(tok.content)
            elif tok.type == "html_block":
                content = html_fragment_text(tok.content)
            else:
                continue
            if not content:
                continue
            indent = "  " * max(depth - 1, 0)
            lead = f"{indent}{marker} " if marker else indent + "  "
            marker = None
            content_lines = content.split("\n")
            lines.append(lead + content_lines[0])
            lines.extend(indent + "  " + extra for extra in content_lines[1:])
    return "\n".join(lines)


def _render_table(tokens: list[Token]) -> str:
    rows: list[str] = []
    cells: list[str] = []
    for tok in tokens:
        if tok.type == "tr_open":
            cells = []
        elif tok.type == "inline":
            cells.append(_inline_text(tok).replace("\n", " "))
        elif tok.type == "tr_close" and any(cells):
            rows.append(" | ".join(cells))
    return "\n".join(rows)
