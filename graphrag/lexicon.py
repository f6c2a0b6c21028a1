"""English word classes and verb forms from a lexicon, for reading relations.

The lexicon is LemmInflect's lookup table (the SPECIALIST lexicon: which parts of
speech a word can be, with its lemma per part; the verbs' inflected forms). Only its
dictionary lookups are used, never its out-of-vocabulary model, so a word the table
does not know is simply no verb. Lookups are cached: a manual repeats its words.
"""

from __future__ import annotations

from functools import lru_cache

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


@lru_cache(maxsize=100_000)
def _lemmas(word: str) -> dict[str, tuple[str, ...]]:
    from lemminflect import getAllLemmas

    return dict(getAllLemmas(word))


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


@lru_cache(maxsize=20_000)
def _forms(lemma: str) -> dict[str, tuple[str, ...]]:
    from lemminflect import getAllInflections

    return dict(getAllInflections(lemma, upos="VERB"))


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
