"""A list of options (or placeholders, or settings) as a manual's HTML definition list
renders into text: each term on a line of its own ("-d", "--dereference",
"-f fmt (input/output)", "<commit>", "core.fileMode"), then the prose that defines it.
Read without its term, the first sentence of such a section ("Dereference tags into
object IDs as well.") says nothing of what it describes; with it ("-d, --dereference:
Dereference tags into object IDs as well.") it is the manual's own one-line gloss. A
list a sentence announces ("The filter accepts the following options:") may name its
entries in plain words ("w, out_w").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from arborgraph.core.leads import Unit, announces_entries, is_entry_name, split_units

# a term: an option with its arguments, a placeholder, a dotted setting name; never a
# sentence (it ends in no full stop or colon)
_TERM = re.compile(
    r"^(?:-{1,2}[A-Za-z0-9?][\w.-]*(?:[ =\[].*)?"  # -f fmt (input/output), --hash[=<n>]
    r"|<[\w.-]+>(?:\.{3}|…)?"  # <commit>, <path>...
    r"|[a-z][\w-]*(?:\.[\w<>*-]+)+)$"  # core.fileMode, remote.<name>.url
)
_TERM_MAX_CHARS = 60
# before the names of entries a digest or summary lists without their glosses
ALSO = "Also: "
_ONE_LINER_WORDS = (3, 40)
# a gloss that only says when ("New in version 3.8."), not what
_VERSION_NOTE = re.compile(r"^(?:new|changed|deprecated|added|removed) (?:in|since) (?:version )?\S+\.?$", re.IGNORECASE)
# aliases named before a one-liner ("-s, --hash[=<n>]")
_MAX_ALIASES = 3


def is_term(text: str) -> bool:
    """Whether a unit of text is a definition list's term (see the module docstring)."""
    return len(text) <= _TERM_MAX_CHARS and not text.endswith((".", ":")) and _TERM.match(text) is not None


def _is_gloss(unit: Unit) -> bool:
    text, words = unit.text, len(unit.text.split())
    return (
        not unit.is_list_item and text[:1].isupper() and text.endswith(".")
        and _ONE_LINER_WORDS[0] <= words <= _ONE_LINER_WORDS[1]
        # "Specify the configuration(s) to be packaged (e.g.": a sentence cut at an abbreviation
        and text.count("(") == text.count(")")
        and _VERSION_NOTE.match(text) is None
    )


def term_one_liners(chunks: Iterable[tuple[str, str]], *, announced: bool = False) -> list[tuple[str, str, str]]:
    """(its terms, the first sentence that defines them, chunk id) of each entry of the
    definition lists in ``(chunk id, text)``, in reading order: ("-d, --dereference",
    "Dereference tags into object IDs as well.", ...). An entry whose definition does
    not open with a sentence of prose (code, a list, text cut at the chunk's end) is
    left out, as is a term already listed.

    With ``announced``, a list of options, parameters, fields ... a sentence announces
    ("The filter accepts the following options:",
    :func:`arborgraph.core.leads.announces_entries`) may name its entries in a few plain
    words ("filename, f", "name"): past such a sentence a short line that is no sentence
    names the gloss after it."""
    out: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    in_list = False  # past an announcement: the chunks of one section are read in order
    for chunk_id, text in chunks:
        terms: list[str] = []
        for unit in split_units(text):
            if is_term(unit.text) or (announced and in_list and _is_name(unit.text)):
                terms.append(unit.text)
                continue
            named = ", ".join(terms[:_MAX_ALIASES])
            if terms and _is_gloss(unit) and named not in seen:
                seen.add(named)
                out.append((named, unit.text, chunk_id))
            terms = []
            in_list = in_list or announces_entries(unit.text)
    return out


def _is_name(text: str) -> bool:
    """A list entry's name in plain words: a few words, no sentence, no code."""
    return is_entry_name(text) and not any(c in text for c in "()[]{}=;")


def opens_with_term(texts: Iterable[str]) -> bool:
    """Whether the first of ``texts`` (a section's own text, in reading order) opens with
    a definition list's term: its first sentence defines a term it does not name."""
    for text in texts:
        units = split_units(text)
        return bool(units) and is_term(units[0].text)
    return False
