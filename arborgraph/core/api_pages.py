"""An API reference page, as Sphinx's autodoc renders it into text: its class entries
("class keystoneclient.v3.groups.Group(manager, info, loaded=False)", then "Bases:
Resource", then the docstring) and the page's own words before the first of them (the
module's docstring). A page's classes, one line each, say what the module holds where its
methods' docstrings would not; both the community reports and the tree's digests of API
pages say them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from arborgraph.core.leads import split_units

# an API reference's class entry, as Sphinx's autodoc renders it: "class
# keystoneclient.v3.groups.Group(manager, info, loaded=False)" ("exception ..." too), then
# "Bases: Resource", then its docstring
_CLASS_ENTRY = re.compile(r"^(?:class|exception) ((?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*))\b")
_BASES = re.compile(r"^Bases: ")
# a class's one-liner: a sentence of prose, not code
_ONE_LINER_WORDS = (3, 30)
# a docstring opening with a version note says when, not what
_NOTE = re.compile(r"\b(?:deprecated|new in version|changed in version)\b", re.IGNORECASE)


def class_one_liners(chunks: Iterable[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """(class name, the first sentence of its docstring, chunk id) of the classes an API
    reference page documents, from its ``(chunk id, text)`` in reading order: what the
    page's module holds, one line each ("GroupManager", "Manager class for manipulating
    Identity groups."). A class whose docstring does not open with a sentence of prose
    (code, a bare list, text cut at the chunk's end) is left out."""
    out: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for chunk_id, text in chunks:
        units = split_units(text)
        for k, unit in enumerate(units):
            entry = _CLASS_ENTRY.match(unit.text)
            if entry is None or entry.group(2) in seen:
                continue
            rest = [u for u in units[k + 1 : k + 3] if not _BASES.match(u.text)]
            if not rest or rest[0].is_list_item or _CLASS_ENTRY.match(rest[0].text):
                continue
            sentence = rest[0].text
            words = len(sentence.split())
            if not (_ONE_LINER_WORDS[0] <= words <= _ONE_LINER_WORDS[1]) or not sentence[:1].isupper() \
                    or not sentence.endswith(".") or _NOTE.search(sentence):
                continue
            seen.add(entry.group(2))
            out.append((entry.group(2), sentence, chunk_id))
    return out


def before_first_class(chunks: Iterable[tuple[str, str]]) -> list[str]:
    """The sentences of ``(chunk id, text)`` in reading order before the first class
    entry (:func:`class_one_liners`): an API page's own words, its module's docstring,
    not a member's; all of them on a page without classes."""
    out: list[str] = []
    for _, text in chunks:
        for unit in split_units(text):
            if _CLASS_ENTRY.match(unit.text):
                return out
            out.append(unit.text)
    return out
