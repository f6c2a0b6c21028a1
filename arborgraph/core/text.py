"""The text toolkit every layer shares: the analyser, the sentence splitter, the
stopword list and the abbreviation list.

Three kinds of text are cut into sentences, each with its own rules (a
:class:`SentenceRules`) run by the one :func:`sentence_spans`:

- :data:`CHUNK_SENTENCES`, the chunker's (``ingest``): raw document text, where a
  line break also ends a unit, closing quotes of several scripts, and every
  abbreviation of :data:`ABBREVIATIONS` and single initials.
- :data:`SUMMARY_SENTENCES`, the extractive summariser's (``raptor``):
  whitespace-normalised prose, whose sentences may start with Markdown emphasis.
- :data:`RELATION_SENTENCES`, the relation extractor's (``graphrag``): chunk
  paragraphs, where a sentence may start with a lower-case identifier
  (``sqlite3_open() opens ...``) and a closing quote is left out of the span.

The summariser and the extractor use a part of :data:`ABBREVIATIONS` and each their
own extension of :data:`STOPWORDS`: each part is what that stage was built and
measured with, and widening one would move sentence boundaries, summaries and
extracted relations (the golden snapshot would say so). The BM25 analyser drops only
:data:`BM25_STOPWORDS`, the short list every index's postings were built with.

Pure functions over strings and offsets; no language data files.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import lru_cache

Span = tuple[int, int]

# -- word lists ---------------------------------------------------------------------------

# Abbreviations a full stop may follow without ending a sentence, lower-case and without
# their final dot.
ABBREVIATIONS = frozenset(
    "e.g i.e etc vs cf al fig figs no nos dr mr mrs ms st jr sr inc ltd approx eq resp sec ch vol pp".split()
)
SUMMARY_ABBREVIATIONS = frozenset("e.g i.e etc vs cf mr mrs dr no fig sec approx".split())
RELATION_ABBREVIATIONS = frozenset("e.g i.e etc vs cf approx fig no sec".split())

# English function words: they say nothing about what a passage is about.
STOPWORDS = frozenset(
    """
    a about above after again against all also although always am an and any are as at
    be because been before being below between both but by can cannot could did do does
    doing done down during each either else etc even ever every few for from further get
    gets given had has have having he her here hers him his how however if in instead
    into is it its itself just least less let like made make makes many may me might
    more most much must my need needs never no nor not now of off often on once one only
    onto or other others otherwise our out over own per rather same see several shall
    she should since so some such than that the their theirs them then there these they
    this those though through thus to too under until up upon us use used uses using
    usually very via was way ways we were what when whenever where whether which while
    who whom whose why will with within without would yet you your
    """.split()
)
# The key terms of a summary also leave out the words every manual's prose is full of.
SUMMARY_STOPWORDS = STOPWORDS | frozenset(
    """
    able across chapter described document example examples false first following new
    null second section set sets true two value values
    """.split()
)
# Entity names and their linking also leave out more function words, and the letters of
# "e.g." and "i.e." as a word tokeniser cuts them.
ENTITY_STOPWORDS = STOPWORDS | frozenset(
    """
    almost among another anyone anything around became become becomes e eg enough
    especially g getting gives go goes going got herself himself i ie likely myself
    neither ours ourselves perhaps quite really seen show shown something sometimes
    still themselves therefore together toward towards unless vs well whatever whereas
    wherever yours yourself yourselves
    """.split()
)
# bm25s's English list: a part of STOPWORDS.
BM25_STOPWORDS = frozenset(
    """
    a an and are as at be but by for if in into is it no not of on or such that the
    their then there these they this to was will with
    """.split()
)

# -- the analyser -------------------------------------------------------------------------

_TOKEN_RE = re.compile(r"[A-Za-z0-9_]+")
_PART_RE = re.compile(r"[A-Za-z]+|[0-9]+")


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    try:
        import Stemmer  # PyStemmer: Snowball in C, ships its data, no download
    except ImportError:  # pragma: no cover - dependency declared in pyproject
        return None
    return Stemmer.Stemmer("english")


def analyse(text: str) -> list[str]:
    """Lower-cased, stop-word-free, stemmed tokens; identifiers also split into parts.

    Technical manuals are full of identifiers (``journal_mode``, ``sqlite3_open_v2``),
    so each identifier is kept whole *and* its parts are added: "journal mode" in a
    question then matches ``journal_mode`` in the manual, and the exact identifier
    still scores highest (this is the BM25 analyser).
    """
    tokens: list[str] = []
    for raw in _TOKEN_RE.findall(text.lower()):
        parts = _PART_RE.findall(raw)
        if len(parts) > 1:
            tokens.append(raw)
            tokens.extend(p for p in parts if len(p) > 1 and p not in BM25_STOPWORDS)
        elif len(raw) > 1 and raw not in BM25_STOPWORDS:
            tokens.append(raw)
    stemmer = _stemmer()
    return stemmer.stemWords(tokens) if stemmer is not None else tokens


def found_share(text: str, vocabulary: Collection[str]) -> float:
    """The share of ``text``'s analysed terms (:func:`analyse`) that ``vocabulary`` (a
    set of analysed terms) holds: how grounded a model's title or summary is in the
    sources it was given. 1.0 for a text without terms (nothing ungrounded in it)."""
    terms = analyse(text)
    if not terms:
        return 1.0
    return sum(t in vocabulary for t in terms) / len(terms)


# -- the sentence splitter ----------------------------------------------------------------


def trim(text: str, start: int, end: int) -> Span | None:
    """Shrink a span to exclude leading/trailing whitespace; None if nothing is left."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


@dataclass(frozen=True)
class SentenceRules:
    """How one kind of text breaks into sentences.

    ``boundary`` matches the gap between two sentences; the first sentence ends where
    its group 1 ends (at the match's start when group 1 did not take part).
    ``is_abbreviation(text, piece_start, match)`` says whether the full stop before the
    gap belongs to an abbreviation (then it is no gap). With ``trim`` the spans exclude
    surrounding whitespace and empty ones are dropped; without, they run from gap to gap.
    """

    boundary: re.Pattern[str]
    is_abbreviation: Callable[[str, int, re.Match[str]], bool]
    trim: bool = True


def sentence_spans(text: str, start: int = 0, end: int | None = None, rules: SentenceRules | None = None) -> list[Span]:
    """The sentences of ``text[start:end]`` as ``(start, end)`` offsets into ``text``,
    cut by ``rules`` (default :data:`CHUNK_SENTENCES`)."""
    rules = CHUNK_SENTENCES if rules is None else rules
    end = len(text) if end is None else end
    spans: list[Span] = []
    piece_start = start
    for match in rules.boundary.finditer(text, start, end):
        if rules.is_abbreviation(text, piece_start, match):
            continue
        stop = match.end(1) if match.group(1) is not None else match.start()
        if rules.trim:
            span = trim(text, piece_start, stop)
            if span:
                spans.append(span)
        else:
            spans.append((piece_start, stop))
        piece_start = match.end()
    if rules.trim:
        span = trim(text, piece_start, end)
        if span:
            spans.append(span)
    elif piece_start < end:
        spans.append((piece_start, end))
    return spans


# Chunks: . ! or ? (plus closing quotes/brackets) followed by whitespace and then
# something that can start a sentence, or a line break. Linear: no nested quantifiers.
_CHUNK_END = re.compile(r"([.!?][\"')\]»”’]*)\s+(?=[\"'(\[«“‘]?[A-Z0-9À-Ý])|\n+")


def _chunk_abbreviation(text: str, floor: int, match: re.Match[str]) -> bool:
    if match.group(0)[0] != ".":
        return False
    dot = match.start()
    word_start = dot
    while word_start > floor and not text[word_start - 1].isspace():
        word_start -= 1
    word = text[word_start:dot].lower().lstrip("([\"'")
    return word in ABBREVIATIONS or (len(word) == 1 and word.isalpha())


CHUNK_SENTENCES = SentenceRules(_CHUNK_END, _chunk_abbreviation)

# Summaries: terminal punctuation (maybe closed by a quote/bracket), whitespace, and the
# start of a new sentence.
_SUMMARY_END = re.compile(r"(?<=[.!?])([\"')\]]?)\s+(?=[A-Z0-9\"'(`\[*_])")
_INITIAL = re.compile(r"[a-z]\.")


def _summary_abbreviation(text: str, piece_start: int, match: re.Match[str]) -> bool:
    last_word = text[piece_start : match.end(1)].rsplit(" ", 1)[-1].lower()
    return (last_word.endswith(".") and last_word[:-1] in SUMMARY_ABBREVIATIONS) or bool(
        _INITIAL.fullmatch(last_word)
    )


SUMMARY_SENTENCES = SentenceRules(_SUMMARY_END, _summary_abbreviation)

# Relations: a sentence may also start with a lowercase identifier ("sqlite3_open()
# opens ..."); the empty group ends a sentence before its closing quote.
_RELATION_END = re.compile(r"(?<=[.!?])()[\"')\]]?\s+(?=[A-Z`\"'(\[]|[a-z]\w*[_(])")
_RELATION_ABBREVIATION = re.compile(
    r"(?:\b(?:" + "|".join(re.escape(a) for a in sorted(RELATION_ABBREVIATIONS)) + r")\.)$", re.IGNORECASE
)


def _relation_abbreviation(text: str, piece_start: int, match: re.Match[str]) -> bool:
    return _RELATION_ABBREVIATION.search(text, max(piece_start, match.start() - 8), match.start()) is not None


RELATION_SENTENCES = SentenceRules(_RELATION_END, _relation_abbreviation, trim=False)


# -- sentences that read on their own ---------------------------------------------------

_LEANING_START = re.compile(
    # "This chapter covers ..." says what the part of the manual it opens is about ("This
    # section has moved" does not)
    r"^(?:this(?!\s+(?:chapter|section|page|document|manual|guide|book|tutorial|appendix|part|article)\s+"
    r"(?:will\s+|also\s+)?(?:covers?|describes?|explains?|introduces?|presents?|shows?|discusses?|documents?|"
    r"provides?|contains?|gives?|lists?|focuses|is about)\b)|"
    r"these|that|those|it|they|such|see|here|there|then|also|however|but|so|thus|hence|"
    r"otherwise|instead|likewise|similarly|again|in particular|for example|for instance|in this case|as such|"
    r"as a (?:consequence|result)|"
    # a comparison or a case of what came before, or the default of a setting it does not
    # name ("In that case ...", "The default value is 'no'."): the subject is elsewhere
    r"in (?:that|either|each|both|such) cases?|in contrast|by contrast|the (?:latter|former)|in other words|"
    r"next(?=,)|if (?:this|that|it|so|not)|the default(?: value| setting)? is)\b",
    re.IGNORECASE,
)
_LEANING_WORD = re.compile(r"\b(?:below|above|following|previous|preceding|aforementioned)\b", re.IGNORECASE)


def leans_on_context(sentence: str) -> bool:
    """Whether a sentence points at text around it ("This ...", "See ...", "the table
    below", a closing colon) and so reads badly on its own."""
    return bool(_LEANING_START.match(sentence) or _LEANING_WORD.search(sentence) or sentence.rstrip().endswith(":"))


_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_CODE_MARKS = re.compile(r"[{};<>|=\\$]|\[[^\]]*\]|--?[A-Za-z]")
_PLAIN_WORD = re.compile(r"^[A-Za-z][a-z'’]*[,.;:!?]?$")


# How a definition list's entry opens without its headword ("Sets the maximum size ...").
_SUBJECTLESS = frozenset(
    "specifies sets defines controls enables disables determines indicates allows causes assigns returns shows"
    " prints displays lists creates adds removes limits selects turns tells gives overrides forces configures"
    " instructs writes reads makes uses takes accepts prevents permits suppresses ignores outputs"
    " generates stores changes limit specify set define control enable disable show print list"
    " use display create add remove contains provides sends receives loads runs starts stops checks converts"
    " maintains requires".split()
)


def opens_without_subject(sentence: str) -> bool:
    """Whether ``sentence`` is a definition list's entry without its headword ("Controls
    the size of journal files.", "Configures plugins in named.conf.")."""
    words = _BULLET.sub("", sentence).split()
    return bool(words) and words[0].lower() in _SUBJECTLESS


# an aside: the manual's "NOTE: This command is temporarily disabled if ...", or a
# programmer's note kept in a docstring ("NOTE(harlowja): this merge does not deep copy
# ...", "TODO(x): ..."): a side remark, not what a section or the code is for
_DEVELOPER_NOTE = re.compile(r"^(?:NOTE|TODO|FIXME|XXX|HACK)(?:\([^)]*\))?:")


def reads_alone(sentence: str, *, opens_chunk: bool = False) -> bool:
    """Whether a sentence (or list item) reads as a whole statement on its own, in a
    digest or a report: not the tail of a sentence cut at a chunk's start
    (``opens_chunk``, starting in lower case), not a line of code, options or a table
    (a raw "--abbrev=<n>" or "name | value"), not pointing at text around it
    (:func:`leans_on_context`), not an aside ("NOTE: ...", a programmer's
    "NOTE(harlowja): ..."), of five words or more, and mostly plain words."""
    body = _BULLET.sub("", sentence).strip()
    words = body.split()
    if len(words) < 5 or body.rstrip().endswith(":") or " | " in body or leans_on_context(body):
        return False
    if _DEVELOPER_NOTE.match(body):
        return False
    first = words[0]
    if opens_chunk and first[:1].islower():
        return False
    if not first[:1].isalpha():  # "--abbrev", "<name>", "`code`", "(aside", "14; ..."
        return False
    if first.lower() in _SUBJECTLESS:
        return False  # "Specifies the kind of zone.": the headword it defines is elsewhere
    marks = len(_CODE_MARKS.findall(body))
    plain = sum(bool(_PLAIN_WORD.match(w)) for w in words)
    return marks <= max(1, len(words) // 8) and plain >= 0.6 * len(words)
