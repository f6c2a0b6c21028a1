"""Train the learned ranking stage and judge it only on manuals it never saw.

For every manual of role ``train`` in ``corpora.json`` that has an index and a question
set (``questions/NAME.jsonl``), each question's candidates and features are computed on
every route the index has, exactly as a query computes them
(:meth:`arborgraph.query.engine.QueryEngine.ranking_candidates`), and labelled by whether the
chunk holds one of the question's evidence strings. Then, leave one manual out: a
pairwise logistic model is trained on the other manuals' questions and scored on the
held-out one through the real query path (``kb.query`` with the fold's model), next to

- flat hybrid lookup (the reference every difference is taken against),
- ``auto`` and every route without the ranker (today's behaviour),
- the ablation: the same ranker trained without the structures' features, over hybrid's
  candidates only (``ranker:hybrid-only``), which shows what the tree and graph add.

Figures are given per manual and pooled over the folds, each with a paired bootstrap
interval against hybrid. The model trained on all the training manuals is shipped as
``arborgraph/data/ranker_model.json`` (with ``--ship``) and scored once on the manuals
of role ``eval`` (never trained or tuned on). Results go to
``benchmarks/results/ranker.json``.

    python benchmarks/train_ranker.py --indexes /work/idx [--ship] [--cache DIR]

where ``/work/idx/NAME`` is an index built from ``corpora.py``'s folder of that manual
(``arborgraph build /tmp/manuals/NAME --index /work/idx/NAME``).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import arborgraph  # noqa: E402
from arborgraph.query.evaluation import (  # noqa: E402
    REFERENCE_SYSTEM,
    Question,
    QuestionScore,
    SystemReport,
    _differences,
    _metrics,
    _run_system,
    load_questions,
    normalize,
)
from arborgraph.query.ranking import (  # noqa: E402
    FEATURES,
    FLAT_FEATURES,
    MODEL_FILE,
    AnyRanker,
    Calibration,
    RankerModel,
    TreeRankerModel,
    model_from_json,
)

QUESTIONS = ROOT / "benchmarks" / "questions"
CORPORA = ROOT / "benchmarks" / "corpora.json"
RESULTS = ROOT / "benchmarks" / "results" / "ranker.json"
BUDGET_WORDS = 1500
EVAL_TOP_K = 20  # the default top_k: 20 chunks hold more than the 1,500-word window
NEGATIVES_PER_POSITIVE = 20
SEED = 0
C = 1.0


@dataclass
class Group:
    """One question on one route: its candidates' features and labels."""

    qid: str
    qtype: str
    route: str
    chunk_ids: list[str]
    matrix: np.ndarray
    labels: np.ndarray  # evidence strings each candidate holds


def label_rows(texts: list[str], evidence: list[str]) -> np.ndarray:
    needles = [" " + normalize(e) + " " for e in evidence]
    out = np.zeros(len(texts), dtype=np.int64)
    for i, text in enumerate(texts):
        hay = " " + normalize(text) + " "
        out[i] = sum(n in hay for n in needles)
    return out


def collect(kb: arborgraph.KnowledgeBase, questions: list[Question]) -> list[Group]:
    groups = []
    for q in questions:
        for route in kb.index.routes:
            ids, matrix = kb.engine.ranking_candidates(q.question, route, top_k=EVAL_TOP_K)  # type: ignore[arg-type]
            texts = [kb.index.store.texts[kb.index.store.row_of[c]] for c in ids]
            groups.append(Group(q.id, q.type, route, ids, matrix, label_rows(texts, [e.text for e in q.evidence])))
    return groups


def save_groups(path: Path, groups: list[Group]) -> None:
    np.savez_compressed(
        path,
        meta=np.array(json.dumps([[g.qid, g.qtype, g.route, g.chunk_ids] for g in groups])),
        matrix=np.concatenate([g.matrix for g in groups]) if groups else np.zeros((0, len(FEATURES))),
        labels=np.concatenate([g.labels for g in groups]) if groups else np.zeros(0),
        features=np.array(json.dumps(list(FEATURES))),
    )


def load_groups(path: Path) -> list[Group] | None:
    data = np.load(path, allow_pickle=False)
    if json.loads(str(data["features"])) != list(FEATURES):
        return None  # features changed since the cache was written
    # each data[...] access decompresses the whole array again: read them once
    matrix, labels = data["matrix"], data["labels"]
    groups, at = [], 0
    for qid, qtype, route, ids in json.loads(str(data["meta"])):
        n = len(ids)
        groups.append(Group(qid, qtype, route, ids, matrix[at:at + n].copy(), labels[at:at + n].copy()))
        at += n
    return groups


def pairwise(groups: list[Group], features: tuple[str, ...], rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Differences (better - worse) within each group, both signs, for a logistic model."""
    cols = [FEATURES.index(f) for f in features]
    diffs = []
    for g in groups:
        pos = np.flatnonzero(g.labels > 0)
        neg = np.flatnonzero(g.labels == 0)
        if len(pos) == 0 or len(neg) == 0:
            continue
        x = g.matrix[:, cols]
        for p in pos:
            picks = rng.choice(neg, size=min(NEGATIVES_PER_POSITIVE, len(neg)), replace=False)
            diffs.append(x[p] - x[picks])
    d = np.concatenate(diffs)
    return np.concatenate([d, -d]), np.concatenate([np.ones(len(d)), np.zeros(len(d))])


def train(groups: list[Group], features: tuple[str, ...], trained_on: tuple[str, ...]) -> RankerModel:
    cols = [FEATURES.index(f) for f in features]
    stacked = np.concatenate([g.matrix[:, cols] for g in groups])
    mean = stacked.mean(axis=0)
    scale = stacked.std(axis=0)
    scale[scale < 1e-9] = 1.0
    x, y = pairwise(groups, features, np.random.default_rng(SEED))
    clf = LogisticRegression(C=C, fit_intercept=False, max_iter=2000)
    clf.fit(x / scale, y)
    return RankerModel(features, mean, scale, clf.coef_[0], trained_on=trained_on)


LGBM_PARAMS = {
    "objective": "lambdarank", "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 40,
    "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1, "lambdarank_truncation_level": 20,
    "deterministic": True, "num_threads": 1, "seed": SEED, "verbosity": -1,
}
LGBM_ROUNDS = 200


def train_lgbm(groups: list[Group], features: tuple[str, ...], trained_on: tuple[str, ...]) -> TreeRankerModel:
    """LambdaRank trees (LightGBM), exported to the ranker's own JSON tree format."""
    import lightgbm as lgb

    cols = [FEATURES.index(f) for f in features]
    useful = [g for g in groups if g.labels.max(initial=0) > 0]
    x = np.concatenate([g.matrix[:, cols] for g in useful])
    y = np.concatenate([np.minimum(g.labels, 4) for g in useful])
    data = lgb.Dataset(x, y, group=[len(g.labels) for g in useful], feature_name=list(features), free_raw_data=False)
    booster = lgb.train(LGBM_PARAMS, data, num_boost_round=LGBM_ROUNDS)
    return TreeRankerModel(features, tuple(_flatten(t["tree_structure"]) for t in booster.dump_model()["tree_info"]),
                           trained_on=trained_on)


def _flatten(root: dict) -> dict[str, np.ndarray]:
    """A LightGBM tree dump as the flat arrays of :class:`TreeRankerModel`."""
    if "split_index" not in root:
        return {k: np.zeros(0, dtype=np.int64) for k in ("feature", "left", "right")} | {
            "threshold": np.zeros(0), "leaf_value": np.array([root["leaf_value"]])}
    inner: dict[int, dict] = {}
    leaves: dict[int, float] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if "split_index" in node:
            if node.get("decision_type", "<=") != "<=":
                raise ValueError(f"unsupported split {node['decision_type']}")
            inner[node["split_index"]] = node
            stack += [node["left_child"], node["right_child"]]
        else:
            leaves[node["leaf_index"]] = node["leaf_value"]

    def ref(child: dict) -> int:
        return child["split_index"] if "split_index" in child else -(child["leaf_index"] + 1)

    order = sorted(inner)
    return {
        "feature": np.array([inner[i]["split_feature"] for i in order], dtype=np.int64),
        "threshold": np.array([inner[i]["threshold"] for i in order], dtype=np.float64),
        "left": np.array([ref(inner[i]["left_child"]) for i in order], dtype=np.int64),
        "right": np.array([ref(inner[i]["right_child"]) for i in order], dtype=np.int64),
        "leaf_value": np.array([leaves[k] for k in sorted(leaves)], dtype=np.float64),
    }


LEARNERS = {"linear": train, "lambdarank": train_lgbm}


def calibration_inputs(groups: list[Group], model: AnyRanker) -> tuple[np.ndarray, np.ndarray]:
    """Each candidate's calibration inputs under ``model``, and whether it holds evidence."""
    rows = [Calibration.inputs(model.score(g.matrix), g.matrix) for g in groups if len(g.labels)]
    labels = [g.labels > 0 for g in groups if len(g.labels)]
    return np.vstack(rows), np.concatenate(labels)


FOREIGN_QUESTIONS = 40  # other manuals' questions asked of each manual: its out-of-scope questions


def foreign_questions(questions: dict[str, list[Question]], manual: str, rng: np.random.Generator) -> list[Question]:
    """Questions of the other manuals, asked of ``manual``: questions it cannot answer
    (their evidence is elsewhere), so the calibration learns what a question out of
    the manual's scope looks like — not only questions that have an answer."""
    others = [q for n, qs in sorted(questions.items()) if n != manual for q in qs]
    picked = rng.choice(len(others), size=min(FOREIGN_QUESTIONS, len(others)), replace=False)
    return [others[i] for i in sorted(picked)]


def fit_calibration(held_out: dict[str, tuple[list[Group], AnyRanker]]) -> Calibration:
    """The logistic calibration of candidates scored by models that never saw their
    manual (each manual's groups, its own questions and other manuals', with its
    fold's model): what a user's manual gets."""
    inputs, labels = zip(*(calibration_inputs(groups, model) for groups, model in held_out.values()))
    fitted = LogisticRegression(C=C, max_iter=1000).fit(np.vstack(inputs), np.concatenate(labels))
    return Calibration(fitted.coef_[0].astype(np.float64), float(fitted.intercept_[0]))


def calibration_report(calibration: Calibration, scored: list[tuple[list[Group], AnyRanker]], bins: int = 10) -> dict:
    """How well the probabilities match what holds evidence (``scored``: groups and the
    model that scores them): the expected calibration error over ``bins`` equal-width
    bins, the Brier score, and the bins themselves."""
    parts = [calibration_inputs(groups, model) for groups, model in scored]
    inputs, labels = np.vstack([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    z = inputs @ calibration.coef + calibration.intercept
    probs = 1.0 / (1.0 + np.exp(-z))
    edges = np.minimum((probs * bins).astype(int), bins - 1)
    table, ece = [], 0.0
    for b in range(bins):
        inside = edges == b
        if inside.any():
            mean_p, rate = float(probs[inside].mean()), float(labels[inside].mean())
            ece += inside.mean() * abs(mean_p - rate)
            table.append({"bin": f"{b / bins:.1f}-{(b + 1) / bins:.1f}", "n": int(inside.sum()),
                          "mean_probability": round(mean_p, 4), "evidence_rate": round(rate, 4)})
    return {"candidates": int(len(labels)), "evidence_rate": round(float(labels.mean()), 4),
            "ece": round(ece, 4), "brier": round(float(np.mean((probs - labels) ** 2)), 4), "bins": table}


def window_recall(order: list[str], texts: dict[str, str], evidence: list[str]) -> float:
    """Evidence recall of chunks in ``order`` within the word window (no header)."""
    words: list[str] = []
    for cid in order:
        words.extend(normalize(texts[cid]).split())
        if len(words) >= BUDGET_WORDS:
            break
    hay = " " + " ".join(words[:BUDGET_WORDS]) + " "
    return sum((" " + normalize(e) + " ") in hay for e in evidence) / len(evidence)


def proxy(groups: list[Group], model: AnyRanker, texts: dict[str, str], evidence: dict[str, list[str]]) -> float:
    """Mean window recall over ``groups`` when their candidates are ordered by ``model``:
    the learners are compared on it without running queries."""
    values = []
    for g in groups:
        scores = model.score(g.matrix)
        order = [g.chunk_ids[i] for i in sorted(range(len(scores)), key=lambda i: (-scores[i], i))]
        values.append(window_recall(order, texts, evidence[g.qid]))
    return float(np.mean(values)) if values else 0.0


def choose_learner(groups: dict[str, list[Group]], names: list[str], texts: dict[str, dict[str, str]],
                   evidence: dict[str, list[str]]) -> tuple[str, dict[str, float]]:
    """The learner with the best proxy recall, leaving one of ``names`` out at a time
    (so a fold's choice never looks at its own held-out manual)."""
    if len(names) < 2:
        return "linear", {}
    scores = {}
    for learner, fit in LEARNERS.items():
        per = []
        for inner in names:
            rest = [g for n in names if n != inner for g in groups[n]]
            per.append(proxy(groups[inner], fit(rest, FEATURES, ()), texts[inner], evidence))
        scores[learner] = round(float(np.mean(per)), 4)
    return max(scores, key=lambda k: (scores[k], k == "linear")), scores


def systems_for(kb: arborgraph.KnowledgeBase, full: AnyRanker | None, ablation: AnyRanker | None) -> dict:
    header = kb.engine.config.retrieval.structure_header

    def routed(route: str, model: AnyRanker | None, structure_header: int = header):  # type: ignore[no-untyped-def]
        variant = kb.with_settings({"retrieval": {"structure_header": structure_header}}, ranker=model)

        def run(q: Question):  # type: ignore[no-untyped-def]
            res = variant.query(q.question, route=route, top_k=EVAL_TOP_K, budget_tokens=BUDGET_WORDS * 4)  # type: ignore[arg-type]
            return res.contexts, res.route

        return run

    def hybrid(q: Question):  # type: ignore[no-untyped-def]
        return kb.engine.lookup(q.question, mode="hybrid", top_k=EVAL_TOP_K), None

    systems = {REFERENCE_SYSTEM: hybrid, "auto:no-ranker": routed("auto", None)}
    if full is not None:
        systems["auto"] = routed("auto", full)
        # the structures' own context (summary, chain, report) left out: what it costs
        systems["auto:no-header"] = routed("auto", full, 0)
        for route in kb.index.routes:
            systems[route] = routed(route, full)
    if ablation is not None:
        systems["ranker:hybrid-only"] = routed("lookup", ablation)
    return systems


def score(kb: arborgraph.KnowledgeBase, questions: list[Question], full: AnyRanker | None,
          ablation: AnyRanker | None) -> dict[str, SystemReport]:
    reports = {
        name: _run_system(name, questions, fn, BUDGET_WORDS, judge_route=name.startswith("auto"))
        for name, fn in systems_for(kb, full, ablation).items()
    }
    for name, rep in reports.items():
        if name != REFERENCE_SYSTEM:
            rep.vs_reference = _differences(rep, reports[REFERENCE_SYSTEM])
    return reports


def pooled(per_manual: dict[str, dict[str, SystemReport]]) -> dict[str, SystemReport]:
    names = set.intersection(*(set(r) for r in per_manual.values()))
    out = {}
    for name in sorted(names):
        scores: list[QuestionScore] = [s for r in per_manual.values() for s in r[name].per_question]
        types = sorted({s.type for s in scores})
        out[name] = SystemReport(
            name=name, overall=_metrics(scores), by_type={t: _metrics([s for s in scores if s.type == t]) for t in types},
            latency_ms_p50=float(np.median([r[name].latency_ms_p50 for r in per_manual.values()])),
            per_question=scores,
        )
    for name, rep in out.items():
        if name != REFERENCE_SYSTEM:
            rep.vs_reference = _differences(rep, out[REFERENCE_SYSTEM])
    return out


def summary(reports: dict[str, SystemReport], per_question: bool = False) -> dict:
    """The figures of each system; with ``per_question``, each question's evidence
    found and total too, so that two runs can be compared question by question
    (benchmarks/compare_ranker_runs.py)."""
    return {
        name: {
            "overall": rep.overall.model_dump(),
            "by_type": {t: m.model_dump() for t, m in rep.by_type.items()},
            "vs_hybrid": {k: v.model_dump() for k, v in rep.vs_reference.items()},
            "latency_ms_p50": rep.latency_ms_p50,
            **({"per_question": [[s.id, s.type, s.found, s.total] for s in rep.per_question]} if per_question else {}),
        }
        for name, rep in reports.items()
    }


def per_question(reports: dict[str, SystemReport]) -> dict:
    return {name: {s.id: [s.found, s.total, s.type, s.route] for s in rep.per_question} for name, rep in reports.items()}


def table(title: str, reports: dict[str, SystemReport]) -> str:
    lines = [f"== {title}", f"{'system':22} {'overall':>8} {'lookup':>8} {'drill':>8} {'relat':>8} {'global':>8}   vs hybrid overall [95% CI]"]
    for name, rep in reports.items():
        cells = [rep.by_type[t].evidence_recall if t in rep.by_type else float('nan') for t in ("lookup", "drilldown", "relational", "global")]
        d = rep.vs_reference.get("overall")
        ci = f"{d.diff:+.3f} [{d.low:+.3f}, {d.high:+.3f}]" if d else ""
        lines.append(f"{name:22} {rep.overall.evidence_recall:8.3f} " + " ".join(f"{c:8.3f}" for c in cells) + f"   {ci}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--indexes", type=Path, required=True, help="folder holding one index per manual name")
    parser.add_argument("--cache", type=Path, default=None, help="folder for the per-manual feature caches")
    parser.add_argument("--ship", action="store_true", help=f"write the all-manuals model to {MODEL_FILE}")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--only", nargs="*", default=None, help="held-out folds to score (default: all)")
    parser.add_argument("--learner", choices=["choose", *LEARNERS], default="choose")
    parser.add_argument("--score-only", type=Path, default=None, metavar="MODEL",
                        help="skip the folds: score the eval-only manuals with this model (e.g. the shipped one)")
    parser.add_argument("--collect-only", action="store_true", help="only fill the feature caches")
    parser.add_argument("--corpora", type=Path, default=CORPORA, help="manual list with roles")
    parser.add_argument("--questions", type=Path, default=QUESTIONS, help="folder of NAME.jsonl question sets")
    args = parser.parse_args()
    specs = {k: v for k, v in json.loads(args.corpora.read_text()).items() if not k.startswith("_")}
    qdir = args.questions
    train_names = [n for n, s in specs.items() if s["role"] == "train"
                   and (args.indexes / n / "CURRENT").is_file() and (qdir / f"{n}.jsonl").exists()]
    eval_names = [n for n, s in specs.items() if s["role"] == "eval"
                  and (args.indexes / n / "CURRENT").is_file() and (qdir / f"{n}.jsonl").exists()]
    if args.only is not None and args.collect_only:
        train_names = [n for n in train_names if n in args.only]
    if len(train_names) < 2 and not args.collect_only:
        print(f"need at least two training manuals with an index and questions; have {train_names}", file=sys.stderr)
        return 2
    started = time.time()
    kbs = {n: arborgraph.open(args.indexes / n) for n in train_names + eval_names}
    questions = {n: load_questions(qdir / f"{n}.jsonl") for n in train_names + eval_names}
    groups: dict[str, list[Group]] = {}
    for n in train_names:
        cache = args.cache / f"{n}.npz" if args.cache else None
        loaded = load_groups(cache) if cache and cache.exists() else None
        if loaded is None:
            loaded = collect(kbs[n], questions[n])
            if cache:
                cache.parent.mkdir(parents=True, exist_ok=True)
                save_groups(cache, loaded)
        groups[n] = loaded
        print(f"{n}: {len(questions[n])} questions, {len(loaded)} groups", file=sys.stderr, flush=True)
    if args.collect_only:
        return 0

    # chunk ids repeat across manuals (index.html#0): texts are looked up per manual
    texts = {n: {c: kbs[n].index.store.texts[kbs[n].index.store.row_of[c]] for g in groups[n] for c in g.chunk_ids}
             for n in train_names}
    evidence = {q.id: [e.text for e in q.evidence] for n in train_names for q in questions[n]}
    folds: dict[str, dict[str, SystemReport]] = {}
    models: dict[str, dict] = {}
    fold_full: dict[str, AnyRanker] = {}
    choices: dict[str, dict] = {}
    for held in train_names:
        if (args.only and held not in args.only) or args.score_only:
            continue
        rest = [n for n in train_names if n != held]
        learner, proxies = choose_learner(groups, rest, texts, evidence) if args.learner == "choose" else (args.learner, {})
        fit = LEARNERS[learner]
        train_groups = [g for n in rest for g in groups[n]]
        full = fit(train_groups, FEATURES, tuple(rest))
        ablation = fit([g for g in train_groups if g.route == "lookup"], FLAT_FEATURES, tuple(rest))
        choices[held] = {"learner": learner, "inner_proxy_recall": proxies,
                         "held_out_proxy_recall": round(proxy(groups[held], full, texts[held], evidence), 4)}
        print(f"fold {held}: {choices[held]}", file=sys.stderr, flush=True)
        models[held] = {"full": full.to_json(), "hybrid_only": ablation.to_json()}
        fold_full[held] = full
        folds[held] = score(kbs[held], questions[held], full, ablation)
        print(table(f"held out: {held}", folds[held]), file=sys.stderr, flush=True)
    pool = pooled(folds) if folds else {}
    if pool:
        print(table("pooled over the held-out folds", pool), file=sys.stderr, flush=True)

    all_groups = [g for n in train_names for g in groups[n]]
    final_learner, final_proxies = (
        choose_learner(groups, train_names, texts, evidence) if args.learner == "choose" else (args.learner, {})
    )
    final = (model_from_json(json.loads(args.score_only.read_text())) if args.score_only
             else LEARNERS[final_learner](all_groups, FEATURES, tuple(train_names)))
    final_ablation = LEARNERS[final_learner]([g for g in all_groups if g.route == "lookup"], FLAT_FEATURES,
                                             tuple(train_names))
    calibration, calibrated = None, {}
    if fold_full and not args.score_only:
        rng = np.random.default_rng(SEED)
        foreign: dict[str, list[Group]] = {}
        for n in fold_full:
            cache = args.cache / f"{n}.foreign.npz" if args.cache else None
            loaded = load_groups(cache) if cache and cache.exists() else None
            if loaded is None:
                loaded = collect(kbs[n], foreign_questions({m: questions[m] for m in train_names}, n, rng))
                if cache:
                    save_groups(cache, loaded)
            foreign[n] = loaded
        # fitted on every training manual's candidates (its own questions and other
        # manuals'), each scored by the fold model that never saw that manual
        calibration = fit_calibration({n: (groups[n] + foreign[n], m) for n, m in fold_full.items()})
        calibrated["foreign_questions_top1"] = {
            n: round(float(np.mean([calibration.probabilities(m.score(g.matrix), g.matrix).max()
                                    for g in foreign[n] if len(g.labels)])), 4)
            for n, m in fold_full.items()
        }
        calibrated["own_questions_top1"] = {
            n: round(float(np.mean([calibration.probabilities(m.score(g.matrix), g.matrix).max()
                                    for g in groups[n] if len(g.labels)])), 4)
            for n, m in fold_full.items()
        }
        final = dataclasses.replace(final, calibration=calibration)
        calibrated["held_out_folds"] = calibration_report(calibration, [(groups[n], m) for n, m in fold_full.items()])
        for n in eval_names:  # never trained or fitted on
            calibrated[n] = calibration_report(calibration, [(collect(kbs[n], questions[n]), final)])
    unseen = {}
    for n in eval_names:
        unseen[n] = score(kbs[n], questions[n], final, final_ablation)
        print(table(f"eval-only manual (never trained on): {n}", unseen[n]), file=sys.stderr, flush=True)
    if args.ship and not args.score_only:
        MODEL_FILE.write_text(json.dumps(final.to_json(), indent=1) + "\n")
    result = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "load_avg_at_start": os.getloadavg(),
        "seconds": round(time.time() - started, 1),
        "budget_words": BUDGET_WORDS,
        "train_manuals": train_names,
        "eval_manuals": eval_names,
        "questions": {n: len(q) for n, q in questions.items()},
        "learners": {
            "linear": "pairwise logistic regression over standardised features "
                      f"(C={C}, {NEGATIVES_PER_POSITIVE} negatives per positive, seed {SEED})",
            "lambdarank": f"LightGBM LambdaRank, {LGBM_ROUNDS} rounds, {LGBM_PARAMS}",
        },
        "learner_choice": "per fold, the learner with the best window recall (candidates ordered by the model, "
                          "no header) leaving one of the fold's training manuals out at a time",
        "fold_learners": choices,
        "final_learner": {"learner": final_learner, "inner_proxy_recall": final_proxies},
        "folds": {n: summary(r, per_question=True) for n, r in folds.items()},
        # each question's evidence found / total and route, per fold and system: what a
        # paired comparison of two runs (benchmarks/compare_rankings.py) reads
        "per_question": {n: per_question(r) for n, r in {**folds, **unseen}.items()},
        "pooled": summary(pool),
        "eval_only": {n: summary(r, per_question=True) for n, r in unseen.items()},
        "calibration": {
            "inputs": "the model score, the question's best candidate cosine and best idf-weighted term cover",
            "fitted_on": "the training manuals' candidates, each scored by the fold model that never saw its manual",
            "reports": calibrated,
        },
        "final_model": final.to_json(),
        "fold_models": models,
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
