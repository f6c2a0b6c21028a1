"""The UMAP warm-up: it fills numba's on-disk cache, and a build starts it only when its
tree will run UMAP."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from arborgraph.config import Config
from arborgraph.pipeline.stages import start_umap_warmup as _start_umap_warmup


# the kernels umap-learn compiles without caching them itself (see raptor.cluster)
UNCACHED_BY_UMAP = {
    "umap_.smooth_knn_dist",
    "umap_.compute_membership_strengths",
    "layouts._optimize_layout_euclidean_single_epoch",
}


def _cached_kernels(cache: Path) -> set[str]:
    return {p.name.split("-")[0] for p in cache.rglob("*.nbi")}


def _empty_cache(tmp_path: Path) -> Path:
    """The session's own numba cache (``$NUMBA_CACHE_DIR``, which ``scripts/test`` sets)
    while it holds none of the kernels, as in a clean clone: then the UMAP tests run
    after this one on the same worker (tests/conftest.py) load what it compiled instead
    of compiling it again. Otherwise a fresh folder."""
    session = os.environ.get("NUMBA_CACHE_DIR")
    if session and not _cached_kernels(Path(session)) & UNCACHED_BY_UMAP:
        return Path(session)
    return tmp_path / "numba"


@pytest.mark.slow
def test_warmup_command_fills_an_empty_numba_cache(tmp_path: Path) -> None:
    cache = _empty_cache(tmp_path)
    assert not _cached_kernels(cache) & UNCACHED_BY_UMAP
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-m", "arborgraph.cli", "warmup"], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert "UMAP kernels compiled and cached" in done.stdout
    cached = _cached_kernels(cache)
    assert UNCACHED_BY_UMAP <= cached, sorted(cached)


def test_build_starts_a_warmup_only_when_its_tree_runs_umap() -> None:
    config = Config()
    small = config.tree.umap_min_points - 1
    assert _start_umap_warmup(config, small, fresh=True) is None  # PCA path
    assert _start_umap_warmup(config, 10_000, fresh=False) is None  # an update seldom re-clusters
    no_tree = config.model_copy(update={"build_tree": False})
    assert _start_umap_warmup(no_tree, 10_000, fresh=True) is None
    pca = config.model_copy(update={"tree": config.tree.model_copy(update={"reducer": "pca"})})
    assert _start_umap_warmup(pca, 10_000, fresh=True) is None
    process = _start_umap_warmup(config, 10_000, fresh=True)
    assert process is not None
    process.kill()
    process.wait()
