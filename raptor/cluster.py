"""Clustering of one tree level: dimensionality reduction, then a BIC-chosen Gaussian mixture.

The estimator follows scikit-learn's contract (parameters in ``__init__``, ``fit``
returns ``self``, learned attributes end in ``_``, randomness through
``random_state``) so it can be inspected and tested on its own.
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, Protocol

import numpy as np
import sklearn
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture
from threadpoolctl import threadpool_limits

from arborgraph.core.ordering import top_k_per_row

ReducerChoice = Literal["auto", "umap", "pca"]


class JobRunner(Protocol):
    """Runs ``fn(*job)`` for every job and returns the results in job order."""

    def run_all(self, fn: Callable[..., Any], jobs: Sequence[tuple[Any, ...]], cost: Sequence[float]) -> list[Any]: ...

    def imap(self, fn: Callable[..., Any], jobs: Sequence[tuple[Any, ...]]) -> Iterator[Any]:
        """``fn(*job)`` for each job in order, some computed ahead; stopping drops the rest."""


# UMAP needs a few more points than output dimensions (spectral init); below this a
# seeded PCA is used whatever the setting.
_UMAP_HARD_MIN = 16
_LOCAL_NEIGHBOURS = 10
# Up to this many points UMAP gets exact cosine neighbours from one blocked matrix
# product (about a second for 6,000 points) instead of building its NN-descent index,
# whose numba compile alone cost ~200 s of a 4,856-chunk tree build (cProfile).
_EXACT_KNN_MAX = 20_000
# UMAP's own default is 500 epochs below 10,000 points; 200 (its default above) gave a
# 2.4x cheaper fit and the clusters are re-split to the token budget anyway.
_UMAP_EPOCHS = 200


def effective_dims(n_points: int, n_components: int) -> int:
    """Dimensions to reduce ``n_points`` to.

    A full-covariance mixture component in ``d`` dimensions has ``d(d+3)/2`` parameters;
    capping ``d`` near ``sqrt(n)`` keeps small inputs from being forced into one
    component by the BIC penalty alone.
    """
    return max(1, min(n_components, max(2, math.isqrt(max(n_points, 1))), n_points - 1))


def reduce_dims(
    X: np.ndarray,
    n_components: int,
    *,
    reducer: ReducerChoice,
    umap_min_points: int,
    n_neighbors: int,
    metric: str,
    random_state: int,
    n_epochs: int = _UMAP_EPOCHS,
) -> tuple[np.ndarray, str]:
    """Reduce ``X`` to at most ``n_components`` dimensions; return (embedding, method).

    ``n_epochs`` is UMAP's optimisation length (ignored by PCA)."""
    n = X.shape[0]
    use_umap = reducer == "umap" or (reducer == "auto" and n >= umap_min_points)
    if use_umap and n >= max(_UMAP_HARD_MIN, n_components + 2):
        return _umap(X, n_components, n_neighbors, metric, random_state, n_epochs), "umap"
    return _pca(X, n_components, random_state), "pca"


def _pca(X: np.ndarray, n_components: int, random_state: int) -> np.ndarray:
    n, d = X.shape
    k = min(n_components, n, d)
    centred = X - X.mean(axis=0, keepdims=True)
    if k < 1 or not np.any(np.abs(centred) > 1e-9):
        # Identical points: nothing to project; the mixture will find one component.
        return np.zeros((n, max(k, 1)))
    pca = PCA(n_components=k, svd_solver="full", random_state=random_state)
    return np.asarray(pca.fit_transform(X), dtype=np.float64)


def _umap(X: np.ndarray, n_components: int, n_neighbors: int, metric: str, seed: int, n_epochs: int) -> np.ndarray:
    import umap  # deferred: importing umap pulls in numba

    _cache_umap_kernels()
    n = X.shape[0]
    k = max(2, min(n_neighbors, n - 1))
    extra: dict[str, object] = {}
    if metric == "cosine" and n <= _EXACT_KNN_MAX:
        extra["precomputed_knn"] = exact_cosine_knn(X, k)
    model = umap.UMAP(
        n_components=min(n_components, n - 2),
        n_neighbors=k,
        metric=metric,
        min_dist=0.0,
        random_state=seed,
        n_epochs=n_epochs,
        # a seeded UMAP runs single-threaded anyway; saying so avoids its warning
        n_jobs=1,
        **extra,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(model.fit_transform(X), dtype=np.float64)


@functools.cache
def _cache_umap_kernels() -> None:
    """Let numba cache the UMAP kernels that umap-learn compiles without ``cache=True``.

    umap-learn 0.5.12 jit-compiles its neighbour-graph kernels (parallel) and the
    euclidean layout epoch in every new process: 12-14 s of each tree build, even with
    a warm numba cache. Cached, a later process loads them in well under a second. The
    names are umap-learn's (pinned); a missing one is skipped.
    """
    import umap.layouts
    import umap.umap_

    for module, name in (
        (umap.umap_, "smooth_knn_dist"),
        (umap.umap_, "compute_membership_strengths"),
        (umap.layouts, "_nb_optimize_layout_euclidean_single_epoch"),
    ):
        kernel = getattr(module, name, None)
        if kernel is not None and hasattr(kernel, "enable_caching"):
            kernel.enable_caching()


def exact_cosine_knn(X: np.ndarray, k: int, block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest rows of every row by cosine distance, itself included first.

    Returns (indices, distances) shaped (n, k) as UMAP's ``precomputed_knn`` wants;
    ties go to the lower index.
    """
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    unit = X / np.where(norms > 0, norms, 1.0)
    n = unit.shape[0]
    indices = np.empty((n, k), dtype=np.int64)
    distances = np.empty((n, k), dtype=np.float32)
    for start in range(0, n, block):
        sim = unit[start : start + block] @ unit.T
        rows = np.arange(sim.shape[0])
        sim[rows, start + rows] = np.inf  # a point is its own nearest neighbour
        near = top_k_per_row(sim, k)
        indices[start : start + block] = near
        best = np.take_along_axis(sim, near, axis=1)
        best[:, 0] = 1.0
        distances[start : start + block] = np.clip(1.0 - best, 0.0, 2.0)
    return indices, distances


def fit_gmm_bic(
    Z: np.ndarray, *, max_k: int, patience: int | None, random_state: int, runner: JobRunner | None = None
) -> tuple[GaussianMixture, list[float]]:
    """Fit mixtures with 1..max_k components; keep the one with the lowest BIC.

    k is also capped at ``n // (d + 1)``: a full covariance needs ``d + 1`` points to
    be non-singular, and near-singular components on a handful of points win the
    likelihood by collapsing, which BIC's penalty does not prevent. Above 6 the k
    tried grow by a quarter each step (a fit costs about k times one of k=1, and BIC
    near its minimum is flat: 1..50 takes 16 fits instead of 50). With ``patience``,
    the sweep stops once that many successive k fail to improve the best BIC.
    With a ``runner`` the next k are fitted ahead, side by side (same result).
    Returns the chosen model and the BIC of every k tried.
    """
    n, d = Z.shape
    max_k = max(1, min(max_k, n - 1, n // (d + 1)))
    best: GaussianMixture | None = None
    best_bic = math.inf
    bics: list[float] = []
    since_best = 0
    jobs = [(Z, k, random_state) for k in bic_grid(max_k)]
    fits = runner.imap(_gmm_with_bic_job, jobs) if runner is not None else (_gmm_with_bic(*job) for job in jobs)
    for gm, bic in fits:
        bics.append(bic)
        if bic < best_bic - 1e-9:
            best, best_bic, since_best = gm, bic, 0
        else:
            since_best += 1
            if patience is not None and since_best >= patience:
                break
    assert best is not None
    return best, bics


def _gmm_with_bic(Z: np.ndarray, k: int, random_state: int) -> tuple[GaussianMixture, float]:
    gm = _gmm(Z, k, random_state)
    return gm, float(gm.bic(Z))


def _gmm_with_bic_job(Z: np.ndarray, k: int, random_state: int) -> tuple[GaussianMixture, float]:
    """:func:`_gmm_with_bic` as a job another process can run."""
    with _one_thread_unchecked():
        return _gmm_with_bic(Z, k, random_state)


def bic_grid(max_k: int) -> list[int]:
    """The component counts the BIC sweep tries: every k up to 6, then +25 % steps."""
    ks = [1]
    while ks[-1] < max_k:
        ks.append(min(max_k, max(ks[-1] + 1, round(ks[-1] * 1.25))))
    return ks


def _gmm(Z: np.ndarray, k: int, random_state: int) -> GaussianMixture:
    gm = GaussianMixture(n_components=k, covariance_type="full", random_state=random_state)
    with warnings.catch_warnings():
        # duplicate points make k-means init find fewer distinct clusters; BIC copes
        warnings.simplefilter("ignore", ConvergenceWarning)
        return gm.fit(Z)


def soft_assign(proba: np.ndarray, threshold: float) -> list[list[int]]:
    """Members of each component: every point whose probability exceeds ``threshold``,
    plus each point's most probable component (so no point is left out)."""
    best = proba.argmax(axis=1)
    members: list[list[int]] = []
    for c in range(proba.shape[1]):
        mask = (proba[:, c] > threshold) | (best == c)
        idx = np.flatnonzero(mask).tolist()
        if idx:
            members.append(idx)
    return members


class RaptorClusterer(ClusterMixin, BaseEstimator):
    """Soft clustering of embeddings for one RAPTOR level.

    Global pass: reduce all points (UMAP with ``n_neighbors ~ sqrt(n)``, or seeded PCA
    for small inputs), fit Gaussian mixtures for k = 1..``max_clusters`` and keep the
    lowest BIC; a point joins every component with probability > ``threshold``.
    Local pass: the same inside each global cluster. Finally any cluster whose
    ``sizes`` sum exceeds ``max_cluster_size`` is split again (BIC first, then a forced
    k, then by order) until it fits or is a single point.

    Parameters
    ----------
    n_components : target dimensions of the reduction (capped near sqrt(n)).
    reducer : "umap", "pca", or "auto" (UMAP from ``umap_min_points`` points on).
    threshold : membership probability for soft assignment.
    max_cluster_size : budget on the summed ``sizes`` (e.g. tokens) of one cluster;
        ``None`` disables splitting.

    Attributes
    ----------
    clusters_ : list of sorted member-index tuples, ordered by first member.
    membership_ : bool array (n_samples, n_clusters_).
    labels_ : primary cluster of each point (the member cluster with the nearest centroid).
    global_labels_ : most probable global component of each point.
    embedding_ : the global reduced embedding.
    reducer_ : the reduction used for the global pass ("umap" or "pca").
    bic_ : BIC per k of the global sweep.
    n_clusters_ : number of clusters.
    """

    def __init__(
        self,
        *,
        n_components: int = 10,
        reducer: ReducerChoice = "auto",
        umap_min_points: int = 500,
        n_neighbors: int | None = None,
        metric: str = "cosine",
        threshold: float = 0.1,
        max_clusters: int = 50,
        bic_patience: int | None = 8,
        local_pass: bool = True,
        max_cluster_size: float | None = None,
        random_state: int = 0,
    ) -> None:
        self.n_components = n_components
        self.reducer = reducer
        self.umap_min_points = umap_min_points
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.threshold = threshold
        self.max_clusters = max_clusters
        self.bic_patience = bic_patience
        self.local_pass = local_pass
        self.max_cluster_size = max_cluster_size
        self.random_state = random_state

    def fit(
        self,
        X: np.ndarray,
        y: None = None,
        *,
        sizes: Sequence[float] | np.ndarray | None = None,
        runner: JobRunner | None = None,
    ) -> RaptorClusterer:
        """Cluster the rows of ``X``; ``sizes`` (e.g. token counts) drive the budget split.

        With a ``runner`` (e.g. :class:`raptor.pool.TreePool`) the global pass fits
        mixtures for several k at once and the global clusters are refined side by
        side; the clusters are the same as without one."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] == 0:
            raise ValueError("X must be a non-empty 2-D array")
        if not np.all(np.isfinite(X)):
            raise ValueError("X contains NaN or infinite values")
        if self.reducer not in ("auto", "umap", "pca"):
            raise ValueError(f"unknown reducer {self.reducer!r}")
        if not 0.0 < self.threshold < 1.0:
            raise ValueError("threshold must be in (0, 1)")
        n = X.shape[0]
        size = np.ones(n) if sizes is None else np.asarray(sizes, dtype=np.float64)
        if size.shape != (n,):
            raise ValueError("sizes must have one entry per row of X")

        with _one_thread_unchecked():
            clusters = self._cluster(X, size, runner)

        unique = sorted({tuple(sorted(c)) for c in clusters}, key=lambda c: (c[0], len(c), c))
        self.clusters_ = [tuple(int(i) for i in c) for c in unique]
        self.n_clusters_ = len(self.clusters_)
        self.membership_ = np.zeros((n, self.n_clusters_), dtype=bool)
        for c, members in enumerate(self.clusters_):
            self.membership_[list(members), c] = True
        self.labels_ = self._primary_labels(X)
        return self

    # -- passes -----------------------------------------------------------------

    def _cluster(self, X: np.ndarray, size: np.ndarray, runner: JobRunner | None) -> list[list[int]]:
        global_groups, self.embedding_, self.reducer_, self.bic_, self.global_labels_ = self._global(X, runner)
        # The global clusters are refined independently of one another, so a runner may
        # do them side by side; results come back in group order, hence the same clusters.
        jobs = [
            (X[group], size[group], np.asarray(group), self.random_state + 1 + g_index)
            for g_index, group in enumerate(global_groups)
        ]
        if runner is None:
            refined = [self._refine(*job) for job in jobs]
        else:
            params = self.get_params()
            refined = runner.run_all(
                _refine_group, [(params, *job) for job in jobs], cost=[len(g) for g in global_groups]
            )
        return [members for parts in refined for members in parts]

    def _refine(self, X: np.ndarray, size: np.ndarray, ids: np.ndarray, seed: int) -> list[list[int]]:
        """Local pass and budget splits of one global cluster (``X``: its rows; ``ids``:
        their rows in the whole input, ascending). Returns clusters of ``ids``."""
        everyone = list(range(X.shape[0]))
        local = self._local(X, everyone, seed) if self.local_pass else [everyone]
        return [
            [int(ids[i]) for i in part]
            for members in local
            for part in self._fit_budget(X, members, size, ids)
        ]

    def _reduce(self, X: np.ndarray, n_neighbors: int, seed: int) -> tuple[np.ndarray, str]:
        return reduce_dims(
            X,
            effective_dims(X.shape[0], self.n_components),
            reducer=self.reducer,
            umap_min_points=self.umap_min_points,
            n_neighbors=n_neighbors,
            metric=self.metric,
            random_state=seed,
        )

    def _mixture_groups(
        self, Z: np.ndarray, seed: int, runner: JobRunner | None = None
    ) -> tuple[list[list[int]], np.ndarray, list[float]]:
        gm, bics = fit_gmm_bic(Z, max_k=self.max_clusters, patience=self.bic_patience, random_state=seed, runner=runner)
        proba = gm.predict_proba(Z)
        return soft_assign(proba, self.threshold), proba.argmax(axis=1), bics

    def _global(
        self, X: np.ndarray, runner: JobRunner | None = None
    ) -> tuple[list[list[int]], np.ndarray, str, list[float], np.ndarray]:
        n = X.shape[0]
        if n <= 2:
            return [list(range(n))], np.zeros((n, 1)), "none", [], np.zeros(n, dtype=int)
        nn = self.n_neighbors or max(2, math.isqrt(n - 1))
        Z, method = self._reduce(X, nn, self.random_state)
        groups, hard, bics = self._mixture_groups(Z, self.random_state, runner)
        return groups, Z, method, bics, hard

    def _local(self, X: np.ndarray, members: list[int], seed: int) -> list[list[int]]:
        # Too few points for a mixture in a reduced space: keep the group whole.
        if len(members) <= self.n_components + 1 or len(members) <= 3:
            return [members]
        sub = X[members]
        Z, _ = self._reduce(sub, self.n_neighbors or _LOCAL_NEIGHBOURS, seed)
        groups, _, _ = self._mixture_groups(Z, seed)
        return [[members[i] for i in g] for g in groups]

    def _fit_budget(
        self, X: np.ndarray, members: list[int], size: np.ndarray, ids: np.ndarray, depth: int = 0
    ) -> list[list[int]]:
        """Split ``members`` until every part fits ``max_cluster_size`` (or is one point).

        ``ids`` are the rows' indices in the whole input: a split's seed comes from its
        first member's, so it does not depend on how the input was cut up."""
        budget = self.max_cluster_size
        if budget is None or len(members) <= 1 or size[members].sum() <= budget:
            return [members]
        seed = self.random_state + 7919 * (depth + 1) + int(ids[members[0]])
        parts = self._split(X, members, size, seed)
        out: list[list[int]] = []
        for part in parts:
            out.extend(self._fit_budget(X, part, size, ids, depth + 1))
        return out

    def _split(self, X: np.ndarray, members: list[int], size: np.ndarray, seed: int) -> list[list[int]]:
        """A hard partition of ``members`` into at least two non-empty parts."""
        assert self.max_cluster_size is not None
        sub = X[members]
        needed = max(2, math.ceil(size[members].sum() / self.max_cluster_size))
        if len(members) >= 4 and np.ptp(sub, axis=0).max() > 1e-9:
            Z, _ = self._reduce(sub, self.n_neighbors or _LOCAL_NEIGHBOURS, seed)
            gm, _ = fit_gmm_bic(Z, max_k=self.max_clusters, patience=self.bic_patience, random_state=seed)
            if gm.n_components < needed:
                gm = _gmm(Z, min(needed, len(members) - 1), seed)
            labels = gm.predict(Z)
            parts = [[members[i] for i in np.flatnonzero(labels == c)] for c in np.unique(labels)]
            if len(parts) >= 2:
                return parts
        # Identical or very few points: split by order, in the fewest budget-sized runs.
        return _split_in_order(members, size, needed)

    def _primary_labels(self, X: np.ndarray) -> np.ndarray:
        centroids = np.stack([X[list(m)].mean(axis=0) for m in self.clusters_])
        # squared distances without materialising an (n, k, d) array
        dist = (X**2).sum(axis=1)[:, None] - 2.0 * X @ centroids.T + (centroids**2).sum(axis=1)[None, :]
        dist[~self.membership_] = np.inf
        labels: np.ndarray = dist.argmin(axis=1)
        return labels


def _refine_group(
    params: dict[str, object], X: np.ndarray, size: np.ndarray, ids: np.ndarray, seed: int
) -> list[list[int]]:
    """:meth:`RaptorClusterer._refine` as a job another process can run."""
    with _one_thread_unchecked():
        return RaptorClusterer(**params)._refine(X, size, ids, seed)  # type: ignore[arg-type]


@contextlib.contextmanager
def _one_thread_unchecked() -> Iterator[None]:
    # Many small mixture fits: thread start-up in BLAS/OpenMP costs ~10x the work, and
    # one thread gives the same bits on any machine. Inputs are checked once in fit, so
    # scikit-learn's per-fit validation (finite and parameter checks) is skipped.
    with threadpool_limits(limits=1), sklearn.config_context(assume_finite=True, skip_parameter_validation=True):
        yield


def _split_in_order(members: list[int], size: np.ndarray, parts: int) -> list[list[int]]:
    target = size[members].sum() / parts
    out: list[list[int]] = [[]]
    acc = 0.0
    for i in members:
        if out[-1] and acc + size[i] > target and len(out) < parts:
            out.append([])
            acc = 0.0
        out[-1].append(i)
        acc += size[i]
    return out
