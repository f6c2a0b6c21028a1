"""The evaluation harness: evidence matching in the word window, and the intervals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arborgraph.query.evaluation import evaluate, format_report, load_questions, paired_bootstrap, score_contexts
from arborgraph.core.results import Context


def _ctx(text: str, n: int) -> Context:
    return Context(text=text, source="doc.md", node_id=f"doc.md#{n}")


def test_evidence_counts_only_inside_the_word_window() -> None:
    contexts = [
        _ctx("The default page size is 4096 bytes.", 0),
        _ctx("filler " * 20, 1),
        _ctx("WAL mode: readers do not block writers.", 2),
    ]
    evidence = ["default PAGE-size is 4096", "readers do not block writers", "not there at all"]
    # normalised (case, punctuation) and located in the context that holds it
    assert score_contexts(contexts, evidence, budget_words=1000) == (2, 1)
    # the window ends inside the filler: the WAL sentence is past it
    assert score_contexts(contexts, evidence, budget_words=25) == (1, 1)
    # a match must be whole words, and must not run past the window's last word
    assert score_contexts([_ctx("walking", 0)], ["wal"], 10) == (0, None)
    assert score_contexts(contexts[2:], ["readers do not block writers"], 5) == (0, None)
    assert score_contexts(contexts[1:], ["readers do not block"], 1000) == (1, 2)


def test_paired_bootstrap_interval() -> None:
    same = [0.5, 1.0, 0.0, 0.25] * 5
    assert paired_bootstrap(same, same) == (0.0, 0.0, 0.0)
    better = [min(1.0, v + 0.25) for v in same]
    diff, low, high = paired_bootstrap(better, same)
    assert diff == pytest.approx(0.1875) and 0 < low <= diff <= high
    # one question out of twenty moving is not a difference the interval can vouch for
    noisy = list(same)
    noisy[0] = 1.0
    diff, low, high = paired_bootstrap(noisy, same)
    assert diff == pytest.approx(0.025) and low == 0.0 < high
    assert paired_bootstrap(better, same, seed=3) == paired_bootstrap(better, same, seed=3)
    with pytest.raises(ValueError):
        paired_bootstrap([1.0], [1.0, 0.0])


def test_eval_reports_differences_against_hybrid(sample_kb, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # evidence from the slice's own text, so that every system can find some of it
    store = sample_kb.index.store
    rows = []
    for i, kind in enumerate(["lookup", "drilldown", "relational", "global"] * 2):
        words = store.texts[i * 7].split()
        rows.append({
            "id": f"q{i}", "type": kind, "question": " ".join(words[:12]),
            "evidence": [{"text": " ".join(words[2:9])}],
        })
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    report = evaluate(sample_kb, load_questions(path), systems=["lookup", "baseline:bm25", "baseline:hybrid"])
    assert report.systems["baseline:hybrid"].vs_reference == {}
    for name in ("lookup", "baseline:bm25"):
        vs = report.systems[name].vs_reference
        assert set(vs) == {"lookup", "drilldown", "relational", "global", "overall"}
        overall = vs["overall"]
        assert overall.reference == "baseline:hybrid" and overall.low <= overall.diff <= overall.high
        expected = report.systems[name].overall.evidence_recall - report.systems["baseline:hybrid"].overall.evidence_recall
        assert overall.diff == pytest.approx(expected, abs=1e-3)
    text = format_report(report)
    assert "recall minus baseline:hybrid's, 95% paired bootstrap interval" in text
    assert any(line.startswith("baseline:bm25") and "[" in line for line in text.splitlines())
