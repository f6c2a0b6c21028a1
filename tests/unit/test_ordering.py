"""The CPU-independent orders of ``arborgraph.core.ordering`` and the places that use
them, against a stable reference, with many equal scores: which of equal scores make
the top k is decided by position, never by numpy's partition kernel."""

from __future__ import annotations

import numpy as np
import pytest

from arborgraph.core.ordering import top_k_indices, top_k_per_row, unique_inverse
from arborgraph.query.fusion import top_indices


def _reference(scores: np.ndarray, k: int) -> np.ndarray:
    """Highest first, ties by lower position (NaN last): a stable sort's head."""
    return np.lexsort((np.arange(len(scores)), -scores))[:k]


def _tied(rng: np.random.Generator, n: int, levels: int, dtype: str) -> np.ndarray:
    """``n`` scores taking ``levels`` values: most of them tie with many others."""
    return (rng.integers(0, levels, n) / levels).astype(dtype) if dtype.startswith("float") else (
        rng.integers(0, levels, n).astype(dtype)
    )


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_top_k_is_the_stable_head_with_ties_at_the_cut(dtype: str) -> None:
    rng = np.random.default_rng(39)
    for n, levels in [(1000, 3), (5000, 7), (200, 2), (64, 64), (3000, 1)]:
        scores = _tied(rng, n, levels, dtype)
        for k in (1, 2, 10, 37, n // 3, n // 2, n - 1, n, n + 5):
            assert np.array_equal(top_k_indices(scores, k), _reference(scores, k)), (n, levels, k)


def test_the_cut_falls_inside_a_tie_group() -> None:
    # 500 rows tie at the top, k takes some of them: the lowest positions, in order
    scores = np.zeros(2000, dtype=np.float32)
    tied = np.random.default_rng(1).choice(2000, 500, replace=False)
    scores[tied] = 0.75
    scores[:3] = 1.0
    picked = top_k_indices(scores, 103)
    assert picked[:3].tolist() == [0, 1, 2]
    assert picked[3:].tolist() == sorted(tied[tied >= 3].tolist())[:100]


def test_top_k_edges() -> None:
    assert top_k_indices(np.zeros(0), 3).tolist() == []
    assert top_k_indices(np.array([1.0, 2.0]), 0).tolist() == []
    assert top_k_indices(np.array([1.0, 2.0, 2.0]), 5).tolist() == [1, 2, 0]
    # signed zeros tie; NaN ranks last
    assert top_k_indices(np.array([-0.0, 0.0, -1.0, 0.0]), 2).tolist() == [0, 1]
    with_nan = np.array([np.nan, 0.5, np.nan, 0.5, 0.1])
    for k in range(6):
        assert np.array_equal(top_k_indices(with_nan, k), _reference(with_nan, k))


def test_top_indices_keeps_the_lower_rows_of_a_tie_under_a_mask() -> None:
    rng = np.random.default_rng(7)
    scores = _tied(rng, 20_000, 4, "float32")  # a quarter zero: never returned
    mask = rng.random(20_000) < 0.6
    for k in (1, 50, 1000, 5000, 20_000):
        got = top_indices(scores, k, mask)
        kept = np.where(mask & (scores > 0), scores, -np.inf)
        want = _reference(kept, k)
        assert np.array_equal(got, want[kept[want] > 0]), k


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_top_k_per_row_is_each_rows_stable_head(dtype: str) -> None:
    rng = np.random.default_rng(5)
    scores = _tied(rng, 300 * 90, 5, dtype).reshape(300, 90)
    for k in (1, 4, 15, 89, 90):
        got = top_k_per_row(scores, k)
        assert got.shape == (300, k)
        for row in range(300):
            assert np.array_equal(got[row], _reference(scores[row], k)), (row, k)


def test_exact_neighbours_of_repeated_points_go_to_the_lower_index() -> None:
    from raptor.cluster import exact_cosine_knn

    # four entries of ±1 per point, the rest 0: norms of 2, so every cosine is a sum of
    # ±0.25 and exact whatever the BLAS kernel, and most of them tie (repeated points too)
    rng = np.random.default_rng(2)
    X = np.zeros((200, 8))
    for row in range(200):
        X[row, rng.choice(8, 4, replace=False)] = rng.choice([-1.0, 1.0], 4)
    X[100:150] = X[:50]
    indices, distances = exact_cosine_knn(X, 7, block=64)
    unit = X / 2.0
    for row in range(200):
        sim = unit @ unit[row]
        sim[row] = np.inf
        assert np.array_equal(indices[row], _reference(sim, 7)), row
    assert (distances[:, 0] == 0).all()


def test_unique_inverse_is_numpys() -> None:
    rng = np.random.default_rng(11)
    for dtype in ("int64", "int32", "float64"):
        values = rng.integers(-5, 40, 3000).astype(dtype)
        distinct, where = unique_inverse(values)
        want_distinct, want_where = np.unique(values, return_inverse=True)
        assert np.array_equal(distinct, want_distinct) and np.array_equal(where, want_where)
    empty, nowhere = unique_inverse(np.zeros(0, dtype=np.int64))
    assert empty.size == 0 and nowhere.size == 0
