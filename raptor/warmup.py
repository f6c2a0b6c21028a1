"""Fill numba's on-disk cache with the UMAP kernels a tree build compiles.

umap-learn and pynndescent compile their numba kernels on first use and cache them on
disk; in an empty cache that is 25-30 s of the first tree build after an install. A
small seeded fit through the tree builder's own clustering path compiles the same
kernels, so it can be paid once at set-up (``arborgraph warmup``) or in a background
process while a build is still loading and embedding (:func:`start_background_warmup`).
"""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np

# enough points that the global and local passes both run UMAP (not the PCA path for
# tiny inputs), few enough that the fit itself is instant once compiled
_POINTS = 160
_DIMS = 24


def warm_umap_cache(seed: int = 0) -> float:
    """Cluster a small random set through :class:`raptor.cluster.RaptorClusterer` with
    UMAP forced on, and lay it out in 2-D as a build does; return the seconds taken."""
    from raptor.cluster import RaptorClusterer, reduce_dims

    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(_POINTS, _DIMS))
    RaptorClusterer(reducer="umap", umap_min_points=2, random_state=seed).fit(X)
    reduce_dims(
        X, 2, reducer="umap", umap_min_points=2, n_neighbors=15, metric="cosine",
        random_state=seed, n_epochs=10,
    )
    return time.perf_counter() - start


def start_background_warmup() -> subprocess.Popen[bytes]:
    """Run :func:`warm_umap_cache` in a separate interpreter (started, not waited for).

    Wait for it before the tree stage: the stage then loads the kernels from the cache
    instead of compiling them itself. A fresh interpreter (not multiprocessing) so the
    caller's ``__main__`` is never re-imported; it inherits the environment, hence the
    same numba cache directory.
    """
    return subprocess.Popen(
        [sys.executable, "-c", "from raptor.warmup import warm_umap_cache; warm_umap_cache()"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
