"""A one-off `arborgraph query` on a real index imports what its route uses and no
more, and its BM25 scores, read with numpy, are bm25s's own bit for bit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import bm25s
import numpy as np
import pytest

from arborgraph.core.lexical import LexicalIndex
from arborgraph.core.text import analyse

ROOT = Path(__file__).resolve().parents[2]
# imported by builds (UMAP, bm25s's indexing), exports or notebooks, never by a question
BUILD_ONLY = {"numba", "llvmlite", "bm25s", "sklearn", "umap", "pynndescent", "torch", "tqdm", "yaml", "pyarrow.dataset"}
ASK = """
import json, sys
from arborgraph.cli import app
try:
    app(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


@pytest.mark.parametrize("route", ["auto", "lookup", "tree", "graph", "global"])
def test_a_query_imports_nothing_a_build_needs(sample_index: Path, route: str) -> None:
    run = subprocess.run(
        [sys.executable, "-c", ASK, "query", "--index", str(sample_index), "How does the busy timeout work?",
         "--route", route, "--json"],
        capture_output=True, text=True, timeout=300,
    )
    report = json.loads(run.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None), run.stderr[-2000:]
    if route != "auto":
        assert json.loads(run.stdout)["route"] == route
    assert not BUILD_ONLY & set(report["modules"]), sorted(BUILD_ONLY & set(report["modules"]))


def _questions() -> list[str]:
    lines = (ROOT / "benchmarks" / "questions" / "sqlite.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()]


def test_the_index_s_bm25_scores_are_bm25s_s(sample_index: Path) -> None:
    """Every BM25 index of a real build (the chunks', each tree's), every sample question."""
    directories = sorted(p.parent for p in sample_index.rglob("params.index.json"))
    assert any(d.name == "chunks" for d in directories)
    for directory in directories:
        ours, reference = LexicalIndex.load(directory), bm25s.BM25.load(str(directory), mmap=True)
        for question in _questions():
            tokens = analyse(question)
            expected = np.asarray(reference.get_scores(tokens), dtype=np.float32)
            assert ours.scores(question).tobytes() == expected.tobytes(), (directory.name, question)
