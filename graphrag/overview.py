"""A community's overview: the manual's sentences that carry most of what it is about.

Centroid selection, as extractive summarisers since MEAD do it: the community's
vocabulary is the term frequencies of the text where its members are discussed (each
chunk weighed by how many of their mentions it holds), times each term's inverse
document frequency over the whole graph's chunks, so that words every page uses count
for little. A sentence scores the share of that vocabulary it carries (its distinct
terms' weights over the square root of their number, so long sentences do not win by
length), more when it names a member or opens its section or chunk, less when it states
a condition or an instruction ("If the result is NULL, ..."). Sentences are chosen best
first with maximal marginal relevance (a sentence repeating the terms of one already
chosen loses) and returned in reading order, so the overview reads as the manual does.

Which sentences may compete at all (whole sentences that read alone, say something,
send the reader nowhere) is the caller's predicate: the report writer's rules.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from arborgraph.core.leads import split_units
from arborgraph.core.text import analyse

# a sentence speaking to the reader about reading ("You should read the introduction
# first.", "Let's start with ...", "For introductory material, see ..."), or a version
# note: it says nothing of the topic itself (the fifth rating's "summaries pasted from
# asides and deprecation notices")
_META = re.compile(
    r"^(?:you (?:should|may want to|might want to|will|can also) (?:first )?(?:read|see|look|find|refer)"
    r"|let[’']s\b|we(?:['’]ll| will) (?:now|start|begin|look|see)\b|now (?:we|let)\b"
    r"|for (?:introductory|more|further|additional) (?:material|information|details|examples)\b"
    r"|(?:new|changed|deprecated) in (?:version )?\d|(?:this|the) .{0,40}\bis deprecated\b)"
    r"|\bdeprecated\b|\?$"
    # a setting's case ("If false, ...") or an API's generated note ("Proxied for ...")
    r"|^if (?:true|false|set|not set|omitted|specified|enabled|disabled)\b|^proxied (?:for|on behalf)\b"
    # a pronoun for what the text before it named ("Some of them ...")
    r"|^(?:some|many|most|all|each|both|one|none|any|few|several) of (?:them|these|those)\b",
    re.IGNORECASE,
)
# a chunk's weight counts at most this many mentions: a page listing every member
# (an options table) would else be the whole vocabulary
_MAX_CHUNK_MENTIONS = 5
# a condition or an instruction ("If the result is NULL, ...", "Do not mix ...") is a
# detail of the topic, rarely what it is
_DETAIL = re.compile(r"^(?:if|when|whenever|unless|only|do not|don[’']t|never|always|otherwise|once|after|before"
                     r"|return|construct|produce)\b",
                     re.IGNORECASE)
_DETAIL_FACTOR = 0.7
# a sentence going on from the one before it ("Or if ...", "And ...")
_GOES_ON = re.compile(
    r"^(?:or|and|but|nor|so|yet|also|on the other hand|in addition|moreover|furthermore|additionally)\b", re.IGNORECASE
)
_MEMBER_BONUS = 0.3
# a section says what it is about first: its first sentences gain, and a chunk's first
# (a page's text goes on over several chunks) a little
_SECTION_OPENING_BONUS = 0.3
_SECTION_OPENING_SENTENCES = 2
_OPENING_BONUS = 0.1
# how much a chosen sentence's terms count against a candidate sharing them
_REDUNDANCY = 0.7
_MIN_WORDS = 6
_MAX_WORDS = 45


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence (or list item) of a chunk, analysed once for every community."""

    text: str  # spaces collapsed
    terms: tuple[str, ...]  # analysed, with repeats (term frequencies)
    position: int  # among the chunk's sentences and list items
    is_list_item: bool

    @property
    def opens_chunk(self) -> bool:
        return self.position == 0


def chunk_sentences(text: str) -> tuple[Sentence, ...]:
    """The sentences of a chunk's ``text``, in order, analysed."""
    return tuple(
        Sentence(" ".join(u.text.split()), tuple(analyse(u.text)), u.position, u.is_list_item)
        for u in split_units(text)
    )


def restates(sentence: str, title: str) -> bool:
    """Whether ``sentence`` says little more than ``title`` ("Support for the PostgreSQL
    database." under "PostgreSQL"): at most two terms of its own beside the title's."""
    return len(set(analyse(sentence)) - set(analyse(title))) <= 2


def is_meta(sentence: str) -> bool:
    """Whether ``sentence`` addresses the reader about reading, asks a question or
    notes a version's change (:data:`_META`): no overview sentence."""
    return bool(_META.search(sentence.strip()))


def document_frequencies(texts: Iterable[str]) -> tuple[Counter[str], int]:
    """How many of ``texts`` (the graph's chunks) hold each analysed term, and how many
    texts there are."""
    df: Counter[str] = Counter()
    n = 0
    for text in texts:
        df.update(set(analyse(text)))
        n += 1
    return df, n


def overview(
    chunks: Sequence[tuple[str, Sequence[Sentence], float]],
    names: Collection[str],
    df: Mapping[str, int],
    n_docs: int,
    may_quote: Callable[[str], bool],
    *,
    section_openers: Collection[str] = (),
    max_words: int = 100,
    max_sentences: int = 3,
) -> list[tuple[str, str]]:
    """(sentence, chunk id) of the overview of ``chunks`` ((chunk id, its
    :func:`chunk_sentences`, weight), in reading order), in reading order: at most
    ``max_sentences`` sentences and ``max_words`` words. ``names`` are the members'
    names (a sentence naming one gains); ``df`` and ``n_docs`` are
    :func:`document_frequencies` over the graph; ``may_quote`` says which sentences may
    compete; the first sentences of the chunks in ``section_openers`` (those opening
    their section) gain."""
    vocabulary: Counter[str] = Counter()
    candidates: list[tuple[Sentence, str]] = []
    openers = set(section_openers)
    for chunk_id, sentences, weight in chunks:
        for s in sentences:
            for t in s.terms:
                vocabulary[t] += weight
            words = len(s.text.split())
            # a chunk opening in lower case starts inside a sentence cut off before it
            # (or anywhere in lower case but for an identifier: "where taskname is ...")
            first = s.text.split(" ", 1)[0]
            cut = (s.text[:1].islower() and (s.opens_chunk or first.isalpha())) or _GOES_ON.match(s.text) is not None
            if _MIN_WORDS <= words <= _MAX_WORDS and not s.is_list_item and not cut and not is_meta(s.text) \
                    and may_quote(s.text):
                candidates.append((s, chunk_id))
    if not candidates:
        return []
    weights = {t: tf * (math.log((1 + n_docs) / (1 + df.get(t, 0))) + 1.0) for t, tf in vocabulary.items()}
    top = max(weights.values(), default=0.0) or 1.0
    member = names_pattern(names, min_chars=3)
    terms = [frozenset(s.terms) for s, _ in candidates]
    relevance = []
    for (s, chunk), ts in zip(candidates, terms, strict=True):
        # summed in sorted order: set order follows the per-process string hash seed
        score = sum(weights.get(t, 0.0) for t in sorted(ts)) / (top * math.sqrt(1 + len(ts)))
        score += _MEMBER_BONUS * (member is not None and member.search(s.text) is not None)
        score += _OPENING_BONUS * s.opens_chunk
        if chunk in openers and s.position < _SECTION_OPENING_SENTENCES:
            score += _SECTION_OPENING_BONUS
        if _DETAIL.match(s.text):
            score *= _DETAIL_FACTOR
        relevance.append(score)
    chosen: list[int] = []
    seen: set[str] = set()
    used = 0
    remaining = list(range(len(candidates)))
    while remaining and len(chosen) < max_sentences:
        def gain(i: int) -> tuple[float, int]:
            overlap = max((_jaccard(terms[i], terms[j]) for j in chosen), default=0.0)
            return relevance[i] - _REDUNDANCY * overlap, -i
        best = max(remaining, key=gain)
        remaining.remove(best)
        text = candidates[best][0].text
        words = len(text.split())
        if text.lower() in seen or (chosen and used + words > max_words):
            continue
        seen.add(text.lower())
        chosen.append(best)
        used += words
    return [(candidates[i][0].text, candidates[i][1]) for i in sorted(chosen)]


def chunk_weights(mentions: Iterable[str]) -> dict[str, float]:
    """Chunk id -> weight of the text a community is discussed in: its members'
    mentions there (one per mention listed), at most :data:`_MAX_CHUNK_MENTIONS`."""
    counts = Counter(mentions)
    return {c: float(min(n, _MAX_CHUNK_MENTIONS)) for c, n in counts.items()}


def names_pattern(names: Collection[str], min_chars: int = 1) -> re.Pattern[str] | None:
    """A pattern matching any of ``names`` of at least ``min_chars`` characters, in any
    case, as a whole word (longest first); None when there is none. Built once per set
    of names: a report's sentences are all checked against the same members."""
    wanted = tuple(sorted({n for n in names if len(n.strip()) >= min_chars}, key=lambda n: (-len(n), n)))
    return _pattern(wanted) if wanted else None


@lru_cache(maxsize=4096)
def _pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, names)) + r")(?![\w-])", re.IGNORECASE)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0
