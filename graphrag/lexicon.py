"""English word classes and verb forms from a lexicon, for reading relations.

The lexicon is LemmInflect's lookup tables (from the SPECIALIST lexicon: which parts
of speech a word can be, with its lemma per part; the verbs' inflected forms and the
library's corrections to both). They are read straight from the package's data files:
importing the package itself would load numpy and its model for words outside the
tables, which the rule extractor never uses, in every pool worker. A word the tables
do not know is simply no verb. Lookups are cached: a manual repeats its words.
"""

from __future__ import annotations

import gzip
import importlib.util
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

# Types the patterns of graphrag.extract.relations give that are not a verb's lemma,
# and the words that show them between two names.
FIXED_PHRASES = {
    "is_a": "is a",
    "part_of": "is part of",
    "see_also": "see also",
    "co_occurs": "appears with",
}


# the bare prepositions a relation can be typed by (graphrag.extract.relations)
PREPOSITIONS = frozenset("of in on for to into from with by within inside over under at".split())


def _resources() -> Path:
    """LemmInflect's data folder, found without running the package's __init__."""
    spec = importlib.util.find_spec("lemminflect")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("graphrag.lexicon needs the lemminflect package (pip install lemminflect)")
    return Path(next(iter(spec.submodule_search_locations))) / "resources"


def _overrides(name: str) -> Iterator[tuple[str, str, str]]:
    """(word, tag, form) rows of one of the tables' correction files."""
    for line in (_resources() / name).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            word, tag, form = line.strip().split(",")
            yield word, tag, form


@lru_cache(maxsize=1)
def _lemma_table() -> dict[str, dict[str, tuple[str, ...]]]:
    """Word -> part of speech (NOUN, VERB, AUX...) -> its lemmas."""
    table: dict[str, dict[str, tuple[str, ...]]] = {}
    with gzip.open(_resources() / "lemma_lu.csv.gz", "rt", encoding="utf-8") as rows:
        for row in rows:
            word, category, lemmas = row.rstrip("\n").split(",")
            table.setdefault(word, {})["AUX" if category == "modal" else category.upper()] = tuple(lemmas.split("/"))
    for word, upos, lemma in _overrides("lemma_overrides.csv"):
        table.setdefault(word, {})[upos] = (lemma,)
    return table


@lru_cache(maxsize=1)
def _verb_table() -> dict[str, dict[str, tuple[str, ...]]]:
    """Verb lemma -> Penn tag (VB, VBD, VBN, VBG, VBZ, VBP) -> its spellings."""
    table: dict[str, dict[str, tuple[str, ...]]] = {}
    with gzip.open(_resources() / "infl_lu.csv.gz", "rt", encoding="utf-8") as rows:
        for row in rows:
            lemma, category, *forms = row.rstrip("\n").split(",")
            if category != "verb":
                continue
            entry = table.setdefault(lemma, {})
            entry.update({"VB": (lemma,), "VBP": (lemma,)})
            entry.update({tag: tuple(f.split("/")) for tag, f in zip(("VBD", "VBN", "VBG", "VBZ"), forms) if f})
    for lemma, tag, form in _overrides("infl_overrides.csv"):
        if tag.startswith("VB"):
            table.setdefault(lemma, {})[tag] = (form,)
    return table


def load() -> None:
    """Read the lexicon's tables now (about a second; otherwise the first sentence that
    needs them pays for it)."""
    _lemma_table()
    _verb_table()


@lru_cache(maxsize=100_000)
def _lemmas(word: str) -> dict[str, tuple[str, ...]]:
    return _lemma_table().get(word, {})


def verb_lemma(word: str) -> str | None:
    """The lemma of ``word`` (lowercase) read as a verb, or None if it is no verb."""
    got = _lemmas(word).get("VERB")
    return got[0] if got else None


def word_classes(word: str) -> frozenset[str]:
    """The parts of speech (NOUN, VERB, ADJ, ADV...) ``word`` (lowercase) can have."""
    return frozenset(_lemmas(word))


def is_english_word(word: str) -> bool:
    """Whether the lexicon knows ``word`` (any case) as an English word."""
    return bool(_lemmas(word.lower()))


def _forms(lemma: str) -> dict[str, tuple[str, ...]]:
    return _verb_table().get(lemma, {})


def _participles(lemma: str) -> tuple[str, ...]:
    forms = _forms(lemma)
    # the table lists a participle apart only where it differs from the past tense
    return forms.get("VBN") or forms.get("VBD", ())


def is_participle(word: str) -> bool:
    """Whether ``word`` is the past participle of a verb ("stored", "written")."""
    lemma = verb_lemma(word)
    return lemma is not None and word in _participles(lemma)


def is_gerund(word: str) -> bool:
    """Whether ``word`` is a verb's -ing form ("using")."""
    lemma = verb_lemma(word)
    return lemma is not None and word in _forms(lemma).get("VBG", ())


def is_base_form(word: str) -> bool:
    """Whether ``word`` is a verb's base form ("use" in "tables use indexes")."""
    lemma = verb_lemma(word)
    return lemma is not None and word == lemma


def participle(lemma: str) -> str:
    """The past participle of a verb ("store" -> "stored")."""
    got = _participles(lemma)
    if got:
        return got[0]
    return lemma + ("d" if lemma.endswith("e") else "ed")


def third_person(lemma: str) -> str:
    """The third person singular of a verb ("require" -> "requires", "have" -> "has")."""
    got = _forms(lemma).get("VBZ")
    if got:
        return got[0]
    if lemma.endswith(("s", "sh", "ch", "x", "z")):
        return lemma + "es"
    return lemma + "s"


@lru_cache(maxsize=4096)
def relation_words(rel_type: str) -> str:
    """How a relation type reads between two names: "require" -> "requires",
    "write_to" -> "writes to", "is_stored_in" -> "is stored in", "is_a" -> "is a"."""
    if rel_type in FIXED_PHRASES:
        return FIXED_PHRASES[rel_type]
    if rel_type in PREPOSITIONS:
        return rel_type  # "over" is a verb too, but here it is a bare preposition
    words = rel_type.split("_")
    if words[0] == "is" or not words[0].isalpha() or verb_lemma(words[0]) != words[0]:
        return " ".join(words)  # not a verb lemma (an LLM's type): as it is
    return " ".join([third_person(words[0]), *words[1:]])


@lru_cache(maxsize=4096)
def inverse_relation_words(rel_type: str) -> str:
    """How a relation reads from its target back to its source: "require" -> "is
    required by", "write_to" -> "is written to by"; "(inverse) ..." where no passive
    says it ("is_a" -> "(inverse) is a")."""
    if rel_type == "co_occurs":
        return FIXED_PHRASES[rel_type]
    if rel_type in PREPOSITIONS:
        return f"(inverse) {rel_type}"
    words = rel_type.split("_")
    if words[0].isalpha() and verb_lemma(words[0]) == words[0] and rel_type not in FIXED_PHRASES:
        return " ".join(["is", participle(words[0]), *words[1:], "by"])
    return f"(inverse) {relation_words(rel_type)}"
