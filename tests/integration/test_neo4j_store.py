"""Neo4j as the store (``query --store``), against a real Neo4j: the governance cases
of ``test_governance.py`` (tenants with access lists, questions that go after their
secrets) run on every route over the candidates the database's vector and full-text
indexes return, whose access check sits inside the Cypher."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from neo4j_server import Neo4jServer, neo4j  # noqa: F401  (the Neo4j fixture)
from tenants import PHRASINGS, SECRETS, build_tenant_index, write_versioned_docs
from typer.testing import CliRunner

import arborgraph
from arborgraph import neo4j as X

PRINCIPALS = (None, "team-a", "team-b", "team-c")


@pytest.fixture(scope="module")
def tenant_index(tmp_path_factory: pytest.TempPathFactory, sample_slice: Path) -> Path:
    """The tenants' index with its trees and graphs: the store answers every route."""
    return build_tenant_index(tmp_path_factory.mktemp("tenants"), tmp_path_factory.mktemp("store") / "idx", sample_slice)


@pytest.fixture(scope="module")
def store(neo4j: Neo4jServer, tenant_index: Path) -> X.Neo4jStore:  # noqa: F811
    """The tenant index exported with its search indexes into an empty Neo4j."""
    neo4j.clear()
    X.export_index(tenant_index, neo4j.driver())
    written = X.export_search(tenant_index, neo4j.driver())
    assert written.embeddings > 0 and written.dimensions == 384
    return X.Neo4jStore(neo4j.driver())


def _leaks(res: arborgraph.kb.QueryResult, principal: str | None) -> list[str]:
    found = []
    for doc, (owner, words) in SECRETS.items():
        if principal == owner:
            continue
        for ctx in res.contexts:
            if ctx.source == doc or any(word.lower() in ctx.text.lower() for word in words):
                found.append(f"{ctx.node_id} ({doc})")
    return found


ROUTES = ("auto", "lookup", "tree", "graph", "global")


def test_tenants_never_see_each_others_secrets_on_the_store(store: X.Neo4jStore, tenant_index: Path) -> None:
    kb = arborgraph.open(tenant_index)
    for question in PHRASINGS:
        for principal in PRINCIPALS:
            # nothing restricted even among the candidates each of the database's indexes returns
            found = store.search(question, kb.engine.embed_query(question), principal=principal, depth=500)
            gone = {c for ids in found.values() for c in ids} - _readable_chunks(kb, principal)
            assert found and not gone, (principal, question, sorted(gone)[:3])
            for route in ROUTES:
                res = kb.query_store(question, store, route, principal=principal, top_k=50)
                assert res.contexts, (principal, question, route)  # public pages always match something
                assert not _leaks(res, principal), (principal, question, route)


def _readable_chunks(kb: Any, principal: str | None) -> set[str]:
    docs = kb.index.store.readable_docs(principal)
    return {cid for cid, doc in zip(kb.index.store.chunk_ids, kb.index.store.doc_ids) if doc in docs}


def test_owners_find_their_own_secrets_and_the_filter_runs_before_ranking(store: X.Neo4jStore, tenant_index: Path) -> None:
    kb = arborgraph.open(tenant_index)
    res = kb.query_store("What is the launch code for Project Bluefin?", store, principal="team-a", top_k=5)
    assert res.contexts[0].source == "bluefin.md" and "ZEBRA-7731" in res.contexts[0].text
    res = kb.query_store("Tarpon vault PIN HERON-4242", store, principal="team-c", top_k=5)
    assert any("HERON-4242" in c.text for c in res.contexts)  # an access list given through the build API
    # the secret is the best match and one context is asked for: the caller who may
    # not read it still gets one, a public one (the check is not on the final list)
    for question, principal in [("The launch code for Project Bluefin is ZEBRA-7731.", None),
                                ("The Tarpon vault PIN is HERON-4242.", "team-a")]:
        res = kb.query_store(question, store, principal=principal, top_k=1)
        assert len(res.contexts) == 1 and not _leaks(res, principal), (question, res.contexts)
    # both of the database's indexes answered, and the result says the store chose its candidates
    res = kb.query_store("How does a busy timeout work?", store, top_k=5)
    assert any(n.startswith("candidates from the Neo4j store: ") and "(bm25 and dense, " in n for n in res.notes), res.notes
    # opened with the store, query is query_store, and stays so on a refresh and with other settings
    with arborgraph.open(tenant_index, store=store) as on_store:
        for opened in (on_store, on_store.refresh(), on_store.with_settings({"top_k": 3})):
            got = opened.query("What is the launch code for Project Bluefin?", principal="team-a")
            assert any(n.startswith("candidates from the Neo4j store: ") for n in got.notes), got.notes
            assert got.contexts[0].source == "bluefin.md"
            assert not _leaks(opened.query("What is the launch code for Project Bluefin?"), None)


def test_a_store_exported_from_another_generation_says_so_in_every_answer(
    store: X.Neo4jStore, neo4j: Neo4jServer, tenant_index: Path  # noqa: F811
) -> None:
    """After a rebuild the database finds none of the new passages: each answer says
    which generation the store holds and what to run, until it is exported again."""
    from arborgraph.neo4j.store import SEARCH_INFO

    kb = arborgraph.open(tenant_index)
    stale = "the Neo4j store was exported from"
    assert store.generation() == kb.generation
    assert not any(stale in n for n in kb.query_store("Bluefin launch code", store).notes)
    with neo4j.driver().session() as session:
        session.run(f"MATCH (m:{SEARCH_INFO}) SET m.generation = 'gen-000000'").consume()
    try:
        notes = kb.query_store("Bluefin launch code", X.Neo4jStore(neo4j.driver())).notes
        said = [n for n in notes if stale in n]
        assert said and "gen-000000" in said[0] and kb.generation in said[0] and "export-neo4j" in said[0], notes
    finally:
        X.export_search(tenant_index, neo4j.driver())
    assert X.Neo4jStore(neo4j.driver()).generation() == kb.generation


def test_a_search_export_after_a_model_change_writes_every_embedding_again(
    store: X.Neo4jStore, neo4j: Neo4jServer, tenant_index: Path  # noqa: F811
) -> None:
    """The database's vectors from another model are never compared with a question
    embedded by this one: ``--search`` over a store exported with another model rewrites
    them all (an unchanged one, only what is missing: none)."""
    from arborgraph.neo4j.store import SEARCH_INFO

    kb = arborgraph.open(tenant_index)
    chunks = len(kb.index.store.chunk_ids)
    first = kb.index.store.chunk_ids[0]
    assert X.export_search(tenant_index, neo4j.driver()).embeddings == 0  # the same model: nothing to write
    with neo4j.driver().session() as session:
        session.run(f"MATCH (m:{SEARCH_INFO}) SET m.model = 'another-model'").consume()
        session.run("MATCH (n:Chunk {id: $id}) CALL db.create.setNodeVectorProperty(n, 'embedding', $v)",
                    id=first, v=[1.0] + [0.0] * 383).consume()
    assert X.export_search(tenant_index, neo4j.driver()).embeddings == chunks
    with neo4j.driver().session() as session:
        stored = session.run("MATCH (n:Chunk {id: $id}) RETURN n.embedding AS v", id=first).single()["v"]
        model = session.run(f"MATCH (m:{SEARCH_INFO}) RETURN m.model AS m").single()["m"]
    assert model == kb.index.mode.embedding
    from arborgraph.index import schema as S
    from arborgraph.index.store import open_generation

    own = open_generation(tenant_index).vectors(S.CHUNK_VECTORS)[kb.index.store.row_of[first]]
    assert stored[0] != 1.0 and np.allclose(stored, own, atol=1e-6)  # the index's vector, not the planted one


def test_every_route_on_the_store_answers_as_in_process_when_it_returns_every_chunk(
    store: X.Neo4jStore, tenant_index: Path
) -> None:
    """With the store's searches as deep as the collection, its candidates are every
    chunk the caller may read: each route, the router and the ranking stage give what
    they give in process, context for context; with the default depth the store's
    notes say how many it let through."""
    kb = arborgraph.open(tenant_index)
    everything = len(kb.index.store.chunk_ids)
    for question in ("How does a busy timeout work?", "What is the launch code for Project Bluefin?",
                     "What topics does the documentation cover?"):
        for principal in (None, "team-a"):
            for route in ROUTES:
                local = kb.query(question, route, principal=principal)
                remote = kb.query_store(question, store, route, principal=principal, depth=everything)
                assert remote.route == local.route, (question, principal, route)
                assert [(c.node_id, c.text) for c in remote.contexts] == [(c.node_id, c.text) for c in local.contexts], (
                    question, principal, route)
    # the store's searches decide the flat candidates: asked for three chunks each, the
    # lookup route's passages are among the six they returned, and none the store did not
    for question in ("How does a busy timeout work?", "What is the launch code for Project Bluefin?"):
        found = store.search(question, kb.engine.embed_query(question), principal="team-a", depth=3)
        allowed = {c for ids in found.values() for c in ids}
        got = kb.query_store(question, store, "lookup", principal="team-a", depth=3, top_k=10)
        assert got.contexts and {c.node_id for c in got.contexts} <= allowed, (question, got.contexts)
        assert {c.node_id for c in kb.query(question, "lookup", principal="team-a", top_k=10).contexts} - allowed
    routes = {kb.query_store(q, store).route for q in ("How does a busy timeout work?", "What topics does the documentation cover?",
                                                       "How does WAL mode relate to checkpointing?")}
    assert routes - {"lookup"}, routes  # the router picks structured routes on the store too


def test_the_check_is_inside_the_database_for_odd_principals(store: X.Neo4jStore) -> None:
    """Principals that look like the stored scope syntax never read more than the public."""
    public_only = set(store.search("Bluefin ZEBRA-7731 launch code", None, principal=None)["bm25"])
    for odd in ("", "acl:team-a", "team-a,team-b", "%", "team-"):
        found = store.search("Bluefin ZEBRA-7731 launch code", None, principal=odd)["bm25"]
        assert set(found) <= public_only, odd
    # no operator reaches Lucene, and no stop word the index's BM25 leaves out (unless that is all there is)
    assert X.lucene_query('launch "code" AND (bluefin) OR NOT: ZEBRA-7731*') == "launch code bluefin zebra 7731"
    assert X.lucene_query("Is it?") == "is it"


def test_query_store_from_the_command_line(store: X.Neo4jStore, neo4j: Neo4jServer, tenant_index: Path) -> None:  # noqa: F811
    from arborgraph.cli import app

    runner = CliRunner()
    login = ["--store", neo4j.uri, "--graph-password", neo4j.password]
    ok = runner.invoke(app, ["query", "-i", str(tenant_index), "Bluefin launch code", *login, "--as", "team-a", "--json"])
    assert ok.exit_code == 0, ok.output
    contexts = json.loads(ok.output)["contexts"]
    assert contexts[0]["source"] == "bluefin.md"
    anonymous = runner.invoke(app, ["query", "-i", str(tenant_index), "Bluefin launch code", *login, "--json"])
    assert anonymous.exit_code == 0 and "ZEBRA" not in anonymous.output and "bluefin.md" not in anonymous.output
    for route in ("tree", "graph", "global"):
        walked = runner.invoke(app, ["query", "-i", str(tenant_index), "Bluefin launch code", *login, "--as", "team-a",
                                     "--route", route, "--json"])
        assert walked.exit_code == 0 and json.loads(walked.output)["route"] == route, walked.output
        assert any("candidates from the Neo4j store" in n for n in json.loads(walked.output)["notes"])
        hidden = runner.invoke(app, ["query", "-i", str(tenant_index), "Bluefin launch code", *login, "--route", route])
        assert hidden.exit_code == 0 and "ZEBRA" not in hidden.output and "bluefin.md" not in hidden.output, hidden.output
    dated = runner.invoke(app, ["query", "-i", str(tenant_index), "Bluefin launch code", *login, "--as", "team-a",
                                "--as-of", "2026-01-01", "--include-stale", "--json"])
    assert dated.exit_code == 0 and json.loads(dated.output)["contexts"][0]["source"] == "bluefin.md", dated.output
    highlighted = runner.invoke(app, ["query", "-i", str(tenant_index), "Bluefin launch code", *login, "--as", "team-a"])
    assert highlighted.exit_code == 0 and "answer (the manual's sentences most likely to answer):" in highlighted.output
    for json_flag in ([], ["--json"]):  # a failed login names neither password
        wrong = runner.invoke(app, ["query", "-i", str(tenant_index), "Bluefin", "--store", neo4j.uri,
                                    "--graph-password", "Wr0ng-Passw0rd", *json_flag])
        assert wrong.exit_code == 2 and wrong.output.startswith("error: authentication failed"), wrong.output
        assert "Wr0ng-Passw0rd" not in wrong.output and neo4j.password not in wrong.output, wrong.output
    exported = runner.invoke(app, ["export-neo4j", "-i", str(tenant_index), "--uri", neo4j.uri,
                                   "--password", neo4j.password, "--search", "--json"])
    assert exported.exit_code == 0, exported.output
    assert json.loads(exported.output)["search"] == {"embeddings": 0, "dimensions": 384}  # all there already


def test_a_database_without_search_indexes_is_one_line_saying_what_to_run(
    store: X.Neo4jStore, neo4j: Neo4jServer, tenant_index: Path  # noqa: F811
) -> None:
    """Exported without ``--search``: not Neo4j's Java exception but what to run."""
    from arborgraph.cli import app
    from arborgraph.neo4j.store import TEXT_INDEX, VECTOR_INDEX

    with neo4j.driver().session() as session:
        for name in (TEXT_INDEX, VECTOR_INDEX):
            session.run(f"DROP INDEX {name} IF EXISTS").consume()
    try:
        with pytest.raises(X.ExportError, match="no search indexes") as caught:
            arborgraph.open(tenant_index).query_store("Bluefin launch code", store)
        assert "export-neo4j --index DIR --search" in str(caught.value)
        failed = CliRunner().invoke(app, ["query", "-i", str(tenant_index), "Bluefin", "--store", neo4j.uri,
                                          "--graph-password", neo4j.password])
        assert failed.exit_code == 2 and failed.output.startswith("error: ") and len(failed.output.splitlines()) == 1
        assert "--search" in failed.output and "IllegalArgumentException" not in failed.output, failed.output
    finally:
        X.export_search(tenant_index, neo4j.driver())  # the other tests' indexes back
    assert store.search("Bluefin launch code", None)["bm25"]


def test_the_store_answers_with_the_llm_over_what_the_caller_may_read(
    store: X.Neo4jStore, tenant_index: Path, tmp_path: Path
) -> None:
    """--answer on the store: one LLM call over the store's passages, which are the
    caller's only; the extractive answer cites them too."""
    from llm_server import FakeOpenAIServer

    from arborgraph.llm import LLMCache, LLMConfig, LLMUsage
    from arborgraph.llm.provider import OpenAIChatModel

    kb = arborgraph.open(tenant_index)
    with FakeOpenAIServer() as server:
        server.set_reply(lambda body: "The launch code is in the Bluefin plan [1].")
        chat = OpenAIChatModel(
            LLMConfig(model="stand-in", base_url=server.base_url, api_key="k"), LLMCache(tmp_path / "llm.sqlite"), LLMUsage()
        )
        mine = kb.query_store("Bluefin launch code", store, principal="team-a", answer=True, llm=chat)
        assert mine.answer == "The launch code is in the Bluefin plan [1]." and server.count() == 1
        assert mine.contexts[0].source == "bluefin.md" and mine.highlights
        assert all(1 <= h.context <= len(mine.contexts) for h in mine.highlights)
        anonymous = kb.query_store("Bluefin launch code", store, answer=True, llm=chat)
        prompt = json.dumps(server.requests[-1].body)
        assert "ZEBRA" not in prompt and "bluefin.md" not in prompt  # the LLM saw only public passages
        assert not _leaks(anonymous, None)


def test_versions_and_dates_on_the_store_as_in_process(
    store: X.Neo4jStore, neo4j: Neo4jServer, tenant_index: Path, tmp_path: Path  # noqa: F811
) -> None:
    """Superseded, expired and restricted newer versions, asked through the store: the
    same documents as the in-process lookup, the stale ones only when asked for and then
    flagged, on the date asked for."""
    import datetime as dt

    from arborgraph.config import load_config
    from arborgraph.pipeline import build_index

    docs = tmp_path / "docs"
    docs.mkdir()
    write_versioned_docs(docs)
    gateway = "# Gateway\n\nThe gateway listens on port {port} for incoming connections.\n"
    (docs / "guide-v1.md").write_text('---\nsource: guide\nversion: "1.0"\n---\n' + gateway.format(port=8080))
    (docs / "q3-plan.md").write_text('---\nsource: guide\nversion: "2.0"\nacl: [hr]\n---\n' + gateway.format(port=9443))
    index = tmp_path / "idx"
    build_index([docs], index, load_config(overrides={"build_tree": False, "build_graph": False}))
    neo4j.clear()
    try:
        X.export_index(index, neo4j.driver())
        X.export_search(index, neo4j.driver())
        kb = arborgraph.open(index)

        def sources(question: str, **kw: Any) -> list[str]:
            return [c.source for c in kb.query_store(question, store, top_k=10, **kw).contexts]

        def in_process(question: str, **kw: Any) -> list[str]:
            return [c.source for c in kb.query(question, route="lookup", top_k=10, **kw).contexts]

        spill = "default cache_spill_limit pages"
        assert "cache-v2.md" in sources(spill) and "cache-v1.md" not in sources(spill)
        flagged = kb.query_store(spill, store, include_stale=True)
        old = [c for c in flagged.contexts if c.source == "cache-v1.md"]
        assert old and any("superseded by cache-v2.md" in f for f in old[0].flags)
        assert not any(f.startswith("stale") for c in flagged.contexts if c.source == "cache-v2.md" for f in c.flags)

        backups = "how long are backups kept retention"
        assert "old-policy.md" not in sources(backups)
        assert sources(backups, as_of=dt.date(2020, 6, 1))[0] == "old-policy.md"
        assert "old-policy.md" in sources(backups, as_of=None)  # no date check asked

        port = "Which port does the gateway listen on?"
        for principal, include_stale in [(None, False), (None, True), ("hr", False)]:
            got = sources(port, principal=principal, include_stale=include_stale)
            assert set(got) == set(in_process(port, principal=principal, include_stale=include_stale)), (principal, got)
        anonymous = kb.query_store(port, store, include_stale=True)
        assert all("q3-plan" not in c.source and not any("q3-plan" in f for f in c.flags) for c in anonymous.contexts)
        assert {"q3-plan.md", "guide-v1.md"} <= set(sources(port, principal="hr"))
    finally:  # the other tests' database back
        neo4j.clear()
        X.export_index(tenant_index, neo4j.driver())
        X.export_search(tenant_index, neo4j.driver())


def test_serve_on_the_store_answers_every_route_for_each_caller_and_no_one_else(
    store: X.Neo4jStore, neo4j: Neo4jServer, tenant_index: Path, tmp_path: Path  # noqa: F811
) -> None:
    """``serve --store``: HTTP queries and a batch on every route take their candidates
    from the database (the notes say so), a key's principal reads its own secret and
    nobody else's, in one process and in two workers (whose password reaches them apart
    from their settings); a wrong password or ``--docs`` stops the start in one line;
    the database going away mid-service is a 503, not a traceback."""
    from service_server import cli, request, running_server

    from arborgraph.neo4j.store import TEXT_INDEX, VECTOR_INDEX
    from arborgraph.service.keys import KeyStore

    keys_file = tmp_path / "keys.json"
    team_a = KeyStore(keys_file).add("team-a")[0]
    login = ("--store", neo4j.uri, "--keys", str(keys_file))
    env = {"NEO4J_PASSWORD": neo4j.password}
    for workers in ("1", "2"):
        # one process takes the password from NEO4J_PASSWORD, the workers' parent from --graph-password
        given = {"env": env} if workers == "1" else {"args": ("--graph-password", neo4j.password)}
        with running_server(tenant_index, tmp_path / f"logs-{workers}", *login, *given.get("args", ()), "--workers", workers,
                            env=given.get("env")) as server:
            for route in ROUTES:
                body = {"question": "What is the launch code for Project Bluefin?", "route": route, "top_k": 20}
                status, _, raw = request("POST", server.url + "/v1/query", body, key=team_a)
                mine = json.loads(raw)
                assert status == 200 and any(n.startswith("candidates from the Neo4j store") for n in mine["notes"]), raw[:300]
                if route in ("auto", "lookup"):
                    assert mine["contexts"][0]["source"] == "bluefin.md", (route, mine["contexts"][:1])
                status, _, raw = request("POST", server.url + "/v1/query", body)
                assert status == 200 and b"ZEBRA" not in raw and b"bluefin.md" not in raw, (route, raw[:300])
            status, _, raw = request("POST", server.url + "/v1/query/batch",
                                     {"questions": [{"id": 1, "question": "Bluefin launch code"}], "route": "graph"})
            line = json.loads(raw.splitlines()[0])
            assert status == 200 and line["route"] == "graph" and b"ZEBRA" not in raw, raw[:300]
            assert any(n.startswith("candidates from the Neo4j store") for n in line["notes"])
            # the workers got the password in their environment, never in their settings
            import psutil

            workers_env = [p.environ() for p in psutil.Process(server.process.pid).children(recursive=True)]
            handed = [env for env in workers_env if "ARBORGRAPH_SERVE_SETTINGS" in env]
            assert len(handed) == {"1": 0, "2": 2}[workers], len(handed)
            for worker_env in handed:
                assert neo4j.password not in worker_env["ARBORGRAPH_SERVE_SETTINGS"]
                assert worker_env["NEO4J_PASSWORD"] == neo4j.password
            assert neo4j.password not in server.logs()
    wrong = cli("serve", "--index", str(tenant_index), "--port", "0", "--store", neo4j.uri, env={"NEO4J_PASSWORD": "Wr0ng-Passw0rd"})
    assert wrong.returncode == 2 and wrong.stderr.startswith("error: --store: authentication failed"), wrong.stderr
    assert "Wr0ng-Passw0rd" not in wrong.stderr + wrong.stdout
    both = cli("serve", "--index", str(tenant_index), "--port", "0", "--store", neo4j.uri, "--docs", str(tmp_path), env=env)
    assert both.returncode == 2 and both.stderr.startswith("error: --docs with --store"), both.stderr
    with running_server(tenant_index, tmp_path / "logs-gone", "--store", neo4j.uri, env=env) as server:
        with neo4j.driver().session() as session:
            session.run(f"DROP INDEX {TEXT_INDEX} IF EXISTS").consume()
        try:
            status, headers, raw = request("POST", server.url + "/v1/query", {"question": "Bluefin launch code"})
            assert status == 503 and b"no search indexes" in raw, raw[:300]
            status, _, raw = request("POST", server.url + "/v1/query/batch",
                                     {"questions": [{"id": 1, "question": "Bluefin"}, {"id": 2, "question": "busy timeout"}]})
            lines = [json.loads(line) for line in raw.splitlines()]
            assert status == 200 and [line["error"]["status"] for line in lines] == [503, 503], raw[:300]
            status, _, _ = request("GET", server.url + "/v1/health")
            assert status == 200 and "Traceback" not in server.logs()
            # a start without both search indexes stops in one line
            with neo4j.driver().session() as session:
                session.run(f"DROP INDEX {VECTOR_INDEX} IF EXISTS").consume()
            bare = cli("serve", "--index", str(tenant_index), "--port", "0", "--store", neo4j.uri, env=env)
            assert bare.returncode == 2 and bare.stderr.startswith("error: --store: ") and "no search indexes" in bare.stderr
            assert len(bare.stderr.strip().splitlines()) == 1, bare.stderr
        finally:
            X.export_search(tenant_index, neo4j.driver())


def test_mcp_over_stdio_on_the_store_searches_what_the_caller_may_read(
    store: X.Neo4jStore, neo4j: Neo4jServer, tenant_index: Path  # noqa: F811
) -> None:
    """``arborgraph mcp --store``: an agent's search takes its candidates from the
    database, for the principal the command runs as and no one else."""
    import os
    import sys

    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from service_server import ROOT, cli_env

    async def search(principal: str | None) -> str:
        args = ["-m", "arborgraph.cli", "mcp", "--index", str(tenant_index), "--store", neo4j.uri]
        params = StdioServerParameters(
            command=sys.executable, args=args + (["--as", principal] if principal else []),
            env=cli_env({"NEO4J_PASSWORD": neo4j.password}), cwd=str(ROOT),
        )
        with anyio.fail_after(300), open(os.devnull, "w") as quiet:
            async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool(
                    "search", {"question": "What is the launch code for Project Bluefin?", "route": "lookup", "detail": "full"}
                )
                assert not result.is_error, result.content
                return "".join(getattr(c, "text", "") for c in result.content)

    mine = anyio.run(search, "team-a")
    assert "ZEBRA-7731" in mine and "candidates from the Neo4j store" in mine, mine[:500]
    anonymous = anyio.run(search, None)
    assert "ZEBRA" not in anonymous and "bluefin.md" not in anonymous and "candidates from the Neo4j store" in anonymous


def test_eval_over_the_store_scores_as_in_process(
    store: X.Neo4jStore, neo4j: Neo4jServer, tenant_index: Path, tmp_path: Path  # noqa: F811
) -> None:
    """``arborgraph eval --store``: the same recall as in process on questions whose
    evidence is a public passage's sentence, and the report says where its candidates
    came from."""
    from arborgraph.cli import app

    kb = arborgraph.open(tenant_index)
    pages = ("wal.md", "foreignkeys.md", "autoinc.md", "c3ref_busy_timeout.md")  # the public pages
    public = [next(t for t, d in zip(kb.index.store.texts, kb.index.store.doc_ids) if d == page) for page in pages]
    kb.close()
    lines = []
    for n, text in enumerate(public):
        sentence = max(text.split(". "), key=len).strip()
        lines.append(json.dumps({"id": f"q{n}", "type": "lookup", "question": sentence[:120], "evidence": [{"text": sentence[:80]}]}))
    questions = tmp_path / "q.jsonl"
    questions.write_text("\n".join(lines) + "\n")
    runner = CliRunner()
    local = runner.invoke(app, ["eval", "-i", str(tenant_index), str(questions), "--json"])
    remote = runner.invoke(app, ["eval", "-i", str(tenant_index), str(questions), "--json", "--store", neo4j.uri,
                                 "--graph-password", neo4j.password])
    assert local.exit_code == 0 and remote.exit_code == 0, (local.output[-500:], remote.output[-500:])
    mine, theirs = json.loads(local.output), json.loads(remote.output)
    assert "Neo4j store" in theirs["mode"] and "Neo4j store" not in mine["mode"]
    assert theirs["systems"]["auto"]["overall"]["evidence_recall"] == mine["systems"]["auto"]["overall"]["evidence_recall"] > 0
