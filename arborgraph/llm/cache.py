"""A disk cache of model replies keyed by a hash of the request.

SQLite in WAL mode, values stored as JSON text (no pickles). Every ``put`` commits on
its own, so a process killed at any point keeps all replies it had stored: the next
run finds them and asks only for the missing ones. Several processes may share a file.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any, Self

# Bump when the meaning of a stored value changes, so old entries stop matching.
KEY_VERSION = 1


def request_key(request: dict[str, Any]) -> str:
    """Hash a request (model, messages, parameters) into a stable hex key.

    Canonical JSON (sorted keys, no whitespace) makes the key independent of dict order.
    """
    canonical = json.dumps(
        {"v": KEY_VERSION, **request}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class LLMCache:
    """Thread-safe persistent mapping from request key to a JSON-serialisable value."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # One connection shared by the provider's worker threads, guarded by the lock;
        # the timeout lets other processes' writers finish instead of failing.
        self._conn = sqlite3.connect(
            self.path, timeout=30.0, check_same_thread=False, isolation_level=None
        )
        self._conn.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode survives a killed process (not a power cut), at far less
        # fsync cost than FULL.
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS replies ("
            " key TEXT PRIMARY KEY, kind TEXT NOT NULL, value TEXT NOT NULL)"
        )

    def get(self, key: str) -> Any | None:
        """Return the stored value, or ``None`` when the key is absent."""
        with self._lock:
            row = self._conn.execute("SELECT value FROM replies WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def get_many(self, keys: list[str]) -> dict[str, Any]:
        """Return the stored values of those keys that are present."""
        found: dict[str, Any] = {}
        unique = list(dict.fromkeys(keys))
        # SQLite limits bound parameters per statement; 500 is well under every default.
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            marks = ",".join("?" * len(part))
            with self._lock:
                rows = self._conn.execute(
                    f"SELECT key, value FROM replies WHERE key IN ({marks})", part
                ).fetchall()
            found.update((k, json.loads(v)) for k, v in rows)
        return found

    def put(self, key: str, value: Any, *, kind: str) -> None:
        """Store a value (committed immediately); ``kind`` is "chat", "embedding", ..."""
        text = json.dumps(value, ensure_ascii=False)
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO replies (key, kind, value) VALUES (?, ?, ?)",
                (key, kind, text),
            )

    def __contains__(self, key: object) -> bool:
        with self._lock:
            row = self._conn.execute("SELECT 1 FROM replies WHERE key = ?", (key,)).fetchone()
        return row is not None

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._conn.execute("SELECT COUNT(*) FROM replies").fetchone()
        return int(count)

    def count(self, kind: str) -> int:
        """Number of stored values of one kind."""
        with self._lock:
            (n,) = self._conn.execute(
                "SELECT COUNT(*) FROM replies WHERE kind = ?", (kind,)
            ).fetchone()
        return int(n)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
