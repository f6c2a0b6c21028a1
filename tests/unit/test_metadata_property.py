"""Property: a file that carries ``acl: [team-a]`` is never indexed as public.

Hypothesis writes the access list the ways people slip: delimiters misspelt, missing or
doubled (``--- yaml``, ``+++``, ``***``, an em dash, none), blank lines and invisible
characters around them, BOMs, CRLF/CR/Unicode line breaks, other encodings, the key in
another case, quoted, padded or with look-alike letters, ``=`` for ``:``, the value as
text, a block list or broken flow, the key repeated or nested, TOML instead of YAML. Each
variant goes through the real collection walk (sniffing, loader, sidecar) as a Markdown
file, a text file and a sidecar, and must come out skipped with a one-line reason or
indexed with exactly that access list.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest import Document, SkippedFile, iter_collection

PROPERTY = settings(max_examples=250, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
SECRET = "The launch code is ZEBRA-7731."

FENCES = ["---", "--- ", "---\t", "----", "-- ", "- - -", "+++", "...", "***", " ---", "\u2014", "---yaml",
          "--- yaml", "\u200b---", "---\u200b", "\ufeff---", ""]
KEYS = ["acl", "ACL", "Acl", " acl", "acl ", '"acl"', "'acl'", "a\u200bcl", "\u0430cl", "\uff41\uff43\uff4c", "acl\u00a0"]
SEPARATORS = [": ", ":", " : ", " = ", "=", ":\t", ":\u00a0", ":  "]
VALUES = ["[team-a]", "[ team-a ]", "['team-a']", '["team-a"]', "[team-a,]", "team-a", '"team-a"', "\n  - team-a",
          "\n- team-a", "[team-a", "{team-a}", "[team-a]  # who may read"]
OTHER_LINES = ["title: Secret plan", "version: '2'", "Title: X", "# a comment", "source: ops", "", "acl: []", "acl:",
               "acl: [team-a]", "meta:\n  acl: [team-a]", "valid_to: 2030-01-01", "tags: [a, b]"]
BREAKS = ["\n", "\r\n", "\r", "\u2028", "\x85"]
LEADING = ["", "\ufeff", "\ufeff\ufeff", "\u200b", "\n", " \n", "\t\n", "\r\n"]
ENCODINGS = ["utf-8", "utf-8-sig", "utf-16"]


@st.composite
def acl_bearing(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """(a file whose metadata names team-a, a sidecar written with the same slips)."""
    acl_line = draw(st.sampled_from(KEYS)) + draw(st.sampled_from(SEPARATORS)) + draw(st.sampled_from(VALUES))
    lines = draw(st.lists(st.sampled_from(OTHER_LINES), max_size=3))
    lines.insert(draw(st.integers(0, len(lines))), acl_line)
    opening = draw(st.sampled_from(FENCES))
    closing = draw(st.sampled_from(FENCES + ["---", "---", "..."]))
    between = draw(st.sampled_from(["", "", "\n"]))  # a blank line after the block
    block = [opening, *lines, closing] if draw(st.booleans()) or opening else [*lines, closing]
    body = ["# Secret", "", SECRET]
    text = "\n".join([*block, between, *body]).replace("\n\n\n", "\n\n") + "\n"
    line_break = draw(st.sampled_from(BREAKS))
    text = draw(st.sampled_from(LEADING)) + text.replace("\n", line_break)
    encoding = draw(st.sampled_from(ENCODINGS))
    sidecar = "\n".join(lines).replace("\n", draw(st.sampled_from(BREAKS)))
    return text.encode(encoding), (draw(st.sampled_from(["", "\ufeff"])) + sidecar).encode("utf-8")


def _walk(files: dict[str, bytes]) -> dict[str, Document | SkippedFile]:
    with tempfile.TemporaryDirectory() as folder:
        for name, data in files.items():
            (Path(folder) / name).write_bytes(data)
        return {Path(r.path).name: r for r in iter_collection([folder], load_timeout_s=None)}


def _never_public(result: Document | SkippedFile, what: bytes) -> None:
    if isinstance(result, SkippedFile):
        assert result.reason and "\n" not in result.reason and len(result.reason) <= 300, result.reason
    else:
        assert result.metadata.acl == ["team-a"], (what, result.metadata.acl, result.text[:80])


@PROPERTY
@given(acl_bearing())
def test_an_acl_bearing_file_is_never_indexed_as_public(files: tuple[bytes, bytes]) -> None:
    text, sidecar = files
    results = _walk({"doc.md": text, "doc.txt": text, "side.txt": SECRET.encode(), "side.txt.meta.yaml": sidecar})
    for name in ("doc.md", "doc.txt", "side.txt"):
        _never_public(results[name], sidecar if name == "side.txt" else text)


def test_the_generator_reaches_both_outcomes() -> None:
    """The property is not vacuous: well-formed variants are indexed with their ACL."""
    results = _walk({"a.md": b"---\nacl: [team-a]\n---\n# Secret\n\nZEBRA.\n", "b.txt": b"ZEBRA.\n",
                     "b.txt.meta.yaml": b"\xef\xbb\xbfacl: [team-a]\r\n"})
    assert all(isinstance(r, Document) and r.metadata.acl == ["team-a"] for r in results.values())
