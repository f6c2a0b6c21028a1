"""The openai package is an optional extra: only arborgraph.llm.provider may need it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

# Makes "import openai" fail as if the package were not installed.
BLOCK_OPENAI = """
import importlib.abc, sys
class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "openai" or name.startswith("openai."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Block())
"""


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_provider_without_openai_names_the_extra() -> None:
    result = run_python(
        BLOCK_OPENAI
        + """
try:
    import arborgraph.llm.provider
except ImportError as exc:
    print("ERROR:", exc)
"""
    )
    assert result.returncode == 0, result.stderr
    assert "ERROR:" in result.stdout
    # the package is installed from its checkout: 'arborgraph[llm]' is on no index
    assert "scripts/setup llm" in result.stdout and "pip install -e '.[llm]'" in result.stdout


def test_base_and_package_work_without_openai() -> None:
    result = run_python(
        BLOCK_OPENAI
        + """
import arborgraph.llm.cache
from arborgraph.llm import LLMCache, LLMConfig, LLMUsage, contextual_prefix, structured_chat
print("openai loaded:", "openai" in sys.modules)
"""
    )
    assert result.returncode == 0, result.stderr
    assert "openai loaded: False" in result.stdout
