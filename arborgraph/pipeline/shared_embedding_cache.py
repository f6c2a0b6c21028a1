"""The user-level embedding cache that index folders share (the second tier).

Each index keeps its own cache (:mod:`arborgraph.pipeline.embedding_cache`), which lets
an interrupted build resume. This one, a single SQLite file per user account, lets a
build into a new folder take the vectors another build of the same text already
computed. A build consults its index's cache first, then this one, and computes only
what neither holds, storing it in both.

A row's key is the SHA-256 of the model's identity and the exact text, never of a name
alone: the identity is everything :class:`EmbeddingIdentity` records that changes a
vector (the model file's SHA-256, precision, pooling, length limit, lowercasing,
dimension) plus the tokenizer file's SHA-256, so another model, or the same one run
with other settings, never gets these vectors. An embedder that declares no model file
digest (an OpenAI-compatible endpoint, an embedder a caller plugs in) is not shared:
its name does not pin its vectors. The texts themselves are not stored.

The file holds vectors of every document built on the account, restricted ones too:
its folder is created 0700 and the file 0600 (SQLite gives its ``-wal`` and ``-shm``
files the database's mode). It is bounded: beyond ``max_bytes`` of pages the least
recently used rows (read or written) are deleted down to 90 % of it and the freed pages
returned to the file system. Builds running at once share it (WAL, a 60 s busy
timeout). A damaged file is moved aside and started afresh (:mod:`ingest.cache_db`); a
folder or file that cannot be used (read-only, not ours, full disk, locked too long) is
skipped, and the build goes on without it, saying so in :attr:`warnings`.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import sqlite3
import stat
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from arborgraph.core.embedding_identity import identity_of
from arborgraph.core.model_files import file_sha256
from arborgraph.core.protocols import Embedder
from arborgraph.models.embedding import EmbeddingConfig
from ingest.cache_db import CacheDB

__all__ = [
    "SHARED_CACHE_FILE",
    "SharedCacheOpening",
    "SharedEmbeddingCache",
    "default_shared_cache_dir",
    "model_key",
    "open_shared_cache",
    "shared_cache_file",
]

T = TypeVar("T")

SHARED_CACHE_FILE = "vectors.sqlite"
# Bump when the key's recipe or the row layout changes: old rows then simply miss.
_FORMAT = 1
# An eviction goes this far below the limit, so that the next few batches do not evict again.
_EVICT_TO = 0.9
_LOOKUP = 500  # keys per SELECT: below SQLite's limit on bound parameters

_SETUP = (
    # before the table exists (a new file): lets an eviction give pages back to the disk
    "PRAGMA auto_vacuum=INCREMENTAL",
    "PRAGMA journal_mode=WAL",
    "CREATE TABLE IF NOT EXISTS vectors "
    "(key BLOB PRIMARY KEY, dim INTEGER NOT NULL, data BLOB NOT NULL, used INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS vectors_used ON vectors (used)",
)


def default_shared_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/arborgraph/embeddings``, or ``~/.cache/arborgraph/embeddings``
    when that variable is unset or not an absolute path (as the XDG spec says); read when
    called, never at import."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
    return root / "arborgraph" / "embeddings"


def shared_cache_file(config: EmbeddingConfig) -> Path:
    """The shared cache file ``config`` names (``embedding.shared_cache_dir``, else the default)."""
    folder = Path(config.shared_cache_dir).expanduser() if config.shared_cache_dir else default_shared_cache_dir()
    return folder / SHARED_CACHE_FILE


def model_key(embedder: Embedder) -> bytes | None:
    """The digest of what makes ``embedder``'s vectors, or None when it declares no model
    file digest (then nothing pins its vectors beyond a name, and it is not shared).

    The runtime's versions are left out, as the index manifest leaves them out of its
    comparison: the shipped model's vectors agree across them to ~1e-7.
    """
    identity = identity_of(embedder)
    if identity.model_sha256 is None:
        return None
    facts = identity.model_dump(mode="json", exclude={"runtime"})
    # the same model file with another tokenizer gives other vectors
    tokenizer = getattr(embedder, "tokenizer_path", None)
    facts["tokenizer_sha256"] = file_sha256(Path(tokenizer)) if tokenizer is not None else None
    facts["format"] = _FORMAT
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).digest()


def _private_folder(folder: Path) -> None:
    """Create ``folder`` with mode 0700, or take group and other access away from it;
    ``PermissionError`` when we may not write in it (a folder left read-only is respected)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    _owner_only(folder)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, "not writable", str(folder))


def _private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 (an empty file is an empty database to
    SQLite), or take group and other access away from it; ``PermissionError`` when we
    may not read and write it."""
    try:
        handle = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        _owner_only(path)
        if not os.access(path, os.R_OK | os.W_OK):
            raise PermissionError(errno.EACCES, "not writable", str(path)) from None
    else:
        os.close(handle)


def _owner_only(path: Path) -> None:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        os.chmod(path, mode & 0o700)  # PermissionError when it is not ours: not used then


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc).splitlines()[0][:80] if str(exc) else ""
    return text or type(exc).__name__


class SharedEmbeddingCache:
    """The shared cache file at ``path`` for one model (``model``, from :func:`model_key`),
    bounded to ``max_bytes``; raises ``OSError`` or ``sqlite3.Error`` when it cannot be
    opened (:func:`open_shared_cache` turns that into a warning).

    Counts for the build report: :attr:`hits` (texts served), :attr:`stored` (vectors
    added), :attr:`evicted` (rows deleted to keep the limit).
    """

    def __init__(self, path: Path, model: bytes, max_bytes: int) -> None:
        self.path = path
        self._model = model
        self._max_bytes = max_bytes
        _private_folder(path.parent)
        _private_file(path)
        self._cache = CacheDB(path, _SETUP)
        self._seen_replacements = 0
        self._after_replacement()
        self._problem: str | None = None
        self._own_warnings: list[str] = []
        self._taken = 0
        self.hits = 0
        self.stored = 0
        self.evicted = 0

    @property
    def usable(self) -> bool:
        """False once an operation failed: the rest of the build goes without it."""
        return self._problem is None

    @property
    def warnings(self) -> list[str]:
        """What went wrong: a damaged file moved aside, or the cache given up on."""
        return [*self._cache.warnings, *self._own_warnings]

    def take_warnings(self) -> list[str]:
        """The warnings not taken yet (each build stage reports what happened during it)."""
        fresh = self.warnings[self._taken :]
        self._taken += len(fresh)
        return fresh

    def close(self) -> None:
        self._cache.close()

    def _key(self, text: str) -> bytes:
        return hashlib.sha256(self._model + b"\x00" + text.encode()).digest()

    def _after_replacement(self) -> None:
        # SQLite creates the fresh file that replaces a damaged one with the default
        # mode; the 0700 folder already keeps others out, this keeps the file 0600 too
        if len(self._cache.warnings) != self._seen_replacements:
            self._seen_replacements = len(self._cache.warnings)
            for suffix in ("", "-wal", "-shm"):
                made = self.path.with_name(self.path.name + suffix)
                if made.exists():
                    _owner_only(made)

    def _run(self, operation: Callable[[sqlite3.Connection], T], fallback: Callable[[], T]) -> T:
        """``operation`` through the cache; any failure other than a damaged file (which
        :class:`CacheDB` replaces) gives the cache up for this build, with a warning."""
        if self._problem is not None:
            return fallback()
        try:
            result = self._cache.run(operation, fallback)
            self._after_replacement()
            return result
        except (OSError, sqlite3.Error) as exc:
            self._problem = _reason(exc)
            self._own_warnings.append(
                f"shared embedding cache {self.path}: stopped using it ({self._problem}); "
                "the rest of this build computes what its index's cache lacks"
            )
            return fallback()

    def get(self, texts: Sequence[str], dim: int) -> list[np.ndarray | None]:
        """The stored vector of each text (None: not stored, or stored with another
        dimension), marking the found rows as used now."""
        keys = [self._key(t) for t in texts]
        found: dict[bytes, np.ndarray] = {}
        unique = sorted(set(keys))
        for start in range(0, len(unique), _LOOKUP):
            part = unique[start : start + _LOOKUP]
            marks = ",".join("?" * len(part))

            def lookup(db: sqlite3.Connection) -> list[tuple[bytes, int, bytes]]:
                rows = db.execute(f"SELECT key, dim, data FROM vectors WHERE key IN ({marks})", part).fetchall()
                hit = [row[0] for row in rows]
                if hit:
                    with db:
                        db.execute(
                            f"UPDATE vectors SET used = ? WHERE key IN ({','.join('?' * len(hit))})",
                            [time.time_ns(), *hit],
                        )
                return rows

            for key, stored_dim, data in self._run(lookup, list):
                if stored_dim == dim and isinstance(data, bytes) and len(data) == 4 * dim:
                    found[key] = np.frombuffer(data, dtype=np.float32)
        out = [found.get(k) for k in keys]
        self.hits += sum(1 for v in out if v is not None)
        return out

    def put(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store the vector of each text, then keep the file within its limit."""
        now = time.time_ns()
        rows = [
            (self._key(t), int(v.shape[0]), np.ascontiguousarray(v, dtype=np.float32).tobytes(), now)
            for t, v in zip(texts, vectors)
        ]

        def insert(db: sqlite3.Connection) -> int:
            with db:
                db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
            return len(rows)

        self.stored += self._run(insert, lambda: 0)
        self.evicted += self._run(self._evict, lambda: 0)

    def _evict(self, db: sqlite3.Connection) -> int:
        """Delete the least recently used rows when the file's used pages pass the limit."""

        def used_bytes() -> int:
            page_size = db.execute("PRAGMA page_size").fetchone()[0]
            pages = db.execute("PRAGMA page_count").fetchone()[0] - db.execute("PRAGMA freelist_count").fetchone()[0]
            return int(page_size * pages)

        size = used_bytes()
        if size <= self._max_bytes:
            return 0
        target = self._max_bytes * _EVICT_TO
        evicted = 0
        # rows are all about the same size, but half-empty pages keep some of the bytes a
        # deletion frees: measure again until below the target
        while size > target:
            with db:
                rows = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
                if not rows:
                    break
                n = min(rows, max(1, -(-int(rows * (size - target)) // size)))
                db.execute("DELETE FROM vectors WHERE key IN (SELECT key FROM vectors ORDER BY used LIMIT ?)", (n,))
            evicted += n
            size = used_bytes()
        # run as a script: stepped once by execute(), the pragma frees a single page
        db.executescript("PRAGMA incremental_vacuum;")
        db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        return int(evicted)


@dataclass
class SharedCacheOpening:
    """What :func:`open_shared_cache` found: the cache (None: not used), and why not
    (``note`` when off or not applicable, a ``warning`` when it could not be used)."""

    cache: SharedEmbeddingCache | None
    note: str | None = None
    warning: str | None = None


def open_shared_cache(config: EmbeddingConfig, embedder: Embedder) -> SharedCacheOpening:
    """The shared cache this build uses with ``embedder``, per ``config``; never raises
    for an unusable folder or file (a warning says so and the build goes on without)."""
    if not config.shared_cache:
        return SharedCacheOpening(None, note="off (embedding.shared_cache = false)")
    model = model_key(embedder)
    if model is None:
        return SharedCacheOpening(
            None, note=f"not used: {embedder.name} declares no model file digest to key shared vectors by"
        )
    try:
        path = shared_cache_file(config)
    except RuntimeError as exc:  # no home directory to put it in
        return SharedCacheOpening(None, warning=f"shared embedding cache skipped: {exc}")
    try:
        return SharedCacheOpening(SharedEmbeddingCache(path, model, int(config.shared_cache_max_mb * 2**20)))
    except (OSError, sqlite3.Error) as exc:
        return SharedCacheOpening(
            None,
            warning=f"shared embedding cache {path} skipped ({_reason(exc)}): this build computes what its "
            "index's cache lacks; set embedding.shared_cache_dir to a writable folder, or turn it off "
            "(--no-shared-cache)",
        )
