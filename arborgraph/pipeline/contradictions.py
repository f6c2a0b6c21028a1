"""Candidate contradictions: two documents stating different defaults for one thing.

Index-time synthesis must not silently pick a winner. This pass finds sentences of the
form "the default X is Y" / "X defaults to Y" and reports every key stated with
different values by different documents, with both sources, for a human to judge.
Nothing is overwritten.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence

from arborgraph.index.build_report import Claim, Contradiction
from ingest.models import Chunk

# Values: numbers (with a unit), quoted or code literals, booleans, UPPER_CASE names.
_VALUE = (
    r"(?P<value>-?\d[\d,]*(?:\.\d+)?(?:\s*(?i:bytes|kb|kib|mb|mib|gb|pages?|ms|milliseconds|seconds?))?\b"
    r"|\"[^\"]{1,30}\"|`[^`]{1,30}`|(?i:on|off|true|false|enabled|disabled)\b|[A-Z][A-Z0-9_]{2,}\b)"
)
_KEY = (
    r"(?P<key>`[^`]{2,40}`|[A-Za-z_][\w.]*(?: [a-z_][\w]*){0,3})"
    r"(?: (?i:setting|parameter|option|pragma|variable|flag|property))?"
)
_PATTERNS = [
    re.compile(rf"\b(?i:the default(?: value)? (?:of|for)) (?:the )?{_KEY} (?i:is|was|has been) {_VALUE}"),
    re.compile(rf"\b(?i:the default) {_KEY} (?i:is) {_VALUE}"),
    re.compile(rf"\b{_KEY} (?i:defaults to) {_VALUE}"),
]
_DEICTIC = {"this", "that", "these", "those", "which", "its", "their"}
_GENERIC_KEYS = {"value", "it", "this", "that", "setting", "behavior", "behaviour", "mode", "limit", "maximum", "minimum", "configuration", "which"}
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
# Every pattern needs the word "default": text without it cannot match, and most chunks
# lack it, so they are not split into sentences at all (same claims, a fraction of the time).
_CUE = re.compile(r"(?i:default)")


def _norm_key(key: str) -> str:
    key = key.strip("` ").lower().replace("_", " ")
    key = re.sub(r"^(the|a|an) ", "", key)
    key = re.sub(r" (setting|parameter|option|pragma|variable|flag|property)$", "", key)
    return re.sub(r"\s+", " ", key)


def _norm_value(value: str) -> str:
    value = value.strip("`\"' ").lower().replace(",", "")
    return re.sub(r"\s+", " ", value)


def extract_claims(chunks: Sequence[Chunk]) -> list[Claim]:
    """Every "default X is Y" statement in ``chunks``."""
    claims = []
    for chunk in chunks:
        if not _CUE.search(chunk.text):
            continue
        for sentence in _SENTENCE.findall(chunk.text):
            if not _CUE.search(sentence):
                continue
            for pattern in _PATTERNS:
                for match in pattern.finditer(sentence):
                    raw_key = match.group("key")
                    key = _norm_key(raw_key)
                    specific = raw_key.startswith("`") or "_" in raw_key or "." in raw_key or " " in key
                    if len(key) < 3 or key in _GENERIC_KEYS or not specific or key.split()[0] in _DEICTIC:
                        continue
                    claims.append(
                        Claim(
                            key=key,
                            value=_norm_value(match.group("value")),
                            doc_id=chunk.doc_id,
                            chunk_id=chunk.chunk_id,
                            sentence=sentence.strip(),
                        )
                    )
    return claims


def find_contradictions(
    chunks: Sequence[Chunk],
    limit: int = 200,
    versions: Mapping[str, tuple[str, str]] | None = None,
) -> list[Contradiction]:
    """Keys stated with different values by two different documents.

    One pair per key and value pair, and one per document pair and value pair (the
    same disagreement matched under two spellings of its key is one). ``versions``
    maps doc ids to their ``(source, version)``: a pair of different versions of one
    source is marked ``between_versions``.
    """
    versions = versions or {}
    by_key: dict[str, list[Claim]] = defaultdict(list)
    for claim in extract_claims(chunks):
        by_key[claim.key].append(claim)
    found: list[Contradiction] = []
    reported: set[tuple[tuple[str, ...], tuple[str, ...]]] = set()
    for key in sorted(by_key):
        claims = by_key[key]
        seen: set[tuple[str, ...]] = set()
        for i, a in enumerate(claims):
            for b in claims[i + 1 :]:
                if a.doc_id == b.doc_id or a.value == b.value:
                    continue
                pair = tuple(sorted((a.value, b.value)))
                across = (tuple(sorted((a.doc_id, b.doc_id))), pair)
                if pair in seen or across in reported:
                    continue
                seen.add(pair)
                reported.add(across)
                va, vb = versions.get(a.doc_id), versions.get(b.doc_id)
                same_source = va is not None and vb is not None and va[0] == vb[0] and va[1] != vb[1]
                found.append(Contradiction(key=key, first=a, second=b, between_versions=same_source))
                if len(found) >= limit:
                    return found
    return found
