"""Train the digests' sentence scorer and choose each route's digest plan, leave one manual out.

For every manual with an index and a question set, each question is asked on every
route the index has through the real query path (``kb.query``, a wide pool, no budget
cut) and ``auto``'s route is noted; the candidates are cached (``--cache``). Each
candidate sentence (:func:`arborgraph.query.digest.candidate_sentences`) is labelled by
whether it holds one of the question's evidence strings (or is part of a longer one):
the question sets' evidence strings are sentences, so the labels come free.

Then, for each manual of role ``train`` held out in turn, a logistic model is trained
on the other training manuals' sentences and every digest plan (passages kept whole,
passages drawn from) is scored on the held-out manual: each route's recall at
``--budget-words`` against the same route's whole passages, per question type, with a
paired bootstrap interval, and auto (each question on the route the router gave it).
The plan per route is chosen on the pooled folds; with ``--ship`` the model trained on
every training manual goes to ``arborgraph/data/sentence_model.json``. Manuals of role
``eval`` are scored once with the shipped model and plans, never trained or tuned on.
Results: ``benchmarks/results/sentence_scorer.json``.

    python benchmarks/train_sentence_scorer.py --indexes /work/idx --cache /tmp/sentcands [--ship]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import arborgraph  # noqa: E402
from arborgraph.core.results import Context  # noqa: E402
from arborgraph.query.digest import (  # noqa: E402
    FEATURES,
    MODEL_FILE,
    DigestPlan,
    SentenceScorer,
    candidate_sentences,
    highlights,
    pack,
    sentence_features,
)
from arborgraph.query.compose import assemble  # noqa: E402
from arborgraph.query.settings import DEFAULT_BUDGET_TOKENS, DEFAULT_TOP_K  # noqa: E402
from arborgraph.query.evaluation import load_questions, normalize, paired_bootstrap, score_contexts  # noqa: E402

QUESTIONS = ROOT / "benchmarks" / "questions"
CORPORA = ROOT / "benchmarks" / "corpora.json"
RESULTS = ROOT / "benchmarks" / "results" / "sentence_scorer.json"
ROUTES = ("lookup", "tree", "graph", "global")
POOL_TOP_K = 60
EVAL_TOP_K = 100  # as arborgraph eval asks
BUDGET_TOKENS = 6000  # as arborgraph eval asks: the word window is the cut
PLANS = [DigestPlan(w, p) for w in (2, 3, 4, 5) for p in (8, 16)]
# today's whole passages: the digest is what is being chosen
WHOLE = {"retrieval": {"digest": False}}
C = 1.0
SEED = 0


def harvest(kb: arborgraph.KnowledgeBase, name: str, cache: Path) -> dict:
    """Each question's candidates on every route, and auto's route (cached)."""
    path = cache / f"{name}.json"
    if path.exists():
        return json.loads(path.read_text())
    questions = load_questions(QUESTIONS / f"{name}.jsonl")
    out: dict = {"questions": []}
    for q in questions:
        item = {"id": q.id, "type": q.type, "question": q.question, "evidence": [e.text for e in q.evidence], "routes": {}}
        item["auto"] = kb.query(q.question, top_k=1, settings=WHOLE).route
        for route in kb.index.routes:
            res = kb.query(q.question, route=route, top_k=POOL_TOP_K, budget_tokens=10**7, settings=WHOLE)
            item["routes"][route] = [c.to_dict() for c in res.contexts]
        out["questions"].append(item)
    cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out))
    return out


def holds_evidence(sentence: str, evidence: Sequence[str]) -> bool:
    """The sentence holds an evidence string, or is (five words or more) part of one."""
    hay = " " + normalize(sentence) + " "
    words = len(hay.split())
    return any((needle := " " + normalize(e) + " ") in hay or (words >= 5 and hay in needle) for e in evidence)


def labels_for(passages: Sequence[Context], sentences, evidence: Sequence[str]) -> np.ndarray:
    return np.array([holds_evidence(passages[s.passage].text[s.start : s.end], evidence) for s in sentences],
                    dtype=np.int64)


class Item:
    """One question on one route: passages, sentences (of the widest plan), features, labels."""

    def __init__(self, manual: str, q: dict, route: str, widest: int) -> None:
        self.manual, self.qid, self.qtype, self.route = manual, q["id"], q["type"], route
        self.evidence = q["evidence"]
        self.auto = q["auto"]
        self.passages = [Context.model_validate(c) for c in q["routes"][route]]
        self.sentences = candidate_sentences(self.passages, 0, widest)
        self.matrix = sentence_features(q["question"], self.passages, self.sentences)
        self.labels = labels_for(self.passages, self.sentences, self.evidence)
        self.question = q["question"]

    def plan_rows(self, plan: DigestPlan) -> np.ndarray:
        lo, hi = plan.whole_first, plan.whole_first + plan.passages
        return np.array([i for i, s in enumerate(self.sentences) if lo <= s.passage < hi], dtype=np.int64)


def train(items: Sequence[Item]) -> SentenceScorer:
    x = np.concatenate([i.matrix for i in items]).astype(np.float64)
    y = np.concatenate([i.labels for i in items])
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    clf = LogisticRegression(C=C, max_iter=3000, class_weight="balanced")
    clf.fit((x - mean) / scale, y)
    return SentenceScorer(FEATURES, mean, scale, clf.coef_[0], float(clf.intercept_[0]))


def recall(contexts: Sequence[Context], evidence: Sequence[str], budget_words: int) -> float:
    found, _ = score_contexts(contexts, evidence, budget_words)
    return found / len(evidence)


def digest_recall(item: Item, scorer: SentenceScorer, plan: DigestPlan, budget_words: int, count) -> float:
    if plan is None:
        return recall(item.passages, item.evidence, budget_words)
    rows = item.plan_rows(plan)
    if len(rows) == 0:
        return recall(item.passages, item.evidence, budget_words)
    sentences = [item.sentences[r] for r in rows]
    scores = scorer.score(item.matrix[rows])
    packed = pack(item.passages, sentences, scores, plan, BUDGET_TOKENS, count, EVAL_TOP_K)
    return recall(packed, item.evidence, budget_words)


def interval(a: Sequence[float], b: Sequence[float]) -> dict:
    diff, low, high = paired_bootstrap(a, b)
    return {"new": round(float(np.mean(a)), 4), "old": round(float(np.mean(b)), 4), "diff": diff, "low": low, "high": high}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--indexes", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--budget-words", type=int, default=1500)
    parser.add_argument("--ship", action="store_true")
    parser.add_argument("--harvest-only", action="store_true", help="cache the candidates of the indexes there are, then stop")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    started = time.time()
    specs = {k: v for k, v in json.loads(CORPORA.read_text()).items() if not k.startswith("_")}
    widest = max(p.whole_first + p.passages for p in PLANS)
    from ingest import load_token_counter

    count = load_token_counter()
    items: dict[str, list[Item]] = {}
    for name, spec in specs.items():
        index = args.indexes / name
        if not (index / "CURRENT").exists() or not (QUESTIONS / f"{name}.jsonl").exists():
            print(f"{name}: no index or questions, skipped", file=sys.stderr)
            continue
        kb = arborgraph.open(index)
        try:
            data = harvest(kb, name, args.cache)
        finally:
            kb.close()
        items[name] = [Item(name, q, r, widest) for q in data["questions"] for r in q["routes"]]
        print(f"{name}: {len(data['questions'])} questions harvested", file=sys.stderr)
    if args.harvest_only:
        return 0
    train_names = [n for n in items if specs[n]["role"] == "train"]
    eval_names = [n for n in items if specs[n]["role"] == "eval"]

    # leave one manual out: each fold's model, every plan, every route
    fold_scores: dict[str, dict[str, list[float]]] = {}  # "route|plan" -> per item recall, pooled in order
    pooled_keys: list[tuple[str, str, str]] = []  # (manual, qid, type) per route item, in order
    per_route_items: dict[str, list[Item]] = {r: [] for r in ROUTES}
    for held in train_names:
        scorer = train([i for n in train_names if n != held for i in items[n]])
        for item in items[held]:
            per_route_items[item.route].append(item)
            for plan in [None, *PLANS]:
                key = f"{item.route}|{plan}"
                fold_scores.setdefault(key, []).append(digest_recall(item, scorer, plan, args.budget_words, count))
    folds: dict[str, dict] = {}
    chosen: dict[str, DigestPlan | None] = {}
    for route in ROUTES:
        route_items = per_route_items[route]
        if not route_items:
            continue
        old = fold_scores[f"{route}|None"]
        table = {}
        for plan in PLANS:
            new = fold_scores[f"{route}|{plan}"]
            by_type = {}
            for qtype in sorted({i.qtype for i in route_items}):
                idx = [k for k, i in enumerate(route_items) if i.qtype == qtype]
                by_type[qtype] = interval([new[k] for k in idx], [old[k] for k in idx])
            table[f"whole {plan.whole_first}, passages {plan.passages}"] = {
                "overall": interval(new, old), "by_type": by_type
            }
        best = max(PLANS, key=lambda p: (np.mean(fold_scores[f"{route}|{p}"]), -p.passages))
        # a gain inside the paired interval is no gain: the route keeps whole passages
        low = paired_bootstrap(fold_scores[f"{route}|{best}"], old)[1]
        chosen[route] = best if low > 0 else None
        folds[route] = {"plans": table, "chosen": None if chosen[route] is None else vars(best)}
    # auto: each question on the route the router gave it, digest where chosen
    result: dict = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "load_avg_at_start": os.getloadavg()[0],
        "budget_words": args.budget_words,
        "budget_tokens": BUDGET_TOKENS,
        "train_manuals": train_names,
        "eval_manuals": eval_names,
        "features": list(FEATURES),
        "folds": folds,
    }

    def highlight_table(names: Sequence[str], scorer_for) -> dict:
        """How often the extractive answer's first sentence holds evidence, on auto's
        route at the default budget; beside it, the first sentence of the first context."""
        hits, any_hits, first_hits, n = 0, 0, 0, 0
        for name in names:
            scorer = scorer_for(name)
            for item in items[name]:
                if item.route != item.auto:
                    continue
                # what a query keeps at the default settings
                shown, _ = assemble(item.passages, DEFAULT_BUDGET_TOKENS, DEFAULT_TOP_K, lambda c: count(c.text))
                picked = highlights(item.question, shown, scorer)
                lead = candidate_sentences(shown, 0, len(shown))
                n += 1
                hits += bool(picked) and holds_evidence(picked[0].text, item.evidence)
                any_hits += any(holds_evidence(h.text, item.evidence) for h in picked)
                first_hits += bool(lead) and holds_evidence(shown[lead[0].passage].text[lead[0].start : lead[0].end], item.evidence)
        return {"questions": n, "first_highlight_holds_evidence": round(hits / max(n, 1), 4),
                "a_highlight_holds_evidence": round(any_hits / max(n, 1), 4),
                "first_sentence_of_first_context": round(first_hits / max(n, 1), 4)}

    def auto_table(names: Sequence[str], scorer_for) -> dict:
        new, old, types = [], [], []
        for name in names:
            scorer = scorer_for(name)
            for item in items[name]:
                if item.route != item.auto:
                    continue
                plan = chosen.get(item.route)
                old.append(recall(item.passages, item.evidence, args.budget_words))
                new.append(digest_recall(item, scorer, plan, args.budget_words, count) if plan else old[-1])
                types.append(item.qtype)
        out = {"overall": interval(new, old)}
        for qtype in sorted(set(types)):
            idx = [k for k, t in enumerate(types) if t == qtype]
            out[qtype] = interval([new[k] for k in idx], [old[k] for k in idx])
        return out

    fold_models = {h: train([i for n in train_names if n != h for i in items[n]]) for h in train_names}
    result["auto_folds"] = auto_table(train_names, lambda n: fold_models[n])
    result["highlights_folds"] = highlight_table(train_names, lambda n: fold_models[n])
    final = train([i for n in train_names for i in items[n]])
    result["model"] = final.to_json()
    result["plans"] = {r: (None if p is None else vars(p)) for r, p in chosen.items()}
    if eval_names:
        result["auto_eval"] = {n: auto_table([n], lambda _: final) for n in eval_names}
        result["highlights_eval"] = {n: highlight_table([n], lambda _: final) for n in eval_names}
    if args.ship:
        MODEL_FILE.write_text(json.dumps({**final.to_json(), "plans": result["plans"],
                                          "trained_on": train_names}, indent=1) + "\n")
    result["seconds"] = round(time.time() - started, 1)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result.get(k) for k in ("plans", "auto_folds", "auto_eval", "highlights_folds", "highlights_eval")}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
