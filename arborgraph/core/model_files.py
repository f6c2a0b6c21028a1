"""ONNX model directories: the all-MiniLM-L6-v2 model shipped in the package, and their checks.

An ONNX model directory holds ``model.onnx``, the model's ``tokenizer.json``, its licence and
a ``manifest.json`` (:class:`ModelManifest`) with the SHA-256 and size of every file and the
facts the embedding pipeline needs (pooling, dimension, length limit, lowercasing).
``scripts/build_onnx_model.py`` makes one from a sentence-transformers model's safetensors
(no torch: the ``[model-build]`` extra; only the maintainer who rebuilds the shipped model
runs it); at run time only onnxruntime and tokenizers are needed, and nothing is downloaded.

Every load checks the files against the manifest and names, in one line, the file that is
missing or altered. This module imports neither numpy nor onnxruntime, so the token
counter can use it cheaply.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arborgraph.core.errors import ModelFilesError

__all__ = [
    "MANIFEST_NAME",
    "MODEL_FORMAT",
    "PACKAGED_MODEL_NAME",
    "FileEntry",
    "ModelManifest",
    "OnnxModelFiles",
    "PipelineFacts",
    "Precision",
    "file_entry",
    "file_sha256",
    "load_onnx_model_dir",
    "packaged_model_dir",
    "packaged_tokenizer",
    "read_manifest",
    "verified_file",
]

MANIFEST_NAME = "manifest.json"
MODEL_FORMAT = "arborgraph-onnx-model/1"
PACKAGED_MODEL_NAME = "all-MiniLM-L6-v2"
# The files the embedding pipeline reads; the manifest may list more (licence, notice).
_PIPELINE_FILES = ("model.onnx", "tokenizer.json")

# How a graph stores its weights; the arithmetic is float32 either way, so the vectors do
# not depend on the CPU's instruction set. "fp16-weights": the large matrices are stored as
# float16 (half the file) and widened to float32 when the session loads.
Precision = Literal["fp32", "fp16-weights"]


class FileEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: int = Field(ge=0)


class PipelineFacts(BaseModel):
    """What the ONNX pipeline needs to know about the model behind ``model.onnx``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pooling: Literal["mean", "cls"]
    dim: int = Field(ge=1)
    num_heads: int = Field(ge=1)
    max_positions: int = Field(ge=8)
    lowercase: bool


class ModelManifest(BaseModel):
    """``manifest.json`` of an ONNX model directory."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["arborgraph-onnx-model/1"] = MODEL_FORMAT
    # Part of the embedder's name, which keys index manifests and the embedding cache.
    model: str = Field(min_length=1)
    precision: Precision
    pipeline: PipelineFacts
    files: dict[str, FileEntry]
    # Provenance, for people: the source model's files and the export recipe and versions.
    source: dict[str, Any] = Field(default_factory=dict)
    export: dict[str, Any] = Field(default_factory=dict)
    versions: dict[str, str] = Field(default_factory=dict)


@dataclass(frozen=True)
class OnnxModelFiles:
    """A checked ONNX model directory."""

    directory: Path
    manifest: ModelManifest

    @property
    def model_path(self) -> Path:
        return self.directory / "model.onnx"

    @property
    def tokenizer_path(self) -> Path:
        return self.directory / "tokenizer.json"


def packaged_model_dir() -> Path:
    """The directory of the all-MiniLM-L6-v2 ONNX model shipped inside the package."""
    return Path(__file__).resolve().parent.parent / "data" / "models" / PACKAGED_MODEL_NAME


_DIGESTS: dict[tuple[str, int, int], str] = {}


def file_sha256(path: Path) -> str:
    """SHA-256 of a file, remembered per (path, size, mtime) for the life of the process."""
    stat = path.stat()
    memo_key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    digest = _DIGESTS.get(memo_key)
    if digest is None:
        with path.open("rb") as handle:
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
        _DIGESTS[memo_key] = digest
    return digest


def file_entry(path: Path) -> FileEntry:
    """The manifest entry of a file as it is now."""
    return FileEntry(sha256=file_sha256(path), bytes=path.stat().st_size)


def read_manifest(directory: Path) -> ModelManifest:
    """Parse ``directory/manifest.json``; raise :class:`ModelFilesError` saying what is wrong."""
    path = directory / MANIFEST_NAME
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelFilesError(f"model directory {directory} lacks {MANIFEST_NAME}") from None
    except (OSError, ValueError) as exc:
        raise ModelFilesError(f"cannot read {path}: {exc}") from exc
    try:
        manifest = ModelManifest.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise ModelFilesError(f"{path} is not an ONNX model manifest: {where}: {first['msg']}") from None
    absent = [name for name in _PIPELINE_FILES if name not in manifest.files]
    if absent:
        raise ModelFilesError(f"{path} does not list {', '.join(absent)}")
    return manifest


def verified_file(directory: Path, name: str, manifest: ModelManifest) -> Path:
    """``directory/name`` after checking it against its manifest entry (size, then SHA-256)."""
    path = directory / name
    expected = manifest.files.get(name)
    if expected is None:
        raise ModelFilesError(f"{directory / MANIFEST_NAME} does not list {name}")
    if not path.is_file():
        raise ModelFilesError(f"model file {path} is missing")
    size = path.stat().st_size
    if size != expected.bytes:
        raise ModelFilesError(f"model file {path} is altered: {size} bytes, the manifest says {expected.bytes}")
    digest = file_sha256(path)
    if digest != expected.sha256:
        raise ModelFilesError(
            f"model file {path} is altered: SHA-256 {digest[:12]}…, the manifest says {expected.sha256[:12]}…"
        )
    return path


def load_onnx_model_dir(directory: Path) -> OnnxModelFiles:
    """Check every file the manifest of ``directory`` lists; raise :class:`ModelFilesError`."""
    manifest = read_manifest(directory)
    for name in manifest.files:
        verified_file(directory, name, manifest)
    return OnnxModelFiles(directory=directory, manifest=manifest)


def packaged_tokenizer() -> Path:
    """The shipped model's ``tokenizer.json``, checked against the manifest (ModelFilesError)."""
    directory = packaged_model_dir()
    return verified_file(directory, "tokenizer.json", read_manifest(directory))
