"""Multi-word technical terms from term statistics, and their fast matching in text.

A term is a run of ordinary words (no identifiers, no stopwords) that is frequent
across chunks and cohesive: its chunk frequency is a fair share of the chunk frequency
of its rarest word. No tagger or language model is involved.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from arborgraph.core.text import ENTITY_STOPWORDS
from graphrag.lexicon import word_classes
from graphrag.text import singular
from graphrag.vocab import GENERIC_WORDS, VERBISH

# Ordinary words: lowercase or Capitalised, letters with inner hyphens only. An
# identifier (digits, underscores, CamelCase, ALLCAPS) is a pattern entity instead.
_WORD_RE = re.compile(r"(?<![\w.@/-])[A-Za-z][a-z]*(?:-[A-Za-z][a-z]*)*(?![\w(@/])")
# Words of one run are separated by plain spaces: punctuation breaks a phrase.
_RUN_RE = re.compile(_WORD_RE.pattern + r"(?:[ \t]+" + _WORD_RE.pattern + r")*")
_DETERMINERS = frozenset("the a an this that these those each every its their our your any no".split())
_NUMBERING_RE = re.compile(r"^\s*(?:\d+(?:\.\d+)*\.?|[A-Za-z]\.|[ivxIVX]+\.)\s+")


@lru_cache(maxsize=200_000)
def _norm(token: str) -> str:
    return token.lower().replace("-", " ")


@lru_cache(maxsize=200_000)
def _norm_last(token: str) -> str:
    parts = token.lower().split("-")
    parts[-1] = singular(parts[-1])
    return " ".join(parts)


def word_runs(text: str) -> Iterator[list[tuple[str, int, int]]]:
    """Runs of ordinary words separated only by spaces: [(token, start, end), ...]."""
    for m in _RUN_RE.finditer(text):
        run: list[tuple[str, int, int]] = []
        pos = m.start()
        for tok in m.group(0).split():
            s = text.index(tok, pos)
            pos = s + len(tok)
            run.append((tok, s, pos))
        yield run


@lru_cache(maxsize=200_000)
def _plain(word: str) -> bool:
    w = word.lower()
    return (
        len(w) > 1
        and w not in ENTITY_STOPWORDS
        and w not in GENERIC_WORDS
        and not w.endswith("ly")
    )


@lru_cache(maxsize=200_000)
def _phrase_ok(tokens: tuple[str, ...]) -> bool:
    if not all(_plain(t) for t in tokens):
        return False
    for t in tokens[:-1]:
        low = t.lower()
        if low.endswith("s") and singular(low) != low:
            return False  # "triggers fire", "index contains rows": a clause, not a term
    last = tokens[-1].lower()
    if any(_verb_only(t.lower()) for t in tokens):
        return False  # "contain ptrmap", "implement tab-completion": a verb phrase
    return last not in VERBISH and not last.endswith("ed")


def _verb_only(word: str) -> bool:
    """A word the lexicon knows only as a verb (contain, implement), never a noun."""
    return word_classes(word) in _VERB_CLASSES


_VERB_CLASSES = (frozenset({"VERB"}), frozenset({"VERB", "AUX"}))


def _ngrams(run: list[tuple[str, int, int]], max_n: int) -> Iterator[str]:
    toks = [t for t, _, _ in run]
    plain = [_plain(t) for t in toks]
    for i in range(len(toks)):
        if not plain[i]:
            continue
        for n in range(2, max_n + 1):
            j = i + n - 1
            if j >= len(toks) or not plain[j - 1]:
                break
            if plain[j] and _phrase_ok(tuple(toks[i : j + 1])):
                yield " ".join([_norm(t) for t in toks[i:j]] + [_norm_last(toks[j])])


def heading_term(heading: str) -> str | None:
    """The heading without its numbering, if it reads like a term; else None."""
    h = _NUMBERING_RE.sub("", heading).strip().rstrip(":.")
    h = re.sub(r"^(?:the|a|an)\s+", "", h, flags=re.IGNORECASE)
    toks = h.split()
    if not toks or len(toks) > 5:
        return None
    if not all(_WORD_RE.fullmatch(t) for t in toks):
        return None
    if not _phrase_ok(tuple(toks)):
        return None
    return h


def heading_key(heading: str) -> str:
    """The key under which one heading's uses meet, whatever its case or numbering:
    "2. Options", "OPTIONS" and "Options:" share one."""
    from graphrag.text import entity_key

    return entity_key(_NUMBERING_RE.sub("", heading).strip().rstrip(":."))


def term_key(phrase: str) -> str:
    """Key of a phrase of ordinary words, as the matcher computes it."""
    toks = phrase.split()
    return " ".join([_norm(t) for t in toks[:-1]] + [_norm_last(toks[-1])])


@dataclass
class TermCounts:
    """What a :class:`TermVocabulary` learns from some texts: their number, the texts
    each word and n-gram occurs in, and the words seen right after a determiner.
    Counts of disjoint sets of texts add up (:meth:`merged`), so parts of a corpus
    can be counted apart (on a pool's workers) and fitted as one."""

    n_texts: int = 0
    df_word: Counter[str] = field(default_factory=Counter)
    df_gram: Counter[str] = field(default_factory=Counter)
    # Words seen right after a determiner are nouns or adjectives: a cheap,
    # corpus-learned stand-in for a part-of-speech tagger.
    det_follow: set[str] = field(default_factory=set)

    @staticmethod
    def merged(parts: Iterable[TermCounts]) -> TermCounts:
        """The counts of all the parts' texts together."""
        total = TermCounts()
        for part in parts:
            total.n_texts += part.n_texts
            total.df_word.update(part.df_word)
            total.df_gram.update(part.df_gram)
            total.det_follow.update(part.det_follow)
        return total


class TermVocabulary:
    """Learns terms from chunk texts and finds them (longest match first) in text."""

    def __init__(
        self,
        *,
        max_words: int = 4,
        min_df: int = 3,
        max_df_share: float = 0.2,
        min_cohesion: float = 0.1,
        max_single_word_share: float = 0.03,
    ) -> None:
        self.max_words = max_words
        self.min_df = min_df
        self.max_df_share = max_df_share
        self.min_cohesion = min_cohesion
        # a one-word extra term ("Transactions", from a heading) names a concept only
        # if it is rare enough in the text; common ones would turn into hubs
        self.max_single_word_share = max_single_word_share
        self.terms_: dict[str, int] = {}  # key -> chunk frequency
        self._first: set[str] = set()
        self._longest = 1

    def fit(self, texts: Iterable[str], extra_terms: Iterable[str] = ()) -> TermVocabulary:
        """Count n-grams per text; keep frequent, cohesive ones plus ``extra_terms``."""
        return self.fit_counts(self.count(texts), extra_terms)

    def count(self, texts: Iterable[str]) -> TermCounts:
        """The statistics :meth:`fit` learns from, for ``texts``."""
        counts = TermCounts()
        df_word, df_gram, det_follow = counts.df_word, counts.df_gram, counts.det_follow
        for text in texts:
            counts.n_texts += 1
            seen_w: set[str] = set()
            seen_g: set[str] = set()
            for run in word_runs(text):
                seen_w.update(_norm_last(t) for t, _, _ in run)
                for (a, _, _), (b, _, _) in zip(run, run[1:]):
                    if a.lower() in _DETERMINERS:
                        det_follow.add(_norm_last(b))
                seen_g.update(_ngrams(run, self.max_words))
            df_word.update(seen_w)
            df_gram.update(seen_g)
        return counts

    def fit_counts(self, counts: TermCounts, extra_terms: Iterable[str] = ()) -> TermVocabulary:
        """:meth:`fit` from the :meth:`count` of the texts (summed over parts of them)."""
        df_word, df_gram, det_follow, n_texts = counts.df_word, counts.df_gram, counts.det_follow, counts.n_texts
        cap = max(self.min_df, self.max_df_share * n_texts)
        terms: dict[str, int] = {}
        for gram, df in df_gram.items():
            if df < self.min_df or df > cap:
                continue
            gram_words = gram.split()
            if gram_words[0] not in det_follow or gram_words[-1] not in det_follow:
                continue
            rarest = min(df_word.get(w, df) for w in gram.split())
            if df / max(rarest, 1) >= self.min_cohesion:
                terms[gram] = df
        for phrase in extra_terms:
            key = term_key(phrase)
            if " " not in key and df_word.get(key, 0) > self.max_single_word_share * n_texts:
                continue
            terms.setdefault(key, df_word.get(key, 0))
        self.terms_ = dict(sorted(terms.items()))
        self._index()
        return self

    def restore(self, terms: dict[str, int]) -> TermVocabulary:
        """Take ``terms_`` (term key -> chunk frequency) of an earlier :meth:`fit`."""
        self.terms_ = dict(sorted(terms.items()))
        self._index()
        return self

    def _index(self) -> None:
        self._first = {k.split()[0] for k in self.terms_}
        self._longest = max((len(k.split()) for k in self.terms_), default=1)

    def find(self, text: str) -> Iterator[tuple[int, int, str]]:
        """(start, end, key) of term occurrences, longest match first, no overlaps."""
        if not self.terms_:
            return
        first_words, terms, longest = self._first, self.terms_, self._longest
        for run in word_runs(text):
            toks = [t for t, _, _ in run]
            norm = [_norm(t) for t in toks]
            i = 0
            while i < len(toks):
                if norm[i].split(" ", 1)[0] not in first_words:
                    i += 1
                    continue
                hit = 0
                for n in range(min(longest, len(toks) - i), 0, -1):
                    key = " ".join(norm[i : i + n - 1] + [_norm_last(toks[i + n - 1])])
                    if key in terms:
                        hit = n
                        yield run[i][1], run[i + n - 1][2], key
                        break
                i += hit or 1
