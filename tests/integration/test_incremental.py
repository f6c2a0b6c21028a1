"""Updating an index in place: a changed page is retrievable on every route, a deleted
page is gone from every route and table, and unchanged work is reused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq

import arborgraph
from arborgraph.pipeline.incremental import BuildStatus
from arborgraph.pipeline import build_index

ROUTES = ["lookup", "tree", "graph", "global"]
NEW_TEXT = (
    "\n\n## Quasar checkpoints\n\nThe quasar checkpoint mode copies every WAL frame into "
    "the database twice and then verifies the copy with the FNV-1a checksum.\n"
)


def test_change_and_delete_pages_in_place(tmp_path: Path, sample_slice: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(sample_slice, docs)
    index = tmp_path / "idx"
    first = build_index([docs], index)
    assert first.stages["documents"]["added"] == 20

    with (docs / "wal.md").open("a") as handle:
        handle.write(NEW_TEXT)
    (docs / "autoinc.md").unlink()
    second = build_index([docs], index)

    changes = second.stages["documents"]
    assert (changes["changed"], changes["removed"], changes["unchanged"]) == (1, 1, 18)
    assert changes["chunks_reused_from"] == 18
    assert (changes["parsed"], changes["parses_reused"]) == (1, 18)  # only the edited page is parsed
    assert second.embeddings_computed < 10  # only the changed page's chunks
    assert second.stages["tree"]["updated"] == 1 and second.stages["tree"]["trees"] == 1
    assert second.stages["tree"]["summaries_redone"] < first.stages["tree"]["summaries_redone"] / 2

    kb = arborgraph.open(index)
    for route in ROUTES:
        res = kb.query("What does the quasar checkpoint mode do?", route=route, top_k=30, budget_tokens=4000)
        assert any("quasar checkpoint mode" in c.text for c in res.contexts), route
        res = kb.query("How does AUTOINCREMENT pick a new rowid?", route=route, top_k=30, budget_tokens=4000)
        assert all(c.source != "autoinc.md" and not any(p.startswith("autoinc.md") for p in c.provenance)
                   for c in res.contexts), route

    gen = index / (index / "CURRENT").read_text().strip()
    for table in gen.glob("tables/*.parquet"):
        data = pq.read_table(table).to_pylist()
        assert "autoinc.md#" not in repr(data) and "'autoinc.md'" not in repr(data), table.name
    status = BuildStatus.load(index)
    assert status is not None and status.state == "done"
    assert "autoinc.md" not in status.documents and status.documents["wal.md"].status == "done"


def test_unchanged_rebuild_reuses_everything(tmp_path: Path, sample_slice: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("wal.md", "lockingv3.md", "c3ref_busy_timeout.md"):
        shutil.copy(sample_slice / name, docs / name)
    first = build_index([docs], tmp_path / "idx")
    same = build_index([docs], tmp_path / "idx")
    assert same.unchanged and same.generation == first.generation  # nothing to do: no new generation
    again = build_index([docs], tmp_path / "idx", force=True)
    assert not again.unchanged and again.generation > first.generation
    assert again.embeddings_computed == 0
    assert again.stages["tree"]["reused"] == 1 and again.stages["graph"]["reused"] == 1
    assert again.stages["documents"]["unchanged"] == 3
    assert (again.stages["documents"]["parsed"], again.stages["documents"]["parses_reused"]) == (0, 3)


def test_chunks_cut_by_other_loaders_are_cut_again(tmp_path: Path, sample_slice: Path) -> None:
    """A loader may read the same bytes otherwise after an upgrade (a heading that is now
    a paragraph): the chunks the live generation cut with other loaders are not reused
    for unchanged files, and the next rebuild with the same loaders reuses them again."""
    import json

    from arborgraph.index import layout
    from arborgraph.index.manifest import write_manifest

    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("wal.md", "lockingv3.md"):
        shutil.copy(sample_slice / name, docs / name)
    index = tmp_path / "idx"
    build_index([docs], index)
    # the live generation as another checkout's loaders would have recorded it
    gen = index / (index / "CURRENT").read_text().strip()
    data = json.loads((gen / layout.MANIFEST).read_text())
    assert len(data["loader"]) == 64
    write_manifest(gen, {**data, "loader": "0" * 64})
    again = build_index([docs], index, force=True)
    assert again.stages["documents"]["unchanged"] == 2
    assert again.stages["documents"]["chunks_reused_from"] == 0
    assert again.embeddings_computed == 0  # the same chunks: their vectors come from the cache
    third = build_index([docs], index, force=True)
    assert third.stages["documents"]["chunks_reused_from"] == 2
