"""What each optional extra must declare for the features it is installed for.

The notebooks' tables are Arrow tables (``kb.explorer.graph_view().entities()``,
``kb.explorer.graph_view().communities()``) that a notebook user turns into data frames with
``.to_pandas()``; pyarrow imports pandas only then, so nothing fails until a notebook
calls it. The check reads ``pyproject.toml`` itself: the installed metadata may be
older than the file.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


def _names(requirements: list[str]) -> set[str]:
    return {Requirement(r).name.lower() for r in requirements}


def test_the_notebooks_extra_installs_pandas_for_to_pandas_and_the_default_install_does_not() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "pandas" in _names(project["optional-dependencies"]["notebooks"])
    assert "pandas" not in _names(project["dependencies"])  # ~60 MB no query needs


def test_the_serve_extra_installs_prometheus_client_for_metrics() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "prometheus-client" in {n.replace("_", "-") for n in _names(project["optional-dependencies"]["serve"])}
