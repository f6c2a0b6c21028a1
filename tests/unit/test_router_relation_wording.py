"""Questions asking how two named things relate reach the graph route, however worded."""

from __future__ import annotations

import pytest

from arborgraph.query.router import asks_how_things_relate, route_question

ALL = ("lookup", "tree", "graph", "global")


@pytest.mark.parametrize(
    "question",
    [
        "What is the relationship between WAL and shared memory?",  # went to global
        "How does WAL mode relate to checkpointing?",
        "How do triggers interact with foreign keys?",  # went to tree
        "What does the checkpoint have to do with the WAL file?",  # went to lookup
        "What is the connection between the query planner and indexes?",
    ],
)
def test_relational_wordings_go_to_the_graph(question: str) -> None:
    decision = route_question(question, available=ALL)
    assert decision.route == "graph"
    assert decision.confidence >= 0.5
    assert abs(sum(decision.scores.values()) - 1.0) < 1e-3
    assert max(decision.scores, key=decision.scores.__getitem__) == "graph"


@pytest.mark.parametrize(
    "question",
    [
        "Which compression formats can I read and write, and how do they relate to each other?",
        "What options does SQLite give for full-text search, and how do they relate to each other?",
        "What is the default page size?",
    ],
)
def test_survey_and_lookup_wordings_are_not_taken_for_relational(question: str) -> None:
    assert not asks_how_things_relate(question)


def test_without_a_graph_the_rule_does_not_apply() -> None:
    decision = route_question("What is the relationship between WAL and shared memory?", available=("lookup", "tree"))
    assert decision.route in ("lookup", "tree")
