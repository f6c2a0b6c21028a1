"""ARCHITECTURE.md against the code: its module tables name every module of the folders
they table and nothing that does not exist, every source file it names by path exists,
and its build diagram is the stages' order. A module added without its line, or a line
left after its module went, fails here instead of drifting (issue #37)."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "arborgraph"
TEXT = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")


def _folder_table() -> dict[str, set[str]]:
    """The folder table: ``| `index/` | `store`, `opened`, ... |`` -> {"index": {...}}."""
    rows = re.findall(r"^\| `([\w/]+)/` \| (.+) \|$", TEXT, flags=re.MULTILINE)
    return {folder: set(re.findall(r"`(\w+)`", cell)) for folder, cell in rows}


def _core_table() -> set[str]:
    """The core table's modules: ``| `core/results.py` | ... |`` (a row may name two)."""
    cells = re.findall(r"^\| (`core/.+?) \|", TEXT, flags=re.MULTILINE)
    return {name for cell in cells for name in re.findall(r"`core/(\w+)\.py`", cell)}


def _modules(folder: Path) -> set[str]:
    return {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}


def test_every_folder_of_the_package_is_tabled() -> None:
    folders = {
        str(init.parent.relative_to(PACKAGE))
        for init in PACKAGE.rglob("__init__.py")
        if init.parent != PACKAGE and "__pycache__" not in init.parts
    }
    assert folders == set(_folder_table()) | {"core"}


def test_each_tabled_folder_names_exactly_its_modules() -> None:
    table = _folder_table()
    assert table, "no folder table found in ARCHITECTURE.md"
    for folder, named in table.items():
        present = _modules(PACKAGE / folder)
        assert not named - present, f"{folder}/: named but missing: {sorted(named - present)}"
        assert not present - named, f"{folder}/: modules without a line: {sorted(present - named)}"


def test_the_core_table_names_exactly_its_modules() -> None:
    named, present = _core_table(), _modules(PACKAGE / "core")
    assert not named - present, f"core/: named but missing: {sorted(named - present)}"
    assert not present - named, f"core/: modules without a line: {sorted(present - named)}"


def test_every_source_path_it_names_exists() -> None:
    """A `folder/module.py` (from the repository or from arborgraph/) or a bare
    `module.py` (somewhere in the package or the tests) named anywhere in the text."""
    named = set(re.findall(r"`([\w/.]+\.py)`", TEXT))
    assert named
    missing = [
        path for path in sorted(named)
        if not (ROOT / path).is_file() and not (PACKAGE / path).is_file()
        and not ("/" not in path and any(f for top in (PACKAGE, ROOT / "tests") for f in top.rglob(path)))
    ]
    assert not missing, missing


def test_the_build_diagram_is_the_stages_in_order() -> None:
    from arborgraph.pipeline.stages import STAGES

    diagram = TEXT[TEXT.index("    load → "):]
    diagram = diagram[: diagram.index("\n\n")]
    drawn = [name.strip("[] \n") for name in diagram.split("→")]
    assert drawn == [stage.name for stage in STAGES]
