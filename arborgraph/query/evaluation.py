"""The evaluation harness: evidence recall, full-hit rate and MRR, against flat baselines.

An evidence string counts as found when, after normalisation (lower case, every
non-alphanumeric character a space, whitespace collapsed), it appears within the first
``budget_words`` words of the returned contexts, in order. Every system is measured on
the same index in the same run: ``auto`` and each forced route the index has, plus the
flat baselines BM25-only, dense-only and hybrid. Each system's recall difference from
the hybrid baseline comes with a paired bootstrap interval over the questions.
"""

from __future__ import annotations

import bisect
import json
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from arborgraph.core.errors import EvalError
from arborgraph.core.results import Context
from arborgraph.query.router import QUESTION_TYPE_TO_ROUTE

QuestionType = Literal["lookup", "drilldown", "relational", "global"]
# each question type's expected route: the router's map
EXPECTED_ROUTE: dict[str, str] = dict(QUESTION_TYPE_TO_ROUTE)
_NON_ALNUM = re.compile(r"[^0-9a-z]+")
REFERENCE_SYSTEM = "baseline:hybrid"
CI_LEVEL = 0.95
BOOTSTRAP_RESAMPLES = 2000


def normalize(text: str) -> str:
    """Lower case, non-alphanumerics to spaces, whitespace collapsed."""
    return _NON_ALNUM.sub(" ", text.lower()).strip()


class Evidence(BaseModel):
    text: str
    page: str | None = None


class Question(BaseModel):
    id: str
    type: QuestionType
    question: str
    evidence: list[Evidence] = Field(min_length=1)


def load_questions(path: Path) -> list[Question]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalError(f"cannot read {path}: {exc}") from None
    questions = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            questions.append(Question.model_validate(json.loads(line)))
        except (json.JSONDecodeError, ValidationError) as exc:
            first = str(exc).splitlines()[0]
            raise EvalError(f"{path}:{number}: not a valid question ({first})") from None
    if not questions:
        raise EvalError(f"{path}: no questions")
    return questions


class QuestionScore(BaseModel):
    id: str
    type: str
    found: int
    total: int
    first_hit_rank: int | None
    route: str | None = None
    route_ok: bool | None = None


class Metrics(BaseModel):
    questions: int
    evidence_recall: float
    full_hit_rate: float
    mrr: float
    route_accuracy: float | None = None


class Difference(BaseModel):
    """A system's evidence recall minus the reference's on the same questions, with a
    paired bootstrap confidence interval (resampling questions)."""

    reference: str
    diff: float
    low: float
    high: float
    level: float = CI_LEVEL


class SystemReport(BaseModel):
    name: str
    overall: Metrics
    by_type: dict[str, Metrics]
    latency_ms_p50: float
    per_question: list[QuestionScore]
    # question type (and "overall") -> recall difference against the hybrid baseline
    vs_reference: dict[str, Difference] = Field(default_factory=dict)


class EvalReport(BaseModel):
    index: str
    mode: str
    budget_words: int
    questions: int
    systems: dict[str, SystemReport]


def score_contexts(
    contexts: Sequence[Context], evidence: Sequence[str], budget_words: int
) -> tuple[int, int | None]:
    """(evidence strings found, 1-based rank of the first context holding one) in the window."""
    window: list[str] = []
    context_of_word: list[int] = []
    for rank, ctx in enumerate(contexts, start=1):
        words = normalize(ctx.text).split()
        room = budget_words - len(window)
        if room <= 0:
            break
        window.extend(words[:room])
        context_of_word.extend([rank] * min(room, len(words)))
    joined = " " + " ".join(window) + " "
    # character offset of each word start, to map a match back to its context
    starts, pos = [], 1
    for word in window:
        starts.append(pos)
        pos += len(word) + 1
    found = 0
    first: int | None = None
    for text in evidence:
        needle = " " + normalize(text) + " "
        at = joined.find(needle)
        if at < 0:
            continue
        found += 1
        word_index = bisect.bisect_right(starts, at + 1) - 1
        rank = context_of_word[word_index] if context_of_word else None
        if rank is not None and (first is None or rank < first):
            first = rank
    return found, first


def _metrics(scores: Sequence[QuestionScore]) -> Metrics:
    n = len(scores)
    if n == 0:
        return Metrics(questions=0, evidence_recall=0.0, full_hit_rate=0.0, mrr=0.0)
    routed = [s for s in scores if s.route_ok is not None]
    return Metrics(
        questions=n,
        evidence_recall=round(sum(s.found / s.total for s in scores) / n, 4),
        full_hit_rate=round(sum(s.found == s.total for s in scores) / n, 4),
        mrr=round(sum(1 / s.first_hit_rank if s.first_hit_rank else 0 for s in scores) / n, 4),
        route_accuracy=round(sum(bool(s.route_ok) for s in routed) / len(routed), 4) if routed else None,
    )


def paired_bootstrap(
    values: Sequence[float],
    reference: Sequence[float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    level: float = CI_LEVEL,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(mean difference, low, high): the percentile interval of ``values - reference``
    over ``resamples`` resamplings of the paired items, seeded.

    With a few dozen questions one evidence string moves recall by several hundredths,
    so a difference is only worth quoting with its interval.
    """
    a = np.asarray(values, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
        raise ValueError("paired_bootstrap needs two equally long, non-empty sequences")
    diffs = a - b
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(diffs), size=(resamples, len(diffs)))
    means = diffs[picks].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return round(float(diffs.mean()), 4), round(float(low), 4), round(float(high), 4)


def _recall(score: QuestionScore) -> float:
    return score.found / score.total


def _differences(system: SystemReport, reference: SystemReport) -> dict[str, Difference]:
    """Per question type and overall: ``system``'s recall minus ``reference``'s."""
    ref = {s.id: s for s in reference.per_question}
    pairs = [(s, ref[s.id]) for s in system.per_question if s.id in ref]
    out: dict[str, Difference] = {}
    for qtype in [*sorted({s.type for s, _ in pairs}), "overall"]:
        mine = [(a, b) for a, b in pairs if qtype == "overall" or a.type == qtype]
        diff, low, high = paired_bootstrap([_recall(a) for a, _ in mine], [_recall(b) for _, b in mine])
        out[qtype] = Difference(reference=reference.name, diff=diff, low=low, high=high)
    return out


def _run_system(
    name: str,
    questions: Sequence[Question],
    retrieve: Callable[[Question], tuple[list[Context], str | None]],
    budget_words: int,
    judge_route: bool,
) -> SystemReport:
    scores: list[QuestionScore] = []
    latencies: list[float] = []
    for q in questions:
        start = time.perf_counter()
        contexts, route = retrieve(q)
        latencies.append((time.perf_counter() - start) * 1000)
        found, first = score_contexts(contexts, [e.text for e in q.evidence], budget_words)
        route_ok = None
        if judge_route and route is not None:
            expected = EXPECTED_ROUTE[q.type]
            # a lookup question is answered well by any route that finds its evidence
            route_ok = route == expected or (q.type == "lookup" and found == len(q.evidence))
        scores.append(
            QuestionScore(
                id=q.id, type=q.type, found=found, total=len(q.evidence),
                first_hit_rank=first, route=route, route_ok=route_ok,
            )
        )
    types = sorted({s.type for s in scores})
    latencies.sort()
    return SystemReport(
        name=name,
        overall=_metrics(scores),
        by_type={t: _metrics([s for s in scores if s.type == t]) for t in types},
        latency_ms_p50=round(latencies[len(latencies) // 2], 2) if latencies else 0.0,
        per_question=scores,
    )


def evaluate(
    kb: Any,
    questions: Sequence[Question],
    *,
    budget_words: int = 1500,
    systems: Sequence[str] | None = None,
) -> EvalReport:
    """Score ``auto``, every built route and the flat baselines on ``questions``."""
    top_k = 100
    budget_tokens = budget_words * 4  # the word window, not the token budget, is the cut
    available = ["auto", *kb.index.routes, "baseline:bm25", "baseline:dense", "baseline:hybrid"]
    if kb.index.mode.embedding is None:
        available = [s for s in available if s != "baseline:dense"]
    wanted = list(systems) if systems else available

    def routed(route: str) -> Callable[[Question], tuple[list[Context], str | None]]:
        def run(q: Question) -> tuple[list[Context], str | None]:
            res = kb.query(q.question, route=route, top_k=top_k, budget_tokens=budget_tokens)
            return res.contexts, res.route

        return run

    def flat(mode: str) -> Callable[[Question], tuple[list[Context], str | None]]:
        def run(q: Question) -> tuple[list[Context], str | None]:
            return kb.engine.lookup(q.question, mode=mode, top_k=top_k), None

        return run

    reports = {}
    for name in wanted:
        if name.startswith("baseline:"):
            fn = flat(name.split(":", 1)[1])
        elif name == "auto" or name in kb.index.routes:
            fn = routed(name)
        else:
            raise EvalError(f"system '{name}' is not available on this index")
        reports[name] = _run_system(name, questions, fn, budget_words, judge_route=name == "auto")
    if REFERENCE_SYSTEM in reports:
        for name, system in reports.items():
            if name != REFERENCE_SYSTEM:
                system.vs_reference = _differences(system, reports[REFERENCE_SYSTEM])
    return EvalReport(
        index=str(kb.index.index_dir),
        mode=kb.index.mode.label,
        budget_words=budget_words,
        questions=len(questions),
        systems=reports,
    )


def format_report(report: EvalReport) -> str:
    """A plain-text table: systems × question types."""
    types = sorted({t for s in report.systems.values() for t in s.by_type})
    lines = [
        f"index {report.index} ({report.mode}); {report.questions} questions; "
        f"window {report.budget_words} words",
        "recall / full-hit / MRR",
    ]
    header = f"{'system':<18}" + "".join(f"{t:>22}" for t in [*types, "overall"]) + f"{'route acc':>11}{'p50 ms':>9}"
    lines.append(header)
    for name, sys_report in report.systems.items():
        cells = []
        for t in types:
            m = sys_report.by_type.get(t)
            cells.append(f"{m.evidence_recall:.2f}/{m.full_hit_rate:.2f}/{m.mrr:.2f}" if m else "-")
        o = sys_report.overall
        cells.append(f"{o.evidence_recall:.2f}/{o.full_hit_rate:.2f}/{o.mrr:.2f}")
        acc = f"{o.route_accuracy:.2f}" if o.route_accuracy is not None else "-"
        lines.append(f"{name:<18}" + "".join(f"{c:>22}" for c in cells) + f"{acc:>11}{sys_report.latency_ms_p50:>9.1f}")
    compared = {n: r for n, r in report.systems.items() if r.vs_reference}
    if compared:
        reference = next(iter(compared.values())).vs_reference["overall"].reference
        lines += ["", f"recall minus {reference}'s, {CI_LEVEL:.0%} paired bootstrap interval (questions resampled)"]
        lines.append(f"{'system':<18}" + "".join(f"{t:>22}" for t in [*types, "overall"]))
        for name, sys_report in compared.items():
            cells = []
            for t in [*types, "overall"]:
                d = sys_report.vs_reference.get(t)
                cells.append(f"{d.diff:+.2f} [{d.low:+.2f},{d.high:+.2f}]" if d else "-")
            lines.append(f"{name:<18}" + "".join(f"{c:>22}" for c in cells))
    return "\n".join(lines)
