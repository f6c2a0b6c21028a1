"""Builds over collections a careless operator or a hostile user might hand in: files
with no searchable word, special files, an update over them. Real builds, real queries."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import arborgraph
from arborgraph.core.lexical import LexicalIndex
from arborgraph.pipeline import build_index
from graphrag.chunks import doc_of

ROUTES = ["lookup", "tree", "graph", "global", "auto"]
REPO = Path(__file__).resolve().parents[2]
# named with stop words too: a file's name can be its title, which is indexed with its text
WORDLESS = {"a.md": "the and of a it is\n", "it.md": "!!! ??? ... --\n", "the.md": "# The\n"}


def test_a_corpus_without_terms_scores_zero() -> None:
    for texts in (["the and of a it is", "!!! ???"], []):
        index = LexicalIndex.build(texts)
        assert index.scores("hello the world").tolist() == [0.0] * len(texts)


@pytest.mark.parametrize("with_words", [False, True], ids=["alone", "beside-a-manual-page"])
def test_documents_without_searchable_words_do_not_stop_the_build(
    tmp_path: Path, sample_slice: Path, with_words: bool
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in WORDLESS.items():
        (docs / name).write_text(text)
    # a scope of its own holding only wordless text (its tree and BM25 have no term)
    (docs / "is.md").write_text("---\nacl: [team-a]\n---\nthe and of a it is\n\n!!! ???\n")
    if with_words:
        shutil.copy(sample_slice / "wal.md", docs / "wal.md")
    report = build_index([docs], tmp_path / "idx")
    assert not report.skipped
    kb = arborgraph.open(tmp_path / "idx")
    for route in ROUTES:
        for principal in (None, "team-a"):
            result = kb.query("How does a checkpoint work?", route=route, principal=principal)
            for ctx in result.contexts:
                # a passage names its page; a summary or report is grounded in pages of the collection
                pages = [ctx.source] if ctx.kind == "chunk" else [doc_of(c) for c in ctx.provenance]
                assert set(pages) <= {*WORDLESS, "is.md", "wal.md"}, (route, ctx.source, pages)
                if principal is None:
                    assert "is.md" not in pages
    if with_words:
        assert any(c.source == "wal.md" for c in kb.query("WAL checkpoint", route="lookup").contexts)


UPDATE_OVER_SPECIAL_FILES = """
import os, sys
from pathlib import Path
from arborgraph.config import load_config
from arborgraph.pipeline import build_index
docs, index = Path(sys.argv[1]), Path(sys.argv[2])
config = load_config(overrides={"build_tree": False, "build_graph": False})
build_index([docs], index, config)
os.mkfifo(docs / "f.md")
(docs / "z.md").symlink_to("/dev/zero")
report = build_index([docs], index, config)  # an update: it hashes files to find unchanged ones
print(sorted((Path(s.path).name, s.reason) for s in report.skipped))
"""


def test_an_update_build_over_a_fifo_and_a_device_link_finishes(tmp_path: Path, sample_slice: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(sample_slice / "wal.md", docs / "wal.md")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    try:
        run = subprocess.run(
            [sys.executable, "-c", UPDATE_OVER_SPECIAL_FILES, str(docs), str(tmp_path / "idx")],
            capture_output=True, text=True, timeout=60, env=env, cwd=REPO, check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the update build hung on the FIFO or /dev/zero")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "('f.md', 'not a regular file (a named pipe)')" in run.stdout
    assert "('z.md', 'symbolic link to a file outside the collection')" in run.stdout
