"""benchmarks/structure_sample.py: a blind, seeded sample of an index's tree for rating."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _script():  # type: ignore[no-untyped-def]
    # benchmarks/ is not a package: the script is loaded by path
    spec = importlib.util.spec_from_file_location("structure_sample", ROOT / "benchmarks" / "structure_sample.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["structure_sample"] = module
    spec.loader.exec_module(module)
    return module


def test_two_indexes_are_mixed_under_neutral_ids_with_the_key_apart(sample_index: Path, tmp_path: Path) -> None:
    script = _script()
    other = tmp_path / "second-index"
    shutil.copytree(sample_index, other)  # tests never write into the session's index
    sheet, key = tmp_path / "sheet.json", tmp_path / "key.json"

    assert script.main(["--index", str(sample_index), "--index", str(other), "--per-index", "4",
                        "--format", "json", "--out", str(sheet), "--key", str(key)]) == 0

    items = json.loads(sheet.read_text())
    mapping = json.loads(key.read_text())
    assert len(items) == 8 and sorted(mapping) == sorted(i["id"] for i in items)
    assert sorted(mapping.values()) == sorted([str(sample_index)] * 4 + [str(other)] * 4)
    text = sheet.read_text()
    assert str(sample_index) not in text and "extractive" not in text and "gen-" not in text
    for item in items:
        assert item["kind"] == "tree node" and item["name"] and item["summary"] and item["pages"]
        assert set(item) == {"id", "kind", "name", "parent's name", "pages", "summary"}
    # seeded: the same sheet again
    again = tmp_path / "again.json"
    script.main(["--index", str(sample_index), "--index", str(other), "--per-index", "4",
                 "--format", "json", "--out", str(again), "--key", str(tmp_path / "k2.json")])
    assert again.read_text() == text


def test_markdown_sheet_and_one_index(sample_index: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    script = _script()
    assert script.main(["--index", str(sample_index), "--per-index", "3"]) == 0
    out = capsys.readouterr().out
    assert out.count("## item-") == 3 and out.count("rating — name") == 3
    assert "**parent's name:**" in out and "**pages:**" in out


def test_an_index_recomputed_with_this_code_is_drawn_on_the_same_nodes(sample_index: Path, tmp_path: Path) -> None:
    script = _script()
    sheet, key = tmp_path / "sheet.json", tmp_path / "key.json"
    assert script.main(["--index", str(sample_index), "--recompute", str(sample_index), "--per-index", "3",
                        "--format", "json", "--out", str(sheet), "--key", str(key)]) == 0
    items = {i["id"]: i for i in json.loads(sheet.read_text())}
    mapping = json.loads(key.read_text())
    assert sorted(mapping.values()) == sorted([str(sample_index)] * 3 + [str(sample_index) + " (recomputed)"] * 3)
    assert "recomputed" not in sheet.read_text()
    # the same nodes (same pages) from both, each with a name and a digest
    pages = lambda label: sorted(str(items[i]["pages"]) for i, v in mapping.items() if v == label)  # noqa: E731
    assert pages(str(sample_index)) == pages(str(sample_index) + " (recomputed)")
    assert all(item["name"] and item["summary"] for item in items.values())


def test_changed_only_draws_the_nodes_that_differ_and_needs_two_indexes(sample_index: Path, tmp_path: Path) -> None:
    script = _script()
    other = tmp_path / "same-index"
    shutil.copytree(sample_index, other)
    sheet, key = tmp_path / "sheet.json", tmp_path / "key.json"
    # the same tree twice: no node differs, so none is drawn
    assert script.main(["--index", str(sample_index), "--index", str(other), "--kinds", "tree", "--changed-only",
                        "--format", "json", "--out", str(sheet), "--key", str(key)]) == 0
    assert json.loads(sheet.read_text()) == []
    import arborgraph

    kb = arborgraph.open(sample_index)
    try:
        some = sorted(n.node_id for n in kb.explorer.tree_view().tree.summaries())[:3]
        items = script.tree_items(kb, __import__("random").Random(0), 10, frozenset(some))
    finally:
        kb.close()
    assert len(items) == 3  # only the nodes asked for
    try:
        script.main(["--index", str(sample_index), "--changed-only", "--out", str(sheet)])
    except SystemExit as exit_:
        assert exit_.code == 2
    else:
        raise AssertionError("--changed-only with one index was accepted")
