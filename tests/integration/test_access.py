"""A caller's access is one value, worked out once per caller and date, and shared by
the queries and the explorer's views (issue #37: masks and scope strings were worked
out again by each part)."""

from __future__ import annotations

import datetime as dt

import pytest

from arborgraph.index import access as access_module


def test_a_callers_access_is_worked_out_once_and_shared_by_queries_and_views(sample_kb, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    worked_out: list[tuple[object, ...]] = []
    real = access_module.access_for

    def counted(store, scopes, principal, as_of, include_stale=False):  # type: ignore[no-untyped-def]
        worked_out.append((principal, as_of, include_stale))
        return real(store, scopes, principal, as_of, include_stale)

    monkeypatch.setattr(access_module, "access_for", counted)
    kb = sample_kb.with_settings({"top_k": 5})  # an engine of its own: nothing kept yet
    try:
        for question, route in (("What is WAL?", "auto"), ("What does a checkpoint do?", "tree"), ("How does locking work?", "graph")):
            kb.query(question, route=route)
        kb.explorer.tree_view()
        kb.explorer.readable_scopes()
        kb.explorer.graph_view(as_of=None)
        assert worked_out == [(None, dt.date.today(), False), (None, None, False)]
        request = kb.engine.request("What is WAL?", principal="nobody-in-particular")
        assert request.access is kb.engine.access("nobody-in-particular", dt.date.today())
        assert [s.scope for s in request.access.scopes] == ["public"]
        with pytest.raises(ValueError):  # read-only: no part of a query can widen it
            request.access.mask[0] = not request.access.mask[0]
        assert kb.engine.run(request).contexts
    finally:
        kb.close()


def test_graph_code_reads_a_chunk_only_through_the_callers_mask(sample_kb) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    from arborgraph.query.retrievers import chunk_refs
    from graphrag.chunks import ChunkFetcher

    store = sample_kb.index.store
    ids = list(store.chunk_ids[:40]) + ["no-such-chunk"]
    mask = np.zeros(len(store.chunk_ids), dtype=bool)
    mask[1:40:3] = True
    reader = chunk_refs(store, mask)
    one_by_one = [c for c in ids if reader(c) is not None]
    # the batch check and the one-by-one reads agree, the fetcher's fallback too
    assert one_by_one == [c for c, ok in zip(ids, reader.readable(ids)) if ok]
    assert ChunkFetcher(reader).visible_ids(ids) == one_by_one == [store.chunk_ids[i] for i in range(1, 40, 3)]
    assert ChunkFetcher(lambda c: reader(c)).visible_ids(ids) == one_by_one
