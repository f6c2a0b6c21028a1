"""Document metadata from YAML frontmatter, a ``<file>.meta.yaml`` sidecar, or the API.

Only the values are used: no key is ever treated as a path or URL to follow, so
metadata cannot make ingestion read anything outside the collection.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import re
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

_FRONTMATTER_END = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
_METADATA_KEY = re.compile(rf"^\s*(?:title|{'|'.join(KNOWN_KEYS)})\s*:", re.MULTILINE | re.IGNORECASE)


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
    """Split ``---``-fenced YAML frontmatter from the start of a text.

    Returns ``(yaml_text, body)``; ``yaml_text`` is None when there is no frontmatter.
    """
    if not (text.startswith("---\n") or text.startswith("---\r\n")):
        return None, text
    end = _FRONTMATTER_END.search(text, 4)
    if end is None:
        return None, text
    yaml_text = text[4 : end.start()]
    body = text[end.end() :]
    return yaml_text, body.lstrip("\n")


def names_metadata_key(yaml_text: str) -> bool:
    """True when a ``---`` block names a metadata key (in any letter case): then it was
    meant as frontmatter, and must not be taken for ordinary text."""
    return _METADATA_KEY.search(yaml_text) is not None


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
    if data is None:
        return None, DocumentMetadata(), []
    if not isinstance(data, dict):
        raise SkipFile(f"{origin} is not a YAML mapping")
    # `version: 3.10` would otherwise become the float 3.1: keep text keys as written.
    for key_node, value_node in node.value:
        if key_node.value in ("version", "source", "title") and isinstance(value_node, yaml.ScalarNode):
            data[key_node.value] = value_node.value
    return metadata_from_mapping(data, origin=origin)


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
            meant = key.strip().lower()
            if meant == "acl":
                # as an extra it would leave the document public: fail closed
                raise SkipFile(f"invalid acl in {origin}: key {key!r} is not 'acl' (keys are case-sensitive)")
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


def _acl_value(value: Any, origin: str) -> Any:
    if isinstance(value, str) and value.strip():
        return [value]  # a single principal written without list syntax
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
