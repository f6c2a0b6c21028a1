"""Bounds on a JSON schema's strings and arrays, for decoding under it.

Under a grammar a small model keeps the JSON's structure but may repeat itself inside
a string (``"WAL_autocheckpoint_type_type_type…"``) or an array until the reply is cut
at ``max_tokens``, and the cut reply is not JSON. A schema whose every string has a
``maxLength`` and every array a ``maxItems`` has a longest valid reply, so a grammar
built from it always closes. A reply valid against the bounded schema is valid against
the original one (bounds only narrow it), so callers validate as before.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Bounds of the fields our prompts ask for, by property name: a name or title reads as
# a table-of-contents entry, a summary as a paragraph. Other strings take the default.
FIELD_CHARS: Mapping[str, int] = {
    "title": 80,
    "name": 60,
    "type": 32,
    "source": 60,
    "target": 60,
    "reason": 160,
    "text": 700,
    "summary": 700,
}
FIELD_ITEMS: Mapping[str, int] = {"findings": 4, "chunk_ids": 3}


@dataclass(frozen=True)
class SchemaBounds:
    """The largest string (characters) and array (items) a bounded schema allows where
    the schema sets none; ``chars_by_field`` and ``items_by_field`` override them for
    properties of those names."""

    max_chars: int
    max_items: int
    chars_by_field: Mapping[str, int] = field(default_factory=lambda: dict(FIELD_CHARS))
    items_by_field: Mapping[str, int] = field(default_factory=lambda: dict(FIELD_ITEMS))


def bound_schema(schema: dict[str, Any], bounds: SchemaBounds) -> dict[str, Any]:
    """A copy of ``schema`` in which every string has a ``maxLength`` and every array a
    ``maxItems`` (existing smaller bounds are kept), including under ``$defs``,
    ``anyOf``/``oneOf``/``allOf`` and ``additionalProperties``. A bound never goes below
    the schema's own ``minLength``/``minItems``."""
    bounded = copy.deepcopy(schema)
    _visit(bounded, None, bounds)
    return bounded


def _visit(node: Any, name: str | None, bounds: SchemaBounds) -> None:
    if not isinstance(node, dict):
        return
    kinds = node.get("type")
    kinds = set(kinds) if isinstance(kinds, list) else {kinds}
    if "string" in kinds and "enum" not in node and "const" not in node:
        limit = bounds.chars_by_field.get(name or "", bounds.max_chars)
        node["maxLength"] = max(min(node.get("maxLength", limit), limit), node.get("minLength", 0))
    if "array" in kinds:
        limit = bounds.items_by_field.get(name or "", bounds.max_items)
        node["maxItems"] = max(min(node.get("maxItems", limit), limit), node.get("minItems", 0))
        # the items of a named array take the array's name ("chunk_ids": each an id)
        _visit(node.get("items"), name, bounds)
    for prop, sub in (node.get("properties") or {}).items():
        _visit(sub, prop, bounds)
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in node.get(key) or []:
            _visit(sub, name, bounds)
    if isinstance(node.get("additionalProperties"), dict):
        _visit(node["additionalProperties"], None, bounds)
    for sub in (node.get("$defs") or {}).values():
        _visit(sub, None, bounds)


def clamp_numbers(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` with every number the schema gives a ``minimum``/``maximum`` moved into
    that range. A grammar built from a schema keeps a number a number but not within
    its range (a confidence of 3 where the schema says at most 1): the nearest allowed
    value is the reading the model's reply supports best."""
    return _clamp(value, schema, schema.get("$defs") or {})


def _clamp(value: Any, node: Any, defs: Mapping[str, Any]) -> Any:
    if not isinstance(node, dict):
        return value
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _clamp(value, defs.get(ref.removeprefix("#/$defs/")), defs)
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in node.get(key) or []:
            value = _clamp(value, sub, defs)
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        low, high = node.get("minimum"), node.get("maximum")
        if isinstance(low, (int, float)) and value < low:
            return low
        if isinstance(high, (int, float)) and value > high:
            return high
        return value
    if isinstance(value, dict):
        props = node.get("properties") or {}
        return {k: _clamp(v, props.get(k), defs) for k, v in value.items()}
    if isinstance(value, list):
        return [_clamp(v, node.get("items"), defs) for v in value]
    return value
