"""Digests that say what a node covers: the lead sentences of its parts, in reading
order, under their titles.

A section's first sentence is where its author says what it is about ("The default
method by which SQLite implements atomic commit and rollback is a rollback journal.").
A digest is made of those: the node's own opening sentences, then one line per part
("How WAL Works: The traditional rollback journal works by ..."), whole sentences only,
then the titles of the parts that did not fit ("Also: Checkpointing; Concurrency.").
Nothing is pulled from elsewhere, nothing is counted, no sentence is cut.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from raptor.text import is_summary_sentence, leans_on_context, split_units, stands_alone

CountTokens = Callable[[str], int]

# Where to look for a lead sentence: past these a chunk's opening is a table or code.
_LEAD_UNITS = 4
# With parts to list, the node's own opening gets at most this many sentences.
_OWN_WITH_PARTS = 2
ALSO = "Also: "


@dataclass(frozen=True)
class Part:
    """A part of a node as its digest lists it: its title and its lead sentence."""

    title: str
    lead: str | None


def opening(text: str, n: int = 1) -> list[str]:
    """The first ``n`` sentences of ``text`` that read on their own (complete sentences
    of prose, not list items, not leaning on what came before), among its first few;
    when none does, its first complete sentence or list item that at least does not
    lean on what came before ("In the last form", "Therefore", "this option"), does not
    announce what follows and does not start mid-sentence. None of those: nothing."""
    units = split_units(text)[:_LEAD_UNITS + n]
    found = [
        u.text for k, u in enumerate(units)
        if not u.is_list_item and is_summary_sentence(u) and stands_alone(u, opens_chunk=k == 0)
        and not _POINTS_BACK.search(u.text) and u.text.split()[0].lower().rstrip(",") not in _CONNECTIVES
    ][:n]
    if found:
        return found
    whole = next((u.text for u in units if _plain_statement(u.text) and is_summary_sentence(u)), None)
    return [whole] if whole else []


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


def digest(own: Sequence[str], parts: Sequence[Part], *, budget: int, count_tokens: CountTokens) -> str:
    """The digest of a node: sentences of its own opening (``own``, in order), then a
    line per part with a lead sentence, then the titles of the parts left over, within
    ``budget`` tokens. A sentence or line that does not fit is left out whole. Never
    empty: with nothing that fits, the first part's title (or own sentence) stands."""
    lines: list[str] = []
    used = 0

    def take(line: str) -> bool:
        nonlocal used
        cost = count_tokens(line)
        if lines and used + cost > budget:
            return False
        lines.append(line)
        used += cost
        return True

    seen: set[str] = set()
    limit = _OWN_WITH_PARTS if parts else len(own)
    for sentence in own:
        if limit == 0:
            break
        if sentence not in seen and take(sentence):
            seen.add(sentence)
            limit -= 1
    left: list[str] = []
    for part in parts:
        if part.lead and part.lead not in seen and take(f"{part.title}: {part.lead}"):
            seen.add(part.lead)
        else:
            left.append(part.title)
    if left:
        titles = [t for t in dict.fromkeys(left) if t]
        while titles and not take(ALSO + "; ".join(titles) + "."):
            titles.pop()  # a shorter list of the parts, never a cut title
    return "\n".join(lines) if lines else (parts[0].title if parts else "")
