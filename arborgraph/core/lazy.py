"""Package namespaces whose public names are imported on first use (PEP 562): the one
helper every package's ``__init__`` uses, so that ``import arborgraph`` (and the CLI's
``--help``) loads none of the modules a command does not reach."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: each name in ``exports`` (name ->
    defining module) is imported when first read and then kept in ``namespace`` (the
    package's ``globals()``), so a process using one part pays only for that part."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    __getattr__.exports = dict(exports)  # type: ignore[attr-defined]  # what it serves, for checks
    return __getattr__
