"""Local sentence embedders: the shipped ONNX all-MiniLM-L6-v2, and sentence-transformers.

Both implement :class:`arborgraph.core.protocols.Embedder`. The default (backend
``onnx``) runs the ONNX model shipped inside the package (:mod:`arborgraph.core.model_files`)
with onnxruntime and the model's own ``tokenizer.json``: no torch, nothing downloaded, every
file checked against the model's manifest on load. Other local models are a directory
made by ``scripts/build_onnx_model.py`` (same pipeline) or a BERT sentence-transformers
model directory, built into ONNX once without torch (:mod:`arborgraph.models.onnx_export`,
the ``[model-build]`` extra) or run by sentence-transformers (the ``[torch]`` extra).

The ONNX graphs compute in float32 (their weights may be stored as float16), so a text's
vector is the same, to ~1e-7, on every x86-64 CPU (AVX-512, AVX2 or AVX kernels alike)
and in any batch: padded batches and single texts give the same vectors. The embedder's
``name`` carries the model file's SHA-256: it keys the embedding cache and is what an
index records and a query checks (:attr:`OnnxEmbedder.identity` has the details).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from arborgraph.core.embedding_identity import EmbeddingIdentity
from arborgraph.core.errors import EmbedderUnavailable
from arborgraph.core.model_files import (
    MANIFEST_NAME,
    OnnxModelFiles,
    PipelineFacts,
    Precision,
    file_sha256,
    load_onnx_model_dir,
    packaged_model_dir,
)
from arborgraph.core.protocols import Embedder
from arborgraph.models.onnx_export import (
    DEFAULT_MODEL,
    DEFAULT_PRECISION,
    TORCH_EXTRA,
    ensure_onnx_model,
    hub_offline,
    local_model_dir,
    missing_packages,
    model_spec,
    quiet_transformers,
    sentence_transformers_dir,
)

if TYPE_CHECKING:
    import onnxruntime  # type: ignore[import-untyped]
    from tokenizers import Tokenizer

__all__ = [
    "ONNX_BATCH_SIZE",
    "EmbeddingConfig",
    "OnnxEmbedder",
    "SentenceTransformerEmbedder",
    "load_embedder",
    "resolve_model_dir",
]

_DEFAULT_MAX_SEQ_LENGTH = 256
_ST_DEFAULT_BATCH_SIZE = 32
# Texts per ONNX run by default (see benchmarks/results/embedding_cpu_independence.json).
ONNX_BATCH_SIZE = 1


class EmbeddingConfig(BaseModel):
    """How to build the dense embedder.

    ``batch_size`` None means the backend's own default: 32 for sentence-transformers,
    ``ONNX_BATCH_SIZE`` for onnx. The ONNX vectors do not depend on it (nor on ``threads``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["onnx", "sentence-transformers"] = "onnx"
    model: str = Field(
        default=DEFAULT_MODEL,
        description=(
            "'all-MiniLM-L6-v2' (the shipped model), a directory made by scripts/build_onnx_model.py, "
            "or a BERT sentence-transformers model directory (built into ONNX once: the [model-build] "
            "extra; the sentence-transformers backend needs the [torch] extra)"
        ),
    )
    batch_size: int | None = Field(default=None, ge=1)
    max_seq_length: int = Field(default=_DEFAULT_MAX_SEQ_LENGTH, ge=8, le=512)
    threads: int | None = Field(default=None, ge=1)
    cache_dir: str | None = Field(
        default=None,
        description="where ONNX builds of sentence-transformers directories are kept; None: ~/.cache/arborgraph/onnx",
    )
    # The shared cache is how a build runs, not what it makes: Config.to_manifest leaves
    # these three out, so changing them neither shows in an index nor rebuilds one.
    shared_cache: bool = Field(
        default=True,
        description="builds also read and fill the user-level embedding cache that index folders share",
    )
    shared_cache_max_mb: float = Field(
        default=1024.0, gt=0,
        description="size limit of the shared embedding cache; the least recently used vectors go beyond it",
    )
    shared_cache_dir: str | None = Field(
        default=None,
        description="folder of the shared embedding cache; None: $XDG_CACHE_HOME/arborgraph/embeddings "
        "(~/.cache/arborgraph/embeddings)",
    )

    @field_validator("backend", mode="before")
    @classmethod
    def _int8_is_gone(cls, backend: object) -> object:
        # Settings and index manifests written before the float model shipped name the int8
        # pipeline; they read as "onnx", and an index embedded with int8 vectors is then
        # refused at query time by its embedder's name (which differs), saying to rebuild.
        return "onnx" if backend == "onnx-int8" else backend


def resolve_model_dir(model: str) -> Path:
    """Map ``EmbeddingConfig.model`` to a directory: an ONNX model directory (with its
    ``manifest.json``) or a sentence-transformers one (raises EmbedderUnavailable)."""
    if model == DEFAULT_MODEL:
        return packaged_model_dir()
    directory = Path(model).expanduser()
    if not directory.is_dir():
        raise EmbedderUnavailable(
            f"unknown embedding model {model!r}: use {DEFAULT_MODEL!r}, a directory made by "
            "scripts/build_onnx_model.py or a sentence-transformers model directory"
        )
    if (directory / MANIFEST_NAME).is_file():
        return directory
    if not (directory / "config.json").is_file():
        raise EmbedderUnavailable(
            f"model directory {directory} lacks {MANIFEST_NAME} (an ONNX model directory) "
            "or config.json (a sentence-transformers one)"
        )
    return sentence_transformers_dir(directory)


def _pipeline_name(model_name: str, backend: str, max_seq_length: int) -> str:
    # The name keys the embedding cache and is what indexes record: everything that changes
    # the vectors must be in it (the ONNX backend's includes its model file's digest).
    name = f"{model_name}/{backend}"
    if max_seq_length != _DEFAULT_MAX_SEQ_LENGTH:
        name += f"/len{max_seq_length}"
    return name


def _resolve_threads(threads: int | None) -> int:
    if threads is not None:
        return threads
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _empty(dim: int) -> np.ndarray:
    return np.zeros((0, dim), dtype=np.float32)


# ------------------------------------------------------------------ sentence-transformers


def _require_sentence_transformers() -> None:
    missing = missing_packages(("torch", "sentence_transformers"))
    if missing:
        raise EmbedderUnavailable(
            f"the sentence-transformers backend needs {TORCH_EXTRA}; missing: {', '.join(missing)}"
        )


class SentenceTransformerEmbedder:
    """The reference pipeline: ``SentenceTransformer.encode`` on CPU, normalised float32.

    Needs the ``[torch]`` extra. ``threads``, when given, is applied with
    ``torch.set_num_threads`` (process-wide).
    """

    def __init__(
        self,
        model_dir: Path,
        *,
        model_name: str = DEFAULT_MODEL,
        batch_size: int = _ST_DEFAULT_BATCH_SIZE,
        max_seq_length: int = _DEFAULT_MAX_SEQ_LENGTH,
        threads: int | None = None,
    ) -> None:
        self.name = _pipeline_name(model_name, "sentence-transformers", max_seq_length)
        self.batch_size = batch_size
        _require_sentence_transformers()
        try:
            with hub_offline(), quiet_transformers():
                import torch
                from sentence_transformers import SentenceTransformer

                if threads is not None:
                    torch.set_num_threads(threads)
                self._model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
        except ImportError as exc:
            raise EmbedderUnavailable(f"the sentence-transformers backend cannot load: {exc}") from exc
        except (OSError, ValueError, RuntimeError) as exc:
            raise EmbedderUnavailable(f"cannot load {model_dir} with sentence-transformers: {exc}") from exc
        self._model.max_seq_length = max_seq_length
        dim = self._model.get_embedding_dimension()
        if dim is None:
            raise EmbedderUnavailable(f"{model_dir} does not declare its embedding dimension")
        self.dim = int(dim)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``; rows are unit length, in input order."""
        if not texts:
            return _empty(self.dim)
        vectors = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)


# ------------------------------------------------------------------------- ONNX encode


class OnnxEmbedder:
    """Embeds with ONNX Runtime and the model's own ``tokenizer.json``; no torch.

    Pooling follows the model's facts (mean over real tokens, or CLS), followed by L2
    normalisation. Texts longer than ``max_seq_length`` tokens are truncated. Build one
    with :meth:`from_model_dir` (a checked ONNX model directory, such as the shipped
    model) or :meth:`from_sentence_transformers` (built once; needs ``[model-build]``).

    Texts are sorted by length and run in padded batches of ``batch_size`` on ``threads``
    intra-op threads; ``batch_size`` 1 runs each text on its own (no padding, one intra-op
    thread per run, ``threads`` runs in parallel). The graph computes in float32 with an
    additive mask that gives padding exactly zero weight, so a text's vector is the same
    in any batch, with any thread count, on any x86-64 CPU (to ~1e-7; measured in
    benchmarks/results/embedding_cpu_independence.json).
    """

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path,
        facts: PipelineFacts,
        *,
        precision: Precision,
        model_name: str = DEFAULT_MODEL,
        model_sha256: str | None = None,
        batch_size: int = 1,
        max_seq_length: int = _DEFAULT_MAX_SEQ_LENGTH,
        threads: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.model_path = model_path
        self.tokenizer_path = tokenizer_path  # its digest keys the shared embedding cache
        self.model_name = model_name
        self.model_sha256 = model_sha256 or file_sha256(model_path)
        self.precision = precision
        self.max_seq_length = min(max_seq_length, facts.max_positions)
        # The digest makes the name the model's identity: another file, even one built by
        # the same recipe with other package versions, never shares an index or a cache.
        self.name = _pipeline_name(model_name, f"onnx-{precision}@{self.model_sha256[:12]}", max_seq_length)
        self.dim = facts.dim
        self.batch_size = batch_size
        self.threads = _resolve_threads(threads)
        self._pooling = facts.pooling
        self._lowercase = facts.lowercase
        self._tokenizer = self._load_tokenizer(tokenizer_path)
        self._session = self._load_session(model_path)
        self._input_names = {node.name for node in self._session.get_inputs()}

    @classmethod
    def from_model_dir(cls, files: OnnxModelFiles, **options: int | None) -> OnnxEmbedder:
        """The embedder of a checked ONNX model directory; ``options`` as for the constructor."""
        manifest = files.manifest
        return cls(
            files.model_path, files.tokenizer_path, manifest.pipeline,
            precision=manifest.precision, model_name=manifest.model,
            model_sha256=manifest.files["model.onnx"].sha256, **options,  # type: ignore[arg-type]
        )

    @classmethod
    def from_sentence_transformers(
        cls,
        model_dir: Path,
        *,
        model_name: str,
        precision: Precision = DEFAULT_PRECISION,
        cache_dir: Path | None = None,
        **options: int | None,
    ) -> OnnxEmbedder:
        """Build ``model_dir`` into ONNX (once, into ``cache_dir``; needs ``[model-build]``) and load it."""
        spec = model_spec(model_dir, model_name)
        if spec.extra_modules:
            raise EmbedderUnavailable(
                f"the ONNX pipeline supports transformer + mean/CLS pooling + normalisation only; "
                f"{model_dir} also has {', '.join(spec.extra_modules)}"
            )
        model_path = ensure_onnx_model(model_dir, precision, cache_dir, model_name=model_name)
        return cls(
            model_path, model_dir / "tokenizer.json", spec.facts,
            precision=precision, model_name=model_name, **options,  # type: ignore[arg-type]
        )

    @property
    def identity(self) -> EmbeddingIdentity:
        """What exactly makes these vectors, as an index manifest records it."""
        import onnxruntime as ort
        import tokenizers

        return EmbeddingIdentity(
            name=self.name, dim=self.dim, model=self.model_name, backend="onnx", precision=self.precision,
            model_sha256=self.model_sha256, pooling=self._pooling, max_seq_length=self.max_seq_length,
            lowercase=self._lowercase,
            runtime={"onnxruntime": ort.__version__, "tokenizers": tokenizers.__version__},
        )

    def _load_tokenizer(self, path: Path) -> Tokenizer:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailable(f"the tokenizers package is not installed: {exc}") from exc
        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises its own exception type
            raise EmbedderUnavailable(f"cannot load the tokenizer {path}: {exc}") from exc
        # tokenizer.json ships with fixed padding to 128 and truncation at 128; we want no
        # padding (we pad per batch) and the sentence-transformers length limit.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_seq_length)
        return tokenizer

    def _load_session(self, path: Path) -> onnxruntime.InferenceSession:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise EmbedderUnavailable(f"onnxruntime is not installed: {exc}") from exc
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1 if self.batch_size == 1 else self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        try:
            return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # ORT raises its own exception types
            raise EmbedderUnavailable(f"onnxruntime cannot load {path}: {exc}") from exc

    def _run(self, token_ids: Sequence[Sequence[int]]) -> np.ndarray:
        """Embed one batch of token id lists (right-padded with 0 to the longest)."""
        width = max(len(ids) for ids in token_ids)
        input_ids = np.zeros((len(token_ids), width), dtype=np.int64)
        mask = np.zeros((len(token_ids), width), dtype=np.int64)
        for row, ids in enumerate(token_ids):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
        hidden: np.ndarray = self._session.run(None, {k: v for k, v in feeds.items() if k in self._input_names})[0]
        if self._pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        unit: np.ndarray = (pooled / norms).astype(np.float32)
        return unit

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``; rows are unit length, in input order."""
        if not texts:
            return _empty(self.dim)
        encodings = self._tokenizer.encode_batch([text.lower() for text in texts] if self._lowercase else list(texts))
        token_ids = [encoding.ids for encoding in encodings]
        # Longest first: batches hold similar lengths (little padding) and, with one text
        # per run, the long runs start early so the worker threads finish together.
        order = sorted(range(len(texts)), key=lambda i: (-len(token_ids[i]), i))
        batches = [order[start : start + self.batch_size] for start in range(0, len(order), self.batch_size)]
        out = np.empty((len(texts), self.dim), dtype=np.float32)

        def run(batch: list[int]) -> np.ndarray:
            return self._run([token_ids[i] for i in batch])

        workers = self.threads if self.batch_size == 1 else 1
        if workers > 1 and len(batches) > 1:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                results = list(pool.map(run, batches))
        else:
            results = [run(batch) for batch in batches]
        for batch, vectors in zip(batches, results, strict=True):
            out[batch] = vectors
        return out


# ------------------------------------------------------------------------------ factory


def load_embedder(config: EmbeddingConfig) -> Embedder:
    """Build the configured embedder; raise :class:`EmbedderUnavailable` if it cannot load.

    The shipped model and directories made by ``scripts/build_onnx_model.py`` load with
    onnxruntime alone (their files checked against their manifest). The first ONNX load of
    a sentence-transformers directory (a build, seconds, cached) needs the ``[model-build]``
    extra, the sentence-transformers backend the ``[torch]`` extra; without it the error
    names the extra.
    """
    if config.backend == "sentence-transformers":
        _require_sentence_transformers()
        st_dir = local_model_dir() if config.model == DEFAULT_MODEL else resolve_model_dir(config.model)
        return SentenceTransformerEmbedder(
            sentence_transformers_dir(st_dir),
            model_name=config.model if config.model == DEFAULT_MODEL else st_dir.name,
            batch_size=config.batch_size or _ST_DEFAULT_BATCH_SIZE,
            max_seq_length=config.max_seq_length,
            threads=config.threads,
        )
    directory = resolve_model_dir(config.model)
    options: dict[str, int | None] = {
        "batch_size": config.batch_size or ONNX_BATCH_SIZE,
        "max_seq_length": config.max_seq_length,
        "threads": config.threads,
    }
    if (directory / MANIFEST_NAME).is_file():
        return OnnxEmbedder.from_model_dir(load_onnx_model_dir(directory), **options)
    return OnnxEmbedder.from_sentence_transformers(
        directory,
        model_name=directory.name,
        cache_dir=Path(config.cache_dir) if config.cache_dir else None,
        **options,
    )
