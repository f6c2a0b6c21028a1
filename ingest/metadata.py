"""Document metadata from YAML frontmatter, a ``<file>.meta.yaml`` sidecar, or the API.

Only the values are used: no key is ever treated as a path or URL to follow, so
metadata cannot make ingestion read anything outside the collection.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import ValidationError

from ingest.errors import SkipFile
from ingest.models import DocumentMetadata

KNOWN_KEYS = ("source", "version", "valid_from", "valid_to", "acl", "importance")
SIDECAR_SUFFIX = ".meta.yaml"
MAX_METADATA_CHARS = 64 * 1024
# Bounds the work of normalising extras: YAML aliases can make a tiny text expand
# into an exponentially large structure.
_MAX_EXTRA_NODES = 10_000

_FRONTMATTER_START = re.compile(r"---[ \t]*\n")
_FRONTMATTER_END = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)


class _SafeLoaderNoAliases(yaml.SafeLoader):
    """SafeLoader that refuses anchors/aliases, the usual YAML expansion trick."""

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        if self.check_event(yaml.events.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "YAML aliases are not allowed in metadata", event.start_mark
            )
        return super().compose_node(parent, index)


# Dates stay text until pydantic validates them key by key: a bad date must only
# cost that key, not make the whole YAML unreadable.
_SafeLoaderNoAliases.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """Split ``---``-fenced YAML frontmatter from the start of a decoded text (line
    breaks ``\\n``): a first line ``---`` and the next line ``---`` or ``...`` (either
    may end in spaces).

    Returns ``(yaml_text, body)``; ``yaml_text`` is None when there is no frontmatter.
    This only finds the block: ``read_frontmatter`` also refuses the near misses.
    """
    start = _FRONTMATTER_START.match(text)
    if start is None:
        return None, text
    end = _FRONTMATTER_END.search(text, start.end())
    if end is None:
        return None, text
    yaml_text = text[start.end() : end.start()]
    body = text[end.end() :]
    return yaml_text, body.lstrip("\n")


# --- near misses: leading lines that look like metadata but are not one block --------
#
# A file whose access list is written slightly wrong (the block never closed, opened
# with "--- yaml" or "+++", preceded by a blank line, the fences missing) would be
# indexed as public text. So the lines a file starts with are read as a person would
# read them (NFKC, invisible characters dropped, every Unicode line break a break),
# up to its first line of prose; if they hold metadata that is not exactly one
# frontmatter block, the file is skipped.

_INVISIBLE_CATEGORIES = frozenset({"Cf"})  # zero-width spaces and joiners, BOMs, bidi marks
_LINE_BREAKS = re.compile("\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_FENCE_LIKE = re.compile(
    r"^\s*(?:-{2,}|\+{2,}|\.{3,}|\*{3,}|_{3,}|={3,}|;{3,}|[\u2012-\u2015\u2212]+|(?:-[ \t]+){2,}-)"
    r"[ \t]*(?:yaml|yml|toml|json)?[ \t]*$",
    re.IGNORECASE,
)
_KEY_LIKE = re.compile(
    r"""^\s*(?:[-*+][ \t]+|[{,][ \t]*)?[:"'`]?[ \t]*(?P<key>[\w.-]+(?:[ \t]+[\w.-]+)?)[ \t]*["'`]?[ \t]*[:=]"""
)
# lines that may sit among metadata: blank, indented, list items, comments or
# headings, brackets of TOML tables or JSON, the start of an HTML comment
_METADATA_FILLER = re.compile(r"^(?:\s*$|[ \t]+\S|\s*[-*+][ \t]|\s*#|\s*[\[\]{}]|\s*<!--)")
_CODE_FENCE = re.compile(r"^\s*(?:`{3,}|~{3,})")
# letters other scripts share with "acl" (Cyrillic, Greek, Roman numeral one-fifty)
_CONFUSABLES = str.maketrans(
    {"а": "a", "ɑ": "a", "α": "a", "с": "c", "ϲ": "c", "ⅽ": "c", "ӏ": "l", "ⅼ": "l", "ι": "l", "і": "l", "1": "l"}
)


def fold_key(key: str) -> str:
    """A metadata key as a person reads it: ``ACL``, ``" acl"``, ``acl\u200b``,
    ``ａｃｌ`` and ``асl`` (Cyrillic) all fold to ``acl``."""
    key = _visible(key).strip().strip(":=\"'` \t").casefold()
    unconfused = key.translate(_CONFUSABLES)
    return unconfused if unconfused == "acl" else key


def _visible(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    if not text.isascii():
        text = "".join(c for c in text if unicodedata.category(c) not in _INVISIBLE_CATEGORIES)
    return _LINE_BREAKS.sub("\n", text)


@dataclass(frozen=True)
class _Leading:
    """What a text's leading lines (before its first line of prose) hold; 1-based lines."""

    acl_line: int | None
    key_line: int | None  # the first metadata key (acl, version, title...)
    fence_line: int | None  # the first line that looks like a block delimiter

    @property
    def looks_like_metadata(self) -> bool:
        return self.acl_line is not None or (self.key_line is not None and self.fence_line is not None)


def _leading(text: str, *, whole: bool = False) -> _Leading:
    """Scan the lines ``text`` starts with (``whole``: every line) for metadata."""
    acl_line = key_line = fence_line = None
    for number, line in enumerate(_visible(text[:MAX_METADATA_CHARS]).split("\n"), start=1):
        if _FENCE_LIKE.match(line):
            fence_line = fence_line or number
            continue
        if not whole and _CODE_FENCE.match(line):
            break  # an example in a code block is not the file's metadata
        key = _KEY_LIKE.match(line)
        folded = fold_key(key.group("key")) if key else ""
        if folded == "acl":
            acl_line = acl_line or number
        if folded in (*KNOWN_KEYS, "title"):
            key_line = key_line or number
        elif not whole and key is None and not _METADATA_FILLER.match(line):
            break  # the first line of prose
    return _Leading(acl_line, key_line, fence_line)


def read_frontmatter(text: str) -> tuple[str | None, str]:
    """``split_frontmatter``, refusing the near misses a Markdown file may start with.

    Raises ``SkipFile`` when the leading lines look like metadata (an ``acl`` key, or a
    metadata key beside a delimiter-like line) but are not exactly one ``---`` block:
    the block never closed, opened by ``--- yaml``, ``+++`` (TOML) or a line with
    invisible characters, preceded by blank lines, a second block after the first, or
    keys with no block at all.
    """
    yaml_text, body = split_frontmatter(text)
    rest = _leading(body if yaml_text is not None else text)
    if not rest.looks_like_metadata:
        return yaml_text, body
    if yaml_text is not None:
        line = text[: len(text) - len(body)].count("\n") + (rest.acl_line or rest.key_line or 1)
        raise SkipFile(_malformed(f"more metadata (line {line}) follows the frontmatter block; only one block is read"))
    raise SkipFile(_malformed(_near_miss(text, rest)))


def markdown_metadata(text: str) -> tuple[str | None, DocumentMetadata | None, list[str], str]:
    """A Markdown text's frontmatter as its loader reads it: ``(title, metadata,
    warnings, body)``. Metadata that cannot be read raises ``SkipFile`` (it fails
    closed); a ``---`` block naming no metadata key is two thematic breaks around
    ordinary text, and stays in the body."""
    yaml_text, body = read_frontmatter(text)
    if yaml_text is None:
        return None, None, [], body
    try:
        return (*parse_metadata_yaml(yaml_text, origin="frontmatter"), body)
    except SkipFile:
        if names_metadata_key(yaml_text):
            raise
        return None, None, ["leading '---' block is not YAML frontmatter; kept as text"], text


def refuse_unread_acl(text: str, format_name: str) -> None:
    """Raise ``SkipFile`` when a file that frontmatter is not read from (anything but
    Markdown) starts with metadata naming ``acl``: it would be indexed as public text."""
    yaml_text, _ = split_frontmatter(text)
    if (yaml_text is not None and _leading(yaml_text, whole=True).acl_line) or _leading(text).acl_line:
        raise SkipFile(
            f"its leading lines set 'acl', but metadata is only read from Markdown frontmatter, not "
            f"from {format_name}: put it in a <file>{SIDECAR_SUFFIX} sidecar or pass it to the build "
            "(not indexed, so that its access list cannot be lost)"
        )


def _near_miss(text: str, leading: _Leading) -> str:
    """Say what is wrong with leading metadata that ``split_frontmatter`` did not take."""
    lines = text.split("\n")
    visible = _visible(text[:MAX_METADATA_CHARS]).split("\n")
    first = next((i for i, line in enumerate(visible) if line.strip()), 0)
    if not _FENCE_LIKE.match(visible[first]):
        return f"line {leading.acl_line or leading.key_line} sets metadata outside a '---' frontmatter block"
    fence = visible[first].strip()
    if fence.startswith("+"):
        return "TOML frontmatter ('+++') is not read: write the metadata as YAML between '---' lines"
    if first > 0:
        return f"the '{fence}' line that opens it is line {first + 1}, not the first line"
    if fence != "---" or lines[0].strip() != "---":
        return f"it opens with {lines[0].strip()[:20]!r}, not '---'"
    return "it is never closed (no line of exactly '---' or '...' ends it)"


def _malformed(what: str) -> str:
    return f"unreadable frontmatter: {what} (not indexed, so that its access list cannot be lost)"


def names_metadata_key(yaml_text: str) -> bool:
    """True when a ``---`` block names a metadata key (in any letter case, or hidden
    behind invisible characters): then it was meant as frontmatter, and must not be
    taken for ordinary text."""
    return _leading(yaml_text, whole=True).key_line is not None


def parse_metadata_yaml(yaml_text: str, *, origin: str) -> tuple[str | None, DocumentMetadata, list[str]]:
    """Parse frontmatter or sidecar YAML into ``(title, metadata, warnings)``.

    Unknown keys are kept as extras. A malformed value of a known key is dropped with
    a warning, except ``acl``: an access list that cannot be read must not turn a
    restricted document into a public one, so it raises ``SkipFile``. Invalid YAML
    raises ``SkipFile`` for the same reason.
    """
    if len(yaml_text) > MAX_METADATA_CHARS:
        raise SkipFile(f"{origin} is larger than {MAX_METADATA_CHARS // 1024} KB")
    loader: _SafeLoaderNoAliases | None = None
    try:
        loader = _SafeLoaderNoAliases(yaml_text)
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SkipFile(f"invalid YAML in {origin}: {first_line}") from None
    finally:
        if loader is not None:
            loader.dispose()
    # Read as lines and as YAML, the text must agree on whether it sets an acl: YAML
    # takes " acl: [x]" under "title: y" for more of the title, and "acl:[x]" for text.
    acl_line = _leading(yaml_text, whole=True).acl_line
    read_as_key = isinstance(data, dict) and (
        any(fold_key(str(k)) == "acl" for k in data) or _nested_acl(data)  # (each reported below)
    )
    if acl_line is not None and not read_as_key:
        raise SkipFile(
            f"invalid acl in {origin}: line {acl_line} looks like an 'acl' key, but as YAML it is not one "
            "(check its indentation and the space after ':')"
        )
    if data is None:
        return None, DocumentMetadata(), []
    if not isinstance(data, dict):
        raise SkipFile(f"{origin} is not a YAML mapping")
    # `version: 3.10` would otherwise become the float 3.1: keep text keys as written.
    for key_node, value_node in node.value:
        if key_node.value in ("version", "source", "title") and isinstance(value_node, yaml.ScalarNode):
            data[key_node.value] = value_node.value
    repeated = _repeated_keys(node, origin)
    title, metadata, warnings = metadata_from_mapping(data, origin=origin)
    return title, metadata, [*repeated, *warnings]


def _repeated_keys(node: yaml.MappingNode, origin: str) -> list[str]:
    """Warnings for keys given twice (YAML keeps the last silently); raises
    ``SkipFile`` for a repeated ``acl``: which of two access lists was meant?"""
    seen: dict[str, int] = {}
    for key_node, _ in node.value:
        if isinstance(key_node, yaml.ScalarNode):
            seen[key_node.value] = seen.get(key_node.value, 0) + 1
    if sum(n for key, n in seen.items() if fold_key(key) == "acl") > 1:
        raise SkipFile(f"invalid acl in {origin}: 'acl' is given more than once")
    return [f"{origin}: key {key!r} is given {n} times; the last value is used" for key, n in seen.items() if n > 1]


def metadata_from_mapping(
    data: dict[Any, Any], *, origin: str
) -> tuple[str | None, DocumentMetadata, list[str]]:
    """Validate a metadata mapping key by key (see ``parse_metadata_yaml``)."""
    warnings: list[str] = []
    title: str | None = None
    known: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    budget = [_MAX_EXTRA_NODES]
    for raw_key, value in data.items():
        key = str(raw_key)
        if key != "acl" and _nested_acl(value):
            raise SkipFile(f"invalid acl in {origin}: 'acl' is nested under {key!r} (it must be a top-level key)")
        if key == "title":
            if isinstance(value, (str, int, float)) and str(value).strip():
                title = str(value).strip()
            else:
                warnings.append(f"{origin}: ignored non-text title")
        elif key in KNOWN_KEYS:
            if key == "acl":
                value = _acl_value(value, origin)
            known[key] = value
        else:
            meant = fold_key(key)
            if meant == "acl":
                # as an extra it would leave the document public: fail closed
                why = "keys are case-sensitive" if key.strip().lower() == "acl" else "it holds invisible or look-alike characters"
                raise SkipFile(f"invalid acl in {origin}: key {key!r} is not 'acl' ({why})")
            if meant in (*KNOWN_KEYS, "title"):
                warnings.append(f"{origin}: key {key!r} is not {meant!r} (keys are case-sensitive); kept as an extra field")
            extras[key] = _plain(value, budget)
    if budget[0] < 0:
        warnings.append(f"{origin}: extra metadata truncated (too large)")
    for key, value in list(known.items()):
        try:
            DocumentMetadata.model_validate({key: value})
        except ValidationError as exc:
            message = exc.errors()[0]["msg"].removeprefix("Value error, ")
            if key == "acl":
                raise SkipFile(f"invalid acl in {origin}: {message}") from None
            warnings.append(f"{origin}: ignored invalid {key!r} ({message})")
            del known[key]
    if "acl" in known and known["acl"] is not None:
        known["acl"] = [str(p) for p in known["acl"]]
    return title, DocumentMetadata.model_validate({**extras, **known}), warnings


def _nested_acl(value: Any) -> bool:
    """Whether an extra field holds an ``acl`` key somewhere inside (an indentation
    slip): it would be kept as data, leaving the document public."""
    pending, budget = [value], _MAX_EXTRA_NODES
    while pending and budget > 0:
        budget -= 1
        item = pending.pop()
        if isinstance(item, dict):
            if any(fold_key(str(k)) == "acl" for k in item):
                return True
            pending.extend(item.values())
        elif isinstance(item, (list, tuple)):
            pending.extend(item)
    return False  # (past the budget the extras are truncated anyway, with a warning)


def _acl_value(value: Any, origin: str) -> Any:
    if isinstance(value, str) and value.strip():
        # "acl: team-a, team-b" or "acl: [team-a" quoted: a list was meant, and which
        # one is a guess; the promise is a list of names
        raise SkipFile(
            f"invalid acl in {origin}: {value.strip()[:40]!r} is a text, not a list of principal names "
            f"(write acl: [{value.strip()[:40]}])"
        )
    if value is None or (isinstance(value, str) and not value.strip()):
        # "acl:" with nothing after it: meant public, or meant nobody? Neither is safe
        # to guess; absent means public and [] means nobody.
        raise SkipFile(
            f"invalid acl in {origin}: the value is empty (remove the key for a public "
            "document, or write [] for one nobody may read)"
        )
    return value


def merge_metadata(
    base: DocumentMetadata, override: DocumentMetadata, *, origin: str, over: str = "the frontmatter"
) -> tuple[DocumentMetadata, list[str]]:
    """Overlay ``override``'s explicitly set keys on ``base``; warn about conflicts
    (``origin`` overrides ``over``)."""
    merged = base.model_dump()
    warnings: list[str] = []
    for key, value in override.model_dump(exclude_unset=True).items():
        if key in merged and merged[key] is not None and merged[key] != value:
            warnings.append(f"{origin} overrides {key!r} from {over}")
        merged[key] = value
    return DocumentMetadata.model_validate(merged), warnings


def _plain(value: Any, budget: list[int]) -> Any:
    """Turn a YAML value into JSON-friendly data (dates as ISO strings)."""
    budget[0] -= 1
    if budget[0] < 0:
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v, budget) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_plain(v, budget) for v in value]
    return str(value)


@dataclass(frozen=True)
class _Rule:
    pattern: str
    title: str | None
    fields: dict[str, Any]  # the keys it sets, validated
    warnings: tuple[str, ...]
    error: str | None  # why files it matches are skipped (an unreadable acl)


class GivenMetadata:
    """Metadata passed to a build through the API: doc id or pattern -> metadata.

    Each entry is validated like a sidecar (an unreadable ``acl`` skips every file it
    matches, with the reason). A key is an exact doc id or a shell-style pattern over
    doc ids (``fnmatch``: ``*`` also matches ``/``); every matching entry applies, in
    the mapping's order, later ones overriding earlier ones. The result overrides the
    file's frontmatter and sidecar.
    """

    def __init__(self, mapping: Mapping[str, Mapping[str, Any]] | None) -> None:
        self.rules: list[_Rule] = []
        if mapping is None:
            return
        if not isinstance(mapping, Mapping):
            raise TypeError("metadata must map doc ids or patterns to metadata mappings")
        for pattern, data in mapping.items():
            if not isinstance(pattern, str) or not pattern:
                raise TypeError(f"metadata key {pattern!r} is not a doc id or pattern")
            if not isinstance(data, Mapping):
                raise TypeError(f"metadata for {pattern!r} is not a mapping")
            origin = f"metadata for {pattern!r}"
            try:
                title, meta, warnings = metadata_from_mapping(dict(data), origin=origin)
            except SkipFile as exc:
                self.rules.append(_Rule(pattern, None, {}, (), exc.reason))
                continue
            fields = meta.model_dump(exclude_unset=True)
            self.rules.append(_Rule(pattern, title, fields, tuple(warnings), None))

    def __bool__(self) -> bool:
        return bool(self.rules)

    def matches(self, pattern: str, doc_id: str) -> bool:
        return pattern == doc_id or (any(c in pattern for c in "*?[") and fnmatch.fnmatchcase(doc_id, pattern))

    def for_doc(self, doc_id: str) -> tuple[str | None, DocumentMetadata, list[str]] | None:
        """The given metadata of ``doc_id`` (None: no entry matches); raises ``SkipFile``
        when a matching entry's acl could not be read."""
        found = [rule for rule in self.rules if self.matches(rule.pattern, doc_id)]
        if not found:
            return None
        for rule in found:
            if rule.error is not None:
                raise SkipFile(rule.error)
        fields: dict[str, Any] = {}
        title: str | None = None
        warnings: list[str] = []
        for rule in found:
            fields.update(rule.fields)
            title = rule.title or title
            warnings.extend(rule.warnings)
        return title, DocumentMetadata.model_validate(fields), warnings

    def unmatched(self, doc_ids: Iterable[str]) -> list[str]:
        """Entries that match none of ``doc_ids`` (a misspelt id would leave its
        document without the metadata meant for it)."""
        ids = list(doc_ids)
        return [r.pattern for r in self.rules if not any(self.matches(r.pattern, d) for d in ids)]
