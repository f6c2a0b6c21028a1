"""Query-focused digests: the best sentences of a route's candidates, packed to the budget.

Drill-down and overview evidence is spread over many passages; whole chunks fill the
reader's window with a few of them (on held-out manuals the ranked list holds the
evidence at 6,000 words, not at 1,500). A digest keeps the route's best passages
whole (``whole_first``) and then fills the budget with single sentences from the next
candidates, chosen by a learned :class:`SentenceScorer` over :data:`FEATURES`, with
repeats left out. The picked sentences are grouped by passage, under the passage's
heading path and source, in reading order within a passage; groups follow the score of
their best sentence. Each group is a ``kind="digest"`` context whose ``provenance``
names the passage it came from, so the whole passage can be opened.

Everything here is a pure function of the candidates' texts and ranks and the
question: the same question over the same index gives the same digest.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from arborgraph.core.ordering import unique_inverse
from arborgraph.core.results import MANUALS_WORDS, Context, Highlight
from arborgraph.core.text import analyse, sentence_spans

MODEL_FILE = Path(__file__).resolve().parents[1] / "data" / "sentence_model.json"
MODEL_FORMAT = "arborgraph-sentences/1"
DIGEST = "digest"
# a sentence sharing this share of its terms with one already picked adds nothing
REPEAT_SHARE = 0.8
# sentences shorter than this many words are list debris, not statements
MIN_WORDS = 3

FEATURES: tuple[str, ...] = (
    "chunk_inv_rank",  # 1 / the passage's rank among the route's candidates
    "chunk_relevance",  # the ranking stage's probability that the passage holds evidence (0: none)
    "term_cover",  # share of the question's distinct terms the sentence holds
    "idf_cover",  # the same, each term weighted by its idf over the candidates' sentences
    "bm25_rel",  # the sentence's BM25 over the candidates' sentences / the best sentence's
    "heading_cover",  # share of the question's terms in the passage's heading path
    "chunk_cover",  # share of the question's terms in the passage's sentences
    "neighbour_cover",  # best idf cover of the sentences just before and after
    "first_in_chunk",  # 1 for the passage's first sentence
    "log_position",  # log(1 + the sentence's place in its passage)
    "log_words",  # log(1 + its words)
)


@dataclass(frozen=True)
class Sentence:
    """One sentence of a candidate passage: ``passage`` is its index in the candidate
    list, ``start``/``end`` offsets into that passage's text, ``position`` its place."""

    passage: int
    start: int
    end: int
    position: int


# passages whose sentences were split and analysed lately (the same chunks answer many
# questions): a few thousand chunks' sentences, some MB
PASSAGES_KEPT = 4096


@lru_cache(maxsize=PASSAGES_KEPT)
def passage_sentences(text: str) -> tuple[tuple[tuple[int, int], tuple[str, ...]], ...]:
    """A passage's sentences, without the short debris of lists and tables: each one's
    ``(start, end)`` offsets and analysed terms."""
    out = []
    for start, end in sentence_spans(text):
        if len(text[start:end].split()) >= MIN_WORDS:
            out.append(((start, end), tuple(analyse(text[start:end]))))
    return tuple(out)


@lru_cache(maxsize=PASSAGES_KEPT)
def _sentences_by_span(text: str) -> dict[tuple[int, int], tuple[tuple[str, ...], int]]:
    """Each sentence of :func:`passage_sentences` by its span: its terms and its number
    of words (read for every candidate sentence of every question)."""
    return {(start, end): (terms, len(text[start:end].split())) for (start, end), terms in passage_sentences(text)}


@lru_cache(maxsize=PASSAGES_KEPT)
def _heading_terms(heading_path: tuple[str, ...]) -> frozenset[str]:
    return frozenset(analyse(" ".join(heading_path)))


def candidate_sentences(
    passages: Sequence[Context], first: int, last: int, kinds: Collection[str] = ("chunk",)
) -> list[Sentence]:
    """The sentences of the passages ``passages[first:last]`` of ``kinds`` in reading
    order, without the short debris of lists and tables."""
    out: list[Sentence] = []
    for index in range(first, min(last, len(passages))):
        ctx = passages[index]
        if ctx.kind not in kinds:
            continue
        out.extend(
            Sentence(index, start, end, position)
            for position, ((start, end), _) in enumerate(passage_sentences(ctx.text))
        )
    return out


def sentence_features(question: str, passages: Sequence[Context], sentences: Sequence[Sentence]) -> np.ndarray:
    """One row of :data:`FEATURES` per sentence (float32)."""
    matrix = np.zeros((len(sentences), len(FEATURES)), dtype=np.float32)
    if not sentences:
        return matrix
    asked = sorted(set(analyse(question)))
    column = {t: i for i, t in enumerate(asked)}
    n, width = len(sentences), len(asked)
    # occurrences of each question term in each sentence, and the sentences' lengths
    counts = np.zeros((n, width), dtype=np.float64)
    lengths = np.zeros(n, dtype=np.float64)
    n_words = np.zeros(n, dtype=np.float64)
    for row, s in enumerate(sentences):
        text = passages[s.passage].text
        known = _sentences_by_span(text).get((s.start, s.end))
        if known is None:  # a span passage_sentences did not cut (a caller's own)
            words, n_words[row] = tuple(analyse(text[s.start : s.end])), len(text[s.start : s.end].split())
        else:
            words, n_words[row] = known
        lengths[row] = len(words)
        # most sentences share no term with the question: intersect before counting
        for word in column.keys() & words:
            counts[row, column[word]] = words.count(word)
    present = counts > 0
    df = present.sum(axis=0)
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    total_idf = float(idf.sum())

    def covers(hits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Plain and idf-weighted shares of the question's terms in each row of ``hits``."""
        if not width:
            return np.zeros(len(hits)), np.zeros(len(hits))
        plain = hits.sum(axis=1) / width
        weighted = (hits @ idf) / total_idf if total_idf > 0 else np.zeros(len(hits))
        return plain, weighted

    # BM25 over the candidates' sentences: how much each says about the question's terms
    mean_len = float(lengths.mean()) or 1.0
    norm = 1.2 * (0.25 + 0.75 * lengths / mean_len)
    bm25 = (idf * counts * 2.2 / (counts + norm[:, None])).sum(axis=1)
    best_bm25 = bm25.max() or 1.0
    # a passage's terms are its sentences'; its heading's, analysed once per passage
    passage_of = np.array([s.passage for s in sentences], dtype=np.int64)
    order, where = unique_inverse(passage_of)
    in_passage = np.zeros((len(order), width), dtype=bool)
    np.logical_or.at(in_passage, where, present)
    in_heading = np.zeros((len(order), width), dtype=bool)
    for i, passage in enumerate(order.tolist()):
        for word in column.keys() & _heading_terms(tuple(passages[passage].heading_path)):
            in_heading[i, column[word]] = True
    plain, weighted = covers(present)
    heading_plain, _ = covers(in_heading)
    passage_plain, _ = covers(in_passage)
    same_before = np.r_[False, passage_of[1:] == passage_of[:-1]]
    same_after = np.r_[passage_of[:-1] == passage_of[1:], False]
    before = np.where(same_before, np.r_[0.0, weighted[:-1]], 0.0)
    after = np.where(same_after, np.r_[weighted[1:], 0.0], 0.0)
    positions = np.array([s.position for s in sentences], dtype=np.float64)
    relevance = np.array([float(passages[p].extra.get("relevance", 0.0) or 0.0) for p in passage_of.tolist()])
    matrix[:] = np.column_stack([
        1.0 / (passage_of + 1),
        relevance,
        plain,
        weighted,
        bm25 / best_bm25,
        heading_plain[where],
        passage_plain[where],
        np.maximum(before, after),
        (positions == 0).astype(np.float64),
        np.log1p(positions),
        np.log1p(n_words),
    ])
    return matrix


@dataclass(frozen=True)
class SentenceScorer:
    """A linear model over the standardised :data:`FEATURES`: higher, likelier evidence."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    intercept: float

    def score(self, matrix: np.ndarray) -> np.ndarray:
        if self.features != FEATURES:
            raise ValueError(f"the sentence model reads {self.features}, this Arborgraph computes {FEATURES}")
        z = (matrix.astype(np.float64) - self.mean) / self.scale
        return z @ self.weights + self.intercept

    def to_json(self) -> dict[str, object]:
        return {
            "format": MODEL_FORMAT,
            "features": list(self.features),
            "mean": [round(float(v), 8) for v in self.mean],
            "scale": [round(float(v), 8) for v in self.scale],
            "weights": [round(float(v), 8) for v in self.weights],
            "intercept": round(float(self.intercept), 8),
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> "SentenceScorer":
        if data.get("format") != MODEL_FORMAT:
            raise ValueError(f"not a sentence model ({data.get('format')!r}, expected {MODEL_FORMAT})")
        return cls(
            tuple(data["features"]),  # type: ignore[arg-type]
            np.asarray(data["mean"], dtype=np.float64),
            np.asarray(data["scale"], dtype=np.float64),
            np.asarray(data["weights"], dtype=np.float64),
            float(data["intercept"]),  # type: ignore[arg-type]
        )


@dataclass(frozen=True)
class DigestPlan:
    """How one route's candidates become a digest: ``whole_first`` passages kept whole,
    then sentences of the next ``passages`` passages."""

    whole_first: int
    passages: int


@dataclass(frozen=True)
class DigestModel:
    """The sentence scorer and, per route, its digest plan (a route without one keeps
    whole passages)."""

    scorer: SentenceScorer
    plans: dict[str, DigestPlan]


@lru_cache(maxsize=4)
def load_model(path: str | None = None) -> DigestModel:
    """The shipped digest model (``benchmarks/train_sentence_scorer.py --ship``), or
    the one at ``path``."""
    file = Path(path) if path else MODEL_FILE
    data = json.loads(file.read_text(encoding="utf-8"))
    plans = {route: DigestPlan(**plan) for route, plan in (data.get("plans") or {}).items() if plan}
    return DigestModel(SentenceScorer.from_json(data), plans)


def pack(
    passages: Sequence[Context],
    sentences: Sequence[Sentence],
    scores: np.ndarray,
    plan: DigestPlan,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    max_contexts: int,
) -> list[Context]:
    """The whole first passages, then digest contexts of the best sentences that fit
    ``budget_tokens``, ``max_contexts`` contexts in all (see the module docstring)."""
    lead = list(passages[: plan.whole_first])
    used = sum(count_tokens(c.text) for c in lead)
    picked: list[int] = []
    picked_terms: list[set[str]] = []
    drawn_on: set[int] = set()
    for row in np.argsort(-scores, kind="stable"):
        s = sentences[int(row)]
        if s.passage not in drawn_on and len(lead) + len(drawn_on) >= max_contexts:
            continue
        text = passages[s.passage].text[s.start : s.end]
        cost = count_tokens(text)
        if used + cost > budget_tokens:
            continue
        terms = set(analyse(text))
        if terms and any(len(terms & seen) >= REPEAT_SHARE * len(terms) for seen in picked_terms):
            continue
        picked.append(int(row))
        picked_terms.append(terms)
        drawn_on.add(s.passage)
        used += cost
    groups: dict[int, list[int]] = {}
    best: dict[int, float] = {}
    for row in picked:
        p = sentences[row].passage
        groups.setdefault(p, []).append(row)
        best[p] = max(best.get(p, -math.inf), float(scores[row]))
    digests = [
        _digest_context(passages[p], [sentences[r] for r in sorted(groups[p], key=lambda r: sentences[r].start)], best[p])
        for p in sorted(groups, key=lambda p: (-best[p], p))
    ]
    return lead + digests


def _digest_context(passage: Context, picked: Sequence[Sentence], score: float) -> Context:
    """The picked sentences of one passage, adjacent ones as the passage wrote them,
    gaps marked with an ellipsis."""
    text = passage.text
    pieces: list[str] = []
    run_start, run_end = picked[0].start, picked[0].end
    previous = picked[0].position
    for s in picked[1:]:
        if s.position == previous + 1:
            run_end = s.end
        else:
            pieces.append(text[run_start:run_end])
            run_start, run_end = s.start, s.end
        previous = s.position
    pieces.append(text[run_start:run_end])
    lead = "… " if picked[0].position > 0 else ""
    return Context(
        text=lead + " … ".join(pieces),
        source=passage.source,
        heading_path=list(passage.heading_path),
        kind="digest",
        score=score,
        node_id=f"{DIGEST}:{passage.node_id}",
        start=passage.start,
        end=passage.end,
        level=passage.level,
        provenance=[passage.node_id],
        trace=[*passage.trace, f"digest: {len(picked)} sentence(s) of {passage.node_id}"],
        flags=list(passage.flags),
        extra={DIGEST: True, "passage": passage.node_id, **{k: v for k, v in passage.extra.items() if k == "relevance"}},
    )


def digest(
    question: str,
    passages: Sequence[Context],
    plan: DigestPlan,
    *,
    scorer: SentenceScorer,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    max_contexts: int,
) -> list[Context]:
    """``passages`` (a route's candidates, best first) as a digest for ``question``: at
    most ``max_contexts`` contexts holding at most ``budget_tokens``."""
    header = [c for c in passages[: plan.whole_first]]
    sentences = candidate_sentences(passages, len(header), len(header) + plan.passages)
    if not sentences:
        return list(passages)
    scores = scorer.score(sentence_features(question, passages, sentences))
    return pack(passages, sentences, scores, plan, budget_tokens, count_tokens, max_contexts)


# a second or third highlight is shown when it is at least this likely, relative to the first
HIGHLIGHT_SHARE = 0.5
MAX_HIGHLIGHTS = 3


def highlights(question: str, contexts: Sequence[Context], scorer: SentenceScorer) -> list[Highlight]:
    """The one to three sentences of ``contexts`` (a result's, in its order) most likely
    to answer ``question``, best first, each citing its context: an extractive answer
    for when no LLM writes one."""
    sentences = candidate_sentences(contexts, 0, len(contexts), kinds=MANUALS_WORDS)
    if not sentences:
        return []
    probability = 1.0 / (1.0 + np.exp(-scorer.score(sentence_features(question, contexts, sentences))))
    order = np.argsort(-probability, kind="stable")
    top = float(probability[order[0]])
    out: list[Highlight] = []
    seen: set[str] = set()
    for row in order:
        if len(out) == MAX_HIGHLIGHTS or (out and probability[row] < HIGHLIGHT_SHARE * top):
            break
        s = sentences[int(row)]
        ctx = contexts[s.passage]
        text = ctx.text[s.start : s.end].strip("… \n")
        if not text or text in seen:
            continue
        seen.add(text)
        passage = ctx.node_id if ctx.kind == "chunk" else ctx.provenance[0]
        out.append(Highlight(text=text, context=s.passage + 1, source=ctx.source, node_id=passage,
                             heading_path=list(ctx.heading_path), score=round(float(probability[row]), 4)))
    return out
