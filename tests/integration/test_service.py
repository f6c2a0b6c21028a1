"""The knowledge service end to end: the real ``arborgraph serve`` on a loopback port,
keys made with the real ``arborgraph keys``, the real MCP client over stdio and over
streamable HTTP, and an index whose tenant documents carry ACLs."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from llm_server import FakeOpenAIServer
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from service_server import ROOT, Server, cli, cli_env, request, running_server
from tenants import API_METADATA, PHRASINGS, SECRETS, write_tenant_docs

import arborgraph
from arborgraph.pipeline import build_index

ROUTES = ["auto", "lookup", "tree", "graph", "global"]
MAX_BATCH = 8
MAX_QUESTION = 500
# a question no other part of the suite asks: it must not reach the server's logs
MARKER_QUESTION = "Which checkpoint cadence does the quokka-lantern deployment use?"


# -- fixtures -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tenant_index(tmp_path_factory: pytest.TempPathFactory, sample_slice: Path) -> Path:
    docs = write_tenant_docs(tmp_path_factory.mktemp("service-tenants"), sample_slice)
    index = tmp_path_factory.mktemp("service-index") / "idx"
    build_index([docs], index, metadata=API_METADATA)
    return index


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Keys made by the real command line: one per team, and a revoked one of team-a."""
    from arborgraph.service.keys import KeyStore

    path = tmp_path_factory.mktemp("keys") / "keys.json"
    made: dict[str, Any] = {"path": path}
    run = cli("keys", "add", "--keys", str(path), "--principal", "team-a")
    assert run.returncode == 0, run.stderr
    made["team-a"] = run.stdout.strip()
    for name, principal in [("team-b", "team-b"), ("team-c", "team-c"), ("revoked", "team-a")]:
        made[name] = KeyStore(path).add(principal)[0]
    listed = json.loads(cli("keys", "list", "--keys", str(path), "--json").stdout)
    run = cli("keys", "revoke", listed[-1]["id"], "--keys", str(path))
    assert run.returncode == 0, run.stderr
    made["listed"] = listed
    return made


@pytest.fixture(scope="module")
def llm() -> Any:
    with FakeOpenAIServer() as server:
        server.set_reply(lambda body: "Answer: WAL keeps a log [1], checkpoints copy it back [2].")
        yield server


@pytest.fixture(scope="module")
def server(tenant_index: Path, keys: dict[str, Any], llm: Any, tmp_path_factory: pytest.TempPathFactory) -> Server:
    logs = tmp_path_factory.mktemp("server-logs")
    with running_server(
        tenant_index, logs, "--keys", str(keys["path"]), "--max-batch", str(MAX_BATCH),
        "--max-question-chars", str(MAX_QUESTION), "--max-body-bytes", "20000", "--llm-model", "stand-in",
        env={"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "stand-in-key"},
    ) as running:
        yield running


def post(server: Server, path: str, body: Any, key: str | None = None) -> tuple[int, Any]:
    status, headers, data = request("POST", server.url + path, body, key=key)
    return status, _decode(headers, data)


def get(server: Server, path: str, key: str | None = None, **params: Any) -> tuple[int, Any]:
    from urllib.parse import urlencode

    query = f"?{urlencode(params)}" if params else ""
    status, headers, data = request("GET", server.url + path + query, key=key)
    return status, _decode(headers, data)


def _decode(headers: dict[str, str], data: bytes) -> Any:
    kind = headers.get("content-type", "")
    if "ndjson" in kind:
        return [json.loads(line) for line in data.decode().splitlines() if line.strip()]
    if "json" in kind:
        return json.loads(data)
    return data.decode()


# -- keys -----------------------------------------------------------------------------

def test_keys_file_holds_hashes_and_the_cli_prints_only_the_key(keys: dict[str, Any]) -> None:
    text = keys["path"].read_text()
    for name in ("team-a", "team-b", "team-c", "revoked"):
        assert keys[name].startswith("ag_") and len(keys[name]) > 40
        assert keys[name] not in text  # the file never holds a key
    assert stat.S_IMODE(keys["path"].stat().st_mode) == 0o600
    records = json.loads(text)["keys"]
    assert [r["principal"] for r in records] == ["team-a", "team-b", "team-c", "team-a"]
    assert [r["revoked"] for r in records] == [False, False, False, True]
    assert all(set(r) == {"id", "principal", "created", "sha256", "revoked", "write"} for r in records)
    assert [r["write"] for r in records] == [False] * 4  # keys read only unless added with --write
    assert all("sha256" not in r for r in keys["listed"])  # keys list shows no hash either
    bad = cli("keys", "add", "--keys", str(keys["path"]), "--principal", "a,b")
    assert bad.returncode == 2 and "contains ','" in bad.stderr and not bad.stdout.strip()
    missing = cli("keys", "revoke", "key-00000000", "--keys", str(keys["path"]))
    assert missing.returncode == 2 and "no key with id" in missing.stderr


def test_key_lookup_resolves_only_issued_keys(tmp_path: Path) -> None:
    from arborgraph.service.auth import Authenticator, Unauthorized
    from arborgraph.service.keys import KeyStore

    store = KeyStore(tmp_path / "k.json")
    key, record = store.add("ops")
    auth = Authenticator(store)
    assert auth.caller({"authorization": f"Bearer {key}"}).principal == "ops"
    assert auth.caller({"x-api-key": key}).principal == "ops"
    assert auth.caller({}).principal is None
    for headers in ({"authorization": f"Bearer {key}x"}, {"authorization": f"Basic {key}"},
                    {"authorization": f"Bearer {key}", "x-api-key": "other"}, {"x-api-key": ""}):
        with pytest.raises(Unauthorized):
            auth.caller(headers)
    # revoked from another process (the CLI): the next lookup sees it
    KeyStore(tmp_path / "k.json").revoke(record.id)
    with pytest.raises(Unauthorized):
        auth.caller({"x-api-key": key})
    with pytest.raises(Unauthorized):
        Authenticator(store, require_key=True).caller({})


def test_work_past_the_time_limit_is_cut_off() -> None:
    import time

    from arborgraph.service.limits import WorkerThreads

    threads = WorkerThreads(2, timeout_s=0.3)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        anyio.run(threads.run, lambda: time.sleep(3))
    assert time.monotonic() - started < 2  # the caller is answered; the thread is abandoned
    assert anyio.run(threads.run, lambda: 42) == 42


# -- the HTTP API ---------------------------------------------------------------------

def test_query_answers_like_the_library_plus_its_generation(server: Server, tenant_index: Path, keys: dict[str, Any]) -> None:
    kb = arborgraph.open(tenant_index)
    question = "What is the launch code for Project Bluefin?"
    status, body = post(server, "/v1/query", {"question": question, "route": "lookup", "top_k": 5}, key=keys["team-a"])
    assert status == 200
    expected = {"id": None, **kb.query(question, route="lookup", top_k=5, principal="team-a").to_dict()}
    assert body.pop("generation") == kb.index.manifest.generation
    assert body == expected
    assert "ZEBRA-7731" in body["contexts"][0]["text"]  # the owner reads its own document
    # the same question without the key: public passages only
    status, anon = post(server, "/v1/query", {"question": question, "route": "lookup", "top_k": 5})
    assert status == 200 and all(c["source"] != "bluefin.md" for c in anon["contexts"])
    status, explained = post(server, "/v1/query", {"question": question, "explain": True})
    assert status == 200 and explained["explain"].startswith(f"question: {question}")


BAD_REQUESTS = [
    # (body or raw bytes, expected status, words in the detail)
    (b'{"question": "wal', 400, "not valid JSON"),
    ({"question": 5}, 422, "question"),
    ({"question": "wal", "top_k": "5"}, 422, "top_k"),
    ({"question": "wal", "top_k": 0}, 422, "top_k"),
    ({"question": "wal", "unknown": 1}, 422, "unknown"),
    ({"question": "wal", "principal": "team-a"}, 422, "principal"),  # never from the body
    # in the words the CLI, the library and MCP use
    ({"question": "x" * (MAX_QUESTION + 1)}, 422, f"question: the question is {MAX_QUESTION + 1} characters long; the limit is {MAX_QUESTION}"),
    ({"question": ""}, 422, "question: the question is empty"),
    ({"question": "   "}, 422, "question: the question is empty"),
    ({"question": "wal", "route": "sideways"}, 422, "route"),
    ({"question": "wal", "as_of": "2026-02-30"}, 422, "as_of"),
    ({"question": "wal", "as_of": 1700000000}, 422, "as_of"),
    ({"question": "wal", "include_stale": "yes"}, 422, "include_stale"),
    ({"question": "wal\u0000"}, 422, "NUL"),
    (["wal"], 422, "body"),
    ({"question": "wal " * 6000}, 413, "byte limit"),
]


@pytest.mark.parametrize(("body", "status", "words"), BAD_REQUESTS)
def test_bad_input_gets_a_one_line_problem(server: Server, body: Any, status: int, words: str) -> None:
    raw = body if isinstance(body, bytes) else None
    got, headers, data = request("POST", server.url + "/v1/query", None if raw else body, raw=raw)
    assert got == status, data
    assert headers["content-type"] == "application/problem+json"
    problem = json.loads(data)
    assert problem["status"] == status and "\n" not in problem["detail"] and words in problem["detail"]


def test_batch_is_ndjson_in_order_with_a_limit(server: Server, keys: dict[str, Any]) -> None:
    questions = [{"id": i, "question": q} for i, q in enumerate(PHRASINGS[:4])] + [{"question": "WAL checkpoints"}]
    status, lines = post(server, "/v1/query/batch", {"questions": questions, "route": "lookup", "top_k": 3}, key=keys["team-b"])
    assert status == 200
    assert [line["id"] for line in lines] == [0, 1, 2, 3, None]
    assert all(line["generation"].startswith("gen-") and line["route"] == "lookup" for line in lines)
    too_many = [{"question": "wal"}] * (MAX_BATCH + 1)
    assert post(server, "/v1/query/batch", {"questions": too_many})[0] == 422
    assert post(server, "/v1/query/batch", {"questions": []})[0] == 422


def test_answers_stream_contexts_then_tokens_then_citations(server: Server, llm: Any) -> None:
    status, events = post(server, "/v1/query/stream", {"question": "How does WAL checkpointing work?", "top_k": 4})
    assert status == 200
    assert [e["event"] for e in events] == ["contexts", "token", "citations", "done"]
    contexts = events[0]["contexts"]
    assert contexts and events[0]["generation"].startswith("gen-")
    assert events[1]["text"].startswith("Answer: WAL keeps")
    assert [c["n"] for c in events[2]["citations"]] == [1, 2]
    assert events[2]["citations"][0]["node_id"] == contexts[0]["node_id"]
    # the answer's prompt held the anonymous caller's passages only
    prompt = llm.requests[-1].body["messages"][1]["content"]
    assert "ZEBRA" not in prompt and "OCELOT" not in prompt
    status, body = post(server, "/v1/query", {"question": "How does WAL checkpointing work?", "answer": True})
    assert status == 200 and body["answer"].startswith("Answer: WAL keeps")


def test_an_answer_giving_a_figure_its_passages_lack_says_so(server: Server, llm: Any) -> None:
    """#38 item 11: a date the model made up is named, streamed and in the result's notes."""
    llm.set_reply(lambda body: "Checkpoints were added on 2017-03-28 [1].")
    try:
        question = "When were WAL checkpoints added?"
        status, events = post(server, "/v1/query/stream", {"question": question, "top_k": 4})
        assert status == 200 and events[2]["event"] == "citations"
        (check,) = events[2]["checks"]
        assert check.startswith('answer check: 2017-03-28 in "Checkpoints were added on 2017-03-28 [1]." is not in its cited passage [1]')
        status, body = post(server, "/v1/query", {"question": question, "answer": True, "top_k": 4})
        assert status == 200 and check in body["notes"]
    finally:
        llm.set_reply(lambda body: "Answer: WAL keeps a log [1], checkpoints copy it back [2].")


def test_health_metrics_and_openapi(server: Server) -> None:
    post(server, "/v1/query", {"question": "busy timeout", "route": "lookup"})
    status, health = get(server, "/v1/health")
    assert status == 200 and health["status"] == "ok" and health["generation"].startswith("gen-") and health["refused"] is None
    status, headers, body = request("GET", server.url + "/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain; version=")
    text = body.decode()
    # prometheus_client writes labels in name order
    assert 'arborgraph_requests_total{endpoint="/v1/query",method="POST",route="lookup",status="200"}' in text
    assert 'arborgraph_request_seconds_bucket{endpoint="/v1/query",le="+Inf",route="lookup"}' in text
    assert f'arborgraph_generation_info{{generation="{health["generation"]}"}} 1.0' in text
    assert re.search(r"^arborgraph_generation_swaps_total \d+\.0$", text, re.M) and "\narborgraph_workers_busy_max " in text
    status, spec = get(server, "/openapi.json")
    paths = set(spec["paths"])
    assert {"/v1/query", "/v1/query/batch", "/v1/query/stream", "/v1/index", "/v1/tree/outline", "/v1/tree/node",
            "/v1/graph/neighbours", "/v1/graph/communities/{community_id}", "/v1/documents/{doc_id}", "/v1/health"} <= paths


def test_exploration_routes(server: Server, tenant_index: Path, keys: dict[str, Any]) -> None:
    kb = arborgraph.open(tenant_index)
    status, outline = get(server, "/v1/tree/outline", key=keys["team-a"])
    assert status == 200 and outline["scope"] == "acl:team-a" and "Bluefin" in outline["outline"]
    root = outline["root"]
    status, node = get(server, "/v1/tree/node", key=keys["team-a"], id=root)
    assert status == 200 and node["children"]
    status, kids = get(server, "/v1/tree/children", key=keys["team-a"], id=root)
    assert [k["node_id"] for k in kids["children"]] == node["children"]
    status, path = get(server, "/v1/tree/path", key=keys["team-a"], id=node["children"][0])
    assert [p["node_id"] for p in path["path"]] == [node["children"][0], root]
    assert get(server, "/v1/tree/node", id="L9:999")[0] == 404
    public = kb.explorer.graph_view(None)
    name = max(public.kg.entities.values(), key=lambda e: public.kg.degree(e.id)).name
    status, neighbours = get(server, "/v1/graph/neighbours", name=name, limit=3)
    assert status == 200 and 0 < len(neighbours["neighbours"]) <= 3
    status, ent = get(server, "/v1/graph/entity", name=name)
    assert status == 200 and ent["communities"]
    status, com = get(server, f"/v1/graph/communities/{ent['communities'][0]}")
    assert status == 200 and ent["name"] in com["members"]
    chunk = next(c for c, d in zip(kb.index.store.chunk_ids, kb.index.store.doc_ids) if d == "wal.md")
    status, doc = get(server, "/v1/documents/wal.md", chunk=chunk)
    assert status == 200 and doc["cited"] == chunk and chunk in [p["chunk_id"] for p in doc["passages"]]
    status, info = get(server, "/v1/index")
    assert status == 200 and "wal.md" in info["documents"] and info["counts"]
    assert get(server, "/v1/graph/communities/notanumber")[0] == 422
    assert get(server, "/v1/tree/outline", depth=99)[0] == 422


def test_index_info_is_what_each_caller_may_read(server: Server, tenant_index: Path, keys: dict[str, Any]) -> None:
    kb = arborgraph.open(tenant_index)
    public_docs = kb.index.store.readable_docs(None)
    status, anonymous = get(server, "/v1/index")
    assert status == 200 and set(anonymous["documents"]) == public_docs
    assert anonymous["counts"]["documents"] == len(public_docs)
    assert anonymous["counts"]["chunks"] == sum(d in public_docs for d in kb.index.store.doc_ids)
    public_tags = {s["tag"] for s in anonymous["scopes"]}
    assert [s["scope"] for s in anonymous["scopes"]] == ["public"]
    scoped = [name for name in anonymous["tables"] if re.search(r"\.s\d+\.", name)]
    assert scoped and all(name.split(".")[-2] in public_tags for name in scoped)  # no restricted scope's row counts
    assert anonymous["bytes_total"] is None and anonymous["tables"]["tables/chunks.parquet"]["bytes"] is None
    status, team_a = get(server, "/v1/index", key=keys["team-a"])
    assert status == 200 and "bluefin.md" in team_a["documents"] and "marlin.md" not in team_a["documents"]
    assert team_a["counts"]["documents"] == len(public_docs) + 1
    assert {s["scope"] for s in team_a["scopes"]} == {"public", "acl:team-a"}


# -- isolation: every route x {HTTP, MCP} x {other principal, anonymous, revoked key} --

def _forbidden_words(principal: str | None) -> list[str]:
    return [w for doc, (owner, words) in SECRETS.items() if owner != principal for w in [*words, doc]]


def _leaks(text: str, principal: str | None, asked: Any = None) -> list[str]:
    """Restricted words in a response, after removing what the caller itself sent
    (a question or a name echoed back reveals nothing) and the router's reasons, which
    quote the question's own words."""
    reasons = [json.loads(f'"{r}"') for r in re.findall(r'"reason":\s*"((?:[^"\\]|\\.)*)"', text)]
    for echoed in sorted([*_strings(asked), *reasons], key=len, reverse=True):
        text = text.replace(echoed, "").replace(json.dumps(echoed)[1:-1], "")
    low = text.lower()
    return [f"{w}: …{text[max(0, i - 120):i + 60]}…" for w in _forbidden_words(principal) if (i := low.find(w.lower())) >= 0]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        from urllib.parse import parse_qsl, unquote, urlsplit

        if not value.startswith("/"):
            return [value]
        parts = urlsplit(value)  # a probed URL: the values it carries
        path = unquote(parts.path)
        return [path, path.split("/v1/documents/")[-1], *(v for _, v in parse_qsl(parts.query))]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _secret_targets(tenant_index: Path) -> dict[str, list[Any]]:
    """Ids and names that exist only in the restricted scopes: what a prober would ask for."""
    kb = arborgraph.open(tenant_index)
    targets: dict[str, list[Any]] = {"scopes": [], "nodes": [], "entities": [], "communities": [], "docs": []}
    for doc, (owner, _) in SECRETS.items():
        scope = next(s for s in kb.explorer.readable_scopes(owner) if s != "public")
        targets["scopes"].append(scope)
        targets["nodes"] += [n.node_id for n in kb.explorer.tree_view(owner, scope=scope).tree.nodes]
        graph = kb.explorer.graph_view(owner, scope=scope)
        targets["entities"] += [e.name for e in graph.kg.entities.values()][:6]
        targets["communities"] += list(graph.kg.communities)[:4]
        targets["docs"].append(doc)
    targets["chunks"] = [c for c, d in zip(kb.index.store.chunk_ids, kb.index.store.doc_ids) if d in SECRETS]
    return targets


def _http_probes(targets: dict[str, list[Any]]) -> list[tuple[str, str, Any]]:
    """(method, path with query, body) for every route, aimed at restricted content."""
    from urllib.parse import quote, urlencode

    probes: list[tuple[str, str, Any]] = []
    for route in ROUTES:
        for question in PHRASINGS:
            probes.append(("POST", "/v1/query", {"question": question, "route": route, "top_k": 50, "budget_tokens": 4000, "explain": True}))
        probes.append(("POST", "/v1/query/batch", {"questions": [{"question": q} for q in PHRASINGS[:MAX_BATCH]], "route": route, "top_k": 50}))
    probes.append(("POST", "/v1/query/stream", {"question": PHRASINGS[0], "top_k": 50}))
    probes += [("GET", "/v1/index", None), ("GET", "/v1/health", None), ("GET", "/metrics", None), ("GET", "/v1/tree/outline?depth=6", None)]
    for scope in targets["scopes"]:
        probes += [("GET", f"/v1/tree/outline?{urlencode({'scope': scope, 'depth': 6})}", None),
                   ("GET", f"/v1/graph/entity?{urlencode({'scope': scope, 'name': 'WAL'})}", None)]
    for node in sorted(set(targets["nodes"])):
        for what in ("node", "children", "path"):
            probes.append(("GET", f"/v1/tree/{what}?{urlencode({'id': node})}", None))
    for name in targets["entities"]:
        probes += [("GET", f"/v1/graph/entity?{urlencode({'name': name})}", None),
                   ("GET", f"/v1/graph/neighbours?{urlencode({'name': name, 'limit': 100})}", None)]
    for cid in sorted(set(targets["communities"])):
        probes.append(("GET", f"/v1/graph/communities/{cid}", None))
    for doc in targets["docs"]:
        probes.append(("GET", f"/v1/documents/{quote(doc)}?include_stale=true", None))
    for chunk in targets["chunks"]:
        doc = chunk.split("#")[0]
        probes.append(("GET", f"/v1/documents/{quote(doc)}?{urlencode({'chunk': chunk})}", None))
    return probes


def test_isolation_over_http(server: Server, tenant_index: Path, keys: dict[str, Any]) -> None:
    probes = _http_probes(_secret_targets(tenant_index))
    open_routes = {"/v1/health", "/metrics"}
    statuses: dict[str, set[int]] = {}
    for caller, principal in [("anonymous", None), ("team-a", "team-a"), ("team-b", "team-b"), ("team-c", "team-c"), ("revoked", "team-a")]:
        key = keys.get(caller)
        for method, path, body in probes:
            status, _, data = request(method, server.url + path, body, key=key)
            text = data.decode(errors="replace")
            assert status < 500, (caller, path, status, text[:300])
            statuses.setdefault(caller, set()).add(status)
            if caller == "revoked":
                if path.split("?")[0] not in open_routes:
                    assert status == 401, (path, status)
                assert not _leaks(text, None, [path, body]), (caller, path)
                continue
            assert not _leaks(text, principal, [path, body]), (caller, path, _leaks(text, principal, [path, body]))
    # the probes reach real content: owners are served, others refused or given public text
    assert 200 in statuses["anonymous"] and {400, 404} & statuses["anonymous"]
    status, own = post(server, "/v1/query", {"question": "Tarpon vault PIN HERON-4242", "route": "tree"}, key=keys["team-c"])
    assert status == 200 and any("HERON-4242" in c["text"] for c in own["contexts"])
    status, doc = get(server, "/v1/documents/bluefin.md", key=keys["team-a"])
    assert status == 200 and "ZEBRA-7731" in doc["passages"][0]["text"]


def _mcp_calls(targets: dict[str, list[Any]]) -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = []
    for route in ROUTES:
        for question in PHRASINGS:
            calls.append(("search", {"question": question, "route": route, "top_k": 50, "budget_tokens": 4000}))
    calls += [("explain_routing", {"question": q}) for q in PHRASINGS]
    calls += [("tree_outline", {"depth": 6})] + [("tree_outline", {"scope": s, "depth": 6}) for s in targets["scopes"]]
    calls += [("tree_node", {"node_id": n}) for n in sorted(set(targets["nodes"]))]
    calls += [("entity_neighbours", {"name": n, "limit": 100}) for n in targets["entities"]]
    calls += [("community_report", {"community_id": c}) for c in sorted(set(targets["communities"]))]
    calls += [("read_document", {"doc_id": d}) for d in targets["docs"]]
    calls += [("list_documents", {"limit": 500})] + [("list_documents", {"contains": d}) for d in targets["docs"]]
    return calls


async def _run_mcp_calls(session: ClientSession, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, bool, str, dict[str, Any]]]:
    await session.initialize()
    tools = {t.name for t in (await session.list_tools()).tools}
    assert {"search", "explain_routing", "tree_outline", "tree_node", "community_report", "entity_neighbours"} <= tools
    out = []
    for name, args in calls:
        result = await session.call_tool(name, args)
        text = " ".join(getattr(c, "text", "") for c in result.content) + json.dumps(result.structured_content or {})
        out.append((name, bool(result.is_error), text, args))
    return out


async def _mcp_over_http(url: str, key: str | None, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, bool, str, dict[str, Any]]]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    with anyio.fail_after(600):
        async with httpx2.AsyncClient(headers=headers, timeout=120) as client:
            async with streamable_http_client(url + "/mcp", http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    return await _run_mcp_calls(session, calls)


async def _mcp_over_stdio(index: Path, principal: str | None, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, bool, str, dict[str, Any]]]:
    args = ["-m", "arborgraph.cli", "mcp", "--index", str(index)] + (["--as", principal] if principal else [])
    params = StdioServerParameters(command=sys.executable, args=args, env=cli_env(), cwd=str(ROOT))
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write):
            async with ClientSession(read, write) as session:
                return await _run_mcp_calls(session, calls)


def _check_mcp(results: list[tuple[str, bool, str, dict[str, Any]]], principal: str | None) -> None:
    assert results
    for name, _is_error, text, args in results:
        assert not _leaks(text, principal, args), (name, principal, _leaks(text, principal, args), text[:300])
    assert any(not err for name, err, _, _ in results if name == "search")


def _leaf_errors(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaf_errors(inner)]
    return [error]


def test_isolation_over_mcp_http(server: Server, tenant_index: Path, keys: dict[str, Any]) -> None:
    calls = _mcp_calls(_secret_targets(tenant_index))
    for caller, principal in [("anonymous", None), ("team-b", "team-b")]:
        _check_mcp(anyio.run(_mcp_over_http, server.url, keys.get(caller), calls), principal)
    # the owner's own secret does come back: the probes can see restricted text at all
    own = anyio.run(_mcp_over_http, server.url, keys["team-a"], [("search", {"question": "Bluefin launch code", "route": "lookup"})])
    assert "ZEBRA-7731" in own[0][2]
    with pytest.raises(BaseExceptionGroup) as refused:  # the revoked key gets no session at all
        anyio.run(_mcp_over_http, server.url, keys["revoked"], calls[:1])
    leaves = _leaf_errors(refused.value)
    assert leaves and all(isinstance(e, MCPError) and "error response" in str(e) for e in leaves), leaves
    status, _, data = request("POST", server.url + "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, key=keys["revoked"])
    assert status == 401 and b"unknown or revoked key" in data


async def _agent_walk(session: ClientSession) -> dict[str, Any]:
    """What an agent does: search, then follow each kind of id to the tool that takes it."""
    await session.initialize()

    async def call(tool: str, **args: Any) -> Any:
        result = await session.call_tool(tool, args)
        assert not result.is_error, (tool, args, result.content)
        text = result.content[0].text
        return len(text), json.loads(text)

    seen: dict[str, Any] = {}
    seen["search_chars"], found = await call("search", question="How does a checkpoint move WAL frames into the database?")
    context = next(c for c in found["contexts"] if c["kind"] == "chunk")
    seen["search"], seen["cited"] = found, context["id"]
    _, seen["document"] = await call("read_document", doc_id=context["source"], chunk_id=context["id"])
    _, seen["documents"] = await call("list_documents")
    listed_doc = seen["documents"]["documents"][0]["doc_id"]
    _, seen["listed_document"] = await call("read_document", doc_id=listed_doc)
    _, outline = await call("tree_outline", depth=1, scope=seen["documents"]["scopes"][0])
    _, seen["node"] = await call("tree_node", node_id=outline["root"])
    _, listed = await call("list_communities")
    _, seen["community"] = await call("community_report", community_id=listed["communities"][0]["id"])
    _, entities = await call("find_entities", text="checkpoint")
    _, seen["neighbours"] = await call("entity_neighbours", name=entities["entities"][0]["name"])
    seen["tools"] = {t.name: t.description for t in (await session.list_tools()).tools}
    return seen


def test_an_agent_finds_every_id_it_needs_in_compact_results(tenant_index: Path) -> None:
    async def walk() -> dict[str, Any]:
        args = ["-m", "arborgraph.cli", "mcp", "--index", str(tenant_index)]
        params = StdioServerParameters(command=sys.executable, args=args, env=cli_env(), cwd=str(ROOT))
        with open(os.devnull, "w") as quiet:
            async with stdio_client(params, errlog=quiet) as (read, write):
                async with ClientSession(read, write) as session:
                    return await _agent_walk(session)

    seen = anyio.run(walk)
    assert seen["search_chars"] <= 8000  # a default search, compact
    found = seen["search"]
    assert found["route"] and found["reason"] and len(found["contexts"]) >= 3
    assert set(found["contexts"][0]) == {"n", "source", "section", "kind", "id", "score", "text"}
    scores = [c["score"] for c in found["contexts"]]
    assert scores == sorted(scores, reverse=True)
    assert seen["document"]["passages"][0]["chunk_id"] == seen["cited"]
    assert seen["documents"]["total"] >= len(seen["documents"]["documents"]) >= 2
    assert seen["listed_document"]["doc_id"] == seen["documents"]["documents"][0]["doc_id"]
    assert seen["listed_document"]["passages"]
    assert seen["node"]["children"] and seen["community"]["members"] and seen["neighbours"]["neighbours"]
    for tool in ("tree_node", "community_report", "entity_neighbours", "read_document"):
        assert any(source in seen["tools"][tool] for source in ("tree_outline", "list_communities", "find_entities", "list_documents")), tool


def test_isolation_over_mcp_stdio(tenant_index: Path) -> None:
    calls = _mcp_calls(_secret_targets(tenant_index))
    calls.append(("search", {"question": "Marlin encryption passphrase", "route": "lookup"}))
    results = anyio.run(_mcp_over_stdio, tenant_index, "team-b", calls)
    _check_mcp(results, "team-b")
    assert "OCELOT-5520" in results[-1][2]  # team-b's own document, through stdio
    errors = [text for name, err, text, _ in results if err]
    assert any("readable" in t for t in errors)  # asking for another tenant's scope is refused


# -- fuzzing from the OpenAPI spec ----------------------------------------------------

def test_fuzzing_from_the_openapi_spec_finds_no_5xx(server: Server, keys: dict[str, Any]) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    import schemathesis
    from schemathesis import GenerationMode

    schema = schemathesis.openapi.from_url(server.url + "/openapi.json")
    cases = st.one_of(schema.as_strategy(GenerationMode.POSITIVE), schema.as_strategy(GenerationMode.NEGATIVE))
    seen: list[int] = []

    @settings(max_examples=250, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(case=cases, key=st.sampled_from(["generated", None, keys["team-a"], keys["revoked"]]))
    def one_request(case: Any, key: str | None) -> None:
        # "generated": the made-up keys schemathesis derives from the spec's security schemes
        if key != "generated":
            kept = {k: v for k, v in (case.headers or {}).items() if k.lower() not in ("authorization", "x-api-key")}
            case.headers = kept | ({"Authorization": f"Bearer {key}"} if key else {})
        response = case.call(base_url=server.url, timeout=60)
        seen.append(response.status_code)
        assert response.status_code < 500, (case.method, case.path, response.status_code, response.text[:300])
        if response.status_code >= 400:
            assert response.headers.get("content-type", [""])[0].startswith("application/problem+json")

    one_request()
    assert len(seen) >= 200 and any(s == 200 for s in seen) and any(400 <= s < 500 for s in seen)


# -- last: what the server wrote to its logs ------------------------------------------

def test_keys_and_questions_never_reach_the_logs(server: Server, keys: dict[str, Any]) -> None:
    assert post(server, "/v1/query", {"question": MARKER_QUESTION}, key=keys["team-a"])[0] == 200
    assert post(server, "/v1/query", {"question": MARKER_QUESTION}, key=keys["revoked"])[0] == 401
    assert post(server, "/v1/query", {"question": MARKER_QUESTION, "top_k": "x"})[0] == 422
    # a question and a key in a query string: the access log keeps the path alone
    assert get(server, "/v1/web/entities", q="quokka-lantern", api_key=keys["team-b"])[0] == 200
    deadline = time.monotonic() + 10  # a request's log line is written as its response ends
    while "GET /v1/web/entities" not in (logs := server.logs()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "POST /v1/query" in logs and "GET /v1/web/entities" in logs  # the access log is there ...
    for secret in (keys["team-a"], keys["team-b"], keys["revoked"], MARKER_QUESTION, "quokka"):
        assert secret not in logs  # ... without keys or question text


def test_control_characters_in_a_path_never_reach_the_log(server: Server) -> None:
    """CR, LF and ESC in a request path (percent-encoded: the server decodes them) are
    escaped in the access log: no forged line, no terminal control sequence."""
    import socket
    from urllib.parse import urlsplit

    where = urlsplit(server.url)
    forged = "/v1/x%0D%0AINFO:%20%20%20%20%20forged-admin-login%1B%5B2J"
    with socket.create_connection((where.hostname, where.port), timeout=10) as conn:
        conn.sendall(f"GET {forged} HTTP/1.1\r\nHost: {where.hostname}:{where.port}\r\nConnection: close\r\n\r\n".encode())
        while conn.recv(65536):
            pass
    deadline = time.monotonic() + 10
    while "forged-admin-login" not in (logs := server.logs()) and time.monotonic() < deadline:
        time.sleep(0.1)
    lines = [line for line in logs.splitlines() if "forged-admin-login" in line]
    assert lines, logs[-2000:]
    assert all(line.startswith("INFO:") and "GET /v1/x" in line for line in lines), lines
    assert "\x1b" not in logs and "\r" not in logs
    assert "\\x0d\\x0aINFO:" in lines[0] and "\\x1b[2J" in lines[0]
