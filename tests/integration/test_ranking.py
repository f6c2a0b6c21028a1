"""The learned ranking stage: its features, its model file, and its place in a query.

Pure feature tests use hand-made signals; the rest use the real slice index (real BM25,
real embeddings, real tree and graph)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import arborgraph
from arborgraph.query.ranking import (
    FEATURES,
    FLAT_FEATURES,
    MODEL_FILE,
    QuerySignals,
    RankerModel,
    explain_rows,
    feature_matrix,
    load_model,
    page_layout,
    rank,
)


def _layout():  # type: ignore[no-untyped-def]
    # rows 0-2: page a (in start order 1, 0, 2); rows 3-4: page b
    return page_layout(
        ["a", "a", "a", "b", "b"], [100, 0, 200, 0, 50], [10, 20, 30, 40, 50],
        [frozenset({"wal"}), frozenset(), frozenset(), frozenset({"lock", "wal"}), frozenset()],
        [frozenset(), frozenset(), frozenset(), frozenset({"lock"}), frozenset({"lock"})],
    )


def _signals(**over):  # type: ignore[no-untyped-def]
    base = dict(
        bm25=np.array([2.0, 0.0, 1.0, 4.0, 0.0]),
        dense=np.array([0.5, 0.1, 0.2, 0.3, 0.9]),
        term_rows=[(np.array([0, 3]), 2.0), (np.array([3]), 1.0)],
        question_terms=frozenset({"wal", "lock"}),
        rank_lists={"bm25": [3, 0, 2], "dense": [4, 0, 3], "rrf": [3, 0, 4, 2]},
        rrf_scores={3: 0.03, 0: 0.02, 4: 0.01, 2: 0.005},
        parent_cos={},
    )
    base.update(over)
    return QuerySignals(**base)


def col(matrix: np.ndarray, name: str) -> list[float]:
    return [round(float(v), 4) for v in matrix[:, FEATURES.index(name)]]


def test_layout_orders_chunks_by_offset_within_their_page() -> None:
    layout = _layout()
    assert layout.position.tolist() == [1, 0, 2, 0, 1]
    assert layout.previous.tolist() == [1, -1, 0, -1, 3]
    assert layout.following.tolist() == [2, 0, -1, 4, -1]


def test_flat_features_follow_the_signals() -> None:
    rows = [3, 0, 4, 2]
    m = feature_matrix(rows, _signals(), _layout())
    assert m.shape == (4, len(FEATURES))
    assert col(m, "bm25_rel") == [1.0, 0.5, 0.0, 0.25]
    assert col(m, "bm25_inv_rank") == [1.0, 0.5, 0.0, round(1 / 3, 4)]
    assert col(m, "dense_gap") == [-0.6, -0.4, 0.0, -0.7]
    assert col(m, "term_cover") == [1.0, 0.5, 0.0, 0.0]
    assert col(m, "idf_cover") == [1.0, round(2 / 3, 4), 0.0, 0.0]
    # page a's candidates (rows 0, 2) cover one of the two terms; page b's (3, 4) both
    assert col(m, "page_cover") == [1.0, 0.5, 1.0, 0.5]
    assert col(m, "page_candidates") == [round(math.log1p(2), 4)] * 4
    assert col(m, "heading_cover") == [1.0, 0.5, 0.5, 0.0]
    assert col(m, "title_cover") == [0.5, 0.0, 0.5, 0.0]
    assert col(m, "first_in_page") == [1.0, 0.0, 0.0, 0.0]
    assert col(m, "log_tokens") == [round(math.log1p(t), 4) for t in (40, 10, 50, 30)]
    # row 2's neighbours: row 0 (bm25 2.0) before it, none after
    assert col(m, "neighbour_bm25_rel")[3] == 0.5
    assert col(m, "page_bm25_rel") == [1.0, 0.5, 1.0, 0.5]
    # no structure ran: every structure feature is zero
    for name in ("tree_inv_rank", "graph_inv_rank", "global_inv_rank", "entity_direct", "tree_parent_gap"):
        assert col(m, name) == [0.0] * 4


def test_structure_features_only_for_the_route_that_ran() -> None:
    signals = _signals(
        rank_lists={"bm25": [3], "dense": [4], "rrf": [3, 4], "graph": [4, 3]},
        parent_cos={3: 0.8, 4: 0.5},
        graph={"entity_direct": {4: 2.0, 3: 1.0}},
    )
    m = feature_matrix([3, 4], signals, _layout())
    assert col(m, "graph_inv_rank") == [0.5, 1.0]
    assert col(m, "tree_inv_rank") == [0.0, 0.0]
    assert col(m, "tree_parent_gap") == [0.0, -0.3]
    assert col(m, "entity_direct") == [0.5, 1.0]


def _model(weights: dict[str, float], features: tuple[str, ...] = FEATURES) -> RankerModel:
    n = len(features)
    coef = np.array([weights.get(f, 0.0) for f in features])
    return RankerModel(features, np.zeros(n), np.ones(n), coef)


def test_model_file_round_trip_and_refusals(tmp_path: Path) -> None:
    model = _model({"bm25_rel": 2.0, "term_cover": -1.0}, FLAT_FEATURES)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model.to_json()))
    again = RankerModel.load(path)
    m = feature_matrix([3, 0, 4, 2], _signals(), _layout())
    assert np.allclose(again.score(m), model.score(m))
    bad = model.to_json()
    bad["features"] = ["bm25_rel", "no_such_feature", *bad["features"][2:]]  # type: ignore[index]
    with pytest.raises(ValueError, match="unknown features: no_such_feature"):
        RankerModel.from_json(bad)
    short = model.to_json() | {"coef": [1.0]}
    with pytest.raises(ValueError, match="must match its features"):
        RankerModel.from_json(short)
    with pytest.raises(ValueError, match="format"):
        RankerModel.from_json(model.to_json() | {"format": "pickle"})
    with pytest.raises(ValueError, match="does not exist"):
        load_model(str(tmp_path / "missing.json"))


def test_rank_orders_by_score_and_keeps_ties_stable() -> None:
    model = _model({"first_in_page": 1.0})
    rows = [0, 3, 1, 2]
    m = feature_matrix(rows, _signals(rank_lists={"rrf": rows}), _layout())
    order = [rows[i] for i in rank(model.score(m))]
    assert order == [3, 1, 0, 2]  # the two first chunks, then the rest in given order
    assert explain_rows(model, m[1:2]) == [["first_in_page +1.00"]]


def test_shipped_model_is_valid_json_over_known_features() -> None:
    model = load_model()
    assert model is not None, f"no ranker shipped at {MODEL_FILE}"
    assert set(model.features) <= set(FEATURES)
    assert len(model.trained_on) >= 5
    # never trained on the manuals kept for evaluation or acceptance
    assert not {"git", "python", "postgres", "postgresql", "sqlite"} & set(model.trained_on)


def test_query_orders_chunks_by_the_ranker(sample_index: Path) -> None:
    opened = arborgraph.open(sample_index)
    question = "How long does a connection wait on a busy lock?"
    plain = opened.with_settings({"retrieval": {"ranker": False}}).query(question, route="lookup", top_k=10)
    kb = opened.with_settings(ranker=_model({"bm25_rel": 1.0}))
    ranked = kb.query(question, route="lookup", top_k=10)
    bm25 = kb.index.lexical.scores(question)
    got = [bm25[kb.index.store.row_of[c.node_id]] for c in ranked.contexts]
    assert got == sorted(got, reverse=True)
    assert all(c.trace[0].startswith("ranker: ") for c in ranked.contexts)
    assert [c.node_id for c in plain.contexts] != [c.node_id for c in ranked.contexts]
    assert "ranker" in ranked.retrieved
    # the same question twice: the same order (features and model are deterministic)
    again = kb.query(question, route="lookup", top_k=10)
    assert [c.node_id for c in again.contexts] == [c.node_id for c in ranked.contexts]


def test_a_questions_own_ranker_settings_apply(sample_index: Path, tmp_path: Path) -> None:
    """The ranking stage a question's settings name is the one that orders it: turned on
    for one question of an engine opened without it, another model file for one question."""
    question = "How long does a connection wait on a busy lock?"
    off = arborgraph.open(sample_index).with_settings({"retrieval": {"ranker": False}})
    assert "ranker" not in off.query(question, route="lookup").retrieved
    on = off.query(question, route="lookup", settings={"retrieval": {"ranker": True}})
    assert "ranker" in on.retrieved and on.contexts[0].trace[0].startswith("ranker: ")
    path = tmp_path / "bm25.json"
    path.write_text(json.dumps(_model({"bm25_rel": 1.0}).to_json()))
    kb = arborgraph.open(sample_index)
    mine = kb.query(question, route="lookup", top_k=10, settings={"retrieval": {"ranker_model": str(path)}})
    bm25 = kb.index.lexical.scores(question)
    got = [bm25[kb.index.store.row_of[c.node_id]] for c in mine.contexts]
    assert got == sorted(got, reverse=True)
    shipped = kb.query(question, route="lookup", top_k=10)
    assert [c.node_id for c in shipped.contexts] != [c.node_id for c in mine.contexts]
    with pytest.raises(arborgraph.QueryError, match="ranker_model"):
        kb.query(question, settings={"retrieval": {"ranker_model": str(tmp_path / "none.json")}})


@pytest.mark.parametrize("route", ["tree", "graph", "global"])
def test_structure_routes_keep_their_header_then_ranked_chunks(sample_index: Path, route: str) -> None:
    kb = arborgraph.open(sample_index).with_settings(ranker=_model({f"{route}_inv_rank": 1.0, "rrf_inv_rank": 0.1}))
    res = kb.query("How do checkpoints move WAL content into the database?", route=route, top_k=8)
    chunks = [c for c in res.contexts if c.kind == "chunk"]
    assert chunks and all(c.trace[0].startswith("ranker: ") for c in chunks)
    # at most the configured header before the chunks
    first_chunk = next(i for i, c in enumerate(res.contexts) if c.kind == "chunk")
    assert first_chunk <= kb.engine.config.retrieval.structure_header
    ids, matrix = kb.engine.ranking_candidates("How do checkpoints move WAL content into the database?", route)
    reached = matrix[:, FEATURES.index(f"{route}_inv_rank")]
    assert reached.max() == 1.0  # the route's own first chunk is among the candidates


def test_hidden_documents_give_no_signal(sample_index: Path) -> None:
    from arborgraph.core.retrieval import RetrievalQuery
    from arborgraph.query.lookup import lookup_search
    from arborgraph.query.scores import score_question
    from arborgraph.query.rerank import RankingIndex, query_signals

    kb = arborgraph.open(sample_index)
    question = "What does the busy timeout do while the WAL is checkpointed?"
    hidden_doc = "c3ref_busy_timeout.md"
    hidden = np.array([d == hidden_doc for d in kb.index.store.doc_ids])
    assert hidden.any()
    mask = kb.engine.access(None, None).mask & ~hidden
    vector = kb.engine.embed_query(question)
    scores = score_question(kb.index, question, vector)
    hits = lookup_search(kb.index.store, scores, mask=mask, top_k=50, config=kb.engine.config.retrieval)
    query = RetrievalQuery(question, vector, mask, list(kb.engine.access(None, None).scopes), top_k=20, pool=60, hits=hits, scores=scores)
    signals = query_signals(RankingIndex(kb.index, kb.index.routes), query, [hits], kb.engine.config.retrieval)
    rows = set(np.flatnonzero(hidden).tolist())
    assert not rows & {r for lst in signals.rank_lists.values() for r in lst}
    assert np.all(signals.bm25[hidden] == 0) and signals.dense is not None and np.all(signals.dense[hidden] == -1)
    assert not any(np.isin(sorted(rows), term).any() for term, _ in signals.term_rows)
    assert not any(rows & set(values) for values in signals.graph.values())


def test_tree_model_scores_by_its_splits_and_refuses_malformed_trees() -> None:
    from arborgraph.query.ranking import TreeRankerModel, model_from_json

    # one tree: bm25_rel <= 0.5 -> leaf 0 (-1.0), else leaf 1 (+2.0); a second, a constant
    data = {
        "format": "arborgraph-ranker-trees/1",
        "features": ["bm25_rel", "term_cover"],
        "trees": [
            {"feature": [0], "threshold": [0.5], "left": [-1], "right": [-2], "leaf_value": [-1.0, 2.0]},
            {"feature": [], "threshold": [], "left": [], "right": [], "leaf_value": [0.25]},
        ],
        "trained_on": ["a", "b"],
    }
    model = model_from_json(data)
    assert isinstance(model, TreeRankerModel)
    m = feature_matrix([3, 0, 4, 2], _signals(), _layout())  # bm25_rel 1.0, 0.5, 0.0, 0.25
    assert model.score(m).tolist() == [2.25, -0.75, -0.75, -0.75]
    assert model_from_json(model.to_json()).score(m).tolist() == model.score(m).tolist()
    broken = json.loads(json.dumps(data))
    broken["trees"][0]["left"] = [5]  # a child that is neither a node nor a leaf
    with pytest.raises(ValueError, match="malformed tree"):
        model_from_json(broken)



def test_shown_scores_are_calibrated_relevance(sample_index: Path) -> None:
    model = load_model()
    assert model is not None and model.calibration is not None, "the shipped ranker has no calibration"
    kb = arborgraph.open(sample_index)
    real = kb.query("What does sqlite3_busy_timeout do?", route="lookup", top_k=10)
    nonsense = kb.query("purple giraffes juggling seventeen harmonicas underwater", route="lookup", top_k=10)
    for res in (real, nonsense):
        scores = [c.score for c in res.contexts]
        assert scores and all(0.0 <= s <= 1.0 for s in scores)
        assert scores == sorted(scores, reverse=True)
        # not the reciprocal rank the list falls back to when nothing is calibrated
        assert scores != [1 / r for r in range(1, len(scores) + 1)]
    assert "c3ref_busy_timeout.md" in [c.source for c in real.contexts[:3]]
    # comparable across questions: a question the manual cannot answer scores low
    assert nonsense.contexts[0].score < 0.5 * real.contexts[0].score
    # explain() keeps the raw parts beside the shown relevance
    assert "ranker: " in real.explain()


def test_an_unsure_router_has_both_routes_candidates_ranked_once_together(sample_index: Path) -> None:
    import re

    question = "How does a checkpoint relate to the wal_autocheckpoint setting and to busy handlers?"
    # below this confidence every auto question runs its two best routes
    kb = arborgraph.open(sample_index).with_settings({"router": {"min_confidence": 1.0}})
    res = kb.query(question, top_k=30, budget_tokens=100_000)
    # the router's pair on this question (graph well ahead, tree well ahead of the rest)
    assert (res.route, res.routing.fused_with) == ("graph", "tree"), res.routing.scores
    assert any("graph's and tree's candidates ranked together" in note for note in res.notes)
    assert {"graph", "tree:tree", "ranker"} <= set(res.retrieved)
    chunks = [c for c in res.contexts if c.kind == "chunk"]
    # one ranking: a ranker score on every chunk, never increasing down the list
    scores = [float(re.match(r"ranker: ([+-][\d.]+)", c.trace[0]).group(1)) for c in chunks]  # type: ignore[union-attr]
    assert len(scores) == 30 and scores == sorted(scores, reverse=True)
    # over both routes' candidates: chunks either walk reached keep how it reached them
    assert any("graph_search" in c.trace for c in chunks)
    assert any(t.startswith("tree: L") for c in chunks for t in c.trace)
    # a chunk both routes reached carries both routes' traces
    assert any("graph_search" in c.trace and any(t.startswith("tree: L") for t in c.trace) for c in chunks)
    # each route's reach is a feature: a model that reads only the runner-up's ranks
    # puts the runner-up's order first
    tree_led = arborgraph.open(sample_index).with_settings(
        {"router": {"min_confidence": 1.0}}, ranker=_model({"tree_inv_rank": 1.0}),
    ).query(question, top_k=5, budget_tokens=100_000)
    walked = [c.removeprefix("chunk:") for c in tree_led.retrieved["tree:tree"] if c.startswith("chunk:")]
    assert [c.node_id for c in tree_led.contexts] == walked[:5]
    # neither route leads: their own contexts (overview, relation chain) are left out
    assert [c.kind for c in kb.query(question, top_k=100, budget_tokens=10**6).contexts] == ["chunk"] * 100
    # without a ranking stage, each route is composed alone and the two fused by RRF
    unranked = arborgraph.open(sample_index).with_settings({"router": {"min_confidence": 1.0}}, ranker=None)
    plain = unranked.query(question, top_k=30)
    assert any("fused graph with tree by RRF" in note for note in plain.notes)
    assert not any(t.startswith("ranker: ") for c in plain.contexts for t in c.trace)
