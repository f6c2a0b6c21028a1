"""The import contract: the layers point one way, and no project module imports itself
back at module level.

The layers, lowest first: ``arborgraph.core`` (imports nothing else of the project),
``ingest``, then ``raptor`` and ``graphrag`` (independent of each other), then the rest
of ``arborgraph``. The contracts are import-linter's, in ``pyproject.toml``
(``[tool.importlinter]``); the cycle check is an AST pass over every module's
top-level imports (what runs when the module is imported: function bodies and
``if TYPE_CHECKING:`` blocks left out).
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("arborgraph", "ingest", "raptor", "graphrag")


# -- the import-linter contracts ------------------------------------------------------


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the packages under ``root``, with ``root``'s pyproject."""
    return subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()",
         "--no-cache", "--no-logo", str(root / "pyproject.toml")],
        cwd=root, capture_output=True, text=True, timeout=300, check=False,
        # the copy's packages, not an editable install's, and no colour codes in the report
        env={**os.environ, "PYTHONPATH": str(root), "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "200"},
    )


def test_the_import_contracts_hold() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 kept, 0 broken" in result.stdout


def _all_but_python(directory: str, names: list[str]) -> list[str]:
    return [n for n in names if n == "__pycache__" or not (n.endswith(".py") or (Path(directory) / n).is_dir())]


@pytest.fixture(scope="module")
def broken_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The four packages and the pyproject, copied, with ``raptor/build.py`` importing
    the knowledge base (the layer above it)."""
    copy = tmp_path_factory.mktemp("layers")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, copy / package, ignore=_all_but_python)
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    build = copy / "raptor" / "build.py"
    build.write_text(build.read_text(encoding="utf-8") + "\nfrom arborgraph.kb import KnowledgeBase\n", encoding="utf-8")
    return copy


def test_a_structure_package_importing_the_service_layer_breaks_the_contract(broken_copy: Path) -> None:
    result = lint_imports(broken_copy)
    assert result.returncode != 0
    assert "ingest, raptor and graphrag use only arborgraph.core of arborgraph BROKEN" in result.stdout
    assert "raptor.build -> arborgraph.kb" in result.stdout


# -- no cycle at module level ---------------------------------------------------------


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The imports a module runs when it is imported: its top-level statements, inside
    top-level ``if``/``try``/``with`` blocks too, but not in functions, classes or
    ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                pending.extend(node.body)
            pending.extend(node.orelse)
        elif isinstance(node, ast.Try):
            pending.extend([*node.body, *node.orelse, *node.finalbody])
            for handler in node.handlers:
                pending.extend(handler.body)
        elif isinstance(node, ast.With):
            pending.extend(node.body)
    return found


def import_graph(root: Path) -> nx.DiGraph:
    """Project module -> project module, for every top-level import."""
    modules = {
        module_name(path, root): path
        for package in PACKAGES
        for path in (root / package).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in top_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                # "from a import b" needs the module a.b when there is one, else a's name b
                submodules = [f"{base}.{alias.name}" for alias in node.names]
                targets = [t for t in submodules if t in modules]
                if len(targets) < len(submodules):
                    targets.append(base)
            for target in targets:
                if target in modules and target != name:
                    graph.add_edge(name, target)
    return graph


def test_no_module_level_import_cycle() -> None:
    graph = import_graph(ROOT)
    assert graph.number_of_edges() > 300  # the walk found the imports
    cycles = sorted(sorted(c) for c in nx.simple_cycles(graph, length_bound=6))
    assert cycles == [], cycles


def test_the_cycle_check_finds_a_cycle(tmp_path: Path) -> None:
    for package in PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "arborgraph" / "a.py").write_text("from arborgraph.b import x\n")
    (tmp_path / "arborgraph" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from arborgraph.c import y\n"
        "def later():\n    from arborgraph.a import z\nfrom . import c\n"
    )
    (tmp_path / "arborgraph" / "c.py").write_text("import arborgraph.a\n")
    graph = import_graph(tmp_path)
    assert sorted(graph.edges) == [("arborgraph.a", "arborgraph.b"), ("arborgraph.b", "arborgraph.c"), ("arborgraph.c", "arborgraph.a")]
    assert list(nx.simple_cycles(graph))
