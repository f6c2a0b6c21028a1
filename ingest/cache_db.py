"""The SQLite databases an index keeps as caches (parsed documents, embeddings).

A cache is disposable: one SQLite finds corrupt, or not a database at all (random
bytes, a truncated file), is moved aside, kept as ``NAME.corrupt-TIMESTAMP`` for
whoever wants to look at it, and started afresh. The caller hears of it through
:attr:`CacheDB.warnings`, so a damaged cache costs recomputation, never a build.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

_CORRUPTION = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


class FailedCheck(sqlite3.DatabaseError):
    """``PRAGMA quick_check`` found the file damaged."""


def is_corruption(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite reporting a damaged file (not a busy or locked one)."""
    if isinstance(exc, FailedCheck):
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.DatabaseError) and code is not None and code & 0xFF in _CORRUPTION


class CacheDB:
    """One cache database: ``setup`` statements run on every (re)open; operations go
    through :meth:`run`, which recovers from corruption found at any point."""

    def __init__(self, path: Path, setup: Sequence[str]) -> None:
        self.path = path
        self._setup = tuple(setup)
        self.warnings: list[str] = []
        self.lock = threading.RLock()
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = self._connect(check=True)
        except sqlite3.DatabaseError as exc:
            if not is_corruption(exc):
                raise
            self.db = self._replace(exc)

    def _connect(self, *, check: bool) -> sqlite3.Connection:
        db = sqlite3.connect(str(self.path), timeout=60, check_same_thread=False)
        try:
            for statement in self._setup:
                db.execute(statement)
            if check:
                # walks every page's structure (0.7 s on a 163 MB embedding cache,
                # benchmarks/results/cache_check.json): a truncated or overwritten
                # file is found here rather than halfway through a build
                verdict = db.execute("PRAGMA quick_check(1)").fetchone()
                if verdict is None or verdict[0] != "ok":
                    raise FailedCheck(f"integrity check: {verdict[0] if verdict else 'no answer'}"[:80])
        except BaseException:
            db.close()
            raise
        return db

    def _replace(self, exc: BaseException) -> sqlite3.Connection:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        kept = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while kept.exists():
            n += 1
            kept = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
        # the WAL and shared-memory files belong to the damaged database: a fresh one
        # must not replay them
        for suffix in ("", "-wal", "-shm"):
            source = self.path.with_name(self.path.name + suffix)
            if source.exists():
                source.rename(kept.with_name(kept.name + suffix))
        reason = str(exc).splitlines()[0][:80] if str(exc) else type(exc).__name__
        self.warnings.append(
            f"cache {self.path.name} was damaged ({reason}): moved aside as {kept.name} "
            "and rebuilt; what it held is computed again"
        )
        return self._connect(check=False)

    def run(self, operation: Callable[[sqlite3.Connection], T], fallback: Callable[[], T]) -> T:
        """``operation(db)``; when SQLite finds the file damaged meanwhile, the cache is
        replaced by an empty one and ``fallback()`` answers instead (a miss)."""
        with self.lock:
            try:
                return operation(self.db)
            except sqlite3.DatabaseError as exc:
                if not is_corruption(exc):
                    raise
                self.db.close()
                self.db = self._replace(exc)
                return fallback()

    def close(self) -> None:
        with self.lock:
            self.db.close()
