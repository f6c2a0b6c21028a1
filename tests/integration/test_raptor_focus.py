"""The tree route's focus: lookup hits inside the walk's documents join its leaves."""

from __future__ import annotations

from pathlib import Path

import arborgraph

QUESTION = "How does a checkpoint move WAL content back into the database, and how many writers can run at once?"


def _chunk_ids(result: object) -> list[str]:
    return [c.node_id for c in result.contexts if c.kind == "chunk"]  # type: ignore[attr-defined]


def test_lookup_hits_in_the_walks_documents_move_up(sample_index: Path) -> None:
    # the tree route's own composition, without the ranking stage
    kb = arborgraph.open(sample_index, {"retrieval": {"ranker": False}})
    # every candidate (150) returned, so the two orderings can be compared whole
    focused = kb.query(QUESTION, route="tree", top_k=150, candidates=150, budget_tokens=20000)
    walk = kb.query(QUESTION, route="tree", top_k=150, candidates=150, budget_tokens=20000,
                    settings={"tree_search": {"focus_leaves": 0}})

    assert focused.contexts[0].kind == "summary"  # the overview still leads
    walk_ids, focused_ids = _chunk_ids(walk), _chunk_ids(focused)
    assert set(focused_ids) <= set(walk_ids)  # nothing from outside the tree's leaves
    docs = {c.source for c in [c for c in walk.contexts if c.kind == "chunk"][:3]}
    hits = [c.node_id for c in kb.engine.lookup(QUESTION, top_k=50) if c.source in docs and c.node_id in walk_ids]
    assert hits
    moves = [walk_ids.index(h) - focused_ids.index(h) for h in hits[:5]]
    assert max(moves) > 0  # the lookup's best hits in those documents rank higher
    outside = [c.node_id for c in walk.contexts if c.kind == "chunk" and c.source not in docs]
    assert outside  # the walk reaches other documents' leaves too ...
    # ... and focusing does not promote them past the focus documents' hits
    assert focused_ids.index(outside[0]) >= walk_ids.index(outside[0]) - len(hits)
