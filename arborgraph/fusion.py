"""Ranking helpers shared by every retriever: top-k under a mask, and RRF."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

RRF_K = 60


def top_indices(scores: np.ndarray, k: int, mask: np.ndarray | None = None) -> np.ndarray:
    """Row indices of the ``k`` best positive scores, best first; ``mask`` excludes rows.

    Ties break on the lower row index so results are stable across runs.
    """
    if scores.size == 0 or k <= 0:
        return np.zeros(0, dtype=np.int64)
    candidates = np.flatnonzero(scores > 0) if mask is None else np.flatnonzero((scores > 0) & mask)
    if candidates.size == 0:
        return candidates
    if candidates.size > k:
        part = np.argpartition(-scores[candidates], k - 1)[:k]
        candidates = candidates[part]
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order]


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[str]],
    weights: Mapping[str, float] | None = None,
    k: int = RRF_K,
) -> list[tuple[str, float]]:
    """Fuse ranked id lists: score(id) = Σ weight / (k + rank), rank starting at 1."""
    fused: dict[str, float] = {}
    first_seen: dict[str, int] = {}
    for name, ranking in rankings.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
            first_seen.setdefault(item, len(first_seen))
    return sorted(fused.items(), key=lambda kv: (-kv[1], first_seen[kv[0]]))
