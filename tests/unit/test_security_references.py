"""SECURITY.md names the tests that prove each promise: every one it names exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")}


def test_every_test_security_md_names_exists() -> None:
    text = (ROOT / "SECURITY.md").read_text(encoding="utf-8")
    named: list[tuple[str, str | None]] = []
    # `tests/x/test_y.py::test_z`, then `::test_w` on the same file until another file is named
    for cell in re.findall(r"\|([^|\n]*tests/[^|\n]*)\|?\s*$", text, re.M):
        current = None
        for file, name in re.findall(r"`(tests/[\w/]+\.py)?(?:::(\w+))?", cell):
            if file:
                current = file
            if current and (file or name):
                named.append((current, name or None))
    assert len(named) > 40
    missing = []
    for file, name in named:
        path = ROOT / file
        if not path.is_file():
            missing.append(file)
        elif name and name not in _tests_in(path):
            missing.append(f"{file}::{name}")
    assert not missing, missing
