"""Orders that are the same on every CPU: the top k of a score vector (or of each row
of a matrix) with ties to the lower position, and the inverse of ``np.unique``.

numpy picks its default ``argsort``, ``argpartition`` and ``np.unique(...,
return_inverse=True)`` kernels by the CPU's features (x86-simd-sort on AVX2 and
AVX-512). Those kinds are not stable, so equal scores come out in an order that depends
on the machine; on an emulated AVX2 CPU (``qemu-x86_64 -cpu Haswell``) numpy 2.4's
float and int32 ``argsort``/``argpartition`` returned orders that were not even sorted,
and a 2-D ``argpartition`` and an int64 ``argsort`` of this project's crashed the
process. What these helpers use instead gave the same answers there as natively:
value-only ``np.partition`` and ``np.sort``, comparisons, and stable sorts.
"""

from __future__ import annotations

import numpy as np


def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` highest ``scores``, highest first, ties by lower position
    (all positions when there are fewer): ``np.lexsort((np.arange(n), -scores))[:k]``.

    Only the scores that can be in the head are sorted: the k-th highest value is found
    with ``np.partition``, and every score at least that high (ties included, so that
    which of equal scores get in is decided by position, not by the partition's kernel)
    is sorted stably. NaN scores rank last."""
    scores = np.asarray(scores)
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.intp)
    if k < n:
        floor = np.partition(scores, n - k)[n - k]
        near = np.flatnonzero(scores >= floor)
        if len(near) >= k:  # fewer only when NaN (which np.partition puts last) took places
            return near[np.argsort(-scores[near], kind="stable")][:k]
    return np.argsort(-scores, kind="stable")[:k]


def top_k_per_row(scores: np.ndarray, k: int) -> np.ndarray:
    """For each row of a 2-D ``scores``, the columns of its ``k`` highest scores, highest
    first, ties by lower column: :func:`top_k_indices` of every row, shaped (rows, k).

    Needs ``k`` at most the number of columns and no NaN scores."""
    rows, cols = scores.shape
    if k <= 0 or rows == 0:
        return np.zeros((rows, max(k, 0)), dtype=np.intp)
    if k > cols:
        raise ValueError(f"{k} columns wanted of {cols}")
    floor = np.partition(scores, cols - k, axis=1)[:, cols - k]
    # each row's candidates (at least k, more where scores tie at its floor), row by
    # row and by column within a row; sorted by row, then score, then column
    row, col = np.nonzero(scores >= floor[:, None])
    order = np.lexsort((col, -scores[row, col], row))
    col = col[order]
    starts = np.searchsorted(row, np.arange(rows))  # row is ascending: nonzero's order
    return col[starts[:, None] + np.arange(k)]


def unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` for a 1-D array without NaN: the sorted
    distinct values and each value's place among them. numpy's own sorts with its
    default ``argsort`` to find the places; here they are looked up in the distinct
    values instead."""
    values = np.asarray(values)
    distinct = np.unique(values)
    return distinct, np.searchsorted(distinct, values).astype(np.intp)
