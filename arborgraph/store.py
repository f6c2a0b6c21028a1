"""The on-disk index: a directory of generations, swapped in atomically.

Layout of an index directory::

    INDEX/
      CURRENT            -> text file naming the live generation ("gen-000003")
      gen-000003/
        manifest.json    schema version, config, model names, checksums, counts...
        tables/*.parquet named tables
        vectors/*.npy    float32 matrices, row order = table row order
        bm25/<name>/     lexical indexes
      cache/             embedding and LLM caches, shared by every generation
      builds/            per-document status of the build in progress

A build writes a whole new generation and only then rewrites ``CURRENT`` (write a
temp file, fsync, rename), so a reader sees the old index or the new one, never a
mix, and an interrupted build leaves the previous index untouched. Everything is
checksummed in the manifest; :func:`open_generation` refuses anything that does not
match.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from arborgraph.schema import SCHEMA_VERSION

CURRENT_FILE = "CURRENT"
MANIFEST_FILE = "manifest.json"
_GEN_RE = re.compile(r"^gen-(\d{6})$")
KEEP_OLD_GENERATIONS = 1  # a reader that opened the previous generation keeps working


class IndexUnusable(Exception):
    """An index directory that cannot be opened or written; the message is one clear line.

    The base of :class:`IndexNotFound` and :class:`IndexDamaged`: catch this for both.
    """


class IndexNotFound(IndexUnusable):
    """No index at the path: it does not exist, is not a directory, or has no CURRENT."""


class IndexDamaged(IndexUnusable):
    """An index that is there but cannot be used: missing, truncated or tampered files,
    an unreadable manifest, another schema version."""


# Deprecated: the old name, which read like the builtin IndexError. Use IndexUnusable.
IndexError_ = IndexUnusable


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_dir(index_dir: Path) -> Path:
    return Path(index_dir) / "cache"


def _generations(index_dir: Path) -> list[tuple[int, Path]]:
    if not index_dir.is_dir():
        return []
    found = []
    for child in index_dir.iterdir():
        match = _GEN_RE.match(child.name)
        if match and child.is_dir():
            found.append((int(match.group(1)), child))
    return sorted(found)


def current_generation(index_dir: Path) -> Path | None:
    """The live generation directory, or None when the directory holds no index."""
    pointer = Path(index_dir) / CURRENT_FILE
    if not pointer.is_file():
        return None
    name = pointer.read_text(encoding="utf-8").strip()
    if not _GEN_RE.match(name):
        raise IndexDamaged(f"{index_dir}: CURRENT names '{name}', which is not a generation")
    return Path(index_dir) / name


class GenerationWriter:
    """Writes one new generation; :meth:`commit` makes it the live index."""

    def __init__(self, index_dir: Path) -> None:
        self.index_dir = Path(index_dir)
        if self.index_dir.exists() and not self.index_dir.is_dir():
            raise IndexUnusable(f"{self.index_dir} exists and is not a directory")
        if (
            self.index_dir.is_dir()
            and any(self.index_dir.iterdir())
            and current_generation(self.index_dir) is None
            and not _generations(self.index_dir)
            and not (self.index_dir / "cache").exists()
        ):
            raise IndexUnusable(
                f"{self.index_dir} is a non-empty directory that is not an Arborgraph index; "
                "refusing to write into it"
            )
        self.index_dir.mkdir(parents=True, exist_ok=True)
        self._clean_abandoned()
        existing = _generations(self.index_dir)
        number = existing[-1][0] + 1 if existing else 1
        self.path = self.index_dir / f"gen-{number:06d}"
        self.path.mkdir()
        for sub in ("tables", "vectors", "bm25"):
            (self.path / sub).mkdir()
        self._files: dict[str, dict[str, Any]] = {}

    def _clean_abandoned(self) -> None:
        """Remove generations that an interrupted build left behind (never the live one)."""
        live = current_generation(self.index_dir)
        for _, gen in _generations(self.index_dir):
            if gen != live and not (gen / MANIFEST_FILE).exists():
                shutil.rmtree(gen, ignore_errors=True)

    def write_table(self, name: str, table: pa.Table) -> None:
        target = self.path / "tables" / f"{name}.parquet"
        pq.write_table(table, target, compression="zstd")
        self._files[f"tables/{name}.parquet"] = {"rows": table.num_rows}

    def write_vectors(self, name: str, vectors: np.ndarray) -> None:
        target = self.path / "vectors" / f"{name}.npy"
        np.save(target, np.ascontiguousarray(vectors, dtype=np.float32), allow_pickle=False)
        self._files[f"vectors/{name}.npy"] = {"rows": int(vectors.shape[0])}

    def dir_for(self, relative: str) -> Path:
        """A sub-directory for a component that writes its own files (e.g. BM25)."""
        target = self.path / relative
        target.mkdir(parents=True, exist_ok=True)
        return target

    def reuse(self, previous: "Generation", prefixes: tuple[str, ...]) -> int:
        """Hard-link (or copy) the previous generation's files under ``prefixes``.

        Files are immutable once committed, so a link is safe and costs no I/O.
        Returns how many files were taken over.
        """
        taken = 0
        for rel, info in previous.manifest.get("files", {}).items():
            if not rel.startswith(prefixes):
                continue
            source, target = previous.path / rel, self.path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, target)
            except OSError:
                shutil.copy2(source, target)
            if "rows" in info:
                self._files[rel] = {"rows": info["rows"]}
            taken += 1
        return taken

    def commit(self, manifest: dict[str, Any]) -> Path:
        """Checksum every file, write the manifest, and atomically make this the live index."""
        checksums = {}
        for file in sorted(p for p in self.path.rglob("*") if p.is_file()):
            rel = file.relative_to(self.path).as_posix()
            checksums[rel] = {"sha256": sha256_file(file), "bytes": file.stat().st_size}
            checksums[rel].update(self._files.get(rel, {}))
        manifest = dict(manifest)
        manifest["schema_version"] = SCHEMA_VERSION
        manifest["generation"] = self.path.name
        manifest["files"] = checksums
        _write_atomic(self.path / MANIFEST_FILE, json.dumps(manifest, indent=2, sort_keys=True))
        _write_atomic(self.index_dir / CURRENT_FILE, self.path.name + "\n")
        self._prune_old()
        return self.path

    def abort(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def _prune_old(self) -> None:
        gens = [g for _, g in _generations(self.index_dir) if g != self.path]
        for gen in gens[: max(0, len(gens) - KEEP_OLD_GENERATIONS)]:
            shutil.rmtree(gen, ignore_errors=True)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


@dataclass(frozen=True)
class Generation:
    """An opened, verified generation: its path and manifest."""

    path: Path
    manifest: dict[str, Any]

    def table(self, name: str, columns: list[str] | None = None) -> pa.Table:
        return pq.read_table(self.path / "tables" / f"{name}.parquet", columns=columns)

    def has_table(self, name: str) -> bool:
        return f"tables/{name}.parquet" in self.manifest["files"]

    def vectors(self, name: str) -> np.ndarray:
        return np.load(self.path / "vectors" / f"{name}.npy", allow_pickle=False)

    def has_vectors(self, name: str) -> bool:
        return f"vectors/{name}.npy" in self.manifest["files"]

    def subdir(self, relative: str) -> Path:
        return self.path / relative


def open_generation(index_dir: Path | str, *, verify: bool = True) -> Generation:
    """Open the live generation of ``index_dir``, refusing anything damaged.

    Raises :class:`IndexNotFound` (nothing there) or :class:`IndexDamaged` with a one-line reason for: a missing directory, a
    directory that is not an index, a newer schema, a missing or unreadable manifest,
    and (with ``verify``) any file whose size or checksum differs from the manifest.
    """
    index_dir = Path(index_dir)
    if not index_dir.exists():
        raise IndexNotFound(f"{index_dir}: no such directory")
    if not index_dir.is_dir():
        raise IndexNotFound(f"{index_dir}: not a directory")
    gen = current_generation(index_dir)
    if gen is None:
        raise IndexNotFound(f"{index_dir}: not an Arborgraph index (no {CURRENT_FILE} file)")
    manifest_path = gen / MANIFEST_FILE
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise IndexDamaged(f"{index_dir}: the live generation {gen.name} has no manifest") from None
    except (OSError, ValueError) as exc:
        raise IndexDamaged(f"{index_dir}: unreadable manifest ({exc})") from None
    version = manifest.get("schema_version")
    if not isinstance(version, int):
        raise IndexDamaged(f"{index_dir}: manifest has no schema version")
    if version > SCHEMA_VERSION:
        raise IndexDamaged(
            f"{index_dir}: index schema {version} is newer than this Arborgraph supports "
            f"({SCHEMA_VERSION}); upgrade arborgraph"
        )
    if version < SCHEMA_VERSION:
        raise IndexDamaged(
            f"{index_dir}: index schema {version} is older than {SCHEMA_VERSION}; rebuild it"
        )
    if verify:
        for rel, info in manifest.get("files", {}).items():
            file = gen / rel
            if not file.is_file():
                raise IndexDamaged(f"{index_dir}: {rel} is missing (truncated index?)")
            if file.stat().st_size != info["bytes"]:
                raise IndexDamaged(f"{index_dir}: {rel} has the wrong size (truncated or tampered)")
            if sha256_file(file) != info["sha256"]:
                raise IndexDamaged(f"{index_dir}: {rel} fails its checksum (tampered or corrupt)")
    return Generation(path=gen, manifest=manifest)
