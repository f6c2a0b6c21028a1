"""What a folder must be for an index to be read from or written into it.

Checked without numpy, pyarrow or the query engine, so that the command line can
refuse a mistaken path at once, before it loads the rest (:mod:`arborgraph.index.store`
checks again when it opens or writes).
"""

from __future__ import annotations

import fcntl
import os
import re
import stat
from pathlib import Path

from arborgraph.index import layout
from arborgraph.core.errors import BuildError, IndexDamaged, IndexNotFound, IndexUnusable
from arborgraph.index.index_files import read_small, shown


def generation_dirs(index_dir: Path) -> list[tuple[int, Path]]:
    """The generation directories (never symlinks), oldest first."""
    if not index_dir.is_dir():
        return []
    found = []
    for child in index_dir.iterdir():
        number = layout.generation_number(child.name)
        if number is not None and not child.is_symlink() and child.is_dir():
            found.append((number, child))
    return sorted(found)


def read_current(index_dir: Path | str) -> str | None:
    """The live generation's name from ``CURRENT`` ("gen-000007"), fully validated;
    None when the directory has no ``CURRENT``.

    Raises :class:`IndexDamaged` (one line, quoting at most a short escaped prefix of
    the pointer) for a symlink, a non-regular or oversized file, bytes that are not a
    generation name, or a name whose directory is missing or is itself a symlink.
    """
    index_dir = Path(index_dir)
    raw = read_small(index_dir / layout.CURRENT, layout.CURRENT, index_dir)
    if raw is None:
        return None
    text = raw[:-1] if raw.endswith(b"\n") else raw
    if not re.fullmatch(rb"gen-\d{6}", text):
        raise IndexDamaged(
            f"{index_dir}: {layout.CURRENT} is not a generation pointer (it starts {shown(raw)})"
        )
    name = text.decode("ascii")
    target = index_dir / name
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        raise IndexDamaged(f"{index_dir}: {layout.CURRENT} names {name}, which is missing") from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise IndexDamaged(f"{index_dir}: {layout.CURRENT} names {name}, which is not a generation directory")
    return name


def current_generation(index_dir: Path) -> Path | None:
    """The live generation directory, or None when the directory holds no index."""
    name = read_current(index_dir)
    return None if name is None else Path(index_dir) / name


def live_generation(index_dir: Path) -> Path:
    """The live generation directory of the index at ``index_dir``.

    Raises :class:`IndexNotFound` for a missing path, one that is not a directory, or
    a directory without ``CURRENT``; :class:`IndexDamaged` for a bad pointer.
    """
    if not index_dir.exists():
        raise IndexNotFound(f"{index_dir}: no such directory")
    if not index_dir.is_dir():
        raise IndexNotFound(f"{index_dir}: not a directory")
    gen = current_generation(index_dir)
    if gen is None:
        raise IndexNotFound(_no_index_yet(index_dir))
    return gen


def _no_index_yet(index_dir: Path) -> str:
    """Why a directory without ``CURRENT`` holds no index: a first build still running,
    one that stopped before its commit (Ctrl-C, a kill, an error: it leaves its status,
    caches or generation behind), or a folder that never was an index."""
    started = (
        layout.status_file(index_dir).exists()
        or layout.cache_dir(index_dir).exists()
        or bool(generation_dirs(index_dir))
    )
    if not started:
        return f"{index_dir}: not an Arborgraph index (no {layout.CURRENT} file)"
    if build_running(index_dir):
        return f"{index_dir}: the first build is still running; query the index once it has finished"
    # the rerun takes what the stopped build parsed, embedded and asked the model from
    # the index's cache/, so it resumes rather than starting over
    return (
        f"{index_dir}: the first build was interrupted before it finished; run "
        f"`arborgraph build SOURCES --index {index_dir}` again (the same SOURCES) to resume"
    )


def build_running(index_dir: Path | str) -> bool:
    """Whether a build holds ``index_dir``'s build lock right now."""
    path = Path(index_dir) / layout.LOCK
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases the probe's lock at once


def check_index_dir(index_dir: Path) -> None:
    """Refuse to write an index into a directory that holds something else."""
    if index_dir.exists() and not index_dir.is_dir():
        raise IndexUnusable(f"{index_dir} exists and is not a directory")
    if not index_dir.is_dir():
        return
    ours = {layout.LOCK, layout.COUNTER}
    foreign = any(child.name not in ours for child in index_dir.iterdir())
    if (
        foreign
        and not os.path.lexists(index_dir / layout.CURRENT)
        and not generation_dirs(index_dir)
        and not layout.cache_dir(index_dir).exists()
    ):
        raise IndexUnusable(
            f"{index_dir} is a non-empty directory that is not an Arborgraph index; "
            "refusing to write into it"
        )


def check_index_target(index_dir: Path) -> None:
    """Raise :class:`BuildError` unless ``index_dir`` is, or can be made, a writable directory."""
    for path in (index_dir, *index_dir.parents):
        if not path.exists():
            continue
        if not path.is_dir():
            raise BuildError(f"cannot build an index at {index_dir}: {path} is a file, not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise BuildError(f"cannot build an index at {index_dir}: {path} is not writable")
        return


def check_build_target(index_dir: Path) -> None:
    """Everything a build checks of ``index_dir`` before it starts: a writable place
    (:func:`check_index_target`) that holds nothing but an index (:func:`check_index_dir`)."""
    check_index_target(index_dir)
    check_index_dir(index_dir)
