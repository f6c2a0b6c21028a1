"""Careful reads and writes of an index's own small files (pointers, the manifest).

Shared by :mod:`arborgraph.index.store` and :mod:`arborgraph.index.manifest`: nothing here follows
a symlink or reads an unbounded file, and every write is atomic and durable.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from pathlib import Path

from arborgraph.core.errors import IndexDamaged

MAX_POINTER_BYTES = 64  # CURRENT and last-generation hold one short line


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def shown(text: str | bytes, limit: int = 24) -> str:
    """A short, escaped prefix of untrusted text for an error message: never more than
    ``limit`` characters of it, control characters and non-ASCII as escapes."""
    cut = text[:limit]
    more = "…" if len(text) > limit else ""
    if isinstance(cut, bytes):
        return repr(cut)[1:] + more  # b'...' -> '...'
    return ascii(cut) + more


def read_small(path: Path, what: str, index_dir: Path, limit: int = MAX_POINTER_BYTES) -> bytes | None:
    """The bytes of a one-line file (a pointer, a checksum), None when it does not
    exist; refuses a symlink, anything but a regular file, and more than ``limit`` bytes."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise IndexDamaged(f"{index_dir}: {what} cannot be read ({exc.strerror})") from None
    if stat.S_ISLNK(info.st_mode):
        raise IndexDamaged(f"{index_dir}: {what} is a symlink; refusing to follow it")
    if not stat.S_ISREG(info.st_mode):
        raise IndexDamaged(f"{index_dir}: {what} is not a regular file")
    if info.st_size > limit:
        raise IndexDamaged(f"{index_dir}: {what} is {info.st_size} bytes, too long to be what it should")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise IndexDamaged(f"{index_dir}: {what} cannot be read ({exc.strerror})") from None
    try:
        return os.read(fd, limit + 1)
    finally:
        os.close(fd)


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file, fsynced, then renamed."""
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


def damaged(index_dir: Path, what: str) -> IndexDamaged:
    """The error for a generation that fails its checks: ``INDEX: index damaged: what``."""
    return IndexDamaged(f"{index_dir}: index damaged: {what}")
