"""Sentences that can stand alone, and a text's lead sentence: the units a digest or a
report quotes.

A *unit* is a sentence of prose or one list item, whitespace-normalised, so that it
is a verbatim (up to whitespace) span of the text it came from. A section's *lead* is
its first sentence that says what it is about ("The default method by which SQLite
implements atomic commit and rollback is a rollback journal."): the tree's digests and
the communities' reports both open with leads, so the rules live here, below both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from arborgraph.core.text import SUMMARY_SENTENCES, leans_on_context, opens_without_subject, reads_alone, sentence_spans

_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+\S")
_HEADING = re.compile(r"^\s*#{1,6}\s")
_TABLE_ROW = re.compile(r"^\s*\|")
_TERMINAL = re.compile(r"[.!?:][\"')\]`*_]*$")

# Where to look for a lead sentence: past these a chunk's opening is a table or code.
_LEAD_UNITS = 4


@dataclass(frozen=True)
class Unit:
    """A sentence or list item of one member text, with its position in that text."""

    text: str
    position: int
    is_list_item: bool


def normalise_space(text: str) -> str:
    return " ".join(text.split())


def split_units(text: str) -> list[Unit]:
    """Sentences and list items of ``text``, in order, whitespace-normalised.

    Fenced code, tables and heading lines are left out: they are not sentences.
    A newline after terminal punctuation ends a sentence (that is how summaries join
    their units); other single newlines are soft wraps.
    """
    pieces: list[tuple[str, bool]] = []
    in_fence = False
    current: list[str] = []
    current_is_item = False

    def flush() -> None:
        nonlocal current, current_is_item
        if current:
            pieces.append((" ".join(current), current_is_item))
        current, current_is_item = [], False

    for line in text.splitlines():
        if _FENCE.match(line):
            flush()
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        stripped = line.strip()
        if not stripped or _HEADING.match(line) or _TABLE_ROW.match(line):
            flush()
            continue
        if _LIST_ITEM.match(line):
            flush()
            current, current_is_item = [stripped], True
            continue
        if current_is_item and not line[:1].isspace():
            flush()  # only indented lines continue a list item
        current.append(stripped)
        if _TERMINAL.search(stripped):
            flush()
    flush()

    units: list[Unit] = []
    for piece, is_item in pieces:
        for k, sentence in enumerate(_sentences(normalise_space(piece))):
            units.append(Unit(sentence, len(units), is_item and k == 0))
    return units


def _sentences(text: str) -> list[str]:
    return [text[start:end] for start, end in sentence_spans(text, 0, len(text), SUMMARY_SENTENCES)]


def is_summary_sentence(unit: Unit, min_words: int = 4) -> bool:
    """Whether a unit can stand alone in a summary: a complete sentence or a list item."""
    words = len(unit.text.split())
    if unit.is_list_item:
        return words >= 3
    return words >= min_words and bool(_TERMINAL.search(unit.text))


def stands_alone(unit: Unit, *, opens_chunk: bool = False) -> bool:
    """Whether a unit reads as a whole statement in a digest (:func:`reads_alone`)."""
    return reads_alone(unit.text, opens_chunk=opens_chunk)


def opening(text: str, n: int = 1) -> list[str]:
    """The first ``n`` sentences of ``text`` that read on their own (complete sentences
    of prose, not list items, not leaning on what came before), among its first few;
    when none does, its first complete sentence or list item that at least does not
    lean on what came before ("In the last form", "Therefore", "this option"), does not
    announce what follows and does not start mid-sentence. None of those: nothing.

    A sentence announcing a list of named entries ("The filter accepts the following
    options:", then "alpha") ends the opening when something comes before it: what
    follows glosses the entries ("Process alpha channel, by default alpha channel is
    untouched."), not the text."""
    units = _before_announcement(split_units(text)[:_LEAD_UNITS + n])
    found = [
        u.text for k, u in enumerate(units)
        if not u.is_list_item and is_summary_sentence(u) and stands_alone(u, opens_chunk=k == 0)
        and not _POINTS_BACK.search(u.text) and u.text.split()[0].lower().rstrip(",") not in _CONNECTIVES
    ][:n]
    if found:
        return found
    whole = next((u.text for u in units if _plain_statement(u.text) and is_summary_sentence(u)), None)
    return [whole] if whole else []


def announces_list(text: str, n: int = 1) -> bool:
    """Whether the opening of ``text`` (:func:`opening`'s window for ``n`` sentences)
    ends at a sentence announcing a list of named entries: a text read on from there
    (the next chunk of a section) is in the list, not the opening."""
    units = split_units(text)[:_LEAD_UNITS + n]
    return len(_before_announcement(units)) < len(units)


# a list entry's name on a line of its own: a few words, no sentence
_ENTRY_NAME_WORDS = 4
_ENTRY_NAME_CHARS = 60
# a sentence announcing a list of named entries: "The filter accepts the following
# options:", "It accepts the following parameters:", "The fields are:"
_ANNOUNCES_ENTRIES = re.compile(
    r"\b(?:options|parameters|arguments|fields|keys|values|members|attributes|properties|variables"
    r"|settings|flags|commands|subcommands|directives|macros|functions|methods|entries)\b[^:]*:$",
    re.IGNORECASE,
)


def announces_entries(sentence: str) -> bool:
    """Whether ``sentence`` announces a list of named entries (options, parameters,
    fields ...): "The filter accepts the following options:"."""
    return _ANNOUNCES_ENTRIES.search(sentence.rstrip()) is not None


def is_entry_name(text: str) -> bool:
    """Whether a line can name a list's entry: a few words ending in no punctuation
    ("filename, f"), not a sentence."""
    return len(text.split()) <= _ENTRY_NAME_WORDS and len(text) <= _ENTRY_NAME_CHARS and not _TERMINAL.search(text)


def _before_announcement(units: list[Unit]) -> list[Unit]:
    """``units`` up to the first one, past the first, that announces a list of named
    entries (:func:`announces_entries`), when the next unit is a name (a few words
    ending in no punctuation, "filename, f") and the one after it a sentence, the name's
    gloss (not a line of code: "<prefix>/include/foo.h")."""
    for k in range(1, len(units) - 2):
        unit, name, gloss = units[k], units[k + 1].text.rstrip(), units[k + 2].text.rstrip()
        if not unit.is_list_item and announces_entries(unit.text) and is_entry_name(name) \
                and gloss[:1].isupper() and bool(_TERMINAL.search(gloss)):
            return units[:k]
    return units


def _plain_statement(sentence: str) -> bool:
    body = sentence.strip()
    return (
        body[:1].isupper()
        and not body.rstrip().endswith(":")
        and not leans_on_context(body)
        and body.split()[0].lower().rstrip(",") not in _CONNECTIVES
        and not _POINTS_BACK.search(body)
    )


# a sentence that names what it is about only by pointing back at the text before it
_POINTS_BACK = re.compile(
    r"\b(?:the (?:last|above|previous|preceding|latter|former) (?:form|one|case|example|command|option|section)s?"
    r"|(?:these|those|both) (?:two |three )?(?:options?|parameters?|commands?|forms?|values?|variables?|settings?)"
    r"|as (?:mentioned|described|shown|noted) (?:above|before|earlier)"
    r"|we (?:said|saw|have seen|mentioned|described|discussed|explained)"
    r"|^(?:\S+\s+){1,5}(?:also|too|again)\b)\b",  # "The strftime() function also takes ..."
    re.IGNORECASE,
)


# openings that tie a sentence to the one before it
_CONNECTIVES = frozenset(
    "therefore thus hence however so also then otherwise instead similarly likewise moreover furthermore"
    " consequently finally additionally alternatively but and or nevertheless".split()
)


def lead_sentence(text: str) -> str | None:
    """The first sentence of ``text`` that says what it is about (:func:`opening`)."""
    found = opening(text)
    return found[0] if found else None


# a sentence that sends the reader elsewhere says where a topic is told, not what it is
# ("Their use is described in section 10.6.", "For details, see section 44.24.", "More
# examples can be found in the Exim book."): no lead of a section or a report
_POINTS_ELSEWHERE = re.compile(
    r"\b(?:see|described|discussed|explained|covered|documented|detailed|found|given|listed)\b"
    r"[^.;]{0,60}?\b(?:(?:sections?|chapters?|appendix|appendices|parts?)\s+[\dA-Z]"
    r"|(?:a |the |this )?(?:separate |next |following |previous |later |earlier )?"
    r"(?:document|book|manual|chapter|section|appendix|page)s?\b)"
    r"|^(?:Please )?(?:see|refer to|consult)\b"
    r"|\b(?:found|available|downloaded|obtained)\s+(?:at|from)\s+<?(?:https?://|www\.)"
    r"|\bcan (?:also )?be found (?:in|at|on|under)\b"
    r"|^(?:For (?:details|more (?:details|information)|further (?:details|information)|an? (?:[a-z]+ )?"
    r"(?:description|discussion|explanation|overview)\b)[^,]*,\s*see\b)",
    re.IGNORECASE,
)
# a sentence setting up an example ("Let's say a company named Example, Inc.", "Suppose
# you have two servers"): the example's premise, not what the section is about
_SETS_UP_EXAMPLE = re.compile(
    r"^(?:Let(?:'|’)?s (?:say|assume|suppose|imagine)|Let us (?:say|assume|suppose|imagine)|Suppose|Assume|Imagine"
    r"|Say (?:you|we)|Consider (?:a|an|the following|this)\b|In (?:this|the following|our) example\b"
    r"|For (?:example|instance),? (?:let(?:'|’)?s|suppose|assume|imagine|say|consider)\b)",
    re.IGNORECASE,
)


def points_elsewhere(sentence: str) -> bool:
    """Whether ``sentence`` only sends the reader to another part of the manual or sets up
    an example: text that says nothing of its topic on its own, so no lead."""
    body = sentence.strip()
    return bool(_POINTS_ELSEWHERE.search(body) or _SETS_UP_EXAMPLE.match(body))


# a reference's list of authors ("T. Bates, Y. Rekhter, R. Chandra, D. Katz.")
_AUTHORS = re.compile(r"^(?:[A-Z]\.\s?)+[A-Z][\w'-]+(?:,?\s(?:and\s)?(?:[A-Z]\.\s?)+[A-Z][\w'-]+)+")


def is_fragment(sentence: str) -> bool:
    """Whether ``sentence`` is a table's row run into text ("Statement | Description
    buffered | Controls ..."), a definition's entry without its headword ("Controls the
    size of journal files.") or a reference's list of authors ("T. Bates, Y. Rekhter, R.
    Chandra, D. Katz."): a piece of a structure, which a report never ends on."""
    body = sentence.strip()
    return " | " in body or opens_without_subject(body) or bool(_AUTHORS.match(body))
