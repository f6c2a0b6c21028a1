"""A package's lazily exported names never share a name with one of its modules: an
``import package.name`` of the module anywhere in the process would put the module
where the exported function should be (``from graphrag import global_search`` gave
the module once the engine had imported ``graphrag.global_search``)."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest


@pytest.mark.parametrize("package", ["arborgraph", "graphrag", "raptor", "ingest"])
def test_no_exported_name_is_also_a_module_of_the_package(package: str) -> None:
    module = importlib.import_module(package)
    submodules = {info.name for info in pkgutil.iter_modules(module.__path__)}
    exported = set(module.__getattr__.exports)
    assert exported  # every package serves its names lazily
    assert not exported & submodules, sorted(exported & submodules)


def test_the_searches_stay_functions_after_their_modules_are_imported() -> None:
    probe = (
        "import graphrag.search_global, graphrag.resolution, graphrag.search\n"
        "from graphrag import global_search, resolve, graph_search\n"
        "assert all(callable(f) and not hasattr(f, '__path__') and type(f).__name__ == 'function'"
        " for f in (global_search, resolve, graph_search))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
