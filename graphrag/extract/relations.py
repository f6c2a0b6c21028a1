"""Typed relations from the grammar of the words between two entity mentions.

The extractor already knows where the entities of a sentence are; what links two
neighbouring mentions is read from the words between them, as a clause:

- an active verb: "A requires B" -> (A, require, B); with the preposition it takes,
  "A writes the pages to B" -> (A, write_to, B);
- a passive one: "A is controlled by B" -> (B, control, A), "A is stored in B" ->
  (A, is_stored_in, B);
- a copula: "A is a B" -> is_a, "A is part of B" -> part_of, "A is compatible with B"
  -> is_compatible_with; "B, such as A" -> (A, is_a, B);
- a bare preposition: "the return value of B" -> (return value, of, B);
- a noun phrase of two names: "the HUP signal" -> (HUP, is_a, signal).

The type is the verb's lemma (its participle after "is" for a passive without an
agent; the preposition where there is no verb), so it reads back as "requires", "is
stored in", "of". Words are classed by a lexicon
(:mod:`graphrag.lexicon`), not a tagger: a verb is a word the lexicon knows as one,
standing where a clause's verb stands. A negation ("does not use"), a condition ("if",
"when") or a second clause between the mentions leaves them untyped: the extractor
then records a co-occurrence.
"""

from __future__ import annotations

import re
from functools import lru_cache

from graphrag.lexicon import (
    PREPOSITIONS,
    is_base_form,
    is_gerund,
    is_participle,
    participle,
    verb_lemma,
    word_classes,
)
from graphrag.text import singular
from graphrag.vocab import HEAD_NOUN_TYPES

MAX_GAP_CHARS = 80
MAX_GAP_WORDS = 10

def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# what a mention leaves of itself around the gap: a call's "(args)", closing quotes
_EDGES_RE = re.compile(r"^(?:\([^()]{0,40}\))?[`'\"]*|[`'\"]+$")
_TOKEN_RE = re.compile(r"[a-z]+(?:'[a-z]+)?|[^\sa-z]")
# punctuation that ends a clause, or opens a bracket or a code-like run
_BREAK_CHARS = frozenset(";:()[]{}=\"<>|/\\*+#$%&@!?\u2014\u2013")
_NEGATIONS = _words(
    "not never no cannot neither nor without n't don't doesn't didn't isn't aren't wasn't "
    "weren't won't can't couldn't shouldn't wouldn't mustn't hasn't haven't unless"
)
_SUBORDINATORS = _words(
    "if when whenever because although though while whereas since until unless but so "
    "where whether once before after then than instead otherwise except and or"
)
_BE = _words("is are was were be been being")
_MODALS = _words("can could may might must shall should will would has have had")
_RELATIVE = _words("which that who")
_DETERMINERS = _words(
    "a an the this that these those its their his her our your my each every all any some "
    "both either another other such same no one two three several many more most much "
    "fewer less few"
)
# prepositions a verb takes for its second argument ("writes to", "depends on"); "of"
# belongs to the noun before it ("the value of B") and leaves the verb plain
_VERB_PREPS = _words(
    "to into in on onto upon from with for at by as over through via under between within "
    "inside across against about"
)
# prepositions of place that stay with the verb after its object ("copies pages into B")
_PLACE_PREPS = _words("in into from onto")
_PARTICLES = _words("up out off back down over away")
_PART_NOUNS = _words("part parts member members component components subset field fields column columns element elements piece portion")
_KIND_NOUNS = _words("kind type form variant subclass subtype instance example case sort version")
_PURPOSE = _words("used needed designed intended meant")
_NAMING = _words("named titled labelled labeled")
# verbs too light to name a relation by themselves
_LIGHT_VERBS = _words("be do get let")
# two names joined by a bare preposition: the relation is the preposition's
_PREPOSITION_RE = re.compile(
    r"^\s*(of|in|on|for|to|into|from|with|by|within|inside|over|under|at)\s+"
    r"(?:(?:the|a|an|its|their|each|every|this|that|these|those)\s+)?$"
)
_SUCH_AS_RE = re.compile(r"^\s*,?\s*(?:such\s+as|like|including|e\.g\.,?)\s*$")
_SEE_RE = re.compile(r"^\W*(?:see|see\s+also|for\s+more\s+(?:information|details)[^,]*,\s*see)\b", re.IGNORECASE)


def is_see_also_unit(unit: str) -> bool:
    """True for a sentence that points elsewhere ("See also ...", "(See the ...)")."""
    return bool(_SEE_RE.search(unit))


def relation_between(between: str) -> tuple[str, bool] | None:
    """(type, reversed) for the text between two mentions, or None for co-occurrence.

    ``reversed`` means the second mention is the relation's source ("A is used by B":
    B uses A).
    """
    if len(between) > MAX_GAP_CHARS or " - " in between or "   " in between or "\n\n" in between:
        return None  # a dash, a table's columns, a paragraph break: not one clause
    return _read(_EDGES_RE.sub("", between.lower()))


@lru_cache(maxsize=200_000)
def _read(low: str) -> tuple[str, bool] | None:
    if _SUCH_AS_RE.match(low):
        return "is_a", True
    if m := _PREPOSITION_RE.match(low):
        return m.group(1), False  # "the return value of B", "a lock on B"
    tokens = _TOKEN_RE.findall(low)
    if not tokens or len(tokens) > MAX_GAP_WORDS + 2:
        return None
    if any(t in _BREAK_CHARS or t in _NEGATIONS or t in _SUBORDINATORS for t in tokens):
        return None
    return _clause(tokens)


_ADVERBS = _words(
    "also only then now still always often usually normally first already just even again "
    "automatically typically generally currently sometimes directly internally actually "
    "simply commonly mostly frequently primarily mainly merely newly further"
)
# verbs whose -s form between two names is almost always a plural noun ("WAL files")
_NOUNISH = _words(
    "file table page index record key value row column line name type byte field object "
    "mode option point level list string block node number size word tree link map entry "
    "format host user range state source target command function module package branch "
    "tag patch image document query process test part output input step lock"
)


# verbs that take no object: with no preposition of their own, the name after them is
# not what they act on
_INTRANSITIVE = _words(
    "occur happen exist appear arise emerge remain reside live stay come go fail succeed "
    "wait sleep die proceed persist matter"
)


def _is_adverb(word: str) -> bool:
    return word in _ADVERBS or (word.endswith("ly") and "ADV" in word_classes(word))


def _clause(tokens: list[str]) -> tuple[str, bool] | None:
    i, n = 0, len(tokens)
    if tokens[0] == "'s":
        return None  # "A's bundled B": a possessive, not a clause
    if tokens[0] == ",":
        # "A, which uses B": a relative clause about A; any other comma separates
        if n < 2 or tokens[1] not in _RELATIVE:
            return None
        i = 1
    else:
        # the subject's head noun after its name: "A pragma sets B", "A column may be set"
        while i < min(n - 1, 2) and _head_noun(tokens[i], tokens[i + 1]):
            i += 1
    if i < n and tokens[i] in _RELATIVE:
        i += 1
    aux: list[str] = []
    while i < n and (tokens[i] in _BE or tokens[i] in _MODALS or tokens[i] == "also" or _is_adverb(tokens[i])):
        if tokens[i] in _BE or tokens[i] in _MODALS:
            aux.append(tokens[i])
        i += 1
    if i < n and tokens[i] == "to" and aux:  # "has to use", "is able to" are not plain
        return None
    if any(a in _BE for a in aux):
        return _after_be(tokens[i:])
    if aux and aux[-1] in ("has", "have", "had") and (i >= n or not is_participle(tokens[i])):
        return None if "," in tokens[i:] else _object("have", tokens[i:])  # "A has a B"
    if i >= n:
        return None
    word = tokens[i]
    lemma = verb_lemma(word)
    if lemma is None or lemma in _LIGHT_VERBS or "," in tokens[i:]:
        return None
    if lemma in _NOUNISH and not aux and word.endswith("s"):
        return None
    if not aux and word != lemma and "NOUN" in word_classes(word) and _starts_with_prep(tokens[i + 1 :]):
        return None  # "VXLAN interfaces from B", "eBGP peers with B": a plural noun
    if not aux and not _finite(word):
        return None
    if aux and not is_base_form(word):
        return None  # "can used": not a clause this reads
    rest = tokens[i + 1 :]
    if not aux and word in _NAMING and all(t in _DETERMINERS for t in rest):
        return "is_named", False  # "a table named B"
    if not aux and is_participle(word) and rest[:1] and rest[0] in _VERB_PREPS:
        # "A used by B", "A included in B": a participle phrase, passive
        if not all(t in _DETERMINERS for t in rest[1:]):
            return None
        return (lemma, True) if rest[0] == "by" else (f"is_{word}_{rest[0]}", False)
    return _object(lemma, rest)


_NOT_NOUNS = _words("of and or nor but to")


def _head_noun(word: str, after: str) -> bool:
    """Whether ``word`` is a noun closing the subject, seen from the word ``after`` it
    (an auxiliary, an adverb or a finite verb)."""
    if not word.isalpha() or word in _DETERMINERS or word in _RELATIVE or word in _VERB_PREPS or word in _NOT_NOUNS:
        return False
    classes = word_classes(word)
    if classes and "NOUN" not in classes:
        return False
    lemma = verb_lemma(word)
    if lemma is not None and word != lemma and lemma not in _NOUNISH:
        return False  # "works", "used": a verb, not the subject's noun
    if after in _BE or after in _MODALS or after in _RELATIVE or _is_adverb(after):
        return True
    return verb_lemma(after) is not None and not is_base_form(after)


def _starts_with_prep(rest: list[str]) -> bool:
    return bool(rest) and rest[0] in _VERB_PREPS


def _finite(word: str) -> bool:
    """A verb form that can stand without an auxiliary right after its subject:
    "requires", "used" (past), "use" (after a plural); "using" as a participle phrase."""
    if is_gerund(word):
        return word == "using"
    if is_base_form(word):
        # a base form that is also a noun ("index", "file") more likely names a thing
        return "NOUN" not in word_classes(word)
    return True


def _object(lemma: str, rest: list[str]) -> tuple[str, bool] | None:
    """What follows the verb up to the second mention: particles, articles, adjectives,
    a few nouns and the preposition that introduces the mention."""
    prep: str | None = None
    particle = ""
    preps = 0
    after_of = False
    content = 0
    for j, t in enumerate(rest):
        if t in _PARTICLES and j == 0:
            particle = t  # "falls back to": the particle is part of the verb
            continue
        if j and rest[j - 1] == "to" and verb_lemma(t):
            return None  # "allows applications to read B": the reading is another clause
        if t in _RELATIVE and j:
            return None  # "properties that the B [has]": a clause inside the object
        if t in _DETERMINERS or t in _RELATIVE or t == "'s":
            continue
        if t in _VERB_PREPS:
            if after_of or preps:
                return None  # "the number of rows in B", "the same as a column with B"
            if content and t not in _PLACE_PREPS:
                return None  # "returns a pointer to B": the preposition is the noun's
            prep, preps = t, preps + 1
            continue
        if t == "of":
            prep, after_of = None, True  # "the size of B": B is what the verb acts on
            continue
        if t in _BE or t in _MODALS:
            return None  # a second clause
        classes = word_classes(t)
        if "VERB" in classes and classes <= {"VERB", "AUX"}:
            return None  # another verb: the sentence says more than this reads
        content += 1
        if content > 3:
            return None
    if not prep and not particle and lemma in _INTRANSITIVE:
        return None  # "LIMIT may occur at the end of the compound SELECT": no "LIMIT occurs SELECT"
    verb = f"{lemma}_{particle}" if particle else lemma
    return (f"{verb}_{prep}" if prep else verb), False


def _after_be(rest: list[str]) -> tuple[str, bool] | None:
    """After a form of "be": a passive ("stored in", "used by") or a copula ("a B",
    "part of B", "compatible with B")."""
    if not rest:
        return None
    head = rest[0]
    if is_gerund(head):  # "A is using B": a progressive, active
        lemma = verb_lemma(head)
        return None if lemma is None or lemma in _LIGHT_VERBS or "," in rest else _object(lemma, rest[1:])
    if head in _PURPOSE and rest[1:2] == ["to"] and len(rest) >= 3 and is_base_form(rest[2]):
        # "A is used to implement B": A implements B
        lemma = verb_lemma(rest[2])
        if lemma and lemma not in _LIGHT_VERBS and all(t in _DETERMINERS for t in rest[3:]):
            return lemma, False
        return None
    if is_participle(head) and not (rest[1:2] and rest[1] == "of"):
        lemma = verb_lemma(head)
        tail = [t for t in rest[1:] if t not in _DETERMINERS and not _is_adverb(t)]
        if lemma is None or lemma in _LIGHT_VERBS or not tail or len(tail) > 2:
            return None
        if tail[0] in ("by", "using", "via", "through") and len(tail) == 1:
            return lemma, True  # "A is used by B": B uses A; "A is disabled using B"
        if tail[0] in _VERB_PREPS and len(tail) == 1:
            return f"is_{participle(lemma)}_{tail[0]}", False
        return None
    if head in ("a", "an", "the", "one"):
        if any(t in _RELATIVE for t in rest[2:]):
            return None  # "A is a daemon that handles the B": B is what the daemon handles
        words = [t for t in rest[1:] if t not in _DETERMINERS]
        if not words or (head == "one" and words == ["of"]):
            return "is_a", False
        if len(words) == 2 and words[1] == "of" and words[0] in _PART_NOUNS:
            return "part_of", False
        if len(words) == 2 and words[1] == "of" and words[0] in _KIND_NOUNS:
            return "is_a", False
        if words[:2] == ["special", "case"] and words[2:] == ["of"]:
            return "is_a", False
        plain = not any(w == "of" or w in _VERB_PREPS or (verb_lemma(w) and "NOUN" not in word_classes(w)) for w in words)
        if len(words) <= 2 and plain:
            return "is_a", False  # "A is the default B"
        return None
    words = [t for t in rest if t not in _DETERMINERS]
    if not words:
        return None
    if words[0] in _PART_NOUNS and words[1:] == ["of"]:
        return "part_of", False
    if len(words) == 2 and words[1] in _VERB_PREPS and _adjective(words[0]):
        return f"is_{words[0]}_{words[1]}", False  # "A is compatible with B"
    return None


_ADJECTIVE_ENDINGS = ("ible", "able", "ent", "ant", "al", "ive", "ous", "ar", "ic")


def _adjective(word: str) -> bool:
    classes = word_classes(word)
    if "VERB" in classes:
        return False
    return "ADJ" in classes or (bool(classes) and word.endswith(_ADJECTIVE_ENDINGS))


# a gap ending in a preposition: the name after it is that preposition's object
_PP_END_RE = re.compile(
    r"\b(?:of|in|on|for|to|into|from|with|by|at|within|as|via|using|than)\s+"
    r"(?:(?:the|a|an|this|its|their|each|every)\s+)?$",
    re.IGNORECASE,
)
# "A causes B to run", "A makes B run", "A means that B can...": B is the subject of
# another verb, not what A acts on ("compile-time option causes SQLite" misreads it)
_CAUSATIVE = frozenset({"cause", "enable", "allow", "let", "make", "help", "force", "permit", "require", "tell", "instruct"})
_INFINITIVE_RE = re.compile(r"^\s+to\s+[a-z]", re.IGNORECASE)
# "A prevents B from being tested": what A prevents is B's being tested
_KEEP_FROM = frozenset({"prevent", "stop", "keep", "prohibit", "forbid", "block", "exclude"})
_FROM_GERUND_RE = re.compile(r"^\s+from\s+[a-z]+ing\b", re.IGNORECASE)
_CLAUSE_OPENER_RE = re.compile(r"\b(?:that|whether|if|how|when|why)\s*$", re.IGNORECASE)
_COORDINATION_RE = re.compile(r"^\s*(?:,|,?\s*(?:and|or|as\s+well\s+as))\s*(?:(?:the|a|an)\s+)?$", re.IGNORECASE)
_ARGUMENT_RE = re.compile(
    r"^\s*(in|into|to|from|on|onto|with|for|at|as|over|through|via)\s+(?:(?:the|a|an|its|their|each|every|this)\s+)?$",
    re.IGNORECASE,
)


# "This routine sets ...", "This PRAGMA returns ...": a sentence whose subject is the
# topic of its section, named by a demonstrative and the noun of the topic's kind
_TOPIC_SUBJECT_RE = re.compile(r"^(?:this|these)\s+([a-z]+)\b(?=\s)", re.IGNORECASE)


def topic_subject(unit: str, topic_type: str) -> int:
    """The length of a sentence's opening subject that stands for its section's topic,
    an entity of type ``topic_type`` ("This routine" for a function, "This pragma" for a
    parameter), or 0 when the sentence does not open with one. Only a noun that names
    the topic's own kind counts: "This command" in a section about a daemon is one of
    its commands, not the daemon."""
    m = _TOPIC_SUBJECT_RE.match(unit)
    if not m:
        return 0
    noun = m.group(1).lower()
    kind = HEAD_NOUN_TYPES.get(noun) or HEAD_NOUN_TYPES.get(noun.rstrip("s"))
    return m.end() if kind is not None and kind == topic_type else 0


# head nouns that name a class of things: "the HUP signal", "the shell variable ZDOTDIR"
_CLASS_NOUNS = _words(
    "signal macro option parameter variable function tokenizer mode command module extension "
    "pragma setting keyword code constant method hook callback operator property directive "
    "policy generator widget builtin routine interface statement clause flag opcode type "
    "exception class package header switch"
)
# names that are things of their own, not instances of a class ("SQLite database files")
_NOT_INSTANCES = _words("term component")


def compound_relation(first: tuple[str, str], second: tuple[str, str]) -> tuple[str, str, str] | None:
    """(instance, "is_a", class) for two names written as one noun phrase, with nothing
    between them: "the HUP signal", "the shell variable ZDOTDIR". ``first`` and
    ``second`` are (name, entity type); the class is a term whose last word names a
    kind of thing, the instance a name that is not a term."""
    for inst, cls in ((first, second), (second, first)):
        if cls[1] == "term" and inst[1] not in _NOT_INSTANCES:
            head = cls[0].lower().split()[-1]
            # a plural head names things for the other name ("MPLS kernel modules")
            if head in _CLASS_NOUNS and singular(head) == head:
                return inst[0], "is_a", cls[0]
    return None


def _complement_subject(rel_type: str, before: str, after: str) -> bool:
    """Whether the name after a verb is the subject of a clause, infinitive or gerund the
    verb takes ("means that B can", "causes B to run", "makes B run", "prevents B from
    being"), not its object."""
    if verb_lemma(rel_type) != rel_type:
        return False
    if _CLAUSE_OPENER_RE.search(before):
        return True
    if rel_type in _KEEP_FROM:
        return bool(_FROM_GERUND_RE.match(after))
    if rel_type not in _CAUSATIVE:
        return False
    if _INFINITIVE_RE.match(after):
        return True
    following = after.split(maxsplit=1)[:1]
    # "makes B run": a verb's base form right after the name
    word = following[0].lower() if following else ""
    return rel_type in {"make", "let", "help"} and word.isalpha() and verb_lemma(word) == word


def sentence_relations(
    names: list[str], gaps: list[str], types: list[str] | None = None, tail: str = ""
) -> list[tuple[str, str, str]]:
    """(source, type, target) for the mentions of one sentence: ``names`` in order and
    ``gaps``, the text between each name and the next; ``tail``, the text after the
    last name.

    Besides each neighbouring pair :func:`relation_between` types, a verb reaches the
    names coordinated with its subject or object ("A and B require C and D": four
    relations), and a plain verb's object takes a third name introduced by a
    preposition ("A stores B in C": B is_stored_in C). With the names' entity ``types``,
    two names written as one noun phrase are an instance and its class
    (:func:`compound_relation`).
    """
    reads = [relation_between(g) for g in gaps]
    coordinated = [bool(_COORDINATION_RE.match(g)) for g in gaps]
    out: list[tuple[str, str, str]] = []
    if types is not None:
        for i, gap in enumerate(gaps):
            if not gap.strip() and (found := compound_relation((names[i], types[i]), (names[i + 1], types[i + 1]))):
                out.append(found)
    for i, read in enumerate(reads):
        if read is None:
            continue
        rel_type, reverse = read
        if rel_type not in PREPOSITIONS and i and _PP_END_RE.search(gaps[i - 1]):
            continue  # "the model implemented by A is shown in B": A is no subject
        if not reverse and _complement_subject(rel_type, gaps[i], gaps[i + 1] if i + 1 < len(gaps) else tail):
            continue
        subjects = [names[i]]
        k = i - 1
        # a name joined to the subject by "and" is a subject too, unless a verb of its
        # own ties it to the name before it (then it is that verb's object)
        while k >= 0 and coordinated[k] and (k == 0 or reads[k - 1] is None):
            subjects.append(names[k])
            k -= 1
        objects = [names[i + 1]]
        j = i + 1
        # ...and so is a name joined to the object, unless it starts a clause of its own
        while j < len(gaps) and coordinated[j] and (j + 1 >= len(reads) or reads[j + 1] is None):
            objects.append(names[j + 1])
            j += 1
        for s in subjects:
            for o in objects:
                if s != o:
                    out.append((o, rel_type, s) if reverse else (s, rel_type, o))
        if not reverse and verb_lemma(rel_type) == rel_type:
            last = i + 1
            if last < len(gaps) and (arg := _ARGUMENT_RE.match(gaps[last])):
                third = names[last + 1]
                if third != names[last]:
                    out.append((names[last], f"is_{participle(rel_type)}_{arg.group(1).lower()}", third))
    # a bare preposition says less than a verb relating the same two names
    verbal = {frozenset((s, o)) for s, t, o in out if t not in PREPOSITIONS}
    return [(s, t, o) for s, t, o in out if t not in PREPOSITIONS or frozenset((s, o)) not in verbal]
