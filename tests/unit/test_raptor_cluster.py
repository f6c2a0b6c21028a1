"""The RAPTOR clustering estimator: contract, determinism, BIC, soft assignment, budgets."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import adjusted_rand_score
from raptor_corpus import corpus

from raptor.cluster import RaptorClusterer, effective_dims, fit_gmm_bic, soft_assign


def _blobs(n_per: int, k: int, dim: int = 32, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, dim)) * 4
    X = np.vstack([c + rng.normal(size=(n_per, dim)) for c in centres])
    return X, np.repeat(np.arange(k), n_per)


def test_estimator_contract() -> None:
    est = RaptorClusterer(reducer="pca", threshold=0.2, random_state=3)
    assert est.get_params()["threshold"] == 0.2
    assert clone(est).get_params() == est.get_params()
    est.set_params(max_clusters=7)
    assert est.max_clusters == 7
    assert not hasattr(est, "clusters_")  # nothing learned before fit
    X, _ = _blobs(20, 3)
    assert est.fit(X) is est
    for attr in ("clusters_", "membership_", "labels_", "global_labels_", "embedding_", "reducer_", "n_clusters_"):
        assert hasattr(est, attr)
    assert est.membership_.shape == (len(X), est.n_clusters_)
    assert est.reducer_ == "pca"
    # every point belongs to its primary cluster and to at least one cluster
    assert est.membership_[np.arange(len(X)), est.labels_].all()


def test_invalid_input_is_rejected() -> None:
    with pytest.raises(ValueError):
        RaptorClusterer().fit(np.zeros((0, 4)))
    with pytest.raises(ValueError):
        RaptorClusterer().fit(np.array([[0.0, np.nan]]))
    with pytest.raises(ValueError):
        RaptorClusterer(threshold=1.5).fit(np.eye(4))
    with pytest.raises(ValueError):
        RaptorClusterer().fit(np.eye(4), sizes=[1, 2])


def test_same_seed_same_clusters_on_real_embeddings() -> None:
    vectors = corpus().vectors
    a = RaptorClusterer(random_state=11, max_cluster_size=2000).fit(vectors, sizes=np.full(len(vectors), 200))
    b = RaptorClusterer(random_state=11, max_cluster_size=2000).fit(vectors, sizes=np.full(len(vectors), 200))
    assert a.clusters_ == b.clusters_
    assert np.array_equal(a.embedding_, b.embedding_)
    assert a.n_clusters_ > 1


def test_bic_recovers_well_separated_blobs() -> None:
    X, truth = _blobs(60, 4)
    est = RaptorClusterer(reducer="pca", local_pass=False, random_state=0).fit(X)
    assert len(set(est.global_labels_)) == 4
    assert adjusted_rand_score(truth, est.global_labels_) == pytest.approx(1.0)
    assert int(np.argmin(est.bic_)) + 1 == 4


def test_bic_sweep_caps_k_by_points_per_dimension() -> None:
    Z = np.random.default_rng(0).normal(size=(30, 5))
    _, bics = fit_gmm_bic(Z, max_k=50, patience=None, random_state=0)
    assert len(bics) == 30 // 6  # a full covariance in 5-D needs 6 points per component
    assert effective_dims(30, 10) == 5
    assert effective_dims(3, 10) == 2


def test_soft_assignment_puts_in_between_points_in_both_clusters() -> None:
    proba = np.array([[0.95, 0.05], [0.55, 0.45], [0.02, 0.98], [0.4, 0.6]])
    assert soft_assign(proba, 0.1) == [[0, 1, 3], [1, 2, 3]]
    assert soft_assign(proba, 0.5) == [[0, 1], [2, 3]]  # argmax always kept

    rng = np.random.default_rng(1)
    left = rng.normal(loc=(-2.0, 0.0), size=(100, 2))
    right = rng.normal(loc=(2.0, 0.0), size=(100, 2))
    middle = np.array([[0.0, 0.0], [0.1, -0.1]])
    X = np.vstack([left, right, middle])
    est = RaptorClusterer(reducer="pca", n_components=2, local_pass=False, random_state=0).fit(X)
    assert est.n_clusters_ == 2
    assert est.membership_[-2:].all()  # the midpoints join both clusters
    far = np.abs(X[:, 0]) > 3.0
    assert far.sum() > 10 and (est.membership_[far].sum(axis=1) == 1).all()  # far points join one
    assert est.membership_.sum() < 1.2 * len(X)  # soft, not everything everywhere


def test_clusters_over_budget_are_split_until_they_fit() -> None:
    X, _ = _blobs(30, 2)
    sizes = np.full(len(X), 100.0)
    est = RaptorClusterer(reducer="pca", max_cluster_size=550, random_state=0).fit(X, sizes=sizes)
    assert all(sizes[list(c)].sum() <= 550 for c in est.clusters_)
    assert sorted(set().union(*est.clusters_)) == list(range(len(X)))
    # a single point larger than the budget stays alone rather than looping
    big = np.array([5000.0, 10.0, 10.0, 10.0])
    est = RaptorClusterer(reducer="pca", max_cluster_size=100, random_state=0).fit(np.eye(4), sizes=big)
    assert (0,) in est.clusters_


@pytest.mark.parametrize("n", [1, 2, 3])
def test_tiny_inputs(n: int) -> None:
    est = RaptorClusterer(random_state=0).fit(np.eye(n, 8))
    assert sorted(set().union(*est.clusters_)) == list(range(n))


def test_identical_points_make_one_cluster() -> None:
    X = np.tile(corpus().vectors[:1], (12, 1))
    est = RaptorClusterer(random_state=0).fit(X)
    assert est.clusters_ == [tuple(range(12))]
    est = RaptorClusterer(random_state=0, max_cluster_size=5).fit(X)  # split by order
    assert all(len(c) <= 5 for c in est.clusters_)


@pytest.mark.slow
def test_umap_path_is_seeded() -> None:
    """UMAP itself (numba compile: ~30-40 s on first use in a process)."""
    vectors = corpus().vectors
    a = RaptorClusterer(reducer="umap", random_state=5).fit(vectors)
    b = RaptorClusterer(reducer="umap", random_state=5).fit(vectors)
    assert a.reducer_ == "umap"
    assert np.array_equal(a.embedding_, b.embedding_)
    assert a.clusters_ == b.clusters_
    # the kernels umap-learn compiles in every process are cached by numba from now on
    import umap.layouts
    import umap.umap_

    for kernel in (umap.umap_.smooth_knn_dist, umap.umap_.compute_membership_strengths,
                   umap.layouts._nb_optimize_layout_euclidean_single_epoch):
        assert type(kernel._cache).__name__ != "NullCache"


def test_exact_cosine_neighbours_match_brute_force() -> None:
    from sklearn.neighbors import NearestNeighbors

    from raptor.cluster import exact_cosine_knn

    X = np.random.default_rng(3).normal(size=(300, 24))
    indices, distances = exact_cosine_knn(X, 7, block=64)  # several blocks
    ref_dist, ref_idx = NearestNeighbors(n_neighbors=7, metric="cosine", algorithm="brute").fit(X).kneighbors(X)
    assert (indices[:, 0] == np.arange(300)).all()  # each point first, at distance 0
    assert np.array_equal(indices, ref_idx)
    assert np.allclose(distances, ref_dist, atol=1e-5)


def test_bic_grid_tries_every_small_k_then_grows() -> None:
    from raptor.cluster import bic_grid

    grid = bic_grid(50)
    assert grid[:6] == [1, 2, 3, 4, 5, 6] and grid[-1] == 50
    assert len(grid) < 20 and all(b > a for a, b in zip(grid, grid[1:]))
    assert bic_grid(1) == [1]
