"""An index adopts GDS's communities from a real Neo4j 5 with GDS (``scripts/neo4j-server``,
the ``neo4j`` fixture): ``export-neo4j --gds-leiden --adopt`` and
``arborgraph.neo4j.adopt_gds_communities``. Real index, real server, no stand-ins."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

import arborgraph
from arborgraph import neo4j as X
from arborgraph.core.errors import ExportError
from arborgraph.index.manifest import Manifest
from arborgraph.index.scoped import load_scopes
from arborgraph.index.store import open_generation
from neo4j_server import Neo4jServer, neo4j  # noqa: F401  (the Neo4j fixture)

RESULT_SCHEMA = Path(__file__).resolve().parents[2] / "arborgraph" / "data" / "result.schema.json"


def _app():  # type: ignore[no-untyped-def]
    from arborgraph.cli import app

    return app


@pytest.fixture()
def server(neo4j: Neo4jServer) -> Neo4jServer:  # noqa: F811
    """The session's Neo4j, emptied."""
    neo4j.clear()
    return neo4j


def _copy(sample_index: Path, target: Path) -> Path:
    shutil.copytree(sample_index, target, ignore=shutil.ignore_patterns("build.lock"))
    return target


def _manifest_bytes(index: Path) -> tuple[str, bytes]:
    live = (index / "CURRENT").read_text().strip()
    return live, (index / live / "manifest.json").read_bytes()


def _gds_levels(server: Neo4jServer, scope: str) -> dict[str, list[int]]:
    with server.driver().session() as s:
        rows = s.run(
            "MATCH (n:Entity {scope: $scope}) WHERE n.gds_communities IS NOT NULL RETURN n.id AS id, n.gds_communities AS l",
            scope=scope,
        ).data()
    return {r["id"]: list(r["l"]) for r in rows}


def test_adopt_makes_gds_communities_the_index_s_own(server: Neo4jServer, sample_index: Path, sample_slice: Path, tmp_path: Path) -> None:
    index = _copy(sample_index, tmp_path / "idx")
    before, before_bytes = _manifest_bytes(index)
    own = load_scopes(open_generation(index))[0].graph
    with arborgraph.open(index) as kb:
        assert kb.query("What are the main themes of this manual?", route="global").mode.communities is None
    result = CliRunner().invoke(_app(), [
        "export-neo4j", "-i", str(index), "--uri", server.uri, "--password", server.password,
        "--gds-leiden", "--adopt", "--json",
    ])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    adopted = payload["adopted"]
    assert adopted["previous_generation"] == before and adopted["source"] == "gds-leiden"
    assert adopted["kept_own"] == []
    # a new generation is live; the old one is as it was
    live, _ = _manifest_bytes(index)
    assert live == adopted["generation"] != before
    assert (index / before / "manifest.json").read_bytes() == before_bytes

    # the communities are GDS's partition: level by level, as read from the Entity nodes
    gen = open_generation(index, shape=Manifest)
    kg = load_scopes(gen)[0].graph
    gds = _gds_levels(server, X.PUBLIC)
    depth = {len(ids) for ids in gds.values()}.pop()
    min_size = gen.manifest.config["graph"]["min_community_size"]
    assert depth == len(kg.levels) > 1
    split = adopted["adopted"][0]["gds_split"]
    for gds_level in range(depth):
        raw: dict[int, set[str]] = defaultdict(set)
        nested: dict[tuple[int, ...], set[str]] = defaultdict(set)  # by the ids from the coarsest level down
        for entity, ids in gds.items():
            raw[ids[gds_level]].add(entity)
            nested[tuple(reversed(ids[gds_level:]))].add(entity)
        cut = {frozenset(c.members) for c in kg.community_cut(depth - 1 - gds_level)}
        assert cut == {frozenset(g) for g in nested.values() if len(g) >= min_size}
        if split == 0 or gds_level == depth - 1:  # GDS's own sets wherever its levels nest, and always at the top
            assert cut == {frozenset(g) for g in raw.values() if len(g) >= min_size}
    # laid out as in-process: ids 0.. breadth first, children one level below, inside their parent
    assert sorted(kg.communities) == list(range(len(kg.communities)))
    assert [c.level for c in kg.communities.values()] == sorted(c.level for c in kg.communities.values())
    for c in kg.communities.values():
        assert c.members == sorted(c.members)
        for child in c.children:
            assert kg.communities[child].parent == c.id and kg.communities[child].level == c.level + 1
            assert set(kg.communities[child].members) <= set(c.members)
    assert [len(kg.community_cut(0))] == adopted["adopted"][0]["communities_by_level"][:1]
    assert adopted["adopted"][0]["previous_by_level"][0] == sum(1 for c in own.communities.values() if c.level == 0)
    # every community has a report with a title; the entities and relations are the index's own
    assert set(kg.reports) == set(kg.communities) and all(r.title for r in kg.reports.values())
    assert kg.entities == own.entities and kg.relations == own.relations
    # the manifest says where the communities came from
    record = gen.manifest.scopes[0].communities
    assert record is not None and record.source == "gds-leiden" and record.gds_version.startswith("2.13.")
    assert record.settings == {"resolution": 1.0, "min_edge_weight": 1.0, "seed": 42, "max_levels": 10}
    assert record.communities == len(kg.communities) and record.levels == depth
    # the database's communities followed the adoption; the entities kept GDS's ids
    with server.driver().session() as s:
        assert s.run("MATCH (c:Community) RETURN count(c) AS n").single()["n"] == len(kg.communities)
    assert _gds_levels(server, X.PUBLIC) == gds

    # everything that reads communities works on it
    with arborgraph.open(index) as kb:
        res = kb.query("What are the main themes of this manual?", route="global")
        assert res.route == "global" and any(c.source == "community reports" for c in res.contexts)
        # results say what built the communities they read
        assert res.mode.communities == "gds-leiden" and res.mode.label.endswith(", communities from gds-leiden")
        jsonschema.validate(res.to_dict(), json.loads((RESULT_SCHEMA).read_text(encoding="utf-8")))
        graph = kb.query("How does WAL mode interact with checkpoints?", route="graph")
        assert graph.contexts
        view = kb.explorer.graph_view()
        table = view.communities(level=1)
        assert table.num_rows == len(kg.community_cut(1))
        detail = view.community(0)
        assert detail.level == 0 and detail.children == kg.communities[0].children
    structure = CliRunner().invoke(_app(), ["inspect", "--index", str(index), "--structure"])
    assert structure.exit_code == 0, structure.output
    assert f"communities: {len(kg.reports)} reports" in structure.output

    # the same partition adopted again gives the same table (deterministic ids)
    again = X.adopt_gds_communities(index, server.driver())
    kg_again = load_scopes(open_generation(index))[0].graph
    assert again.generation != live and kg_again.communities == kg.communities and kg_again.reports == kg.reports

    # a rebuild that keeps the scope's graph keeps the record of where its communities came from
    report = arborgraph.build([sample_slice], index, force=True)
    rebuilt = open_generation(index, shape=Manifest)
    assert report.generation == rebuilt.name and rebuilt.manifest.scopes[0].communities is not None
    assert load_scopes(rebuilt)[0].graph.communities == kg.communities


def test_adopt_refuses_another_index_s_graph_and_leaves_the_index_untouched(
    server: Neo4jServer, sample_index: Path, sample_slice: Path, tmp_path: Path
) -> None:
    # --adopt without --gds-leiden: one line, exit 2
    index = _copy(sample_index, tmp_path / "idx")
    result = CliRunner().invoke(_app(), ["export-neo4j", "-i", str(index), "--uri", server.uri, "--adopt"])
    assert result.exit_code == 2 and result.output.startswith("error: --adopt takes the communities --gds-leiden writes")
    assert len(result.output.strip().splitlines()) == 1

    # the database holds (and GDS partitioned) another generation's graph: a smaller build
    src = tmp_path / "src"
    src.mkdir()
    for page in sorted(p.name for p in sample_slice.iterdir())[:8]:
        shutil.copy(sample_slice / page, src / page)
    other = tmp_path / "other"
    arborgraph.build([src], other)
    driver = server.driver()
    X.export_index(other, driver)
    X.gds_leiden_index(other, driver)
    files = sorted(p.name for p in index.iterdir())
    live, manifest = _manifest_bytes(index)
    with pytest.raises(ExportError) as caught:
        X.adopt_gds_communities(index, driver)
    message = str(caught.value)
    assert "\n" not in message and "is not this index's" in message
    assert f"arborgraph export-neo4j --index {index} --uri URI --gds-leiden --adopt" in message
    assert _manifest_bytes(index) == (live, manifest) and sorted(p.name for p in index.iterdir()) == files

    # this index exported, but not partitioned again since: its entities carry no GDS ids
    X.export_index(index, driver)
    with driver.session() as s:
        s.run("MATCH (n:Entity) REMOVE n.gds_communities, n.gds_community").consume()
    with pytest.raises(ExportError, match="carry no GDS communities"):
        X.adopt_gds_communities(index, driver)
    # ids GDS gave another version of the relations (their digest is not of this index's edges)
    X.gds_leiden_index(index, driver)
    with driver.session() as s:
        s.run("MATCH (n:Entity) WHERE n.gds_graph IS NOT NULL SET n.gds_graph = 'another'").consume()
    with pytest.raises(ExportError, match="GDS partitioned another version of its relations"):
        X.adopt_gds_communities(index, driver)
    assert _manifest_bytes(index) == (live, manifest) and sorted(p.name for p in index.iterdir()) == files


TEAM_NOTES = """---
title: Team notes
acl: [team-a]
---
# Team notes

Our service calls `sqlite3_busy_timeout` once at startup.
"""


def test_a_scope_gds_skipped_keeps_its_own_communities(server: Neo4jServer, sample_slice: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for page in sorted(p.name for p in sample_slice.iterdir())[:8]:
        shutil.copy(sample_slice / page, src / page)
    (src / "team.md").write_text(TEAM_NOTES, encoding="utf-8")
    index = tmp_path / "idx"
    arborgraph.build([src], index)
    own = {s.scope: s.graph for s in load_scopes(open_generation(index))}
    result = CliRunner().invoke(_app(), [
        "export-neo4j", "-i", str(index), "--uri", server.uri, "--password", server.password, "--gds-leiden", "--adopt",
    ])
    assert result.exit_code == 0, result.output
    assert "scope acl:team-a keeps its own communities (GDS skipped it: no relations to partition)" in result.output
    assert "adopted GDS's communities, scope public: " in result.output
    gen = open_generation(index, shape=Manifest)
    records = {s.scope: s.communities for s in gen.manifest.scopes}
    assert records["acl:team-a"] is None and records[X.PUBLIC] is not None
    graphs = {s.scope: s.graph for s in load_scopes(gen)}
    assert graphs["acl:team-a"].communities == own["acl:team-a"].communities
    assert graphs["acl:team-a"].reports == own["acl:team-a"].reports
