"""Document metadata from YAML frontmatter or a ``<file>.meta.yaml`` sidecar.

Only the values are used: no key is ever treated as a path or URL to follow, so
metadata cannot make ingestion read anything outside the collection.
"""

from __future__ import annotations

import datetime as dt
import re
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
            if key == "acl" and isinstance(value, str):
                value = [value]  # a single principal written without list syntax
            known[key] = value
        else:
            extras[key] = _plain(value, budget)
    if budget[0] < 0:
        warnings.append(f"{origin}: extra metadata truncated (too large)")
    for key, value in list(known.items()):
        try:
            DocumentMetadata.model_validate({key: value})
        except ValidationError as exc:
            message = exc.errors()[0]["msg"]
            if key == "acl":
                raise SkipFile(f"invalid acl in {origin}: {message}") from None
            warnings.append(f"{origin}: ignored invalid {key!r} ({message})")
            del known[key]
    if "acl" in known and known["acl"] is not None:
        known["acl"] = [str(p) for p in known["acl"]]
    return title, DocumentMetadata.model_validate({**extras, **known}), warnings


def merge_metadata(
    base: DocumentMetadata, override: DocumentMetadata, *, origin: str
) -> tuple[DocumentMetadata, list[str]]:
    """Overlay ``override``'s explicitly set keys on ``base``; warn about conflicts."""
    merged = base.model_dump()
    warnings: list[str] = []
    for key, value in override.model_dump(exclude_unset=True).items():
        if key in merged and merged[key] is not None and merged[key] != value:
            warnings.append(f"{origin} overrides {key!r} from the frontmatter")
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
