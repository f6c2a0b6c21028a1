"""The on-disk index: a directory of generations, swapped in atomically.

The paths are in :mod:`arborgraph.index.layout`, the manifest's shape and its reading and
writing in :mod:`arborgraph.index.manifest`.

A build holds an exclusive ``flock`` on ``build.lock`` from before it reads the live
index until after it commits, so two builds never write one index at once. It writes
a whole new generation and only then rewrites ``CURRENT`` (write a temp file, fsync,
rename), so a reader sees the old index or the new one, never a mix, and an
interrupted build leaves the previous index untouched. Everything is checksummed in
the manifest, and the manifest in its sidecar; :func:`open_generation` refuses
anything that does not match.

A reader may *pin* the generation it opened: a shared ``flock`` on the generation's
directory. A build prunes old generations only when it can take that lock
exclusively, so a pinned generation stays on disk until its reader closes it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from arborgraph.index import layout
from arborgraph.core.errors import IndexUnusable, IndexNotFound, IndexDamaged, IndexBusy
from arborgraph.index.index_dir import (
    check_index_dir, current_generation, generation_dirs as _generations, live_generation, read_current,
)
from arborgraph.index.index_files import damaged, read_small, sha256_file, shown, write_atomic
from arborgraph.index.vectors import RowReader
from arborgraph.index.manifest import FileRecord, StoreManifest, read_manifest, write_manifest
from arborgraph.index.schema import SCHEMA_VERSION

KEEP_OLD_GENERATIONS = 1  # besides those a reader pins: for readers that do not pin
# A build that finds the lock taken retries this long before failing: a reader of
# the build status holds it for a moment to learn whether a build is running.
LOCK_GRACE_S = 0.5
# Opening retries when a build prunes the generation CURRENT named just before the
# reader could pin it (it then reads CURRENT again).
OPEN_ATTEMPTS = 5



class BuildLock:
    """The exclusive lock a build holds on an index for its whole run.

    An OS ``flock`` on ``INDEX/build.lock``, so it is released when the process dies,
    however it dies. With ``wait`` a second build blocks until the first is done (after
    calling ``on_wait`` with a message); without it, it raises :class:`IndexBusy`.
    """

    def __init__(
        self, index_dir: Path, *, wait: bool = False, on_wait: Callable[[str], None] | None = None,
        when_busy: str = "wait for it to finish, or pass --wait (wait_for_lock=True) to queue behind it",
    ) -> None:
        self.index_dir = Path(index_dir)
        self.path = self.index_dir / layout.LOCK
        self._when_busy = when_busy  # what the caller can do, said when the lock is held
        self._fd = self._acquire(wait, on_wait)
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f"{os.getpid()}\n".encode(), 0)
        self._closer = weakref.finalize(self, os.close, self._fd)

    def _acquire(self, wait: bool, on_wait: Callable[[str], None] | None) -> int:
        while True:
            self.index_dir.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            except FileNotFoundError:  # the directory was removed meanwhile
                continue
            except OSError as exc:
                raise IndexUnusable(f"{self.index_dir}: cannot open {layout.LOCK} ({exc.strerror})") from None
            try:
                if not _try_lock(fd, fcntl.LOCK_EX, LOCK_GRACE_S):
                    message = (
                        f"{self.index_dir}: another build (pid {_holder(fd)}) is writing this index"
                    )
                    if not wait:
                        raise IndexBusy(f"{message}; {self._when_busy}")
                    if on_wait is not None:
                        on_wait(f"{message}; waiting for it to finish")
                    fcntl.flock(fd, fcntl.LOCK_EX)
                # the holder may have removed the file (a first build that found
                # nothing leaves nothing behind): then this lock guards nothing
                if _same_file(fd, self.path):
                    return fd
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)

    def release(self, *, remove: bool = False) -> None:
        """Release the lock (``remove``: delete the lock file first, for a build that
        leaves no index behind)."""
        if not self._closer.alive:
            return
        if remove:
            self.path.unlink(missing_ok=True)
        self._closer()

    def __enter__(self) -> "BuildLock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _try_lock(fd: int, kind: int, grace_s: float) -> bool:
    deadline = time.monotonic() + grace_s
    while True:
        try:
            fcntl.flock(fd, kind | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)


def _holder(fd: int) -> str:
    raw = os.pread(fd, 16, 0).strip()
    return raw.decode("ascii") if raw.isdigit() else "unknown"


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.lstat(path))
    except FileNotFoundError:
        return False


class GenerationPin:
    """A shared ``flock`` on a generation directory: while it is held, no build prunes
    that generation. Released by :meth:`close` or when the object is collected."""

    def __init__(self, fd: int) -> None:
        self._closer = weakref.finalize(self, os.close, fd)

    @classmethod
    def take(cls, gen: Path) -> "GenerationPin | None":
        """Pin ``gen``; None when it was pruned before the pin could be taken."""
        try:
            fd = os.open(gen, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise IndexUnusable(f"{gen.parent}: cannot open {gen.name} ({exc.strerror})") from None
        # a build holds the exclusive lock only while it deletes the directory
        fcntl.flock(fd, fcntl.LOCK_SH)
        if not _same_file(fd, gen) or not (gen / layout.MANIFEST).exists():
            os.close(fd)
            return None
        return cls(fd)

    @property
    def held(self) -> bool:
        return self._closer.alive

    def close(self) -> None:
        self._closer()


def _remove_if_unpinned(gen: Path) -> bool:
    """Delete ``gen`` unless a reader pins it; True when it was deleted."""
    try:
        fd = os.open(gen, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # an open knowledge base still reads it
        # renamed first, so no reader finds a half-deleted generation under its name
        trash = gen.with_name(layout.PRUNED_PREFIX + gen.name)
        shutil.rmtree(trash, ignore_errors=True)
        try:
            os.rename(gen, trash)
        except OSError:  # pruning is housekeeping: the build has committed already
            return False
        shutil.rmtree(trash, ignore_errors=True)
        return True
    finally:
        os.close(fd)


class GenerationWriter:
    """Writes one new generation; :meth:`commit` makes it the live index.

    Holds ``lock`` (a build's :class:`BuildLock`) or, without one, takes the index's
    build lock itself for its lifetime (failing at once when another build has it).
    """

    def __init__(self, index_dir: Path, *, lock: BuildLock | None = None) -> None:
        self.index_dir = Path(index_dir)
        check_index_dir(self.index_dir)
        self._own_lock = lock is None
        self.lock = lock if lock is not None else BuildLock(self.index_dir)
        try:
            self._clean_abandoned()
            self.path = self.index_dir / layout.generation_name(self._allocate_number())
            self.path.mkdir()
            for sub in layout.GENERATION_SUBDIRS:
                (self.path / sub).mkdir()
        except BaseException:
            self._release()
            raise
        self._files: dict[str, dict[str, Any]] = {}

    def _allocate_number(self) -> int:
        """A generation number never handed out before in this index, recorded before
        its directory exists: an abandoned or pruned generation's number is not reused."""
        seen = [n for n, _ in _generations(self.index_dir)]
        raw = read_small(self.index_dir / layout.COUNTER, layout.COUNTER, self.index_dir)
        if raw is not None and raw.strip().isdigit():
            seen.append(int(raw.strip()))
        live = read_current(self.index_dir)
        if live is not None:
            seen.append(int(live[4:]))
        for child in self.index_dir.iterdir():
            number = layout.generation_number(child.name.removeprefix(layout.PRUNED_PREFIX))
            if number is not None:
                seen.append(number)
        number = max(seen, default=0) + 1
        if number > layout.MAX_GENERATION:
            raise IndexUnusable(f"{self.index_dir}: generation numbers are exhausted; build a new index")
        write_atomic(self.index_dir / layout.COUNTER, f"{number}\n")
        return number

    def _clean_abandoned(self) -> None:
        """Remove what interrupted builds and prunes left behind (never the live one)."""
        live = current_generation(self.index_dir)
        for _, gen in _generations(self.index_dir):
            if gen != live and not (gen / layout.MANIFEST).exists():
                shutil.rmtree(gen, ignore_errors=True)
        for child in self.index_dir.iterdir():
            if child.name.startswith(layout.PRUNED_PREFIX) and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)

    def write_table(self, name: str, table: pa.Table) -> None:
        rel = layout.table_file(name)
        pq.write_table(table, self.path / rel, compression="zstd")
        self._files[rel] = {"rows": table.num_rows}

    def write_vectors(self, name: str, vectors: np.ndarray) -> None:
        rel = layout.vectors_file(name)
        target = self.path / rel
        try:
            np.save(target, np.ascontiguousarray(vectors, dtype=np.float32), allow_pickle=False)
        except OSError as exc:
            if exc.errno is not None:
                raise
            # numpy reports a short write ("N requested and M written") without an errno,
            # so the build could not tell a full disk from a bug: give it the errno
            full = shutil.disk_usage(target.parent).free < vectors.nbytes
            code = errno.ENOSPC if full else errno.EIO
            raise OSError(code, os.strerror(code), str(target)) from exc
        self._files[rel] = {"rows": int(vectors.shape[0])}

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
        for rel, info in previous.manifest.files.items():
            if not rel.startswith(prefixes):
                continue
            source, target = previous.path / rel, self.path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, target)
            except OSError:
                shutil.copy2(source, target)
            if info.rows is not None:
                self._files[rel] = {"rows": info.rows}
            taken += 1
        return taken

    def commit(self, manifest: Mapping[str, Any]) -> Path:
        """Checksum every file, write the manifest (``manifest`` plus the store's part:
        schema version, generation, file list) and its checksum, and atomically make
        this the live index; then prune old generations no reader pins."""
        checksums = {}
        for file in sorted(p for p in self.path.rglob("*") if p.is_file()):
            rel = file.relative_to(self.path).as_posix()
            checksums[rel] = {"sha256": sha256_file(file), "bytes": file.stat().st_size}
            checksums[rel].update(self._files.get(rel, {}))
        data = dict(manifest)
        data["schema_version"] = SCHEMA_VERSION
        data["generation"] = self.path.name
        data["files"] = checksums
        write_manifest(self.path, data)
        write_atomic(self.index_dir / layout.CURRENT, self.path.name + "\n")
        self._prune_old()
        self._release()
        return self.path

    def abort(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        self._release()

    def _release(self) -> None:
        if self._own_lock:
            self.lock.release()

    def _prune_old(self) -> None:
        older = [g for _, g in _generations(self.index_dir) if g != self.path]
        for gen in older[: max(0, len(older) - KEEP_OLD_GENERATIONS)]:
            _remove_if_unpinned(gen)


@dataclass(frozen=True)
class Generation:
    """An opened, verified generation: its path, its typed manifest (of the shape it was
    opened with: an index's is a :class:`arborgraph.index.manifest.Manifest`) and (when
    opened with ``pin=True``) the pin that keeps builds from pruning it."""

    path: Path
    manifest: StoreManifest = field(repr=False)
    pin: GenerationPin | None = field(default=None, compare=False, repr=False)

    @property
    def name(self) -> str:
        return self.path.name

    def _listed(self, rel: str) -> Path:
        # only files the checksummed manifest lists are ever read
        if rel not in self.manifest.files:
            raise IndexDamaged(f"{self.path.parent}: {rel} is not in the manifest of {self.name}")
        return self.path / rel

    def table(self, name: str, columns: list[str] | None = None) -> pa.Table:
        path = self._listed(layout.table_file(name))
        # one file, read as such: pq.read_table goes through pyarrow.dataset, whose import
        # imports pandas (0.2 s of every command that opens an index) for the same table
        with pq.ParquetFile(path) as file:
            if columns is None or set(columns) <= set(file.schema_arrow.names):
                return file.read(columns=columns)
        return pq.read_table(path, columns=columns)  # its error names the missing column

    def read_done(self) -> None:
        """Hand back to the system the memory tables took while being read and converted
        (the Arrow pool keeps freed memory for later reads: a large index's tables would
        leave hundreds of megabytes a query process never uses again)."""
        pa.default_memory_pool().release_unused()

    def table_batches(self, name: str, batch_rows: int = 16_384) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
        """A table's schema (with its metadata) and its rows as record batches, read as
        they are consumed: a large table converted batch by batch is never in memory
        whole. The memory the reading took goes back to the system at the end
        (:meth:`read_done`)."""
        path = self._listed(layout.table_file(name))
        file = pq.ParquetFile(path)

        def batches() -> Iterator[pa.RecordBatch]:
            try:
                yield from file.iter_batches(batch_size=batch_rows)
            finally:
                file.close()
                self.read_done()

        return file.schema_arrow, batches()

    def has_table(self, name: str) -> bool:
        return layout.table_file(name) in self.manifest.files

    def vectors(self, name: str, *, mmap: bool = False) -> np.ndarray:
        """A vector array; ``mmap`` maps it read-only instead of reading it (its pages
        load as they are touched, and a large array costs no memory until then)."""
        return np.load(self._listed(layout.vectors_file(name)), allow_pickle=False, mmap_mode="r" if mmap else None)

    def vector_rows(self, name: str) -> RowReader:
        """A vector array's rows, read from its file as they are asked for (see
        :class:`arborgraph.index.vectors.RowReader`)."""
        return RowReader(self._listed(layout.vectors_file(name)))

    def file(self, relative: str) -> Path:
        """The path of a file the manifest lists (IndexDamaged for any other)."""
        return self._listed(relative)

    def has_vectors(self, name: str) -> bool:
        return layout.vectors_file(name) in self.manifest.files

    def subdir(self, relative: str) -> Path:
        prefix = relative.rstrip("/") + "/"
        if not any(rel.startswith(prefix) for rel in self.manifest.files):
            raise IndexDamaged(f"{self.path.parent}: {relative} is not in the manifest of {self.name}")
        return self.path / relative

    def close(self) -> None:
        """Release the pin (if any): a later build may then prune this generation."""
        if self.pin is not None:
            self.pin.close()


def open_generation(
    index_dir: Path | str,
    *,
    verify: bool = True,
    pin: bool = False,
    shape: type[StoreManifest] = StoreManifest,
) -> Generation:
    """Open the live generation of ``index_dir``, refusing anything damaged.

    Raises :class:`IndexNotFound` (nothing there) or :class:`IndexDamaged`, with a one-line reason, for: a missing directory, a
    directory that is not an index, a ``CURRENT`` that is not a plain pointer to a
    generation, a newer or older schema, a missing, unreadable or tampered manifest
    (its SHA-256 sidecar), a manifest not of ``shape`` and (with ``verify``) any file
    whose size or checksum differs from the manifest, or that it does not list. With
    ``pin`` the generation stays on disk, whatever builds follow, until
    :meth:`Generation.close`.
    """
    index_dir = Path(index_dir)
    for _ in range(OPEN_ATTEMPTS):
        try:
            gen = live_generation(index_dir)
        except IndexDamaged as exc:
            raise IndexDamaged(str(exc) + _rollback_hint(index_dir, None)) from None
        held = GenerationPin.take(gen) if pin else None
        if pin and held is None:
            continue  # pruned between reading CURRENT and pinning: read CURRENT again
        try:
            manifest = read_manifest(index_dir, gen, shape)
            if verify:
                _verify_files(index_dir, gen, manifest.files)
        except IndexDamaged as exc:
            if held is not None:
                held.close()
            raise IndexDamaged(str(exc) + _rollback_hint(index_dir, gen)) from None
        except BaseException:
            if held is not None:
                held.close()
            raise
        return Generation(path=gen, manifest=manifest, pin=held)
    raise IndexDamaged(f"{index_dir}: the live generation kept changing while opening it; try again")


def intact_problem(index_dir: Path, gen: Path) -> str | None:
    """Why generation ``gen`` of ``index_dir`` cannot be used (manifest, sizes, checksums),
    or None when it is whole."""
    try:
        manifest = read_manifest(index_dir, gen, StoreManifest)
        _verify_files(index_dir, gen, manifest.files)
    except IndexDamaged as exc:
        return str(exc)
    return None


def changed_on_disk(gen: Generation) -> str | None:
    """A cheap look (sizes and file types, no hashing) at whether ``gen``'s files are still
    what its manifest lists; the first difference, or None."""
    for rel, info in gen.manifest.files.items():
        try:
            meta = os.lstat(gen.path / rel)
        except OSError:
            return f"{shown(rel, 80)} is missing"
        if not stat.S_ISREG(meta.st_mode):
            return f"{shown(rel, 80)} is no longer a regular file"
        if meta.st_size != info.bytes:
            return f"{shown(rel, 80)} has the wrong size (truncated or tampered)"
    return None


def last_intact_generation(index_dir: Path, before: Path | None) -> Path | None:
    """The newest generation older than ``before`` (every one when None) that is whole."""
    older = [g for n, g in _generations(index_dir) if before is None or g.name < before.name]
    for gen in reversed(older):
        if intact_problem(index_dir, gen) is None:
            return gen
    return None


def _rollback_hint(index_dir: Path, damaged_gen: Path | None) -> str:
    good = last_intact_generation(index_dir, damaged_gen)
    if good is None:
        return ""
    return f"; {good.name} is intact (arborgraph rollback makes it live)"


def rollback(index_dir: Path | str, to: str | None = None) -> tuple[str | None, str]:
    """Point ``CURRENT`` back at an intact older generation: ``to`` if given, else the
    newest whole one older than the live one (any whole one when ``CURRENT`` itself is
    unreadable). Takes the build lock (refuses while a build runs) and verifies the
    target's every file first. Returns (the generation that was live or None, the one
    now live)."""
    index_dir = Path(index_dir)
    if not index_dir.is_dir():
        raise IndexNotFound(f"{index_dir}: no such directory")
    # rollback has no --wait: say what to do instead
    with BuildLock(index_dir, when_busy="run the rollback again when it has finished"):
        try:
            live: Path | None = live_generation(index_dir)
        except IndexNotFound:
            if not _generations(index_dir):
                raise
            live = None  # CURRENT deleted: any whole generation will do
        except IndexDamaged:
            live = None
        if to is not None:
            target = index_dir / to
            if layout.generation_number(to) is None or not target.is_dir() or target.is_symlink():
                raise IndexNotFound(f"{index_dir}: no generation {shown(to, 40)}")
            problem = intact_problem(index_dir, target)
            if problem is not None:
                raise IndexDamaged(f"cannot roll back to {to}: {problem}")
        else:
            found = last_intact_generation(index_dir, live)
            if found is None:
                raise IndexDamaged(
                    f"{index_dir}: no intact generation older than {live.name if live else 'the live one'} to roll back to"
                )
            target = found
        write_atomic(index_dir / layout.CURRENT, target.name + "\n")
    return (live.name if live else None), target.name


def _verify_files(index_dir: Path, gen: Path, files: Mapping[str, FileRecord]) -> None:
    root = os.path.realpath(gen)
    for rel, info in files.items():
        file = gen / rel
        try:
            meta = os.lstat(file)
        except (FileNotFoundError, NotADirectoryError):
            raise IndexDamaged(f"{index_dir}: {shown(rel, 80)} is missing (truncated index?)") from None
        if not stat.S_ISREG(meta.st_mode) or not os.path.realpath(file).startswith(root + os.sep):
            raise damaged(index_dir, f"{shown(rel, 80)} is not a regular file inside {gen.name}")
        if meta.st_size != info.bytes:
            raise IndexDamaged(f"{index_dir}: {shown(rel, 80)} has the wrong size (truncated or tampered)")
        if sha256_file(file) != info.sha256:
            raise IndexDamaged(f"{index_dir}: {shown(rel, 80)} fails its checksum (tampered or corrupt)")
    own = {layout.MANIFEST, layout.MANIFEST_SUM}
    for folder, dirs, names in os.walk(gen):
        for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            rel = Path(folder, name).relative_to(gen).as_posix()
            if rel not in files and rel not in own:
                raise damaged(index_dir, f"{gen.name} holds {shown(rel, 80)}, which its manifest does not list")
