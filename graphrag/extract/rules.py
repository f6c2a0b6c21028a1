"""The default extractor: lexical patterns and term statistics, made for technical manuals.

No model and no language data. Entities come from inline code spans, identifier
shapes (``PRAGMA x``, ``f()``, ``--flag``, ``SQLITE_BUSY``, ``snake_case``,
``CamelCase``, ``file.ext``), uppercase keyword runs, acronyms, the section heading and
multi-word terms learned from the collection (:class:`TermVocabulary`). Relations are
read within one sentence, list item or code line: typed when the words between two
mentions say so (:func:`relation_between`), weighted co-occurrence otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from arborgraph.core.text import ENTITY_STOPWORDS
from graphrag.extract.relations import is_see_also_unit, sentence_relations, topic_subject
from graphrag.extract.terms import TermCounts, TermVocabulary, heading_key, heading_term
from graphrag.lexicon import is_english_word
from graphrag.model import CO_OCCURS, ChunkExtraction, ExtractedEntity, ExtractedRelation
from graphrag.text import code_regions, entity_key, split_units
from graphrag.vocab import (
    DATA_TYPES,
    DEFINITION_VERBS,
    GENERIC_WORDS,
    HEAD_NOUN_TYPES,
    SQL_KEYWORDS,
    STATEMENT_WORDS,
    STRONG_TYPES,
    UPPER_NOISE,
    VERBISH,
)
from ingest.models import Chunk

FILE_EXTENSIONS = (
    "c h cc cpp hpp py pyi pyc pyw js ts json md rst txt html htm xml yaml yml toml ini cfg conf "
    "db sqlite sqlite3 db3 wal shm journal log csv tsv sql sh bash bat ps1 exe dll so dylib a o "
    "lib jar zip gz tgz bz2 xz tar pdf png jpg gif svg tcl mk in lock pem key crt"
).split()


class RuleExtractorConfig(BaseModel):
    """Settings of :class:`RuleExtractor`."""

    model_config = ConfigDict(extra="forbid")

    min_term_df: int = Field(3, description="a term must occur in this many chunks")
    max_term_df_share: float = Field(0.2, description="...and in at most this share of chunks")
    max_term_words: int = 4
    min_term_cohesion: float = Field(0.1, description="chunk freq. of term / of its rarest word")
    max_generic_heading_docs: int = Field(
        3, description="a heading used in more documents than this is generic (Overview)"
    )
    max_single_heading_df_share: float = Field(
        0.03, description="a one-word heading term must occur in at most this share of chunks"
    )
    window: int = Field(
        1, description="a mention co-occurs with the next `window` mentions of its unit (no typed relation between them)"
    )
    heading_weight: float = Field(0.5, description="weight of section-topic -> mention links")
    max_heading_links: int = Field(0, description="a section's topic co-occurs with this many of its first mentions")
    max_description_chars: int = 400


# One cheap pass splits the text into identifier-like tokens; plain words are skipped
# at once and the rest are classified by shape (see _scan).
_SCAN_RE = re.compile(
    r"``?[^`\n]{1,80}?``?"
    r"|-{1,2}[A-Za-z][\w-]*"
    r"|(?<!\w)[A-Za-z_]\w*(?:[./-][A-Za-z_0-9]\w*)*(?:\([^()\n]{0,40}\))?"
)
_PRAGMA_AT_RE = re.compile(r"[Pp][Rr][Aa][Gg][Mm][Aa]\s+(?:\w+\.)?[A-Za-z_]\w*")
_UPPER_RUN_RE = re.compile(r"[A-Z][A-Z0-9]+(?:[ ][A-Z][A-Z0-9]+){0,3}\b")
_CALL_NOISE = frozenset(
    "for if while switch return sizeof int char long short void unsigned signed double float "
    "case catch elif else print assert not and or in is".split()
)
_UPPER_CHAR_RE = re.compile(r"[A-Z]")
_MIXED_RE = re.compile(r"^([A-Z0-9]{2,})([a-z]+)$")
_LOWER_CHAR_RE = re.compile(r"[a-z]")
_SNAKE_RE = re.compile(r"_?[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
_CAMEL_TOKEN_RE = re.compile(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z]+(?:[A-Z][a-z0-9]*)+|[A-Z]{2,}[a-z][a-z0-9]*")
_PRAGMA_RE = re.compile(r"^(?i:pragma)\s+(?:\w+\.)?([A-Za-z_]\w*)")
_CALL_RE = re.compile(r"^([A-Za-z_][\w.:]*)\s*\(.*\)$")
_OPTION_RE = re.compile(r"^(--?[A-Za-z][\w-]*)(?:[= ].*)?$")
_FILE_RE = re.compile(r"^(?:[\w.-]*/)*[\w-]+\.(?:" + "|".join(FILE_EXTENSIONS) + r")$")
_EXTENSIONS = frozenset(FILE_EXTENSIONS)
_UPPER_US_RE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
_IDENT_RE = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*$")
_CAMEL_RE = re.compile(r"^(?:[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z]+(?:[A-Z][a-z0-9]*)+)$")
_ERROR_CONTEXT_RE = re.compile(
    r"\b(?:errors?|result\s+codes?|return\s+codes?|returns?|returned|exceptions?|raises?|raised|fails?)\b",
    re.IGNORECASE,
)
_OPTION_CONTEXT_RE = re.compile(r"\b(?:compile|compile-time|options?|defines?|#define)\b", re.IGNORECASE)
_INLINE_CODE_RE = re.compile(r"`[^`\n]*`")
_HEAD_NOUN_RE = re.compile(r"^[ \t]+(?:\(\)\s+)?([A-Za-z]+)\b")
_LEAD_RE = re.compile(r"^(?:[-*+]|\d+[.)])?\s*(?:\*\*)?(?:the|a|an)?\s*", re.IGNORECASE)
_DEF_AFTER_RE = re.compile(
    r"^(?:\*\*)?\s*(?:\(\))?\s*(?:[:\u2014\u2013]|\s-\s|\s+(?:" + "|".join(DEFINITION_VERBS) + r")\b)",
    re.IGNORECASE,
)
_BOLD_ITEM_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\*\*([^*\n]{2,60})\*\*")


@dataclass(slots=True)
class _Cand:
    start: int
    end: int
    name: str
    type: str
    prio: int  # higher wins an overlap
    aliases: list[str] = field(default_factory=list)


def _in_spans(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(s <= pos < e for s, e in spans)


def classify_identifier(text: str) -> tuple[str, str, list[str]] | None:
    """(name, type, aliases) for a code span or identifier-shaped token; None if noise."""
    t = text.strip().rstrip(";,.").strip()
    if not t or len(t) > 60:
        return None
    if m := _PRAGMA_RE.match(t):
        name = m.group(1)
        return name, "parameter", [f"PRAGMA {name}"]
    if m := _CALL_RE.match(t):
        return m.group(1) + "()", "function", []
    if t.startswith("-D") and _UPPER_US_RE.match(t[2:].split("=")[0]):
        return t[2:].split("=")[0], "option", []
    if m := _OPTION_RE.match(t):
        if len(m.group(1)) > 2 or t.startswith("--"):
            return m.group(1), "option", []
        return m.group(1), "option", []
    if _FILE_RE.match(t):
        return t, "file", []
    if t.startswith(".") and _IDENT_RE.match(t[1:]) and " " not in t:
        return t, "command", []
    first = t.split()[0]
    if first.upper() == first and first in STATEMENT_WORDS:
        words = t.split()
        run = [w for w in words[:3] if w.isupper() and w.isalpha()]
        return " ".join(run) if run else first, "statement", []
    if t in DATA_TYPES or t.upper() in DATA_TYPES and t.isupper():
        return t, "data_type", []
    if _UPPER_US_RE.match(t):
        return t, "constant", []
    if t.endswith(("Error", "Exception", "Warning")) and _IDENT_RE.match(t):
        return t, "error_code", []
    if _CAMEL_RE.match(t):
        return t, "class", []
    if _IDENT_RE.match(t):
        if t.isupper():
            return t, _upper_word_type(t), []
        if "." in t:
            return t, "module" if t.islower() else "identifier", []
        if "_" in t or any(c.isdigit() for c in t) or len(t) > 2:
            return t, "identifier", []
        return None
    words = t.split()
    if 2 <= len(words) <= 3 and _IDENT_RE.match(words[0]) and words[0].islower():
        return t, "command", []
    return None


class RuleExtractor:
    """Pattern and statistics based extractor; ``fit`` learns the term vocabulary.

    Usable without ``fit`` (no statistical terms then). Output is a pure function of
    the chunk, the config and the fitted vocabulary.
    """

    name = "rules-v2"

    def __init__(self, config: RuleExtractorConfig | None = None) -> None:
        self.config = config or RuleExtractorConfig()
        self.vocabulary_ = TermVocabulary(
            max_words=self.config.max_term_words,
            min_df=self.config.min_term_df,
            max_df_share=self.config.max_term_df_share,
            min_cohesion=self.config.min_term_cohesion,
            max_single_word_share=self.config.max_single_heading_df_share,
        )
        self.generic_headings_: frozenset[str] = frozenset()

    # -- learning ---------------------------------------------------------------

    def fit(
        self, chunks: Sequence[Chunk], counts: TermCounts | Iterable[TermCounts] | None = None
    ) -> RuleExtractor:
        """Learn multi-word terms and section-heading terms from the collection.

        ``counts``: the :meth:`count_terms` of the chunks' texts when counted
        elsewhere, or of disjoint parts of them (say, on a pool's workers: an iterator
        is read after the heading terms are learned, so the two overlap); the fit is
        the same.
        """
        heading_docs: dict[str, set[str]] = {}
        display: dict[str, str] = {}
        for ch in chunks:
            for h in ch.heading_path[1:] or ch.heading_path:
                # every heading counts, whatever its case ("OPTIONS" in man pages): one
                # that many pages share is the pages' structure, not a topic
                k = heading_key(h)
                if k:
                    heading_docs.setdefault(k, set()).add(ch.doc_id)
                term = heading_term(h)
                if term and k:
                    display.setdefault(k, term)
        generic = {k for k, docs in heading_docs.items() if len(docs) > self.config.max_generic_heading_docs}
        self.generic_headings_ = frozenset(generic)
        extra = [display[k] for k in sorted(display) if k not in generic]
        if counts is None:
            counts = self.count_terms(ch.text for ch in chunks)
        elif not isinstance(counts, TermCounts):
            counts = TermCounts.merged(counts)
        self.vocabulary_.fit_counts(counts, extra_terms=extra)
        return self

    def count_terms(self, texts: Iterable[str]) -> TermCounts:
        """The term statistics :meth:`fit` learns from chunk ``texts`` (code masked);
        those of disjoint sets of chunks add up (:meth:`TermCounts.merged`)."""
        return self.vocabulary_.count(_mask_code(text) for text in texts)

    def fitted_state(self) -> dict[str, dict[str, int]]:
        """What :meth:`fit` learned, as plain data (kind -> key -> count) for storage."""
        return {
            "terms": dict(self.vocabulary_.terms_),
            "generic_headings": {k: 0 for k in sorted(self.generic_headings_)},
        }

    def restore_state(self, state: dict[str, dict[str, int]]) -> RuleExtractor:
        """Take the state of an earlier :meth:`fit` (see :meth:`fitted_state`): an update
        extracts changed chunks exactly as the unchanged ones were extracted."""
        self.vocabulary_.restore(dict(state.get("terms", {})))
        self.generic_headings_ = frozenset(state.get("generic_headings", {}))
        return self

    # -- extraction -------------------------------------------------------------

    def extract(self, chunk: Chunk) -> ChunkExtraction:
        """Entities and relations of one chunk."""
        text = chunk.text
        code_blocks = code_regions(text)
        cands = self._pattern_candidates(text, code_blocks)
        masked = _mask_code(text, code_blocks)
        for s, e, key in self.vocabulary_.find(masked):
            cands.append(_Cand(s, e, text[s:e], "term", 1))
        for m in _BOLD_ITEM_RE.finditer(text):
            cands.append(_Cand(m.start(1), m.end(1), m.group(1).strip(), "term", 2))
        mentions = _resolve_overlaps(cands)
        if self.generic_headings_:
            # "see OPTIONS below": a section name of many pages, not a thing
            generic = self.generic_headings_
            mentions = [c for c in mentions if c.type in STRONG_TYPES or entity_key(c.name) not in generic]
        _acronym_aliases(text, mentions)

        entities: dict[str, ExtractedEntity] = {}
        for c in mentions:
            ent = entities.get(c.name)
            if ent is None:
                ent = entities[c.name] = ExtractedEntity(name=c.name, type=c.type)
            elif c.type in STRONG_TYPES and ent.type not in STRONG_TYPES:
                ent.type = c.type
            ent.spans.append((c.start, c.end))
            for a in c.aliases:
                if a not in ent.aliases:
                    ent.aliases.append(a)

        topic = self._topic(chunk, entities)
        relations = self._relations(text, mentions, entities, topic, code_blocks)
        return ChunkExtraction(chunk_id=chunk.chunk_id, entities=list(entities.values()), relations=relations)

    def _pattern_candidates(self, text: str, code_blocks: list[tuple[int, int]]) -> list[_Cand]:
        out: list[_Cand] = []
        for kind, start, end in _scan(text):
            raw = text[start:end]
            in_code = _in_spans(start, code_blocks)
            if kind == "code":
                if in_code:
                    continue  # a backtick inside a code block is code, not a span
                inner_s = start + len(raw) - len(raw.lstrip("`"))
                inner_e = end - (len(raw) - len(raw.rstrip("`")))
                got = classify_identifier(text[inner_s:inner_e])
                if got:
                    name, etype, aliases = got
                    etype = _head_noun_type(text, end, etype)
                    out.append(_Cand(inner_s, inner_e, name, etype, 5, aliases))
                continue
            out.extend(self._classify_pattern(kind, raw, text, start, end, in_code))
        return out

    def _classify_pattern(
        self, kind: str | None, raw: str, text: str, start: int, end: int, in_code: bool
    ) -> list[_Cand]:
        strong_only = in_code  # in code blocks only unmistakable shapes count
        if kind == "pragma":
            name = _PRAGMA_RE.match(raw).group(1)  # type: ignore[union-attr]
            if _prose_word(name):
                return []  # "PRAGMA statements": the word, not a pragma's name
            # the mention is the name itself: "PRAGMA schema.journal_mode" -> journal_mode
            return [_Cand(end - len(name), end, name, "parameter", 4, [f"PRAGMA {name}"])]
        if kind == "dopt":
            return [_Cand(start + 2, end, raw[2:], "option", 4)]
        if kind == "call":
            got = classify_identifier(raw)
            if not got or got[1] != "function":
                return []
            name = got[0]
            if raw.endswith(("(s)", "(es)")):
                return []  # "file(s)": a plural, not a call
            base = name[:-2].rsplit(".", 1)[-1]
            if base.lower() in _CALL_NOISE or base.lower() in UPPER_NOISE or (len(base) <= 2 and "_" not in base):
                return []
            if base.upper() in DATA_TYPES and base.isupper():
                return [_Cand(start, start + len(base), base, "data_type", 3)]
            if base.isupper() and (base in SQL_KEYWORDS or base in STATEMENT_WORDS):
                return _upper_run(base, start, text)  # VALUES(1,2): SQL, not a call
            paren = raw.index("(")
            return [_Cand(start, start + paren, name, "function", 4)]
        if kind == "option":
            if strong_only and not raw.startswith("--"):
                return []
            if not raw.startswith("--") and len(raw) < 3:
                return []
            return [_Cand(start, end, raw, "option", 3)]
        if kind == "file":
            return [_Cand(start, end, raw, "file", 3)]
        if kind == "upper_us":
            ctx = text[max(0, start - 60) : end + 40]
            etype = "constant"
            if _ERROR_CONTEXT_RE.search(ctx):
                etype = "error_code"
            elif _OPTION_CONTEXT_RE.search(ctx):
                etype = "option"
            return [_Cand(start, end, raw, _head_noun_type(text, end, etype), 3)]
        if strong_only:
            return []
        if kind == "dotted":
            parts = raw.split(".")
            if len(parts[0]) < 2 or parts[0].lower() in ("e", "i", "etc", "vs"):
                return []
            if raw[0].isupper() and raw.split(".")[1][:1].isupper():
                return []  # "End.The": a missing space between two sentences
            return [_Cand(start, end, raw, _head_noun_type(text, end, "identifier"), 2)]
        if kind == "snake":
            return [_Cand(start, end, raw, _head_noun_type(text, end, "identifier"), 2)]
        if kind == "camel":
            etype = "error_code" if raw.endswith(("Error", "Exception", "Warning")) else "class"
            if raw[:2].isupper():
                m_suffix = _MIXED_RE.match(raw)
                if m_suffix and m_suffix.group(2) in ("s", "es"):
                    return [_Cand(start, end, m_suffix.group(1), "acronym", 2, [raw])]  # VFSes
                if m_suffix and m_suffix.group(2) in ("d", "ed", "ing", "ly"):
                    return []  # ATTACHed: a keyword used as a verb
                etype = "component"  # SQLite: product and format names
            elif raw[0].islower():
                etype = "identifier"
            return [_Cand(start, end, raw, _head_noun_type(text, end, etype), 2)]
        if kind == "upper":
            return _upper_run(raw, start, text)
        return []

    def _topic(self, chunk: Chunk, entities: dict[str, ExtractedEntity]) -> str | None:
        """The entity the chunk's section is about: from the deepest heading that names
        one (an identifier, the heading as a term, a learned term or an acronym in it)."""
        for h in reversed(chunk.heading_path):
            got = self._heading_entity(h)
            if got:
                name, etype, aliases = got
                ent = entities.get(name)
                if ent is None:
                    ent = entities[name] = ExtractedEntity(name=name, type=etype, aliases=list(aliases))
                ent.spans.insert(0, (0, 0))
                return name
        return None

    def _heading_entity(self, h: str) -> tuple[str, str, list[str]] | None:
        if heading_key(h) in self.generic_headings_:
            return None  # "2. Options", "DESCRIPTION": the parent heading says the topic
        upper: tuple[str, str, list[str]] | None = None
        for kind, hs, he in _scan(h):
            if kind == "code":
                got = classify_identifier(h[hs:he].strip("`"))
                if got:
                    return got
            elif kind in ("pragma", "call", "upper_us", "snake", "dotted", "dopt", "file", "upper"):
                c = self._classify_pattern(kind, h[hs:he], h, hs, he, False)
                if c and kind != "upper":
                    return c[0].name, c[0].type, c[0].aliases
                if c and upper is None and c[0].name not in UPPER_NOISE:
                    upper = (c[0].name, c[0].type, c[0].aliases)
        term = heading_term(h)
        if term:
            return term, "term", []
        found = sorted(self.vocabulary_.find(h), key=lambda t: (-(t[1] - t[0]), t[0]))
        for s, e, key in found:
            if key not in self.generic_headings_ and " " in key:
                return h[s:e], "term", []
        return upper

    def _relations(
        self,
        text: str,
        mentions: list[_Cand],
        entities: dict[str, ExtractedEntity],
        topic: str | None,
        code_blocks: list[tuple[int, int]],
    ) -> list[ExtractedRelation]:
        cfg = self.config
        rels: list[ExtractedRelation] = []
        units = split_units(text, code_blocks)
        mi = 0
        linked_to_topic: list[str] = []
        for us, ue in units:
            while mi < len(mentions) and mentions[mi].start < us:
                mi += 1
            unit_m: list[_Cand] = []
            j = mi
            while j < len(mentions) and mentions[j].end <= ue:
                unit_m.append(mentions[j])
                j += 1
            if not unit_m:
                continue
            unit = text[us:ue]
            in_code = _in_spans(us, code_blocks)
            self._describe(unit, us, unit_m, entities)
            see_also = not in_code and is_see_also_unit(unit)
            typed: set[frozenset[str]] = set()
            if not in_code:
                names = [m.name for m in unit_m]
                types = [entities[m.name].type for m in unit_m]
                gaps = [text[a.end : b.start] for a, b in zip(unit_m, unit_m[1:])]
                opening = topic_subject(unit, entities[topic].type) if topic and unit_m[0].name != topic else 0
                if opening and unit_m[0].start >= us + opening:
                    # "This routine sets a busy handler": the section's topic is the subject
                    names.insert(0, topic)
                    types.insert(0, entities[topic].type)
                    gaps.insert(0, text[us + opening : unit_m[0].start])
                # a name met twice in the sentence may state one relation twice
                tail = text[unit_m[-1].end : ue]
                for src, rtype, dst in dict.fromkeys(sentence_relations(names, gaps, types, tail)):
                    typed.add(frozenset((src, dst)))
                    rels.append(ExtractedRelation(src, dst, rtype, 1.0, unit, (us, ue)))
            for a_i, a in enumerate(unit_m):
                for b in unit_m[a_i + 1 : a_i + 1 + cfg.window]:
                    if a.name == b.name or frozenset((a.name, b.name)) in typed:
                        continue  # a typed relation says more than their co-occurrence
                    dist = b.start - a.end
                    w = 1.0 if dist < 40 else 0.7 if dist < 120 else 0.5
                    src, dst = sorted((a.name, b.name))
                    rels.append(ExtractedRelation(src, dst, CO_OCCURS, w, unit, (us, ue)))
            if see_also and topic:
                for b in unit_m:
                    if b.name != topic:
                        rels.append(ExtractedRelation(topic, b.name, "see_also", 1.0, unit, (us, ue)))
            if topic and not in_code:
                for b in unit_m:
                    if b.name != topic and b.name not in linked_to_topic and len(linked_to_topic) < cfg.max_heading_links:
                        linked_to_topic.append(b.name)
                        src, dst = sorted((topic, b.name))
                        # the unit names b, not the heading's topic: evidence, not a description
                        rels.append(ExtractedRelation(src, dst, CO_OCCURS, cfg.heading_weight, "", (us, ue)))
        if topic and topic in entities and not entities[topic].description and units:
            us, ue = units[0]
            first = text[us:ue]
            if len(first.split()) >= 6 and not _in_spans(us, code_blocks):
                entities[topic].description = first[: cfg.max_description_chars]
        return rels

    def _describe(self, unit: str, us: int, unit_m: list[_Cand], entities: dict[str, ExtractedEntity]) -> None:
        """A unit that starts with an entity and defines it becomes its description."""
        first = unit_m[0]
        lead = _LEAD_RE.match(unit)
        offset = first.start - us
        if offset > (lead.end() if lead else 0) + 2:
            return
        after = unit[first.end - us :]
        if _DEF_AFTER_RE.match(after):
            ent = entities[first.name]
            if not ent.description:
                ent.description = unit[: self.config.max_description_chars]


def _prose_word(word: str) -> bool:
    """A plain English word that cannot be an identifier's name here."""
    w = word.lower()
    return "_" not in w and (
        w in ENTITY_STOPWORDS or w in GENERIC_WORDS or w in VERBISH or w in HEAD_NOUN_TYPES or w.rstrip("s") in HEAD_NOUN_TYPES
    )


def _scan(text: str) -> Iterator[tuple[str, int, int]]:
    """(kind, start, end) of every identifier-shaped token; plain words are skipped."""
    skip_to = 0
    for m in _SCAN_RE.finditer(text):
        start, end = m.span()
        if start < skip_to:
            continue
        tok = m.group(0)
        c0 = tok[0]
        if c0 == "`":
            yield "code", start, end
            continue
        if c0 == "-":
            prev = text[start - 1] if start else " "
            if prev.isalnum() or prev in "_-.|":
                continue
            if tok.startswith("--") and not tok[2:3].islower():
                continue  # "|--SCAN t1" is query-plan output, not an option
            if tok.startswith("-D") and _UPPER_US_RE.match(tok[2:]):
                yield "dopt", start, end
            else:
                yield "option", start, end
            continue
        if tok == "PRAGMA":
            pm = _PRAGMA_AT_RE.match(text, start)
            if pm:
                skip_to = pm.end()
                yield "pragma", start, pm.end()
            continue
        plain = tok.replace("-", "")
        if plain.isalpha() and (plain.islower() or plain[1:].islower()):
            continue
        if "(" in tok:
            yield "call", start, end
        elif "." in tok and tok.rsplit(".", 1)[1] in _EXTENSIONS and _FILE_RE.match(tok):
            yield "file", start, end
        elif "/" in tok or "-" in tok:
            continue
        elif "_" in tok and _UPPER_US_RE.match(tok):
            yield "upper_us", start, end
        elif "." in tok:
            yield "dotted", start, end
        elif "_" in tok:
            if _SNAKE_RE.fullmatch(tok):
                yield "snake", start, end
        elif _CAMEL_TOKEN_RE.fullmatch(tok):
            yield "camel", start, end
        elif tok.isupper():
            um = _UPPER_RUN_RE.match(text, start)
            if um:
                skip_to = um.end()
                yield "upper", start, um.end()
        elif tok.isalnum() and tok.islower() and len(tok) >= 4 and tok[0].isalpha():
            yield "snake", start, end  # sqlite3, fts5, utf8


def _head_noun_type(text: str, end: int, etype: str) -> str:
    """Upgrade a weak type from the noun that follows ("journal_mode pragma")."""
    if etype in STRONG_TYPES:
        return etype
    m = _HEAD_NOUN_RE.match(text, end, min(len(text), end + 20))
    if m:
        t = HEAD_NOUN_TYPES.get(m.group(1).lower())
        if t and (t in STRONG_TYPES or etype in ("identifier", "term")):
            return t
    return etype


def _upper_run(raw: str, start: int, text: str) -> list[_Cand]:
    """Uppercase word runs: statements (CREATE TABLE), data types, acronyms, keywords."""
    words = raw.split(" ")
    # Whole-uppercase stretches are headings or shouting, not entities.
    window = text[max(0, start - 40) : start + len(raw) + 40]
    n_upper = len(_UPPER_CHAR_RE.findall(window))
    n_lower = len(_LOWER_CHAR_RE.findall(window))
    if n_upper + n_lower > 30 and n_upper > 4 * n_lower:
        return []
    out: list[_Cand] = []
    # split the run at data types; a segment is a statement (CREATE TABLE), a keyword
    # phrase (PRIMARY KEY) or a single acronym (WAL) or keyword (AUTOINCREMENT)
    segments: list[list[tuple[str, int]]] = [[]]
    pos = start
    for w in words:
        if w in DATA_TYPES:
            out.append(_Cand(pos, pos + len(w), w, "data_type", 3))
            segments.append([])
        elif w[0].isdigit() or (w in UPPER_NOISE and not segments[-1]):
            segments.append([])  # noise words only count inside a phrase (ORDER BY)
        else:
            segments[-1].append((w, pos))
        pos += len(w) + 1
    for seg in segments:
        while seg and seg[-1][0] in UPPER_NOISE:
            seg.pop()
    for seg in segments:
        if not seg:
            continue
        s0 = seg[0][1]
        e0 = seg[-1][1] + len(seg[-1][0])
        name = " ".join(w for w, _ in seg)
        if seg[0][0] in STATEMENT_WORDS:
            etype = "statement"
        elif len(seg) > 1 or name in SQL_KEYWORDS:
            etype = "keyword"
        else:
            etype = _upper_word_type(name)
        out.append(_Cand(s0, e0, name, _head_noun_type(text, e0, etype), 3 if etype == "statement" else 2))
    return out


_CODE_NAME_RE = re.compile(r"^[A-Z][0-9]{3,}(?:-[0-9]+)?$")


def _upper_word_type(word: str) -> str:
    """An uppercase word's type: an English word written in capitals (MERGE, OPTIONS)
    is a keyword; letters with digits (T332, E021) a code; other short ones acronyms."""
    if _CODE_NAME_RE.match(word):
        return "identifier"
    if len(word) >= 4 and is_english_word(word):
        return "keyword"
    return "acronym" if len(word) <= 6 else "keyword"


def _resolve_overlaps(cands: list[_Cand]) -> list[_Cand]:
    """Keep non-overlapping candidates: higher priority first, then longer, then earlier."""
    cands.sort(key=lambda c: (-c.prio, -(c.end - c.start), c.start))
    taken = bytearray(max((c.end for c in cands), default=0))
    kept: list[_Cand] = []
    for c in cands:
        if c.end <= c.start or any(taken[c.start : c.end]):
            continue
        taken[c.start : c.end] = b"\x01" * (c.end - c.start)
        kept.append(c)
    kept.sort(key=lambda c: c.start)
    return kept


def _mask_code(text: str, regions: list[tuple[int, int]] | None = None) -> str:
    """Text with code regions and inline code replaced by periods (same length)."""
    parts = []
    pos = 0
    for s, e in code_regions(text) if regions is None else regions:
        parts.append(text[pos:s])
        parts.append("." * (e - s))
        pos = e
    parts.append(text[pos:])
    return _INLINE_CODE_RE.sub(lambda m: "." * len(m.group(0)), "".join(parts))


def _initials(phrase_tokens: list[str]) -> str:
    letters = []
    for t in phrase_tokens:
        for part in re.split(r"[-/]", t):
            if part:
                letters.append(part[0].lower())
    return "".join(letters)


_ALPHA_TOKEN_RE = re.compile(r"[A-Za-z][\w-]*")


def _acronym_aliases(text: str, mentions: list[_Cand]) -> None:
    """Give an acronym the phrase next to it whose initials spell it, as an alias."""
    for c in mentions:
        if c.type != "acronym" or not (2 <= len(c.name) <= 7) or not c.name.isalpha():
            continue
        near = text[max(0, c.start - 3) : c.end + 3]
        if not any(ch in near for ch in '()"'):
            continue  # an expansion is introduced by brackets or quotes
        target = c.name.lower()
        window_before = text[max(0, c.start - 80) : c.start]
        window_after = text[c.end : c.end + 80]
        found = _spelled_by(target, _ALPHA_TOKEN_RE.findall(window_before), from_end=True) or _spelled_by(
            target, _ALPHA_TOKEN_RE.findall(window_after.split(")")[0]), from_end=False
        )
        if found and found.lower() != target:
            c.aliases.append(found)


def _spelled_by(acr: str, tokens: list[str], *, from_end: bool) -> str | None:
    n = len(tokens)
    for length in range(1, min(len(acr), 8) + 1):
        spans = [(n - length, n)] if from_end else [(0, length)]
        if from_end:
            # allow a few connecting words ("option (hereafter referred to as")
            spans = [(n - length - k, n - k) for k in range(0, 7) if n - length - k >= 0]
        for s, e in spans:
            toks = tokens[s:e]
            if toks and _initials(toks) == acr and all(t[0].isalpha() for t in toks):
                if toks[0].lower() in ("the", "a", "an", "and", "or", "of"):
                    continue
                return " ".join(toks)
    return None
