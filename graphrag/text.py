"""Small text utilities shared by extraction, resolution and search.

Pure functions, no language data files. The stopwords are
:data:`arborgraph.core.text.ENTITY_STOPWORDS`; sentences are cut by
:func:`arborgraph.core.text.sentence_spans` with its relation rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from arborgraph.core.text import RELATION_SENTENCES, sentence_spans

# Question and prose words that say nothing about the topic.
QUESTION_WORDS = frozenset(
    """
    what which who whom whose when where why how does do did explain describe tell
    happen happens affect affects relate related relation relationship between
    difference differ mean means meaning work works role main purpose kind kinds
    type types part parts thing things way ways
    """.split()
)

_WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_]*(?:[-'.][A-Za-z0-9_]+)*")
_LIST_ITEM_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def words(text: str) -> list[str]:
    """Lowercased word tokens of ``text`` (identifiers kept whole)."""
    return [m.group(0).lower() for m in _WORD_RE.finditer(text)]


def word_spans(text: str) -> Iterator[tuple[str, int, int]]:
    """(token, start, end) for each word token; the token keeps its case."""
    for m in _WORD_RE.finditer(text):
        yield m.group(0), m.start(), m.end()


def singular(word: str) -> str:
    """Crude English singular of one lowercased word; identifiers are left alone."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "zes")):
        return word[:-2]
    if word.endswith(("ss", "us", "is", "os", "ias", "vas")):
        return word  # class, status, analysis, chaos, alias, canvas
    if word.endswith("s"):
        return word[:-1]
    return word


_KEY_STRIP_RE = re.compile(r"^[`'\"]+|[`'\"]+$")
_KEY_CALL_RE = re.compile(r"\s*\([^()]*\)$")
_KEY_SEP_RE = re.compile(r"(?<=\w)[-_](?=\w)|[_\s]+")
_KEY_PUNCT_RE = re.compile(r"[,;:!?\"`]+")
_ARTICLE_RE = re.compile(r"^(?:the|a|an)\s+")


@lru_cache(maxsize=500_000)
def entity_key(name: str) -> str:
    """Normalised form under which surface variants of one name meet.

    Case, backticks, a trailing call ``()``, inner ``_``/``-`` and a plural last word
    do not matter: ``shared_buffers``, "Shared buffers" and ``shared-buffer`` share a
    key. Leading punctuation does matter, so the option ``-wal`` keeps apart from WAL.
    """
    s = _KEY_STRIP_RE.sub("", name.strip())
    s = _KEY_CALL_RE.sub("", s)
    last_upper = s.split()[-1].isupper() if s.split() else False
    s = _KEY_PUNCT_RE.sub(" ", s.lower())
    s = _KEY_SEP_RE.sub(" ", s).strip()
    s = _ARTICLE_RE.sub("", s)
    parts = s.split()
    if not parts:
        return ""
    if not last_upper:
        parts[-1] = singular(parts[-1])
    return " ".join(parts)


def slug(key: str) -> str:
    """An id-friendly form of a key: spaces become underscores."""
    return re.sub(r"\s+", "_", key.strip())


_FENCE_RE = re.compile(r"^[ \t]*(?:```|~~~).*?^[ \t]*(?:```|~~~)[ \t]*$", re.MULTILINE | re.DOTALL)
_PARA_RE = re.compile(r"[^\n]+(?:\n[^\n]+)*")
_CODE_START_RE = re.compile(
    r"^(?:sqlite>|\$ |>>> |#include|#define|(?:CREATE|SELECT|INSERT|UPDATE|DELETE|PRAGMA|BEGIN|COMMIT|"
    r"WITH|DROP|ALTER|EXPLAIN|ATTACH|REPLACE|VALUES)\b[^.!?]*(?:;|\(|,)$)"
)
_SQL_OPENING_RE = re.compile(r"^(?:CREATE|SELECT|INSERT|UPDATE|DELETE|PRAGMA|WITH|DROP|ALTER|EXPLAIN|REPLACE)\s+\S")
_CODE_LINE_END = (";", "{", "}", "(", ",", "*/", ");", "\\")


def code_regions(text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` that are code: fenced blocks and code-shaped paragraphs.

    Loaders may drop Markdown fences, so a paragraph also counts as code when its
    lines are indented, end like code (``;``, ``{``), or it opens with a shell or SQL
    prompt or an SQL statement that does not read like a sentence.
    """
    regions = [(m.start(), m.end()) for m in _FENCE_RE.finditer(text)]
    for m in _PARA_RE.finditer(text):
        s, e = m.span()
        if any(rs <= s < re_ for rs, re_ in regions):
            continue
        lines = m.group(0).split("\n")
        if _looks_like_code(lines):
            regions.append((s, e))
    return sorted(regions)


def _looks_like_code(lines: list[str]) -> bool:
    first = lines[0].strip()
    if _CODE_START_RE.match(first):
        return True
    if len(lines) >= 2 and (_SQL_OPENING_RE.match(first) or first.startswith("-- ")) and lines[-1].rstrip().endswith(";"):
        return True  # a statement over several lines ("SELECT * FROM t" ... "LIMIT 7;"), or after its comment
    if first.startswith(("- ", "* ", "|")) or _LIST_ITEM_RE.match(lines[0]):
        return False
    if len(lines) >= 2:
        indented = sum(1 for ln in lines[1:] if ln.startswith(("  ", "\t")))
        code_ends = sum(1 for ln in lines if ln.rstrip().endswith(_CODE_LINE_END))
        if indented >= max(1, (len(lines) - 1) // 2) or code_ends >= max(2, len(lines) // 2):
            return True
    return False


def split_units(text: str, code: list[tuple[int, int]] | None = None) -> list[tuple[int, int]]:
    """Split chunk text into sentences, list items and code lines: (start, end) spans.

    Relations are only read within one unit, so a unit must not run over a list item
    or a code line; offsets index into ``text`` and exclude surrounding whitespace.
    ``code`` are the code regions (default: :func:`code_regions`).
    """
    regions = code_regions(text) if code is None else code
    units: list[tuple[int, int]] = []
    pos = 0
    para_start: int | None = None
    para_end = 0

    def flush_para() -> None:
        nonlocal para_start
        if para_start is not None:
            units.extend(sentence_spans(text, para_start, para_end, RELATION_SENTENCES))
            para_start = None

    for line in text.splitlines(keepends=True):
        start, end = pos, pos + len(line.rstrip("\r\n"))
        pos += len(line)
        stripped = line.strip()
        lead = len(line) - len(line.lstrip())
        if any(rs <= start < re_ for rs, re_ in regions):
            flush_para()
            if stripped and not stripped.startswith(("```", "~~~")):
                units.append((start + lead, end))
            continue
        if not stripped:
            flush_para()
            continue
        if _LIST_ITEM_RE.match(line) or stripped.startswith("|") or stripped.startswith("#"):
            flush_para()
            para_start, para_end = start + lead, end
            flush_para()
            continue
        if para_start is None:
            para_start = start + lead
        para_end = end
    flush_para()
    return units
