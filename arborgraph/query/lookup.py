"""Flat hybrid retrieval over chunks: BM25 and dense side by side, fused by RRF."""

from __future__ import annotations

from typing import Literal

import numpy as np

from arborgraph.config import RetrievalConfig
from arborgraph.core.retrieval import QueryScores, Retrieval
from arborgraph.index.chunk_store import ChunkStore
from arborgraph.query.fusion import reciprocal_rank_fusion, top_indices

LookupMode = Literal["hybrid", "bm25", "dense"]


def lookup_search(
    store: ChunkStore,
    scores: QueryScores,
    *,
    mask: np.ndarray | None,
    top_k: int,
    config: RetrievalConfig,
    mode: LookupMode = "hybrid",
) -> Retrieval:
    """Rank chunks by the question's ``scores``; rows where ``mask`` is False are never
    considered.

    The result's ``rankings`` are each retriever's chunk ids (``bm25``, ``dense``),
    best first, before fusion.

    The mask is applied before ranking, so content a caller may not see can neither
    appear nor push visible content out of the top ``k``.
    """
    rankings: dict[str, list[str]] = {}
    scores_by_id: dict[str, dict[str, float]] = {}
    depth = max(top_k, config.candidates)
    use_dense = mode in ("hybrid", "dense") and scores.dense is not None
    if mode in ("hybrid", "bm25") or not use_dense:
        bm25 = scores.bm25
        rows = top_indices(bm25, depth, mask)
        rankings["bm25"] = [store.chunk_ids[r] for r in rows]
        scores_by_id["bm25"] = {store.chunk_ids[r]: float(bm25[r]) for r in rows}
    if use_dense:
        assert scores.dense is not None
        # cosine can be negative; shift so that top_indices' "positive" filter keeps all
        # (and rows an approximate search did not score, at -2, out)
        dense = scores.dense + 1.0
        rows = top_indices(dense, depth, mask)
        rankings["dense"] = [store.chunk_ids[r] for r in rows]
        scores_by_id["dense"] = {store.chunk_ids[r]: float(dense[r] - 1.0) for r in rows}

    if len(rankings) == 1:
        name, ids = next(iter(rankings.items()))
        fused = [(cid, scores_by_id[name][cid]) for cid in ids]
    else:
        fused = reciprocal_rank_fusion(
            rankings, {"bm25": config.weight_bm25, "dense": config.weight_dense}, k=config.rrf_k
        )
    contexts = []
    places = {name: {cid: i for i, cid in enumerate(ids)} for name, ids in rankings.items()}
    for chunk_id, score in fused[:top_k]:
        row = store.row_of[chunk_id]
        trace = [f"{name} rank {place[chunk_id] + 1}" for name, place in places.items() if chunk_id in place]
        contexts.append(store.context(row, score=score, trace=[f"lookup/{mode}: " + ", ".join(trace)]))
    return Retrieval(route="lookup", contexts=contexts, rankings=rankings)
