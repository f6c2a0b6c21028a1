"""What a command imports before it does anything: `arborgraph --help` and the modules
every query loads stay free of the libraries only builds, exports or plots need."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from arborgraph.config import load_config
from arborgraph.core.errors import ConfigError

# imported by builds (UMAP, bm25s's indexing), exports or notebooks, never by a question
BUILD_ONLY = ("numba", "llvmlite", "bm25s", "sklearn", "umap", "pynndescent", "torch", "tqdm", "yaml", "pyarrow.dataset")


def _imported(code: str) -> set[str]:
    """The modules loaded after running ``code`` in a fresh interpreter."""
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return set(json.loads(run.stdout.splitlines()[-1]))


def test_help_loads_no_index_code_or_numeric_library() -> None:
    code = (
        "import sys\nfrom arborgraph.cli import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
    )
    loaded = _imported(code)
    for name in ("numpy", "pyarrow", "pydantic", "onnxruntime", "arborgraph.neo4j", "arborgraph.kb"):
        assert name not in loaded, name


def test_the_query_modules_import_nothing_a_build_needs() -> None:
    loaded = _imported("import arborgraph.cli, arborgraph.kb, arborgraph.query.engine, arborgraph.query.rerank")
    assert not loaded & set(BUILD_ONLY), sorted(loaded & set(BUILD_ONLY))
    assert "scipy" not in loaded  # (graphrag's search index, for the ranking stage's graph signals, loads it)


def test_the_export_defaults_are_the_exporters() -> None:
    from arborgraph import cli
    from arborgraph.neo4j import CONNECT_TIMEOUT, DEFAULT_BATCH, DEFAULT_WORKERS

    assert (cli.CONNECT_TIMEOUT, cli.DEFAULT_BATCH, cli.DEFAULT_WORKERS) == (CONNECT_TIMEOUT, DEFAULT_BATCH, DEFAULT_WORKERS)


def test_config_files_of_each_kind_and_their_mistakes(tmp_path: Path) -> None:
    """yaml is imported for a YAML file only; every kind reads alike and fails in one line."""
    files = {
        "c.toml": "[chunking]\ntarget_tokens = 300\n",
        "c.yaml": "chunking:\n  target_tokens: 300\n",
        "c.yml": "chunking: {target_tokens: 300}\n",
        "c.json": '{"chunking": {"target_tokens": 300}}',
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        assert load_config(tmp_path / name).chunking.target_tokens == 300, name
    for name, text in {"bad.toml": "[x", "bad.yaml": "a: [", "bad.json": "{", "list.yaml": "- 1\n"}.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError, match=f"config file {tmp_path / name}"):
            load_config(tmp_path / name)
    (tmp_path / "c.ini").write_text("[x]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"use \.toml, \.yaml or \.json"):
        load_config(tmp_path / "c.ini")
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "missing.toml")


def test_layers_weakest_first_and_the_environment_is_a_value(tmp_path: Path) -> None:
    """defaults < file < environment < overrides, merged per key, with the environment
    passed in; a misnamed or ill-valued variable is one line naming it, at the top level too."""
    from arborgraph.config import check_environment

    file = tmp_path / "c.toml"
    file.write_text("[chunking]\ntarget_tokens = 300\nmin_tokens = 30\n[retrieval]\ncandidates = 50\n", encoding="utf-8")
    environ = {"ARBORGRAPH_CHUNKING__TARGET_TOKENS": "310", "ARBORGRAPH_RETRIEVAL__RANKER": "false", "HOME": "/x"}
    config = load_config(file, overrides={"retrieval": {"candidates": 70}}, environ=environ)
    assert (config.chunking.target_tokens, config.chunking.min_tokens) == (310, 30)
    assert (config.retrieval.candidates, config.retrieval.ranker) == (70, False)
    assert load_config(environ={}).retrieval.ranker is True
    for name, value, message in [
        ("ARBORGRAPH_BUILD_TREES", "false", "ARBORGRAPH_BUILD_TREES is not an Arborgraph setting"),
        ("ARBORGRAPH_RETRIEVAL__RANKR", "false", "ARBORGRAPH_RETRIEVAL__RANKR is not an Arborgraph setting"),
        ("ARBORGRAPH_RETRIEVAL__CANDIDATES", "abc", "ARBORGRAPH_RETRIEVAL__CANDIDATES: "),
    ]:
        with pytest.raises(ConfigError, match=message):
            check_environment({name: value})
    assert check_environment({"ARBORGRAPH_SERVE_SETTINGS": "{}"}) == {}
