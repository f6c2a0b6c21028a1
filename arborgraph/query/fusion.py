"""Ranking helpers shared by every retriever: top-k under a mask, RRF over ids and
over contexts, and the fusion of two routes when the router is not confident."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from arborgraph.core.ordering import top_k_indices
from arborgraph.core.retrieval import Retrieval
from arborgraph.core.results import Context, Route, RoutingDecision

RRF_K = 60


def top_indices(scores: np.ndarray, k: int, mask: np.ndarray | None = None) -> np.ndarray:
    """Row indices of the ``k`` best positive scores, best first; ``mask`` excludes rows.

    Ties break on the lower row index, for which rows make the ``k`` as well as for
    their order, so the result is the same on every CPU (:func:`top_k_indices`).
    """
    if scores.size == 0 or k <= 0:
        return np.zeros(0, dtype=np.int64)
    candidates = np.flatnonzero(scores > 0) if mask is None else np.flatnonzero((scores > 0) & mask)
    return candidates[top_k_indices(scores[candidates], k)]


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


def fuse_contexts(
    lists: Mapping[str, Sequence[Context]], weights: Mapping[str, float] | None = None
) -> list[Context]:
    """Weighted RRF over context lists; a context found by several keeps all their traces."""
    by_key: dict[str, Context] = {}
    rankings: dict[str, list[str]] = {}
    for name, lst in lists.items():
        keys = []
        for ctx in lst:
            key = f"{ctx.kind}:{ctx.node_id}"
            if key in by_key:
                kept = by_key[key]
                kept.trace.extend(t for t in ctx.trace if t not in kept.trace)
            else:
                # only score, trace and flags are changed downstream: copy those, share the rest
                by_key[key] = ctx.model_copy(update={"trace": list(ctx.trace), "flags": list(ctx.flags)})
            keys.append(key)
        rankings[name] = keys
    fused = reciprocal_rank_fusion(rankings, weights)
    out = []
    for key, score in fused:
        ctx = by_key[key]
        ctx.score = round(score, 6)
        out.append(ctx)
    return out


def merge_by_rank(lists: Sequence[list[Context]]) -> list[Context]:
    """Merge result lists (one per access scope, or one per route) by RRF, so that no
    list dominates by score scale alone; a single list is returned unchanged."""
    lists = [lst for lst in lists if lst]
    if len(lists) <= 1:
        return list(lists[0]) if lists else []
    return fuse_contexts({str(i): lst for i, lst in enumerate(lists)})


def second_route(decision: RoutingDecision, available: Sequence[str], min_confidence: float) -> Route | None:
    """The runner-up route (among ``available``) when the router is below
    ``min_confidence``, else None; a forced route is never fused."""
    if decision.forced or decision.confidence >= min_confidence:
        return None
    ranked = [r for r in decision.scores if r != decision.route and r in available]
    return ranked[0] if ranked else None  # type: ignore[return-value]


def fuse_routes(first: Retrieval, second: Retrieval, confidence: float, min_confidence: float) -> Retrieval:
    """Two routes' composed retrievals fused by RRF: the first route's rankings, the
    second's under ``"<route>:"``, both routes' notes and one saying why they were fused."""
    note = (
        f"router not confident ({confidence:.2f} < {min_confidence:.2f}): "
        f"fused {first.route} with {second.route} by RRF"
    )
    return Retrieval(
        route=first.route,
        contexts=merge_by_rank([first.contexts, second.contexts]),
        rankings=first.rankings | {f"{second.route}:{k}": v for k, v in second.rankings.items()},
        notes=[*first.notes, *second.notes, note],
    )
