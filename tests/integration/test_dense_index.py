"""The approximate dense index of large collections, on a small one told to use it: built
and checksummed in the generation, memory-mapped on open, the same file from the same
vectors, taken over by an unchanged rebuild, and never a way around the caller's mask."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import arborgraph
from arborgraph.config import load_config
from arborgraph.index import layout
from arborgraph.pipeline import build_index
from conftest import copy_pages

PAGES = ["wal.md", "lockingv3.md", "c3ref_busy_timeout.md", "autoinc.md"]
SECRET = """---
acl: [team-a]
---
# Project Heron

Heron stores its WAL checkpoints on a RAM disk and sets the busy timeout to 4242 ms.
"""
ANN = load_config(environ={}, overrides={"build_tree": False, "build_graph": False, "vectors": {"ann_min_rows": 1}})
EXACT = load_config(environ={}, overrides={"build_tree": False, "build_graph": False})
QUESTIONS = [
    "How does WAL mode work?",
    "What does sqlite3_busy_timeout do?",
    "Which locks does a writer hold while it commits?",
    "How does AUTOINCREMENT choose a new rowid?",
]


@pytest.fixture(scope="module")
def docs(sample_slice: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = copy_pages(sample_slice, tmp_path_factory.mktemp("ann") / "docs", PAGES)
    (folder / "heron.md").write_text(SECRET)
    return folder


@pytest.fixture(scope="module")
def built(docs: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("ann-built")
    build_index([docs], root / "ann", ANN)
    build_index([docs], root / "exact", EXACT)
    return root / "ann", root / "exact"


def test_the_index_is_in_the_generation_and_memory_mapped(built: tuple[Path, Path]) -> None:
    ann, exact = built
    kb = arborgraph.open(ann)
    assert layout.CHUNKS_ANN in kb.index.manifest.files
    assert kb.index.dense is not None and kb.index.dense.approximate
    assert isinstance(kb.index.dense.vectors, np.memmap)  # read as touched, not loaded
    assert kb.index.manifest.report.stages["dense_index"]["reused"] == 0
    plain = arborgraph.open(exact)
    assert layout.CHUNKS_ANN not in plain.index.manifest.files and not plain.index.dense.approximate


def test_approximate_search_finds_what_exact_search_finds(built: tuple[Path, Path]) -> None:
    ann, exact = arborgraph.open(built[0]), arborgraph.open(built[1])
    for question in QUESTIONS:
        for route in ("lookup", "auto"):
            a = [c.node_id for c in ann.query(question, route=route, top_k=10).contexts]
            e = [c.node_id for c in exact.query(question, route=route, top_k=10).contexts]
            assert a == e, (question, route)


def test_the_same_vectors_give_the_same_file_and_an_unchanged_rebuild_takes_it_over(
    built: tuple[Path, Path], docs: Path, tmp_path: Path
) -> None:
    again = tmp_path / "again"
    build_index([docs], again, ANN)
    first = arborgraph.open(built[0])
    second = arborgraph.open(again)
    assert (first.index.on_disk.path / layout.CHUNKS_ANN).read_bytes() == (second.index.on_disk.path / layout.CHUNKS_ANN).read_bytes()
    copy = tmp_path / "copy"
    shutil.copytree(built[0], copy)
    assert build_index([docs], copy, ANN).unchanged  # nothing to do: no new generation
    report = build_index([docs], copy, ANN, force=True)
    assert report.stages["dense_index"] == {"rows": report.chunks, "reused": 1}
    (docs / "notes.md").write_text("# Notes\n\nThe page cache keeps recently used pages in memory.\n")
    try:
        changed = build_index([docs], copy, ANN)
    finally:
        (docs / "notes.md").unlink()
    assert changed.stages["dense_index"]["reused"] == 0 and changed.stages["dense_index"]["rows"] == changed.chunks


def keys_hold_their_rows(index: Path) -> int:
    """Check that every row's key in the live generation's HNSW index holds that row's
    vector (to float16 precision) and nothing else is in it; returns the row count."""
    from usearch.index import Index

    kb = arborgraph.open(index)
    vectors = np.asarray(kb.index.dense.vectors)
    ann = Index.restore(str(kb.index.on_disk.path / layout.CHUNKS_ANN))
    assert ann.size == len(vectors)
    stored = np.asarray(ann.get(np.arange(len(vectors), dtype=np.uint64)), dtype=np.float32)
    assert np.abs(stored - vectors).max() < 2e-3
    return len(vectors)


def test_a_small_change_updates_the_index_in_place_of_building_it(docs: Path, built: tuple[Path, Path], tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(built[0], copy)
    before = keys_hold_their_rows(copy)
    (docs / "notes.md").write_text("# Notes\n\nThe page cache keeps recently used pages in memory.\n")
    try:
        added = build_index([docs], copy, ANN)
    finally:
        (docs / "notes.md").unlink()
    stage = added.stages["dense_index"]
    assert stage["updated"] == 1 and stage["added"] == added.chunks - before == 1 and stage["removed"] == 0
    assert keys_hold_their_rows(copy) == added.chunks
    hits = arborgraph.open(copy).engine.lookup("Which pages does the page cache keep in memory?", mode="dense", top_k=3)
    assert hits[0].source == "notes.md"
    # and back: the page's chunk is removed, the rows after it renumbered
    removed = build_index([docs], copy, ANN).stages["dense_index"]
    assert removed["updated"] == 1 and removed["removed"] == 1 and removed["added"] == 0
    assert keys_hold_their_rows(copy) == before
    assert all(c.source != "notes.md" for c in arborgraph.open(copy).engine.lookup("page cache", mode="dense", top_k=before))


def test_a_large_change_builds_the_index_afresh(docs: Path, built: tuple[Path, Path], tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(built[0], copy)
    moved = docs.parent / "wal.md.aside"
    (docs / "wal.md").rename(moved)  # most of the chunks
    try:
        report = build_index([docs], copy, ANN)
    finally:
        moved.rename(docs / "wal.md")
    assert report.stages["dense_index"]["updated"] == 0
    assert keys_hold_their_rows(copy) == report.chunks


def test_the_caller_mask_holds_under_approximate_search(built: tuple[Path, Path]) -> None:
    kb = arborgraph.open(built[0])
    question = "Where does Heron store its WAL checkpoints, and with which busy timeout?"
    for route in ("lookup", "auto"):
        anonymous = kb.query(question, route=route, top_k=20)
        assert anonymous.contexts and not any(c.source == "heron.md" for c in anonymous.contexts)
        owner = kb.query(question, route=route, top_k=20, principal="team-a")
        assert owner.contexts[0].source == "heron.md"
    dense = kb.engine.lookup(question, mode="dense", top_k=20)
    assert len(dense) == 20 and not any(c.source == "heron.md" for c in dense)


def test_the_search_goes_deeper_while_the_caller_may_read_too_few_hits(built: tuple[Path, Path]) -> None:
    from arborgraph.query.scores import score_question

    kb = arborgraph.open(built[0])
    question = "How does WAL mode work?"
    vector = kb.engine.embed_query(question)
    exact = np.asarray(kb.index.dense.vectors) @ vector
    few = score_question(kb.index, question, vector, depth=5)
    assert few.dense_known is not None and 5 <= few.dense_known.sum() < len(exact)
    known = np.flatnonzero(few.dense_known)
    assert np.allclose(few.dense[known], exact[known], atol=1e-6)  # the hits are scored exactly
    assert np.all(few.dense[~few.dense_known] == -2.0)
    # a caller who may read three rows, the least similar ones: still gets all three
    mask = np.zeros(len(exact), dtype=bool)
    mask[np.argsort(exact)[:3]] = True
    scores = score_question(kb.index, question, vector, mask=mask, depth=3)
    assert scores.dense_known[mask].all()


@pytest.fixture
def without_usearch(monkeypatch: pytest.MonkeyPatch) -> None:
    """usearch as if the [scale] extra were not installed: importing it fails."""
    for name in ("usearch", "usearch.index"):
        monkeypatch.setitem(sys.modules, name, None)


def test_without_usearch_a_large_collection_builds_without_the_index_and_says_so(
    docs: Path, built: tuple[Path, Path], tmp_path: Path, without_usearch: None
) -> None:
    report = build_index([docs], tmp_path / "plain", ANN)
    assert report.stages["dense_index"]["skipped"].startswith("usearch is not installed")
    assert any("pip install 'arborgraph[scale]'" in w for w in report.warnings)
    kb, exact = arborgraph.open(tmp_path / "plain"), arborgraph.open(built[1])
    assert layout.CHUNKS_ANN not in kb.index.manifest.files and not kb.index.dense.approximate
    for question in QUESTIONS:
        assert [c.node_id for c in kb.query(question, top_k=10).contexts] == [
            c.node_id for c in exact.query(question, top_k=10).contexts
        ]


def test_without_usearch_an_index_built_with_it_is_searched_exactly(
    built: tuple[Path, Path], without_usearch: None
) -> None:
    kb, exact = arborgraph.open(built[0]), arborgraph.open(built[1])
    assert not kb.index.dense.approximate
    assert isinstance(kb.index.dense.vectors, np.memmap)  # still mapped: a large collection's rows
    question = "Where does Heron store its WAL checkpoints, and with which busy timeout?"
    assert not any(c.source == "heron.md" for c in kb.query(question, top_k=20).contexts)
    for question in QUESTIONS:
        assert [c.node_id for c in kb.query(question, route="lookup", top_k=10).contexts] == [
            c.node_id for c in exact.query(question, route="lookup", top_k=10).contexts
        ]


def test_rows_read_from_the_file_are_the_mapped_rows_from_any_thread(built: tuple[Path, Path]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from arborgraph.index.vectors import RowReader

    dense = arborgraph.open(built[0]).index.dense
    assert dense is not None
    path = next(Path(built[0]).glob("gen-*/vectors/chunks.npy"))
    reader = RowReader(path, keep=3)  # a few kept, the rest read each time
    rng = np.random.default_rng(7)
    asks = [rng.integers(0, dense.n_rows, rng.integers(0, 12)) for _ in range(200)]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(reader.take, asks))
    for rows, vectors in zip(asks, got):
        assert np.array_equal(vectors, np.asarray(dense.vectors)[rows])
    assert np.array_equal(dense.take([2, 0, 2]), np.asarray(dense.vectors)[[2, 0, 2]])
    with pytest.raises(IndexError):
        reader.take([dense.n_rows])


def test_on_an_approximate_index_the_tree_walk_ranks_a_pool_and_keeps_the_best(docs: Path, tmp_path: Path) -> None:
    with_tree = {"build_graph": False}
    build_index([docs], tmp_path / "ann", load_config(environ={}, overrides={**with_tree, "vectors": {"ann_min_rows": 1}}))
    build_index([docs], tmp_path / "exact", load_config(environ={}, overrides=with_tree))
    ann, exact = arborgraph.open(tmp_path / "ann"), arborgraph.open(tmp_path / "exact")
    assert ann.index.dense is not None and ann.index.dense.approximate
    for question in QUESTIONS:
        a = [c.node_id for c in ann.query(question, route="tree", top_k=5).contexts]
        e = [c.node_id for c in exact.query(question, route="tree", top_k=5).contexts]
        assert a[0] == e[0] and len(set(a) & set(e)) >= 3, (question, a, e)
