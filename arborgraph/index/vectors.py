"""Exact cosine search over unit vectors (a matrix product is fast enough to 10^5 rows)."""

from __future__ import annotations

import numpy as np


class DenseIndex:
    """Unit-length float32 rows aligned with a table's rows."""

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)

    @property
    def n_rows(self) -> int:
        return int(self.vectors.shape[0])

    def scores(self, query_vector: np.ndarray) -> np.ndarray:
        if self.n_rows == 0:
            return np.zeros(0, dtype=np.float32)
        # einsum, not BLAS: for one query vector a multi-threaded BLAS mat-vec spends
        # more time waking and spinning its threads than computing (16 ms vs 1.6 ms
        # for 4,856 x 384 on 2 busy cores)
        return np.einsum("ij,j->i", self.vectors, np.asarray(query_vector, dtype=np.float32).reshape(-1))

    def scores_of(self, rows: np.ndarray, query_vector: np.ndarray) -> np.ndarray:
        """Cosines of the given rows alone."""
        return np.einsum("ij,j->i", self.vectors[rows], np.asarray(query_vector, dtype=np.float32).reshape(-1))
