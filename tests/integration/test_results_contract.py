"""The result contract: ``to_dict()`` is the CLI's JSON, which the bundled JSON Schema
describes; at most top-k contexts on every route; one final score per context that
never increases down the ranking; what ``info()`` lists to whom."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

import arborgraph
from arborgraph.cli import app
from arborgraph.query.engine import ROUTES

QUESTION = "How does a checkpoint move WAL content into the database?"


def schema() -> dict:
    return json.loads(resources.files("arborgraph").joinpath("data/result.schema.json").read_text(encoding="utf-8"))


def cli_json(*args: str) -> dict:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("route", ROUTES)
def test_to_dict_is_the_cli_json_and_matches_the_schema(sample_index: Path, sample_kb, route: str) -> None:  # type: ignore[no-untyped-def]
    data = cli_json("query", "--index", str(sample_index), "--route", route, "--json", "--top-k", "6", QUESTION)
    jsonschema.validate(data, schema())
    res = sample_kb.query(QUESTION, route=route, top_k=6)
    assert res.to_dict() == data  # "id" included, null for a single question
    assert list(data)[0] == "id" and data["id"] is None
    explained = cli_json("query", "--index", str(sample_index), "--route", route, "--json", "--explain", QUESTION)
    jsonschema.validate(explained, schema())
    assert explained["explain"] == sample_kb.query(QUESTION, route=route).explain()


def test_batch_lines_match_the_schema(sample_index: Path, tmp_path: Path) -> None:
    batch = tmp_path / "q.jsonl"
    batch.write_text(json.dumps({"id": "a", "question": QUESTION}) + "\n" + json.dumps({"question": "What is AUTOINCREMENT?"}) + "\n")
    result = CliRunner().invoke(app, ["query", "--index", str(sample_index), "--batch", str(batch), "--json"])
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    for line in lines:
        jsonschema.validate(line, schema())
    assert [line["id"] for line in lines] == ["a", 2]


def test_the_cli_guide_documents_every_key_of_the_schema() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    spec = schema()
    assert "arborgraph/data/result.schema.json" in guide
    for key in [*spec["properties"], *spec["$defs"]["context"]["properties"]]:
        assert f"`{key}`" in guide, key


@pytest.mark.parametrize("route", ROUTES)
def test_top_k_bounds_every_route(sample_kb, route: str) -> None:  # type: ignore[no-untyped-def]
    for k in (1, 4, 5):
        res = sample_kb.query(QUESTION, route=route, top_k=k, budget_tokens=100_000)
        assert 1 <= len(res.contexts) <= k, (route, k, len(res.contexts))
    wide = sample_kb.query(QUESTION, route=route, top_k=5, budget_tokens=100_000)
    assert len(wide.contexts) == 5  # enough candidates to fill it, on every route


def test_candidates_is_its_own_setting(sample_kb) -> None:  # type: ignore[no-untyped-def]
    narrow = sample_kb.query(QUESTION, route="tree", top_k=10, candidates=2, budget_tokens=100_000)
    assert len(narrow.contexts) <= 2
    with pytest.raises(arborgraph.QueryError):
        sample_kb.query(QUESTION, route="tree", candidates=0)


@pytest.mark.parametrize("route", ROUTES)
def test_scores_are_the_final_orderings(sample_kb, route: str) -> None:  # type: ignore[no-untyped-def]
    res = sample_kb.query(QUESTION, route=route, top_k=10, budget_tokens=100_000)
    scores = [c.score for c in res.contexts]
    # the shipped ranker's calibrated relevance: in (0, 1], never rising down the list,
    # and not the reciprocal rank shown when nothing was calibrated
    assert all(0 < s <= 1 for s in scores)
    assert all(later <= earlier for earlier, later in zip(scores, scores[1:])), scores
    assert scores != [1 / r for r in range(1, len(scores) + 1)]
    # the retriever's own score is kept, and explain shows it
    assert all(isinstance(c.extra["retriever_score"], float) for c in res.contexts)
    assert f"(retriever {res.contexts[0].extra['retriever_score']:.4f})" in res.explain()


def test_summaries_and_community_reports_say_what_they_are_not_a_members_page(sample_kb) -> None:  # type: ignore[no-untyped-def]
    res = sample_kb.query("What are the main themes of this documentation?", route="global", top_k=20, budget_tokens=100_000)
    root, reports = res.contexts[0], [c for c in res.contexts if c.kind == "community_report"]
    assert root.kind == "summary" and root.node_id == sample_kb.explorer.tree_view().tree.root_id
    assert root.source == "tree" and root.heading_path == ["Tree root", root.extra["title"]]
    assert reports
    for r in reports:
        assert r.source == "community reports"
        assert r.heading_path == [f"Community {r.extra['community_id']}: {r.extra['title']}"]
    # the passages they draw on stay in provenance, as chunk ids of real pages
    for c in [root, *reports]:
        assert c.provenance and all(sample_kb.index.store.row_of.get(p) is not None for p in c.provenance)
    walk = sample_kb.query("How does a WAL checkpoint work?", route="tree", top_k=20, budget_tokens=100_000)
    summaries = [c for c in walk.contexts if c.kind == "summary"]
    assert summaries and all(c.source == "tree" and c.heading_path[0].startswith("Tree ") for c in summaries)
    assert all(c.source.endswith(".md") for c in walk.contexts if c.kind == "chunk")


def test_final_scores_take_a_rankers_scores() -> None:
    from arborgraph.core.results import Context, final_scores

    contexts = [Context(text=t, source="a.md", node_id=t, score=s) for t, s in (("x", 3.0), ("y", 9.0))]
    final_scores(contexts, [0.9, 0.4])
    assert [c.score for c in contexts] == [0.9, 0.4] and contexts[1].extra["retriever_score"] == 9.0
    with pytest.raises(ValueError):
        final_scores(contexts, [0.1, 0.5])


def test_error_classes_do_not_shadow_builtins(tmp_path: Path) -> None:
    with pytest.raises(arborgraph.IndexNotFound) as missing:
        arborgraph.open(tmp_path / "nothing")
    assert isinstance(missing.value, arborgraph.IndexUnusable) and not isinstance(missing.value, IndexError)
    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / "CURRENT").write_text("gen-000001")
    with pytest.raises(arborgraph.IndexDamaged):
        arborgraph.open(tmp_path / "idx")


SECRET_TITLE = "Project Kraken rollout"


@pytest.fixture(scope="module")
def acl_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    docs = tmp_path_factory.mktemp("acl-docs")
    (docs / "public.md").write_text("# Checkpoints\n\nA checkpoint copies WAL pages into the database.\n")
    (docs / "kraken.md").write_text(
        f"---\nacl: [team-a]\n---\n# {SECRET_TITLE}\n\nThe Kraken cluster rolls out on Tuesday.\n"
    )
    index = tmp_path_factory.mktemp("acl-index") / "idx"
    from arborgraph.config import load_config

    config = load_config(None, {"build_tree": False, "build_graph": False})
    arborgraph.build([docs], index, config)
    return index


def test_info_lists_only_readable_documents(acl_index: Path) -> None:
    kb = arborgraph.open(acl_index)
    assert set(kb.info()["documents"]) == {"public.md"}
    assert all(s["scope"] == "public" for s in kb.info()["scopes"])
    assert set(kb.info(principal="team-b")["documents"]) == {"public.md"}
    assert set(kb.info(principal="team-a")["documents"]) == {"public.md", "kraken.md"}
    for args in (("inspect", "--index", str(acl_index), "--json"), ("inspect", "--index", str(acl_index))):
        shown = CliRunner().invoke(app, list(args))
        assert shown.exit_code == 0 and "kraken" not in shown.stdout.lower()
    allowed = CliRunner().invoke(app, ["inspect", "--index", str(acl_index), "--json", "--as", "team-a"])
    assert SECRET_TITLE in allowed.stdout and "acl:team-a" in allowed.stdout
