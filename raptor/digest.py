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

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from arborgraph.core.definitions import ALSO
from arborgraph.core.leads import opening

__all__ = ["ALSO", "Part", "digest"]

CountTokens = Callable[[str], int]

# With parts to list, the node's own opening gets at most this many sentences.
_OWN_WITH_PARTS = 2


@dataclass(frozen=True)
class Part:
    """A part of a node as its digest lists it: its title and its lead sentence."""

    title: str
    lead: str | None


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
