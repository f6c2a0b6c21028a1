"""Train the query router and report its accuracy on questions it never saw.

Training data: labelled router questions over the SQLite and Python manuals.
Held back: every question over the git manual (a manual the router never saw) and the
SQLite evaluation questions (``sqlite.jsonl``). Writes the model as JSON coefficients
to ``arborgraph/data/router_model.json`` and the figures to
``benchmarks/results/router.json``.

    python benchmarks/train_router.py
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np
from sklearn.feature_extraction import DictVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arborgraph.router import MODEL_FILE, RouterModel, question_features  # noqa: E402

QUESTIONS = ROOT / "benchmarks" / "questions"
TRAIN = [
    "sqlite_router.jsonl",
    "python_router.jsonl",
    "postgres_router.jsonl",
    "linux_router.jsonl",
    "python2_router.jsonl",
    "sqlite2_router.jsonl",
    "nginx_router.jsonl",
]
HELD_OUT = {"git manual (unseen manual)": "git_router.jsonl", "sqlite eval set": "sqlite.jsonl"}
SEED = 0


def read(name: str) -> list[dict]:
    return [json.loads(line) for line in (QUESTIONS / name).read_text().splitlines() if line.strip()]


def main() -> None:
    train = [q for name in TRAIN for q in read(name)]
    X_dicts = [question_features(q["question"]) for q in train]
    y = [q["type"] for q in train]
    vectorizer = DictVectorizer(sort=True)
    X = vectorizer.fit_transform(X_dicts)

    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=SEED)
    best_c, best_score = 1.0, -1.0
    cv_scores = {}
    for c in (0.3, 1.0, 3.0, 10.0, 30.0):
        clf = LogisticRegression(C=c, max_iter=5000, random_state=SEED)
        score = float(np.mean(cross_val_score(clf, X, y, cv=folds)))
        cv_scores[str(c)] = round(score, 4)
        if score > best_score:
            best_c, best_score = c, score
    clf = LogisticRegression(C=best_c, max_iter=5000, random_state=SEED).fit(X, y)

    model = RouterModel(
        classes=list(clf.classes_),
        vocabulary={f: i for i, f in enumerate(vectorizer.get_feature_names_out())},
        coef=clf.coef_,
        intercept=clf.intercept_,
        meta={
            "trained_on": TRAIN,
            "examples": len(train),
            "C": best_c,
            "trained_at": dt.date.today().isoformat(),
        },
    )
    out = ROOT / "arborgraph" / "data" / MODEL_FILE
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(model.to_json(), indent=1) + "\n")

    held: dict[str, dict] = {}
    for label, name in HELD_OUT.items():
        questions = read(name)
        predicted = [max(model.probabilities(q["question"]).items(), key=lambda kv: kv[1])[0] for q in questions]
        correct = [p == q["type"] for p, q in zip(predicted, questions)]
        confusion = Counter((q["type"], p) for p, q in zip(predicted, questions) if p != q["type"])
        held[label] = {
            "questions": len(questions),
            "accuracy": round(sum(correct) / len(correct), 4),
            "errors": {f"{a}->{b}": n for (a, b), n in sorted(confusion.items())},
        }
    result = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "train_examples": len(train),
        "cv_accuracy_by_C": cv_scores,
        "chosen_C": best_c,
        "held_out": held,
    }
    results = ROOT / "benchmarks" / "results" / "router.json"
    results.parent.mkdir(exist_ok=True)
    results.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
