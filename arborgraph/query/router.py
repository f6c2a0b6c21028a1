"""The query router: question -> lookup | tree | graph | global, with confidence and reason.

The default router is a multinomial logistic regression over features of the
question's form (word and word-pair indicators, cue phrases, length). It is trained
by ``benchmarks/train_router.py`` on labelled questions written for several manuals
and shipped as JSON coefficients (``arborgraph/data/router_model.json``) — data, not a
pickle — so the package needs only numpy at query time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from arborgraph.core.results import Route, RoutingDecision
from arborgraph.core.text import STOPWORDS

# The one map from a question type (how the question sets label questions, and the
# classes the router model is trained on) to the route that answers it best; the
# evaluation reads it as each question's expected route.
QUESTION_TYPE_TO_ROUTE: dict[str, Route] = {
    "lookup": "lookup",
    "drilldown": "tree",
    "relational": "graph",
    "global": "global",
}

_WORD = re.compile(r"[a-z0-9_]+")

# Cue phrases: each a regex over the lower-cased question. They give the classifier
# phrase-level evidence that single words miss ("how does X work" vs "how many").
CUES: dict[str, str] = {
    "cue_overview": r"\b(overview|overall|in general|big picture|summar(y|ise|ize)|high[- ]level|landscape|at a glance)\b",
    "cue_main_ways": r"\b(main|major|key|different|various|kinds? of|types? of|categories of|ways?)\b",
    "cue_across": r"\b(across|throughout|whole|entire|all (the )?(of )?(features|ways|options|mechanisms|parts))\b",
    "cue_explain": r"\b(explain|describe|walk me through|tell me (about|how)|in detail|details? of|go deeper|elaborate)\b",
    "cue_how_work": r"\bhow (does|do|is|are) .{1,60} (work|implemented|handled|organi[sz]ed|structured)\b",
    "cue_relation": r"\b(affect|affects|impact|influence|interact|relat(e|es|ed|ion|ionship)|between|depend(s|ency|ent)?|connected|link(ed)?|tie|ties|together with)\b",
    "cue_chain": r"\b(which|what) \w+ (controls?|limits?|governs?|configures?|determines?|sets?) the \w+ (that|which|used|of the)\b",
    "cue_that_clause": r"\b(that|which) (is|are) (used|needed|required|responsible)\b",
    "cue_fact": r"\b(default|maximum|minimum|max|min|limit|value|number of|how many|how much|what year|return(s|ed)?|version|size|name of|syntax)\b",
    "cue_what_is": r"^(what|which) (is|are|does|do) (the )?\w+",
    "cue_can_i": r"^(can|does|is|do) ",
    "cue_compare": r"\b(compare|comparison|versus|vs\.?|differ(ence|ent)? between)\b",
}
_CUE_RE = {name: re.compile(pattern) for name, pattern in CUES.items()}

# A question about the manual as a whole ("What are the main themes of the manual?",
# "Summarize these docs."): it names the manual itself and asks what it is about.
# Both halves are needed: "Where does the manual give the default port?" is a lookup.
_WHOLE_MANUAL = re.compile(
    r"\b(this|these|the|whole|entire|all(?: of)? (?:this|these|the))(?:\s+[\w.+-]+){0,2}?\s+"
    r"(manual|manuals|documentation|docs|guide|handbook|reference|man pages|specification|book)\b"
)
_ABOUT_IT = re.compile(
    r"\b(about|themes?|topics?|subjects?|summar(?:y|ise|ize)|sum up|overview|outline|contents|cover|covers|covered)\b"
)
WHOLE_MANUAL_CUE = "cue_whole_manual"


def asks_about_whole_manual(question: str) -> bool:
    """Whether ``question`` asks about the manual as a whole ("What are the main themes
    of the manual?", "Summarize these docs."), not about a part of it."""
    text = question.lower()
    return bool(_WHOLE_MANUAL.search(text) and _ABOUT_IT.search(text))

# "How does A relate to B?", "the relationship between A and B", "What does A have to do
# with B?": relational however the rest is worded. The text model sent a new user's
# "What is the relationship between WAL and shared memory?" to global. Survey questions
# that end "..., and how do they relate to each other?" are not meant.
_HOW_THEY_RELATE = tuple(
    re.compile(pattern)
    for pattern in (
        r"\bhow (?:does|do|is|are|can|would) .{2,80}? (?:relate|related|connect|connected|interact|tie in)\b"
        r"(?! (?:to|with) (?:each other|one another))",
        r"\b(?:relationship|relation|connection|interaction|interplay|link)s? between .{2,80}? and ",
        r"\bwhat (?:does|do|has|have) .{2,60}? (?:have )?to do with ",
        r"\bhow (?:does|do) .{2,60}? (?:interact|work together|combine) with ",
    )
)
_SURVEY_TAIL = re.compile(r", and how (?:do|does|are|is) ")
RELATION_WORDING_CONFIDENCE = 0.8


def asks_how_things_relate(question: str) -> bool:
    """Whether ``question`` asks how two named things relate (see :data:`_HOW_THEY_RELATE`);
    on the question sets' labels: 16 of 18 such questions are relational, 2 drill-down."""
    text = question.lower()
    return not _SURVEY_TAIL.search(text) and any(p.search(text) for p in _HOW_THEY_RELATE)


# Named technical entities: snake_case, UPPER_CASE, calls, flags, dotted keys,
# "PRAGMA x"-style commands. Relational questions start from one of these.
_IDENTIFIER = re.compile(
    r"(\b[a-z][a-z0-9]*_[a-z0-9_]+\b|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b\w+\(\)|(?<!\w)--?[a-z][\w-]+"
    r"|\b[a-z]+\.[a-z][a-z.]+\b|\b[A-Z]{2,}(?: [A-Z]{2,})+\b)"
)


def question_features(question: str) -> dict[str, float]:
    """Sparse features of a question: words, word pairs, cue phrases, length bucket."""
    text = question.lower().strip()
    words = _WORD.findall(text)
    identifiers = _IDENTIFIER.findall(question)
    features: dict[str, float] = {}
    for word in words:
        features[f"w:{word}"] = 1.0
    for a, b in zip(words, words[1:]):
        features[f"b:{a}_{b}"] = 1.0
    if words:
        features[f"first:{words[0]}"] = 1.0
        if len(words) > 1:
            features[f"first2:{words[0]}_{words[1]}"] = 1.0
    for name, pattern in _CUE_RE.items():
        if pattern.search(text):
            features[name] = 1.0
    features[f"len:{min(len(words) // 5, 5)}"] = 1.0
    features[f"ids:{min(len(identifiers), 2)}"] = 1.0
    clauses = text.count(" and ") + text.count(", ") + max(0, text.count("?") - 1)
    features[f"clauses:{min(clauses, 3)}"] = 1.0
    if re.match(r"^(if|when|after|once|suppose)\b", text):
        features["cue_conditional"] = 1.0
    if asks_about_whole_manual(text):
        features[WHOLE_MANUAL_CUE] = 1.0
    return features


# How the question's flat hits spread over the manual. Overview questions pull hits
# from many pages; drill-down questions concentrate on one page and a few sections.
SPREAD_FEATURES = ("docs_at_10", "docs_at_20", "top_doc_share_at_10", "sections_at_10")


def spread_features(hits: Sequence[tuple[str, Sequence[str]]]) -> dict[str, float]:
    """Features of a question's flat ranking: ``hits`` are (document id, heading path)
    of the top-ranked chunks, best first. Values are fractions in [0, 1]."""
    if not hits:
        return {name: 0.0 for name in SPREAD_FEATURES}
    top10 = hits[:10]
    docs10 = [doc for doc, _ in top10]
    biggest = max(docs10.count(doc) for doc in set(docs10))
    return {
        "docs_at_10": len(set(docs10)) / 10,
        "docs_at_20": len({doc for doc, _ in hits[:20]}) / 20,
        "top_doc_share_at_10": biggest / len(top10),
        "sections_at_10": len({(doc, tuple(path[:2])) for doc, path in top10}) / 10,
    }


def _softmax(logits: np.ndarray) -> np.ndarray:
    exp = np.exp(logits - logits.max())
    return exp / exp.sum()


@dataclass(frozen=True)
class SpreadStage:
    """Second stage: re-weighs the text model's log-probabilities with the spread of
    the question's flat hits (a logistic regression over both, same classes)."""

    features: list[str]  # "logp:<class>" for each class, then SPREAD_FEATURES
    coef: np.ndarray  # (classes, features)
    intercept: np.ndarray

    def logits(self, text_probs: Mapping[str, float], spread: Mapping[str, float]) -> np.ndarray:
        x = np.array([
            np.log(max(text_probs[f[5:]], 1e-9)) if f.startswith("logp:") else spread[f]
            for f in self.features
        ])
        return self.intercept + self.coef @ x


@dataclass(frozen=True)
class RouterModel:
    """Coefficients of the trained classifier, loaded from JSON."""

    classes: list[str]  # question types, in coefficient row order
    vocabulary: dict[str, int]
    coef: np.ndarray  # (classes, features)
    intercept: np.ndarray
    meta: dict[str, Any]
    spread_stage: SpreadStage | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "RouterModel":
        stage = data.get("spread_stage")
        return cls(
            classes=list(data["classes"]),
            vocabulary={f: i for i, f in enumerate(data["features"])},
            coef=np.asarray(data["coef"], dtype=np.float64),
            intercept=np.asarray(data["intercept"], dtype=np.float64),
            meta=dict(data.get("meta", {})),
            spread_stage=SpreadStage(
                features=list(stage["features"]),
                coef=np.asarray(stage["coef"], dtype=np.float64),
                intercept=np.asarray(stage["intercept"], dtype=np.float64),
            ) if stage else None,
        )

    def to_json(self) -> dict[str, Any]:
        features = sorted(self.vocabulary, key=self.vocabulary.__getitem__)
        data: dict[str, Any] = {
            "classes": self.classes,
            "features": features,
            "coef": np.round(self.coef, 6).tolist(),
            "intercept": np.round(self.intercept, 6).tolist(),
            "meta": self.meta,
        }
        if self.spread_stage is not None:
            data["spread_stage"] = {
                "features": self.spread_stage.features,
                "coef": np.round(self.spread_stage.coef, 6).tolist(),
                "intercept": np.round(self.spread_stage.intercept, 6).tolist(),
            }
        return data

    def text_probabilities(self, question: str) -> dict[str, float]:
        """Class probabilities from the question's wording alone."""
        logits = self.intercept.copy()
        for name, value in question_features(question).items():
            column = self.vocabulary.get(name)
            if column is not None:
                logits += self.coef[:, column] * value
        return {c: float(p) for c, p in zip(self.classes, _softmax(logits))}

    def probabilities(self, question: str, spread: Mapping[str, float] | None = None) -> dict[str, float]:
        """Class probabilities; with ``spread`` (see :func:`spread_features`) and a
        trained second stage, the spread of the flat hits counts too."""
        text = self.text_probabilities(question)
        if spread is None or self.spread_stage is None:
            return text
        probs = _softmax(self.spread_stage.logits(text, spread))
        return {c: float(p) for c, p in zip(self.classes, probs)}

    def top_features(self, question: str, klass: str, n: int = 3) -> list[str]:
        row = self.classes.index(klass)
        contributions = []
        for name in question_features(question):
            column = self.vocabulary.get(name)
            if column is not None and self.coef[row, column] > 0:
                contributions.append((self.coef[row, column], name))
        return [name for _, name in sorted(contributions, reverse=True)[:n]]


MODEL_FILE = "router_model.json"


@lru_cache(maxsize=1)
def default_model() -> RouterModel:
    """The router model shipped with the package."""
    text = resources.files("arborgraph").joinpath("data", MODEL_FILE).read_text(encoding="utf-8")
    return RouterModel.from_json(json.loads(text))


def _describe(feature: str) -> tuple[str, frozenset[str]] | None:
    """A human reading of a feature and the words it is about, or None for ones that
    explain nothing (length...)."""
    if feature == WHOLE_MANUAL_CUE:
        return "asks about the manual as a whole", frozenset({"manual", "whole"})
    if feature.startswith("cue_"):
        name = feature[4:].replace("_", " ")
        return f"{name} cue", frozenset(name.split()) - STOPWORDS
    kind, _, value = feature.partition(":")
    words = value.replace("_", " ")
    content = frozenset(words.split()) - STOPWORDS
    if kind in ("first", "first2"):
        # the question's form: "starts with 'which'" tells even with no content word
        return f"starts with '{words}'", content or frozenset(words.split())
    if kind in ("w", "b") and len(words) > 2 and content:  # 'the', 'does' tell a reader nothing
        return f"'{words}'", content
    if kind == "ids" and value != "0":
        return "names an identifier", frozenset()
    return None


def _reasons(features: Sequence[str], most: int = 3) -> list[str]:
    """Readings of ``features`` (strongest first), each saying something the ones before
    it did not: after "explain cue", neither "starts with 'explain'" nor "'explain the'"
    says anything new, and after "starts with 'which'" no "'sets which'" quotes a word
    again."""
    out: list[str] = []
    said: set[str] = set()
    quoted: set[str] = set()  # every word shown in quotes so far: none is shown twice
    for feature in features:
        described = _describe(feature)
        if described is None:
            continue
        reading, words = described
        shown = {w for phrase in re.findall(r"'([^']*)'", reading) for w in phrase.split()}
        if reading in out or (words and words <= said) or shown & quoted:
            continue
        out.append(reading)
        said |= words
        quoted |= shown
        if len(out) == most:
            break
    return out


_LABELS = {
    "lookup": "a single fact",
    "tree": "a drill-down",
    "graph": "a relational / multi-hop question",
    "global": "an overview question",
}


def route_question(
    question: str,
    *,
    available: Sequence[str],
    model: RouterModel | None = None,
    hits: Sequence[tuple[str, Sequence[str]]] | None = None,
) -> RoutingDecision:
    """Classify ``question`` into one of the ``available`` routes.

    ``hits`` — (document id, heading path) of the question's top flat hits, best
    first — lets the model weigh how spread they are. Routes the index has not built
    are removed and the remaining probabilities renormalised, so an index without a
    graph never routes to it; the reason then names the route the question looked
    like when that one is not built. An index with one route answers with it at
    confidence 1.0, and the reason says it had no choice.
    """
    model = model or default_model()
    spread = spread_features(hits) if hits is not None else None
    probs_by_type = model.probabilities(question, spread)
    every_route: dict[str, float] = {}
    for qtype, p in probs_by_type.items():
        route = QUESTION_TYPE_TO_ROUTE[qtype]
        every_route[route] = every_route.get(route, 0.0) + p
    by_route = {r: p for r, p in every_route.items() if r in available}
    if len(by_route) <= 1:
        only = next(iter(by_route), "lookup")
        built = " (built with --no-tree --no-graph)" if only == "lookup" else ""
        # no choice was made: a classifier confidence here would only mislead
        return RoutingDecision(
            route=only, confidence=1.0,  # type: ignore[arg-type]
            reason=f"this index has only the {only} route{built}",
            scores={only: 1.0},
        )
    total = sum(by_route.values())
    by_route = {r: p / total for r, p in by_route.items()}
    ranked = sorted(by_route.items(), key=lambda kv: -kv[1])
    route, confidence = ranked[0]
    qtype = next(t for t, r in QUESTION_TYPE_TO_ROUTE.items() if r == route)
    cues = _reasons(model.top_features(question, qtype, n=8))
    reason = f"looks like {_LABELS[route]}" + (f" ({', '.join(cues)})" if cues else "")
    top = max(every_route, key=lambda r: every_route[r])
    if top != route:
        # the renormalised confidence is among the built routes only: say what was missing
        reason = (
            f"{top} not built (the question looks like {_LABELS[top]}, "
            f"probability {every_route[top]:.2f}); best available: {route}"
        )
    if spread is not None and model.spread_stage is not None:
        reason += f"; top hits span {round(spread['docs_at_10'] * 10)} of 10 pages"
    if "graph" in by_route and route != "graph" and asks_how_things_relate(question):
        graph = max(by_route["graph"], RELATION_WORDING_CONFIDENCE)
        rest = sum(p for r, p in by_route.items() if r != "graph") or 1.0
        scores = {"graph": graph} | {r: (1 - graph) * p / rest for r, p in ranked if r != "graph"}
        return RoutingDecision(
            route="graph",
            confidence=round(graph, 4),
            reason=f"asks how two things relate (the text model said {route}, {confidence:.2f})",
            scores={r: round(p, 4) for r, p in scores.items()},
        )
    return RoutingDecision(
        route=route,  # type: ignore[arg-type]
        confidence=round(confidence, 4),
        reason=reason,
        scores={r: round(p, 4) for r, p in ranked},
    )


def with_llm_choice(decision: RoutingDecision, chosen: RoutingDecision) -> RoutingDecision:
    """The LLM's route ``chosen``, with the classifier's ``decision`` ordering the
    other routes: they share what the LLM's confidence leaves, in the classifier's
    proportions (so a low-confidence choice is fused with the classifier's runner-up)."""
    rest = {r: p for r, p in decision.scores.items() if r != chosen.route}
    mass = sum(rest.values()) or 1.0
    scores = {chosen.route: chosen.confidence} | {
        r: round((1 - chosen.confidence) * p / mass, 4) for r, p in rest.items()
    }
    return chosen.model_copy(update={"scores": scores})
