"""The chunk vectors and their dense search: exact, or approximate for large collections.

Below :attr:`VectorIndexConfig.ann_min_rows` chunks a question's cosine with every chunk
is one matrix product (1.6 ms for 4,856 x 384 on one core). Above it a build adds an
HNSW index (usearch, float16 vectors, built on one thread so the same vectors give the
same file), stored in the generation beside the vectors and memory-mapped on open; a
question then scores the index's best hits exactly from the float32 vectors, and any
other rows it needs on demand. ``benchmarks/bench_ann.py`` chose the library and its
settings (recall@100 against exact search, latency, size, build time).

usearch is the ``[scale]`` extra, not a default dependency (with its SIMD library it is
55 MB that collections under ``ann_min_rows`` never use): without it a large collection
is searched exactly, which is slower but finds the same or better hits.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.lib.format as npy_format

ANN_METRIC = "ip"  # the vectors are unit length: inner product is cosine
ANN_DTYPE = "f16"
ANN_MISSING = "usearch is not installed (pip install 'arborgraph[scale]'): dense search is exact"


def ann_available() -> bool:
    """Whether the approximate index's library (the ``[scale]`` extra) is installed."""
    try:
        import usearch.index  # noqa: F401  (whoever asks is about to use it)
    except ImportError:
        return False
    return True


class RowReader:
    """Rows of a ``.npy`` matrix read from the file on demand, a few at a time, the
    first ``keep`` rows read kept in memory for the next reads.

    For rows read here and there (an approximate search's hits): read through a memory
    map, each row would map its neighbours too (the kernel's fault-around maps 64 KB of
    cached file per touch), so a process answering questions over a large collection
    would soon count most of the file as its own resident memory. The rows kept serve
    what every question reads again (global search's page leads: a row of each page)
    without a read each. Positional reads are safe from any thread; rows are kept under
    a lock and published only once written."""

    def __init__(self, path: Path, keep: int = 8_192) -> None:
        with open(path, "rb") as f:
            version = npy_format.read_magic(f)
            read_header = npy_format.read_array_header_1_0 if version == (1, 0) else npy_format.read_array_header_2_0
            shape, fortran, dtype = read_header(f)
            self._offset = f.tell()
        if fortran or len(shape) != 2:
            raise ValueError(f"{path}: expected a C-ordered matrix")
        self.shape: tuple[int, int] = (int(shape[0]), int(shape[1]))
        self.dtype = np.dtype(dtype)
        self._row_bytes = self.shape[1] * self.dtype.itemsize
        self._fd = os.open(path, os.O_RDONLY)
        weakref.finalize(self, os.close, self._fd)
        self._keep = max(0, min(keep, self.shape[0]))
        self._slot = np.full(self.shape[0], -1, dtype=np.int64)  # row -> place in _kept (-1: not kept)
        self._kept: np.ndarray | None = None
        self._n_kept = 0
        self._lock = threading.Lock()

    def take(self, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """The given rows, in the order given (repeats allowed)."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= self.shape[0]):
            raise IndexError("row out of range")
        wanted = np.unique(rows)
        out = np.empty((len(wanted), self.shape[1]), dtype=self.dtype)
        slots = self._slot[wanted]
        hit = slots >= 0
        if hit.any():
            assert self._kept is not None
            out[hit] = self._kept[slots[hit]]
        missing = np.flatnonzero(~hit)
        if missing.size:
            out[missing] = self._read(wanted[missing])
            self._remember(wanted[missing], out[missing])
        return out[np.searchsorted(wanted, rows)]

    def _read(self, wanted: np.ndarray) -> np.ndarray:
        """Sorted distinct rows from the file: one read per run of consecutive rows."""
        out = np.empty((len(wanted), self.shape[1]), dtype=self.dtype)
        flat = out.reshape(-1).view(np.uint8)
        starts = np.flatnonzero(np.r_[True, np.diff(wanted) != 1])
        ends = np.r_[starts[1:], len(wanted)]
        for a, b in zip(starts.tolist(), ends.tolist()):
            size = (b - a) * self._row_bytes
            got = os.preadv(self._fd, [memoryview(flat[a * self._row_bytes : b * self._row_bytes])],
                            self._offset + int(wanted[a]) * self._row_bytes)
            if got != size:
                raise OSError(f"short read of vector rows ({got} of {size} bytes)")
        return out

    def _remember(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        if self._n_kept >= self._keep:
            return
        with self._lock:
            if self._kept is None:
                self._kept = np.empty((self._keep, self.shape[1]), dtype=self.dtype)
            new = rows[self._slot[rows] < 0][: self._keep - self._n_kept]
            if not new.size:
                return
            places = np.arange(self._n_kept, self._n_kept + new.size)
            self._kept[places] = vectors[np.searchsorted(rows, new)]
            self._n_kept += new.size
            self._slot[new] = places  # published after the rows are written


class DenseIndex:
    """Unit-length float32 rows aligned with a table's rows, and (for large tables) an
    approximate index over them whose keys are the row numbers. ``rows``, when given,
    reads the rows a question needs from the file (see :class:`RowReader`); else they
    are read from ``vectors``."""

    def __init__(self, vectors: np.ndarray, ann: Any = None, rows: RowReader | None = None) -> None:
        self.vectors = vectors if vectors.dtype == np.float32 else np.ascontiguousarray(vectors, dtype=np.float32)
        self.ann = ann
        self._rows = rows if rows is not None and rows.dtype == np.float32 else None

    def take(self, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """The vectors of the given rows, in that order."""
        return self._rows.take(rows) if self._rows is not None else self.vectors[np.asarray(rows, dtype=np.int64)]

    @property
    def n_rows(self) -> int:
        return int(self.vectors.shape[0])

    @property
    def approximate(self) -> bool:
        return self.ann is not None

    def scores(self, query_vector: np.ndarray) -> np.ndarray:
        """The cosine of every row (exact)."""
        if self.n_rows == 0:
            return np.zeros(0, dtype=np.float32)
        # einsum, not BLAS: for one query vector a multi-threaded BLAS mat-vec spends
        # more time waking and spinning its threads than computing (16 ms vs 1.6 ms
        # for 4,856 x 384 on 2 busy cores)
        return np.einsum("ij,j->i", self.vectors, np.asarray(query_vector, dtype=np.float32).reshape(-1))

    def scores_of(self, rows: np.ndarray, query_vector: np.ndarray) -> np.ndarray:
        """Cosines of the given rows alone (exact)."""
        return np.einsum("ij,j->i", self.take(rows), np.asarray(query_vector, dtype=np.float32).reshape(-1))

    def nearest(self, query_vector: np.ndarray, k: int, expansion: int) -> np.ndarray:
        """The rows the approximate index finds nearest, best first (at most ``k``)."""
        assert self.ann is not None
        self.ann.expansion_search = max(expansion, k)
        found = self.ann.search(np.asarray(query_vector, dtype=np.float32).reshape(-1), min(k, self.n_rows), threads=1)
        return np.asarray(found.keys, dtype=np.int64)


def build_ann(vectors: np.ndarray, path: Path, *, connectivity: int, expansion_add: int) -> None:
    """Write the HNSW index of ``vectors`` (keys: row numbers) to ``path``."""
    from usearch.index import Index

    index = Index(
        ndim=int(vectors.shape[1]), metric=ANN_METRIC, dtype=ANN_DTYPE,
        connectivity=connectivity, expansion_add=expansion_add,
    )
    # one thread: the graph then depends on the vectors alone, and so does the file
    index.add(np.arange(len(vectors), dtype=np.uint64), np.ascontiguousarray(vectors, dtype=np.float32), threads=1)
    index.save(str(path))


# Row keys are moved out of the way through this offset while they are renumbered, so a
# kept row never takes a key another kept row still holds.
_PARKED = np.uint64(1 << 40)


def update_ann(
    previous_path: Path, old_ids: Sequence[str], old_vectors: np.ndarray, new_ids: Sequence[str],
    new_vectors: np.ndarray, path: Path, *, max_changed: float = 0.25,
) -> dict[str, int] | None:
    """Write to ``path`` the previous generation's HNSW index (at ``previous_path``, keyed by
    its rows ``old_ids``) brought up to the new rows: the entries of chunks that are gone or
    whose vector changed are removed, kept chunks are renumbered to their new rows, new and
    changed chunks are added. Returns the counts, or None when more than ``max_changed`` of
    the rows changed (the graph would be mostly repairs: the caller builds it afresh).

    An updated index answers as a fresh build of the same rows would, up to the
    approximation itself (its graph differs: it was grown in another order)."""
    from usearch.index import Index

    old_row = {chunk_id: row for row, chunk_id in enumerate(old_ids)}
    kept_old, kept_new, added = [], [], []
    for row, chunk_id in enumerate(new_ids):
        before = old_row.get(chunk_id)
        if before is not None and np.array_equal(old_vectors[before], new_vectors[row]):
            kept_old.append(before)
            kept_new.append(row)
        else:
            added.append(row)
    removed = sorted(set(range(len(old_ids))) - set(kept_old))
    if len(added) + len(removed) > max_changed * max(len(new_ids), 1):
        return None
    index = Index.restore(str(previous_path))
    if index is None or index.size != len(old_ids):
        return None  # not the index of those rows: build afresh
    if removed:
        index.remove(np.asarray(removed, dtype=np.uint64))
    moved = [(o, n) for o, n in zip(kept_old, kept_new) if o != n]
    if moved:
        olds, news = (np.asarray(keys, dtype=np.uint64) for keys in zip(*moved))
        index.rename(olds, news + _PARKED)
        index.rename(news + _PARKED, news)
    if added:
        rows = np.asarray(added, dtype=np.uint64)
        index.add(rows, np.ascontiguousarray(new_vectors[added], dtype=np.float32), threads=1)
    index.save(str(path))
    return {"kept": len(kept_new), "added": len(added), "removed": len(removed), "renumbered": len(moved)}


def load_ann(path: Path) -> Any:
    """The HNSW index at ``path``, memory-mapped (read only: pages load as searches touch
    them); None when usearch is not installed (the caller then searches exactly)."""
    if not ann_available():
        return None
    from usearch.index import Index

    return Index.restore(str(path), view=True)
