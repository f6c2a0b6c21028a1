"""reStructuredText loader built on docutils, tolerant of Sphinx-only markup.

docutils runs with reports silenced, halting disabled, and file insertion (``include``,
``raw :file:``) turned off, so a document can never make the loader read another
file. Sphinx directives and roles unknown to docutils keep their text instead of
turning into error messages; ``include`` and ``contents`` are skipped without a warning,
and ``.. only::`` keeps its content but not its condition.
"""

from __future__ import annotations

import io
import re
from typing import Any

from docutils import nodes
from docutils.core import publish_doctree
from docutils.parsers.rst import Parser, roles, states
from docutils.statemachine import StringList

from ingest.loaders._common import BlockSpec, build_document, clean_code, clean_inline, decode_text
from ingest.metadata import refuse_unread_acl
from ingest.models import Document

_SETTINGS: dict[str, Any] = {
    "report_level": 5,  # report nothing
    "halt_level": 5,  # never raise on a markup error
    "warning_stream": False,
    "file_insertion_enabled": False,
    "raw_enabled": False,
    "_disable_config": True,  # ignore docutils.conf files around the process
    "doctitle_xform": False,  # keep the top section as a level-1 heading
    "sectsubtitle_xform": False,
    "smart_quotes": False,
    "embed_stylesheet": False,
    "line_length_limit": 100_000,
}
# Sphinx directives whose arguments are the thing described (an API signature).
_DESCRIBING = frozenset(
    "function method classmethod staticmethod class exception attribute data decorator "
    "decoratormethod module-level describe object cmdoption option envvar type macro member "
    "var struct union enum enumerator opcode pdbcommand program property".split()
)
_CODE_DIRECTIVES = frozenset("code-block sourcecode doctest testcode testoutput productionlist".split())
_SILENT_DIRECTIVES = frozenset(
    "toctree index highlight module currentmodule moduleauthor sectionauthor testsetup "
    "testcleanup tabularcolumns literalinclude autosummary automodule autoclass autofunction "
    "audit-event-table include raw contents".split()
)
# Directives docutils knows but a Sphinx manual means differently, or that the loader
# turned off: ``include`` and ``raw`` (file insertion is disabled, and docutils would
# warn for every one), ``contents`` (a generated table of contents, not text; docutils
# refuses it inside ``.. only::``). They go through ``unknown_directive`` instead
# (``explicit_construct`` calls docutils' own directive lookup directly, so this is
# matched before it).
_OVERRIDDEN = re.compile(r"^\.\.\s+(include|raw|contents)\s*::", re.I)
# Directives whose argument is a condition, not text: the content is kept, the argument
# (``.. only:: html``) is not.
_CONDITIONAL = frozenset({"only", "ifconfig"})
_LABELS = {
    "versionadded": "New in version",
    "versionchanged": "Changed in version",
    "deprecated": "Deprecated since version",
    "deprecated-removed": "Deprecated since version",
    "seealso": "See also",
}
_VERSIONED = frozenset({"versionadded", "versionchanged", "deprecated", "deprecated-removed"})
_SPHINX_CLASS = re.compile(r"^\.\.\s+class::\s*[\w.]+\s*[(.]|^\.\.\s+class::\s*[\w]+\.[\w.]+")
# `title <target>`; a generator expression (:genex:`$<CONFIG>`) is not a target
_ROLE_TARGET = re.compile(r"^(.*?)\s*(?<!\$)<[^<>]*>$", re.S)


def load_rst(raw: bytes, *, doc_id: str, path: str) -> Document:
    """Load a reStructuredText file into headings, paragraphs, lists, tables and code."""
    text, warnings = decode_text(raw)
    refuse_unread_acl(text, "reStructuredText")
    doctree = publish_doctree(
        text, parser=_TolerantParser(), settings_overrides=dict(_SETTINGS)
    )
    problems = [m for m in doctree.findall(nodes.system_message) if m.get("level", 0) >= 2]
    if problems:
        first = clean_inline(problems[0].children[0].astext()) if problems[0].children else ""
        warnings.append(f"docutils reported {len(problems)} markup problem(s); first: {first[:200]}")
    specs: list[BlockSpec] = []
    _walk(doctree, specs, 0)
    return build_document(specs, raw=raw, doc_id=doc_id, path=path, fmt="rst", title=None, warnings=warnings)


def _tolerant_inliner() -> states.Inliner:
    """An Inliner that renders unknown interpreted-text roles (``:func:`x```) as text.

    The method is replaced on the instance because Inliner reads its regex pieces
    from ``vars(type(self))``, which a subclass would not have.
    """
    inliner = states.Inliner()
    known = inliner.interpreted

    def interpreted(rawsource, text, role, lineno):  # type: ignore[no-untyped-def]
        if roles.role(role, inliner.language, lineno, inliner.reporter)[0] is not None:
            return known(rawsource, text, role, lineno)
        shown = text.lstrip("~!")
        target = _ROLE_TARGET.match(shown)
        if target and target.group(1):
            shown = target.group(1)
        return [nodes.literal(rawsource, shown)], []

    inliner.interpreted = interpreted  # type: ignore[method-assign]
    return inliner


class _TolerantBody:
    """Mixin for the parser's Body states: parse unknown (Sphinx) directives generically."""

    def explicit_construct(self, match):  # type: ignore[no-untyped-def]
        # Sphinx's `.. class:: Name(args)` documents a class; docutils' own "class"
        # directive would swallow the signature as an HTML class attribute.
        if _SPHINX_CLASS.match(match.string):
            return self.unknown_directive("py:class")
        overridden = _OVERRIDDEN.match(match.string)
        if overridden:
            return self.unknown_directive(overridden.group(1).lower())
        return super().explicit_construct(match)  # type: ignore[misc]

    def unknown_directive(self, type_name):  # type: ignore[no-untyped-def]
        state_machine = self.state_machine  # type: ignore[attr-defined]
        line = state_machine.line
        start = line.find("::") + 2 if "::" in line else len(line)
        indented, _indent, offset, blank_finish = state_machine.get_first_known_indented(start, strip_top=0)
        name = type_name.split(":")[-1]
        lines = list(indented)
        head: list[str] = []
        while lines and lines[0].strip():
            head.append(lines.pop(0))
        arguments = [h.strip() for h in head if not re.match(r"^:[\w-]+:", h.strip())]
        if name in _SILENT_DIRECTIVES:
            return [], blank_finish
        if name in _CODE_DIRECTIVES:
            code = "\n".join(lines)
            return [nodes.literal_block(code, code)], blank_finish
        result: list[nodes.Node] = []
        if name in _CONDITIONAL:
            pass
        elif name in _DESCRIBING:
            if arguments:
                shown = " ".join(a.rstrip("\\").strip() for a in arguments)
                result.append(nodes.paragraph(shown, shown))
        else:
            # `.. versionchanged:: 3.6 text` and `.. seealso:: text`: the words after the
            # version are ordinary markup, parsed with the body
            words = " ".join(arguments).split(None, 1) if name in _VERSIONED else ["", " ".join(arguments)]
            if name in _LABELS:
                label = f"{_LABELS[name]} {words[0]}".strip() + ":"
                result.append(nodes.paragraph(label, label))
            if len(words) > 1 and words[1].strip():
                lines = [words[1], "", *lines]
        container = nodes.container()
        content = StringList(lines, items=[("<rst>", offset + len(head) + i) for i in range(len(lines))])
        self.nested_parse(content, offset + len(head), container)  # type: ignore[attr-defined]
        result.append(container)
        return result, blank_finish


class _TolerantNesting:
    """Mixin for every parser state: nested content is parsed by tolerant states too."""

    def __init__(self, state_machine, debug=False):  # type: ignore[no-untyped-def]
        super().__init__(state_machine, debug)  # type: ignore[call-arg]
        self.nested_sm_kwargs = {"state_classes": _TOLERANT_STATES, "initial_state": "Body"}


def _tolerant_states() -> tuple[type, ...]:
    classes = []
    for cls in states.state_classes:
        mixins: tuple[type, ...] = (_TolerantNesting,)
        if issubclass(cls, states.Body):
            mixins = (_TolerantBody, _TolerantNesting)
        classes.append(type(cls.__name__, (*mixins, cls), {}))
    return tuple(classes)


_TOLERANT_STATES = _tolerant_states()


class _TolerantParser(Parser):
    def __init__(self) -> None:
        super().__init__(inliner=_tolerant_inliner())
        self.state_classes = _TOLERANT_STATES


_MAX_DEPTH = 60
_LIST_NODES = (nodes.bullet_list, nodes.enumerated_list, nodes.definition_list, nodes.field_list, nodes.option_list)
_SKIP_NODES = (nodes.system_message, nodes.comment, nodes.substitution_definition, nodes.target, nodes.raw, nodes.pending, nodes.image)


def _walk(node: nodes.Node, out: list[BlockSpec], level: int, depth: int = 0) -> None:
    for child in node.children:
        if isinstance(child, _SKIP_NODES):
            continue
        if isinstance(child, nodes.section):
            _walk(child, out, level + 1, depth + 1)
        elif isinstance(child, nodes.title):
            kind = "heading" if isinstance(node, nodes.section) else "paragraph"
            out.append(BlockSpec(kind, clean_inline(child.astext()), level if kind == "heading" else 0))
        elif isinstance(child, (nodes.literal_block, nodes.doctest_block)):
            out.append(BlockSpec("code", clean_code(child.astext())))
        elif isinstance(child, (nodes.paragraph, nodes.rubric, nodes.caption, nodes.attribution, nodes.Text)):
            out.append(BlockSpec("paragraph", clean_inline(child.astext())))
        elif isinstance(child, nodes.line_block):
            out.append(BlockSpec("paragraph", "\n".join(clean_inline(l.astext()) for l in child.findall(nodes.line))))
        elif isinstance(child, _LIST_NODES):
            out.append(BlockSpec("list", "\n".join(_list_lines(child, 0))))
        elif isinstance(child, nodes.table):
            out.append(BlockSpec("table", _table_text(child)))
        elif depth >= _MAX_DEPTH or not isinstance(child, nodes.Element):
            out.append(BlockSpec("paragraph", clean_inline(child.astext())))
        else:  # block quotes, admonitions, containers, topics, footnotes...
            _walk(child, out, level, depth + 1)


def _list_lines(lst: nodes.Element, depth: int) -> list[str]:
    indent = "  " * depth
    lines: list[str] = []
    number = int(lst.get("start", 1)) if isinstance(lst, nodes.enumerated_list) else 1
    for item in lst.children:
        if not isinstance(item, nodes.Element):
            continue
        if isinstance(lst, nodes.enumerated_list):
            marker = f"{number}."
            number += 1
        else:
            marker = "-"
        own: list[str] = []
        nested: list[nodes.Element] = []
        for part in item.children:
            if isinstance(part, _LIST_NODES) and depth < 20:
                nested.append(part)
            elif isinstance(part, (nodes.term, nodes.field_name, nodes.option_group)):
                own.append(clean_inline(part.astext()) + ":")
            elif isinstance(part, (nodes.definition, nodes.field_body, nodes.description)):
                for sub in part.children:
                    if isinstance(sub, _LIST_NODES) and depth < 20:
                        nested.append(sub)
                    else:
                        own.append(clean_inline(sub.astext()))
            else:
                own.append(clean_inline(part.astext()))
        text = " ".join(o for o in own if o)
        if text:
            lines.append(f"{indent}{marker} {text}")
        for sub in nested:
            lines.extend(_list_lines(sub, depth + 1))
    return lines


def _table_text(table: nodes.table) -> str:
    rows = []
    for row in table.findall(nodes.row):
        cells = [clean_inline(entry.astext()) for entry in row.children if isinstance(entry, nodes.entry)]
        if any(cells):
            rows.append(" | ".join(cells))
    return "\n".join(rows)
