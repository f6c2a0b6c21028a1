"""Tool results cut to a budget: sizes, order and paging on hand-made results."""

from __future__ import annotations

from arborgraph.service.compact import ELLIPSIS, clip, compact_json, compact_search, document_page


def _result(n: int, length: int) -> dict:
    return {
        "question": "How do checkpoints work?", "route": "lookup", "generation": "gen-000001",
        "routing": {"route": "lookup", "reason": "a lookup question", "confidence": 0.9},
        "contexts": [
            {"source": f"page{i}.md", "heading_path": ["Page", f"Part {i}"], "kind": "chunk", "node_id": f"page{i}.md#0",
             "score": 1 - i / 100, "text": f"Passage {i}. " + "checkpoint " * (length // 11), "trace": ["x" * 300]}
            for i in range(n)
        ],
    }


def test_a_search_fits_its_budget_best_first() -> None:
    out = compact_search(_result(20, 2000), max_chars=8000)
    assert len(compact_json(out)) <= 8000
    assert [c["n"] for c in out["contexts"]] == list(range(1, len(out["contexts"]) + 1))
    assert len(out["contexts"]) >= 5 and all(c["text"].endswith(ELLIPSIS) for c in out["contexts"])
    assert "left out" in out["more"] and "trace" not in compact_json(out)
    assert out["reason"] == "a lookup question" and out["contexts"][0]["section"] == "Page > Part 0"


def test_a_small_result_comes_back_whole() -> None:
    out = compact_search(_result(3, 200), max_chars=8000)
    assert len(out["contexts"]) == 3 and "more" not in out
    assert not any(c["text"].endswith(ELLIPSIS) for c in out["contexts"])


def test_clip_cuts_at_a_word() -> None:
    assert clip("write ahead logging", 100) == "write ahead logging"
    assert clip("write ahead logging", 14) == "write ahead" + ELLIPSIS


def test_pages_of_a_document_cover_every_passage_once() -> None:
    doc = {"doc_id": "wal.md", "title": "WAL", "passages": [
        {"chunk_id": f"wal.md#{i}", "heading_path": ["WAL"], "text": "frames " * 300} for i in range(12)
    ]}
    seen, offset = [], 0
    while offset is not None:
        page = document_page(doc, offset, max_chars=6000)
        assert len(compact_json(page)) <= 6000 and page["passages_total"] == 12
        seen += [p["chunk_id"] for p in page["passages"]]
        offset = page["next_offset"]
    assert seen == [f"wal.md#{i}" for i in range(12)]


def test_a_search_without_an_llm_answer_carries_the_highlights_citing_contexts() -> None:
    result = _result(3, 200) | {
        "answer": None,
        "highlights": [{"text": "Passage 1.", "context": 2, "source": "page1.md", "node_id": "page1.md#0",
                        "heading_path": [], "score": 0.7}],
    }
    out = compact_search(result, max_chars=8000)
    assert out["highlights"] == [{"n": 2, "text": "Passage 1."}]
    assert "highlights" not in compact_search(result | {"answer": "It is [2]."}, max_chars=8000)
