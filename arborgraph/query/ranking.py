"""The learned ranking stage: one score per candidate chunk from every structure's signals.

The candidates of a query are the union of flat hybrid lookup's candidates (BM25's and
the dense retriever's top hits) and the chunks the chosen structure route reached. Each
gets a fixed vector of features (:data:`FEATURES`); a linear model over the standardised
features, trained by ``benchmarks/train_ranker.py`` with leave-one-manual-out
cross-validation and shipped as JSON coefficients, orders them. Everything here is a
pure function of arrays the index already holds, so a query's order is deterministic.

Features come in two groups: the flat ones every index has (lexical and dense scores and
ranks, query-term coverage of the chunk, its heading path and page title, the chunk's
place in its page, page-level aggregates and neighbouring chunks), and the structure
ones (:data:`STRUCTURE_FEATURES`: how close the chunk's tree parent summary is to the
question, and the chunk's rank in the tree, graph or global route's own result). The
ablation model is trained without the structure group.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from arborgraph.core.ordering import unique_inverse

MODEL_FILE = Path(__file__).resolve().parents[1] / "data" / "ranker_model.json"
MODEL_FORMAT = "arborgraph-ranker/1"

FLAT_FEATURES: tuple[str, ...] = (
    "bm25_rel",  # BM25 score / best BM25 score of the query
    "bm25_inv_rank",  # 1 / rank in BM25's candidates (0: not among them)
    "dense_cos",  # cosine of chunk and question
    "dense_gap",  # cosine minus the query's best cosine
    "dense_inv_rank",
    "rrf_rel",  # fused RRF score / best fused score
    "rrf_inv_rank",
    "term_cover",  # share of the question's distinct terms the chunk contains
    "idf_cover",  # the same, each term weighted by its idf
    "heading_cover",  # share of the question's terms in the heading path and page title
    "title_cover",  # share in the page title alone
    "first_in_page",  # 1 for a page's first chunk
    "log_position",  # log(1 + the chunk's place in its page)
    "log_tokens",  # log(1 + the chunk's tokens): long chunks fill the reader's window
    "page_bm25_rel",  # best BM25 of any chunk of the page / query's best
    "page_dense_gap",  # best cosine of any chunk of the page minus query's best
    "page_candidates",  # log(1 + the page's chunks among the candidates)
    "page_cover",  # share of the question's terms found in the page's candidate chunks
    "neighbour_dense_gap",  # best cosine of the previous/next chunk minus query's best
    "neighbour_bm25_rel",
)
STRUCTURE_FEATURES: tuple[str, ...] = (
    "tree_parent_gap",  # cosine of the chunk's tree parent summary minus the best such
    "tree_inv_rank",  # 1 / rank in the tree route's chunks (0: not reached or other route)
    "graph_inv_rank",
    "global_inv_rank",
    "entity_direct",  # weight of the question's linked entities the chunk mentions / best
    "entity_spread",  # one hop on from them: entities sharing their chunks, back to chunks / best
    "community_rel",  # best BM25 of a community report over the chunk's entities / best
)
GRAPH_SIGNALS: tuple[str, ...] = ("entity_direct", "entity_spread", "community_rel")
FEATURES: tuple[str, ...] = FLAT_FEATURES + STRUCTURE_FEATURES


@dataclass(frozen=True)
class QuerySignals:
    """What a query's features are computed from, all aligned with the chunk rows.

    ``bm25`` and ``dense`` hold every row's score (``dense`` None without vectors);
    ``term_rows`` the rows each distinct question term occurs in (a sorted array), with its idf;
    ``rank_lists`` the ordered chunk rows of each retriever ("bm25", "dense", "rrf",
    and the structure route's name when one ran); ``parent_cos`` the cosine of each
    candidate row's tree parent summary with the question (rows absent: no parent).
    """

    bm25: np.ndarray
    dense: np.ndarray | None
    term_rows: Sequence[tuple[np.ndarray, float]]
    question_terms: frozenset[str]
    rank_lists: Mapping[str, Sequence[int]]
    rrf_scores: Mapping[int, float]
    parent_cos: Mapping[int, float]
    graph: Mapping[str, Mapping[int, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class PageLayout:
    """Where each chunk row sits: its page (as an int), its place in the page, and its
    neighbours' rows (-1 at a page's edge), its length in tokens; plus the analysed
    terms of its heading path and page title."""

    doc_index: np.ndarray
    position: np.ndarray
    previous: np.ndarray
    following: np.ndarray
    n_tokens: np.ndarray
    heading_terms: Sequence[frozenset[str]]
    title_terms: Sequence[frozenset[str]]
    # the rows of page d are order[page_start[d]:page_start[d + 1]]
    order: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    page_start: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))

    def page_rows(self, pages: np.ndarray) -> np.ndarray:
        """Every row of the given pages."""
        if len(pages) == 0:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([self.order[self.page_start[d] : self.page_start[d + 1]] for d in pages.tolist()])


def page_layout(
    doc_ids: Sequence[str], starts: Sequence[int], n_tokens: Sequence[int],
    heading_terms: Sequence[frozenset[str]], title_terms: Sequence[frozenset[str]],
) -> PageLayout:
    """The layout of chunk rows, from their documents and start offsets."""
    n = len(doc_ids)
    codes: dict[str, int] = {}
    doc_index = np.array([codes.setdefault(d, len(codes)) for d in doc_ids], dtype=np.int64)
    order = sorted(range(n), key=lambda r: (doc_index[r], starts[r], r))
    position = np.zeros(n, dtype=np.int64)
    previous = np.full(n, -1, dtype=np.int64)
    following = np.full(n, -1, dtype=np.int64)
    for i, row in enumerate(order):
        if i > 0 and doc_index[order[i - 1]] == doc_index[row]:
            previous[row] = order[i - 1]
            following[order[i - 1]] = row
            position[row] = position[order[i - 1]] + 1
    tokens = np.asarray(n_tokens, dtype=np.float64)
    ordered = np.asarray(order, dtype=np.int64)
    page_start = np.searchsorted(doc_index[ordered], np.arange(len(codes) + 1)) if n else np.zeros(1, dtype=np.int64)
    return PageLayout(doc_index, position, previous, following, tokens, heading_terms, title_terms, ordered, page_start)


def candidate_rows(signals: QuerySignals) -> list[int]:
    """Every row some retriever ranked, in first-seen order (RRF's order first)."""
    seen: dict[int, None] = {}
    for name in ("rrf", "bm25", "dense", *sorted(signals.rank_lists)):
        for row in signals.rank_lists.get(name, ()):
            seen.setdefault(row, None)
    return list(seen)


def _inv_ranks(rows: Sequence[int], ranked: Sequence[int]) -> np.ndarray:
    place = {row: i for i, row in enumerate(ranked)}
    return np.array([1.0 / (1 + place[r]) if r in place else 0.0 for r in rows])


def feature_matrix(rows: Sequence[int], signals: QuerySignals, layout: PageLayout) -> np.ndarray:
    """One row of :data:`FEATURES` per candidate row."""
    idx = np.asarray(rows, dtype=np.int64)
    n = len(idx)
    out = np.zeros((n, len(FEATURES)), dtype=np.float64)
    if n == 0:
        return out
    col = {name: i for i, name in enumerate(FEATURES)}
    bm25 = signals.bm25.astype(np.float64)
    top_bm25 = float(bm25.max()) if bm25.size else 0.0
    best_bm25 = top_bm25 if top_bm25 > 0 else 1.0
    out[:, col["bm25_rel"]] = bm25[idx] / best_bm25
    out[:, col["bm25_inv_rank"]] = _inv_ranks(rows, signals.rank_lists.get("bm25", ()))
    doc = layout.doc_index
    # page aggregates over the candidates' pages only (their rows, not the collection's)
    pages, page_of = unique_inverse(doc[idx])
    page_rows = layout.page_rows(pages)  # no page is empty: each holds a candidate
    page_sizes = layout.page_start[pages + 1] - layout.page_start[pages]
    page_offsets = np.cumsum(page_sizes) - page_sizes

    def page_best(values: np.ndarray) -> np.ndarray:
        return np.maximum.reduceat(values[page_rows], page_offsets)[page_of]

    out[:, col["page_bm25_rel"]] = np.maximum(page_best(bm25), 0.0) / best_bm25
    prev, nxt = layout.previous[idx], layout.following[idx]

    def neighbour_best(values: np.ndarray, floor: float) -> np.ndarray:
        left = np.where(prev >= 0, values[np.maximum(prev, 0)], floor)
        right = np.where(nxt >= 0, values[np.maximum(nxt, 0)], floor)
        return np.maximum(left, right)

    out[:, col["neighbour_bm25_rel"]] = neighbour_best(bm25, 0.0) / best_bm25
    if signals.dense is not None:
        dense = signals.dense.astype(np.float64)
        best = float(dense.max())
        out[:, col["dense_cos"]] = dense[idx]
        out[:, col["dense_gap"]] = dense[idx] - best
        out[:, col["page_dense_gap"]] = np.maximum(page_best(dense), -1.0) - best
        out[:, col["neighbour_dense_gap"]] = neighbour_best(dense, -1.0) - best
    out[:, col["dense_inv_rank"]] = _inv_ranks(rows, signals.rank_lists.get("dense", ()))
    fused = np.array([signals.rrf_scores.get(r, 0.0) for r in rows])
    out[:, col["rrf_rel"]] = fused / (fused.max() or 1.0)
    out[:, col["rrf_inv_rank"]] = _inv_ranks(rows, signals.rank_lists.get("rrf", ()))
    # query-term coverage, per chunk and per page (over the candidates of that page)
    total_idf = sum(idf for _, idf in signals.term_rows) or 1.0
    n_terms = len(signals.term_rows) or 1
    present = np.zeros((n, len(signals.term_rows)), dtype=bool)
    for j, (term, _) in enumerate(signals.term_rows):  # each term's rows, sorted
        at = np.minimum(np.searchsorted(term, idx), len(term) - 1)
        present[:, j] = term[at] == idx
    idfs = np.array([idf for _, idf in signals.term_rows])
    out[:, col["term_cover"]] = present.sum(axis=1) / n_terms
    out[:, col["idf_cover"]] = (present @ idfs) / total_idf if idfs.size else 0.0
    # a page's terms and count over its candidates (page_of: each candidate's page)
    page_terms = np.zeros((len(pages), present.shape[1]), dtype=bool)
    np.logical_or.at(page_terms, page_of, present)
    out[:, col["page_cover"]] = page_terms.sum(axis=1)[page_of] / n_terms
    out[:, col["page_candidates"]] = np.log1p(np.bincount(page_of, minlength=len(pages)))[page_of]
    q = signals.question_terms
    if q:
        heading_hits, title_hits = [], []
        # rows of one section share their term sets: each distinct pair is worked out once
        seen: dict[tuple[frozenset[str], frozenset[str]], tuple[int, int]] = {}
        for r in rows:
            heading, page_title = layout.heading_terms[r], layout.title_terms[r]
            key = (heading, page_title)  # a frozenset keeps its hash: cheap to look up
            hits = seen.get(key)
            if hits is None:
                title = page_title & q
                hits = seen[key] = (len((heading & q) | title), len(title))
            heading_hits.append(hits[0])
            title_hits.append(hits[1])
        out[:, col["heading_cover"]] = np.array(heading_hits, dtype=np.float64) / len(q)
        out[:, col["title_cover"]] = np.array(title_hits, dtype=np.float64) / len(q)
    pos = layout.position[idx]
    out[:, col["first_in_page"]] = (pos == 0).astype(np.float64)
    out[:, col["log_position"]] = np.log1p(pos)
    out[:, col["log_tokens"]] = np.log1p(layout.n_tokens[idx])
    # structure signals
    if signals.parent_cos:
        best_parent = max(signals.parent_cos.values())
        out[:, col["tree_parent_gap"]] = [signals.parent_cos.get(r, best_parent - 1.0) - best_parent for r in rows]
    for route in ("tree", "graph", "global"):
        if route in signals.rank_lists:
            out[:, col[f"{route}_inv_rank"]] = _inv_ranks(rows, signals.rank_lists[route])
    for name in GRAPH_SIGNALS:
        values = signals.graph.get(name, {})
        column = np.array([values.get(r, 0.0) for r in rows])
        out[:, col[name]] = column / (column.max() or 1.0)
    return out


def _model_features(data: Mapping[str, object], expected_format: str) -> tuple[str, ...]:
    """The feature names of a model file of ``expected_format``; ValueError otherwise."""
    if data.get("format") != expected_format:
        raise ValueError(f"not a ranker model of format {expected_format!r}")
    features = tuple(str(f) for f in data["features"])  # type: ignore[union-attr]
    unknown = [f for f in features if f not in FEATURES]
    if unknown:
        raise ValueError(f"ranker model uses unknown features: {', '.join(unknown)}")
    return features


# what the relevance of a candidate is read from: its model score, and how well the
# question is met anywhere (the best cosine and the best idf-weighted term cover among
# its candidates), so that a question the manual cannot answer scores low throughout
CALIBRATION_INPUTS: tuple[str, ...] = ("model_score", "query_best_cos", "query_best_idf_cover")


@dataclass(frozen=True)
class Calibration:
    """The probability that a candidate chunk holds the question's evidence: a logistic
    function of :data:`CALIBRATION_INPUTS`, fitted on the training manuals' candidates
    with each scored by a model that never saw that manual (``benchmarks/train_ranker.py``).

    Within one question it grows with the model score, so it keeps the ranking's order;
    across questions it is comparable."""

    coef: np.ndarray
    intercept: float

    @staticmethod
    def inputs(scores: np.ndarray, matrix: np.ndarray) -> np.ndarray:
        """The calibration inputs of each candidate (one question's candidates)."""
        n = len(scores)
        cos = matrix[:, FEATURES.index("dense_cos")] if n else np.zeros(0)
        cover = matrix[:, FEATURES.index("idf_cover")] if n else np.zeros(0)
        return np.column_stack([
            np.asarray(scores, dtype=np.float64),
            np.full(n, float(cos.max()) if n else 0.0),
            np.full(n, float(cover.max()) if n else 0.0),
        ])

    def probabilities(self, scores: np.ndarray, matrix: np.ndarray) -> np.ndarray:
        z = self.inputs(scores, matrix) @ self.coef + self.intercept
        return 1.0 / (1.0 + np.exp(-z))

    def to_json(self) -> dict[str, object]:
        return {"inputs": list(CALIBRATION_INPUTS), "coef": [round(float(v), 8) for v in self.coef],
                "intercept": round(float(self.intercept), 8)}

    @classmethod
    def from_json(cls, data: Mapping[str, object] | None) -> "Calibration | None":
        if data is None:
            return None
        if list(data.get("inputs", ())) != list(CALIBRATION_INPUTS):  # type: ignore[call-overload]
            raise ValueError(f"ranker calibration needs inputs {list(CALIBRATION_INPUTS)}")
        coef = np.asarray(data["coef"], dtype=np.float64)
        if coef.shape != (len(CALIBRATION_INPUTS),) or coef[0] <= 0:
            raise ValueError("ranker calibration must grow with the model score")
        return cls(coef, float(data.get("intercept", 0.0)))  # type: ignore[arg-type]


@dataclass(frozen=True)
class RankerModel:
    """A linear scorer over standardised features: ``((x - mean) / scale) @ coef``.

    ``features`` names the columns it was trained on (a subset of :data:`FEATURES`;
    the ablation model leaves the structure features out).
    """

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float = 0.0
    trained_on: tuple[str, ...] = ()
    calibration: Calibration | None = None

    def score(self, matrix: np.ndarray) -> np.ndarray:
        cols = [FEATURES.index(f) for f in self.features]
        x = (matrix[:, cols] - self.mean) / self.scale
        return x @ self.coef + self.intercept

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "format": MODEL_FORMAT,
            "features": list(self.features),
            "mean": [round(float(v), 8) for v in self.mean],
            "scale": [round(float(v), 8) for v in self.scale],
            "coef": [round(float(v), 8) for v in self.coef],
            "intercept": round(float(self.intercept), 8),
            "trained_on": list(self.trained_on),
        }
        if self.calibration is not None:
            out["calibration"] = self.calibration.to_json()
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> "RankerModel":
        features = _model_features(data, MODEL_FORMAT)
        arrays = [np.asarray(data[k], dtype=np.float64) for k in ("mean", "scale", "coef")]
        if any(a.shape != (len(features),) for a in arrays) or np.any(arrays[1] <= 0):
            raise ValueError("ranker model's mean, scale and coef must match its features")
        return cls(features, *arrays, intercept=float(data.get("intercept", 0.0)),  # type: ignore[arg-type]
                   trained_on=tuple(data.get("trained_on", ())),  # type: ignore[arg-type]
                   calibration=Calibration.from_json(data.get("calibration")))  # type: ignore[arg-type]

    @classmethod
    def load(cls, path: Path) -> "RankerModel":
        return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))


TREES_FORMAT = "arborgraph-ranker-trees/1"


@dataclass(frozen=True)
class TreeRankerModel:
    """A sum of regression trees over raw features (gradient-boosted, e.g. LambdaRank).

    Each tree is flat arrays: for an inner node, the feature column, the threshold
    (``x <= threshold`` goes left) and the two children; a negative child ``-(k+1)``
    is leaf ``k`` of that tree, whose value is added to the score.
    """

    features: tuple[str, ...]
    trees: tuple[dict[str, np.ndarray], ...]
    trained_on: tuple[str, ...] = ()
    calibration: Calibration | None = None

    def score(self, matrix: np.ndarray) -> np.ndarray:
        x = matrix[:, [FEATURES.index(f) for f in self.features]]
        total = np.zeros(len(x))
        rows = np.arange(len(x))
        for tree in self.trees:
            if tree["leaf_value"].size == 1 and tree["feature"].size == 0:
                total += tree["leaf_value"][0]
                continue
            node = np.zeros(len(x), dtype=np.int64)
            active = np.ones(len(x), dtype=bool)
            while active.any():
                at = node[active]
                go_left = x[rows[active], tree["feature"][at]] <= tree["threshold"][at]
                node[active] = np.where(go_left, tree["left"][at], tree["right"][at])
                active = node >= 0
            total += tree["leaf_value"][-node - 1]
        return total

    def most_used(self, top: int) -> list[str]:
        counts = np.bincount(np.concatenate([t["feature"] for t in self.trees] or [np.zeros(0, np.int64)]),
                             minlength=len(self.features))
        return [self.features[i] for i in np.argsort(-counts, kind="stable")[:top] if counts[i] > 0]

    def to_json(self) -> dict[str, object]:
        return {
            "format": TREES_FORMAT,
            "features": list(self.features),
            "trees": [
                {k: [round(float(v), 8) if k in ("threshold", "leaf_value") else int(v) for v in arr]
                 for k, arr in tree.items()}
                for tree in self.trees
            ],
            "trained_on": list(self.trained_on),
            **({"calibration": self.calibration.to_json()} if self.calibration is not None else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> "TreeRankerModel":
        features = _model_features(data, TREES_FORMAT)
        trees = []
        for raw in data["trees"]:  # type: ignore[union-attr]
            tree = {
                "feature": np.asarray(raw["feature"], dtype=np.int64),
                "threshold": np.asarray(raw["threshold"], dtype=np.float64),
                "left": np.asarray(raw["left"], dtype=np.int64),
                "right": np.asarray(raw["right"], dtype=np.int64),
                "leaf_value": np.asarray(raw["leaf_value"], dtype=np.float64),
            }
            inner, leaves = len(tree["feature"]), len(tree["leaf_value"])
            children = np.concatenate([tree["left"], tree["right"]])
            if (
                any(len(tree[k]) != inner for k in ("threshold", "left", "right"))
                or leaves != inner + 1
                or (inner and (tree["feature"].min() < 0 or tree["feature"].max() >= len(features)))
                or np.any(children >= inner) or np.any(children < -leaves)
            ):
                raise ValueError("ranker model has a malformed tree")
            trees.append(tree)
        return cls(features, tuple(trees), trained_on=tuple(data.get("trained_on", ())),  # type: ignore[arg-type]
                   calibration=Calibration.from_json(data.get("calibration")))  # type: ignore[arg-type]


AnyRanker = RankerModel | TreeRankerModel


def model_from_json(data: Mapping[str, object]) -> AnyRanker:
    """Either kind of ranker model, by its ``format``."""
    if data.get("format") == TREES_FORMAT:
        return TreeRankerModel.from_json(data)
    return RankerModel.from_json(data)


@lru_cache(maxsize=8)
def load_model(path: str | None = None) -> AnyRanker | None:
    """The ranker at ``path`` (default: the shipped one), read once per process;
    None when no model is shipped."""
    target = Path(path) if path else MODEL_FILE
    if not target.exists():
        if path:
            raise ValueError(f"ranker model {path} does not exist")
        return None
    return model_from_json(json.loads(target.read_text(encoding="utf-8")))


def rank(scores: np.ndarray) -> list[int]:
    """Candidate positions best first by their model ``scores``; ties keep the given order."""
    return np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable").tolist()


def explain_rows(model: AnyRanker, matrix: np.ndarray, top: int = 3) -> list[list[str]]:
    """For each candidate row of ``matrix``, the features that raised its score most,
    as 'name +contribution'.

    For a linear model a feature's contribution is its term of the sum; for trees, how
    much the score drops when that feature alone is set to the candidates' typical value
    is not defined without them, so the features the trees split on most are named."""
    if isinstance(model, TreeRankerModel):
        named = [f"{name} (split on)" for name in model.most_used(top)]
        return [list(named) for _ in range(len(matrix))]
    cols = [FEATURES.index(f) for f in model.features]
    contrib = (matrix[:, cols] - model.mean) / model.scale * model.coef
    best = np.argsort(-contrib, axis=1, kind="stable")[:, :top]  # equal contributions: the earlier feature
    return [
        [f"{model.features[i]} {row[i]:+.2f}" for i in picked if row[i] > 0]
        for row, picked in zip(contrib.tolist(), best.tolist(), strict=True)
    ]
