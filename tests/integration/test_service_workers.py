"""``arborgraph serve --workers 2``: the real command on a loopback port, its worker
processes seen through the operating system (psutil), connections made in a burst the
way a pool of keep-alive clients makes them."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import pytest
from service_server import Server, cli, running_server


def _workers(server: Server) -> list[psutil.Process]:
    return psutil.Process(server.process.pid).children()


def _connections_per_worker(server: Server) -> list[int]:
    port = urlsplit(server.url).port
    return sorted(
        sum(1 for c in w.net_connections(kind="tcp") if c.status == psutil.CONN_ESTABLISHED and c.laddr.port == port)
        for w in _workers(server)
    )


def _ask(conn: http.client.HTTPConnection, question: str) -> dict:
    conn.request("POST", "/v1/query", body=json.dumps({"question": question}), headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    body = response.read()
    assert response.status == 200, body[:300]
    return json.loads(body)


def _wait(condition, seconds: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def test_a_burst_of_keep_alive_connections_is_spread_over_the_workers(sample_index: Path, tmp_path: Path) -> None:
    with running_server(sample_index, tmp_path / "logs", "--workers", "2") as server:
        assert _wait(lambda: server.logs().count("is serving") == 2, 120)
        parts = urlsplit(server.url)
        # connect all eight before any asks: the queued connections reach the server at
        # once, as a client pool's do (uvicorn's own workers gave them all to one process)
        raw = [socket.create_connection((parts.hostname, parts.port)) for _ in range(8)]
        conns = []
        for sock in raw:
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
            conn.sock = sock
            conns.append(conn)
        answers = [_ask(conn, "How does WAL mode work?") for conn in conns]
        assert _connections_per_worker(server) == [4, 4]
        # the same connections answer again (kept alive, where they were handed)
        assert [_ask(conn, "What is a checkpoint?")["route"] for conn in conns]
        assert _connections_per_worker(server) == [4, 4]
        assert all(a["contexts"] for a in answers)
        for conn in conns:
            conn.close()
        # closed connections are counted off: the next two go one to each worker
        assert _wait(lambda: _connections_per_worker(server) == [0, 0], 10)
        more = [http.client.HTTPConnection(parts.hostname, parts.port, timeout=60) for _ in range(2)]
        for conn in more:
            _ask(conn, "How does WAL mode work?")
        assert _connections_per_worker(server) == [1, 1]
        # /metrics counts every worker's requests, whichever worker a scrape reaches
        for conn in more:  # two scrapes at once: one reaches each worker
            conn.request("GET", "/metrics")
        pages = [conn.getresponse().read().decode() for conn in more]
        assert _connections_per_worker(server) == [1, 1]
        for page in pages:
            asked = sum(
                float(line.rsplit(" ", 1)[1]) for line in page.splitlines()
                if line.startswith("arborgraph_requests_total{") and 'method="POST"' in line and "/v1/query" in line
            )
            assert asked == 18, page[:2000]


def test_a_dead_worker_is_replaced_and_workers_stop_with_the_parent(sample_index: Path, tmp_path: Path) -> None:
    with running_server(sample_index, tmp_path / "logs", "--workers", "2") as server:
        assert _wait(lambda: server.logs().count("is serving") == 2, 120)
        parts = urlsplit(server.url)
        first = {w.pid for w in _workers(server)}
        victim = sorted(first)[0]
        os.kill(victim, signal.SIGKILL)
        assert _wait(lambda: len(_workers(server)) == 2 and victim not in {w.pid for w in _workers(server)}, 60)
        assert "exited with -9: starting another" in server.logs()
        # the replacement answers once ready: both workers serve a burst again
        assert _wait(lambda: "is serving" in server.logs().rsplit("starting another", 1)[1], 120)
        conns = [http.client.HTTPConnection(parts.hostname, parts.port, timeout=60) for _ in range(4)]
        for conn in conns:
            conn.connect()
        for conn in conns:
            _ask(conn, "How does WAL mode work?")
        assert _connections_per_worker(server) == [2, 2]
        workers = _workers(server)
        # a parent killed outright leaves no worker behind: each sees its control socket close
        server.process.kill()
        server.process.wait()
        gone, alive = psutil.wait_procs(workers, timeout=30)
        assert not alive, [p.pid for p in alive]


def test_an_index_that_cannot_be_served_is_said_once(tmp_path: Path) -> None:
    empty = tmp_path / "not-an-index"
    empty.mkdir()
    run = cli("serve", "--index", str(empty), "--workers", "2", "--port", "0")
    assert run.returncode == 2
    assert run.stderr.count("not an Arborgraph index") == 1, run.stderr
    assert "Traceback" not in run.stderr


async def _mcp_search_twice(url: str) -> list[str]:
    import anyio
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    texts = []
    with anyio.fail_after(300):
        # a client pool that opens a connection per request, as any may: each lands on
        # the worker holding the fewest, so one session's requests reach both workers
        limits = httpx2.Limits(max_keepalive_connections=0)
        async with httpx2.AsyncClient(timeout=120, limits=limits) as client:
            async with streamable_http_client(url + "/mcp", http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    for question in ("How does WAL mode work?", "What is a checkpoint?", "What is a savepoint?"):
                        result = await session.call_tool("search", {"question": question})
                        assert not result.is_error, result.content
                        texts.append(result.content[0].text)
    return texts


def test_an_mcp_session_works_across_workers(sample_index: Path, tmp_path: Path) -> None:
    import anyio

    with running_server(sample_index, tmp_path / "logs", "--workers", "2") as server:
        assert _wait(lambda: server.logs().count("is serving") == 2, 120)
        texts = anyio.run(_mcp_search_twice, server.url)
        assert len(texts) == 3 and all(json.loads(t)["contexts"] for t in texts)


def test_serve_uses_a_worker_per_core_unless_told(sample_index: Path, tmp_path: Path) -> None:
    from arborgraph.core.processes import available_cores
    from arborgraph.service.cli import MAX_DEFAULT_WORKERS

    expected = min(MAX_DEFAULT_WORKERS, available_cores())
    with running_server(sample_index, tmp_path / "logs", one_process=False) as server:
        if expected == 1:
            assert "serving" in server.logs() and not _workers(server)
        else:
            assert f"up to {expected} worker processes" in server.logs()  # the memory free holds them here
            assert _wait(lambda: server.logs().count("is serving") == expected, 120), server.logs()[-2000:]
            assert len(_workers(server)) == expected
        conn = http.client.HTTPConnection(urlsplit(server.url).hostname, urlsplit(server.url).port, timeout=60)
        assert _ask(conn, "What is the default page size?")["contexts"]
        conn.close()
