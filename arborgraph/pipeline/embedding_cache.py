"""An index's persistent embedding cache keyed by (embedder name, text), in SQLite.

SQLite commits are atomic, so a build killed mid-way keeps every batch it finished
and the next build embeds only what is missing. A damaged database is moved aside and
started afresh (see :mod:`ingest.cache_db`), and :attr:`EmbeddingCache.warnings` says
so; a stored vector of the wrong size is a miss. Behind it, a build may consult the
user-level cache that index folders share (:mod:`arborgraph.pipeline.shared_embedding_cache`).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from arborgraph.core.protocols import Embedder
from arborgraph.pipeline.shared_embedding_cache import SharedEmbeddingCache
from ingest.cache_db import CacheDB

BATCH = 256  # texts per commit: bounds the work lost to an interruption


def _key(model: str, text: str) -> str:
    return hashlib.sha256(f"{model}\x00{text}".encode()).hexdigest()


class EmbeddingCache:
    def __init__(self, path: Path) -> None:
        self._cache = CacheDB(
            path,
            (
                "PRAGMA journal_mode=WAL",
                "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, dim INTEGER, data BLOB)",
            ),
        )
        self.hits = 0  # texts served from this cache
        self.shared_hits = 0  # texts served from the shared cache
        self.misses = 0  # vectors computed

    @property
    def warnings(self) -> list[str]:
        return self._cache.warnings

    def close(self) -> None:
        self._cache.close()

    def _get(self, keys: Sequence[str], dim: int) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            part = list(keys[start : start + 500])
            marks = ",".join("?" * len(part))
            rows = self._cache.run(
                lambda db: db.execute(
                    f"SELECT key, dim, data FROM vectors WHERE key IN ({marks})", part
                ).fetchall(),
                list,
            )
            for key, stored_dim, data in rows:
                if stored_dim == dim and isinstance(data, bytes) and len(data) == 4 * dim:
                    found[key] = np.frombuffer(data, dtype=np.float32)
        return found

    def _put(self, rows: list[tuple[str, int, bytes]]) -> None:
        def insert(db: sqlite3.Connection) -> None:
            with db:
                db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)

        self._cache.run(insert, lambda: None)  # lost to a damaged cache: embedded again next time

    def embed(
        self,
        embedder: Embedder,
        texts: Sequence[str],
        progress: Callable[[int, int], None] | None = None,
        shared: SharedEmbeddingCache | None = None,
    ) -> np.ndarray:
        """Vectors for ``texts``: from this cache, else from the ``shared`` user-level
        cache (then kept here too), else computed and stored in both."""
        keys = [_key(embedder.name, t) for t in texts]
        cached = self._get(sorted(set(keys)), embedder.dim)
        missing = sorted({k: i for i, k in enumerate(keys) if k not in cached}.items())
        self.hits += len(texts) - sum(1 for k in keys if k not in cached)
        if shared is not None and missing:
            got = shared.get([texts[i] for _, i in missing], embedder.dim)
            taken = {k: v for (k, _), v in zip(missing, got) if v is not None}
            # kept here as well: this index's cache stays complete for its next build
            self._put([(k, int(v.shape[0]), v.tobytes()) for k, v in taken.items()])
            cached.update(taken)
            self.shared_hits += sum(1 for k in keys if k in taken)
            missing = [(k, i) for k, i in missing if k not in taken]
        done = len(texts) - len(missing)
        if progress:
            progress(done, len(texts))
        for start in range(0, len(missing), BATCH):
            part = missing[start : start + BATCH]
            vectors = embedder.encode([texts[i] for _, i in part]).astype(np.float32)
            rows = [(k, int(v.shape[0]), v.tobytes()) for (k, _), v in zip(part, vectors)]
            self._put(rows)
            if shared is not None:
                shared.put([texts[i] for _, i in part], vectors)
            for (k, _), v in zip(part, vectors):
                cached[k] = v
            self.misses += len(part)
            done += len(part)
            if progress:
                progress(done, len(texts))
        if not texts:
            return np.zeros((0, embedder.dim), dtype=np.float32)
        return np.stack([cached[k] for k in keys]).astype(np.float32)
