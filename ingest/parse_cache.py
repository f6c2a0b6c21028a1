"""Parsed documents kept by the bytes they were parsed from, so a rebuild parses only
the files that changed.

A loader is a pure function of (file bytes, doc id, path, format) and of the loader
code and parser libraries, so the key is a hash of all of them: an edited file (even
one whose size did not change), a moved file, another format, a changed loader or an
upgraded parser each miss and parse again. Only successful parses are kept; a sidecar
is applied after the cache, as after a parse. SQLite commits are atomic, so a build
killed mid-way keeps what it parsed; a damaged database is replaced by an empty one.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import sqlite3
from pathlib import Path

from ingest.cache_db import CacheDB
from ingest.models import Document

# the libraries loaders parse with: an upgrade may parse the same bytes differently
_PARSERS = ("markdown-it-py", "lxml", "docutils", "pypdf")


@functools.cache
def loader_fingerprint() -> str:
    """A hash of the ingest package's source and the parser libraries' versions."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parent
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\x00" + path.read_bytes() + b"\x00")
    for name in _PARSERS:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"{name}={version}\x00".encode())
    return digest.hexdigest()


def parse_key(raw_sha256: str, *, doc_id: str, path: str, fmt: str) -> str:
    """The cache key of one parse: the file's bytes (by hash), what it was loaded as,
    and the loader code that loads it."""
    payload = json.dumps([loader_fingerprint(), raw_sha256, doc_id, path, fmt])
    return hashlib.sha256(payload.encode()).hexdigest()


class ParseCache:
    """Documents by :func:`parse_key`, in SQLite; safe to share between threads.

    A damaged database is moved aside and started afresh (see :mod:`ingest.cache_db`);
    :attr:`warnings` says so, and a stored document that no longer validates is a miss.
    """

    def __init__(self, path: Path) -> None:
        self._cache = CacheDB(
            path,
            (
                "PRAGMA journal_mode=WAL",
                "PRAGMA synchronous=NORMAL",  # a cache: no sync per document
                "CREATE TABLE IF NOT EXISTS documents (key TEXT PRIMARY KEY, document TEXT)",
            ),
        )
        self.hits = 0
        self.misses = 0

    @property
    def warnings(self) -> list[str]:
        return self._cache.warnings

    def get(self, key: str) -> Document | None:
        row = self._cache.run(
            lambda db: db.execute("SELECT document FROM documents WHERE key = ?", (key,)).fetchone(),
            lambda: None,
        )
        document = None
        if row is not None:
            try:
                document = Document.model_validate_json(row[0])
            except ValueError:
                document = None
        with self._cache.lock:
            if document is None:
                self.misses += 1
            else:
                self.hits += 1
        return document

    def put(self, key: str, document: Document) -> None:
        text = document.model_dump_json()

        def insert(db: sqlite3.Connection) -> None:
            with db:
                db.execute("INSERT OR REPLACE INTO documents (key, document) VALUES (?, ?)", (key, text))

        self._cache.run(insert, lambda: None)  # lost to a damaged cache: parsed again next time

    def close(self) -> None:
        self._cache.close()
