"""An editable install of the repository, as ``scripts/setup`` makes it, emits no
setuptools warning (the flat layout of four top-level packages used to warn about
same-named folders on every install)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from conftest import ROOT

PACKAGES = ("arborgraph", "raptor", "graphrag", "ingest")

BUILD = """
import sys, warnings
warnings.simplefilter("always")
from setuptools import build_meta
print(build_meta.build_editable(sys.argv[1]))
"""


def test_editable_build_prints_no_setuptools_warning(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, project / name)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, project / package, ignore=shutil.ignore_patterns("__pycache__"))
    for folder in ("tests", "benchmarks", "scripts"):  # other folders of the working tree
        (project / folder).mkdir()
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONWARNINGS")}
    run = subprocess.run(
        [sys.executable, "-c", BUILD, str(wheels)], cwd=project, capture_output=True, text=True,
        timeout=1200, env=env,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    output = run.stdout + run.stderr
    for warning in ("SetuptoolsWarning", "InformationOnly", "SetuptoolsDeprecationWarning", "careful"):
        assert warning not in output, output[-3000:]
    wheel = next(wheels.glob("*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        pth = [n for n in archive.namelist() if n.endswith(".pth")]
        assert pth and archive.read(pth[0]).decode().strip() == str(project.resolve())
