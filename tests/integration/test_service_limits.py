"""The server holds its own limits: worker slots held until timed-out work stops, answers
on threads of their own that stop at the time limit, one set of credentials per request, the Host header, slow bodies, the keys file and the bind
address. The real ``arborgraph serve`` on loopback, over the session's slice index."""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil
import pytest
from llm_server import FakeOpenAIServer
from service_server import Server, cli, cli_env, request, running_server

from arborgraph.service.keys import KeyStore


def _metric(server: Server, name: str) -> float:
    status, _, body = request("GET", server.url + "/metrics")
    assert status == 200
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def _raw(server: Server, method: str, path: str, headers: list[tuple[str, str]], body: bytes = b"") -> tuple[int, Any]:
    """One request with exactly these headers (repeats included), as urllib cannot send."""
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=any(k.lower() == "host" for k, _ in headers))
        for name, value in headers:
            conn.putheader(name, value)
        if body:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body or None)
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, json.loads(data) if data[:1] in (b"{", b"[") else data
    finally:
        conn.close()


@pytest.fixture(scope="module")
def keyed_server(sample_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    keys_dir = tmp_path_factory.mktemp("limit-keys")
    store = KeyStore(keys_dir / "keys.json")
    key, _ = store.add("ops")
    with running_server(
        sample_index, tmp_path_factory.mktemp("limit-logs"), "--keys", str(store.path),
        "--timeout", "0.2", "--concurrency", "2", "--body-timeout", "1",
    ) as server:
        yield server, store, key


def test_timed_out_work_holds_its_slot_until_it_stops(keyed_server: Any) -> None:
    server, _, _ = keyed_server
    process = psutil.Process(server.process.pid)
    assert request("POST", server.url + "/v1/query", {"question": "page size", "route": "lookup"})[0] in (200, 503)
    settled = process.num_threads()
    peak = settled
    statuses: list[int] = []

    def client() -> None:
        for _ in range(4):
            status, _, _ = request("POST", server.url + "/v1/query", {"question": "How do checkpoints and WAL mode interact with locking?", "top_k": 50})
            statuses.append(status)

    clients = [threading.Thread(target=client) for _ in range(16)]
    for c in clients:
        c.start()
    while any(c.is_alive() for c in clients):
        peak = max(peak, process.num_threads())
        time.sleep(0.01)
    assert len(statuses) == 64 and set(statuses) <= {200, 503} and 503 in statuses
    assert _metric(server, "arborgraph_workers_busy_max") <= 2
    # one worker thread existed after the first request; at most one more may start
    assert peak - settled <= 1, f"{peak - settled} threads more under load than after one request"
    deadline = time.monotonic() + 30
    while _metric(server, "arborgraph_workers_busy") > 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _metric(server, "arborgraph_workers_busy") == 0  # timed-out work stopped


def _streams(server: Server, bodies: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The NDJSON events of /v1/query/stream for each body, all sent at once."""
    events: list[list[dict[str, Any]]] = [[] for _ in bodies]

    def stream(n: int) -> None:
        status, _, data = request("POST", server.url + "/v1/query/stream", bodies[n], timeout=120)
        assert status == 200
        events[n] = [json.loads(line) for line in data.decode().splitlines() if line.strip()]

    threads = [threading.Thread(target=stream, args=(n,)) for n in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return events


def test_answers_never_starve_lookups_and_stop_at_the_time_limit(sample_index: Path, tmp_path: Path) -> None:
    """Two answers from a model slower than the time limit (the stand-in endpoint waits a
    minute): both streams say so at the limit, lookups right after get a worker at once
    (answers have threads of their own), and the answers' model calls stopped at the
    limit (a third answer, from a model that is quick again, gets its turn)."""
    index = tmp_path / "idx"
    shutil.copytree(sample_index, index)  # answers open the LLM cache inside the index
    earlier = [{"question": "What is WAL mode?", "answer": "A write-ahead log [1]. " * 300}] * 4
    with FakeOpenAIServer() as llm, running_server(
        index, tmp_path / "logs", "--llm-model", "stand-in", "--timeout", "3", "--concurrency", "2",
        env={"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "stand-in-key"},
    ) as server:
        llm.set_delay(60)
        slow = _streams(server, [{"question": f"How do checkpoints work? ({n})", "top_k": 3, "history": earlier} for n in range(2)])
        for events in slow:
            assert [e["event"] for e in events] == ["contexts", "error", "done"], events
            assert events[1]["detail"] == "no answer within 3 s"
        assert llm.count() == 2  # both answers reached the model
        lookups = [request("POST", server.url + "/v1/query", {"question": "page size", "route": "lookup"})[0] for _ in range(4)]
        assert lookups == [200] * 4
        llm.set_delay(0)
        (quick,) = _streams(server, [{"question": "How do checkpoints work?", "top_k": 3}])
        assert [e["event"] for e in quick] == ["contexts", "token", "citations", "done"], quick


@pytest.mark.parametrize("path", ["/v1/index", "/mcp"])
def test_a_credential_header_given_twice_is_refused(keyed_server: Any, path: str) -> None:
    server, store, key = keyed_server
    revoked, record = store.add("ops")
    store.revoke(record.id)
    for pair in ([("Authorization", f"Bearer {revoked}"), ("Authorization", f"Bearer {key}")],
                 [("X-API-Key", key), ("X-API-Key", key)]):
        status, body = _raw(server, "POST" if path == "/mcp" else "GET", path, [*pair, ("Accept", "application/json, text/event-stream")])
        assert status == 400 and "given twice" in body["detail"], (path, status, body)
    assert _raw(server, "GET", "/v1/index", [("Authorization", f"Bearer {key}")])[0] == 200


def test_the_host_header_must_name_this_server(keyed_server: Any) -> None:
    server, _, _ = keyed_server
    port = urlsplit(server.url).port
    for host in ("attacker.example", f"attacker.example:{port}", "127.0.0.1.attacker.example"):
        status, body = _raw(server, "GET", "/v1/index", [("Host", host)])
        assert status == 400 and "Host header" in body["detail"], host
    assert _raw(server, "GET", "/v1/web/entities", [("Host", "rebound.example")])[0] == 400
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost", f"[::1]:{port}", "[::1]"):
        assert _raw(server, "GET", "/v1/index", [("Host", host)])[0] == 200, host
    # two Host headers are refused, the loopback one first or not (uvicorn refuses them before HostCheck does)
    for hosts in ((f"localhost:{port}", "attacker.example"), ("attacker.example", f"localhost:{port}")):
        assert _raw(server, "GET", "/v1/index", [("Host", h) for h in hosts])[0] == 400, hosts


def test_no_page_loads_scripts_from_elsewhere(keyed_server: Any) -> None:
    server, _, _ = keyed_server
    for path in ("/docs", "/redoc"):
        assert request("GET", server.url + path)[0] == 404
    status, _, spec = request("GET", server.url + "/openapi.json")
    assert status == 200 and b"/v1/query" in spec


def _read_response(sock: socket.socket) -> bytes:
    """The whole HTTP response: headers and body can arrive in separate packets."""
    answer = b""
    while b"\r\n\r\n" not in answer:
        piece = sock.recv(4096)
        if not piece:
            return answer
        answer += piece
    head, _, body = answer.partition(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    wanted = int(length.group(1)) if length else 0
    while len(body) < wanted:
        piece = sock.recv(4096)
        if not piece:
            break
        body += piece
    return head + b"\r\n\r\n" + body


def test_a_slow_body_is_cut_off(keyed_server: Any) -> None:
    server, _, _ = keyed_server
    parts = urlsplit(server.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=20) as sock:
        sock.sendall(b"POST /v1/query HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 200\r\n\r\n{\"question\": ")
        began = time.monotonic()
        answer = _read_response(sock)
        waited = time.monotonic() - began
    assert answer.startswith(b"HTTP/1.1 408") and b"did not arrive within 1 s" in answer
    assert waited < 10


def test_a_garbled_keys_file_fails_keyed_requests_closed_and_says_so(keyed_server: Any) -> None:
    server, store, key = keyed_server
    good = store.path.read_bytes()
    try:
        store.path.write_bytes(b"{\"version\": 1, \"keys\": [garbage")
        os.chmod(store.path, 0o600)
        status, _, body = request("GET", server.url + "/v1/index", key=key)
        assert status == 503 and b"keys cannot be checked now" in body and b"Traceback" not in body
        assert str(store.path.parent).encode() not in body  # no server paths
        assert _raw(server, "POST", "/mcp", [("Authorization", f"Bearer {key}"), ("Accept", "application/json, text/event-stream")])[0] == 503
        assert request("GET", server.url + "/v1/index")[0] == 200  # anonymous callers are unaffected
        status, _, health = request("GET", server.url + "/v1/health")
        report = json.loads(health)
        assert report["status"] == "degraded" and "not a keys file" in report["problems"]["keys"]
    finally:
        store.path.write_bytes(good)
    assert request("GET", server.url + "/v1/index", key=key)[0] == 200
    assert json.loads(request("GET", server.url + "/v1/health")[2])["status"] == "ok"


def test_serving_other_machines_needs_keys_or_a_word(sample_index: Path) -> None:
    run = cli("serve", "--index", str(sample_index), "--host", "0.0.0.0", "--port", "0")
    assert run.returncode == 2 and "--allow-anonymous" in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_a_busy_port_fails_in_one_line_before_anything_starts(sample_index: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        run = cli("serve", "--index", str(sample_index), "--port", str(port))
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1 and f"port {port}" in lines[0] and "in use" in lines[0]
    assert "serving" not in run.stderr and "startup" not in run.stderr


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_without_the_serve_extra_the_hint_is_a_command_that_works(sample_index: Path, tmp_path: Path, command: str) -> None:
    # an install without the extra: fastapi and uvicorn fail to import
    for name in ("fastapi", "uvicorn"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"raise ImportError('no module named {name}')\n")
    env = cli_env({"PYTHONPATH": os.pathsep.join([str(tmp_path), cli_env()["PYTHONPATH"]])})
    run = cli(command, "--index", str(sample_index), env=env)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1 and "'serve' extra" in lines[0], run.stderr[-600:]
    # the package installs from its checkout: "pip install 'arborgraph[serve]'" finds nothing
    assert "scripts/setup serve" in lines[0] and "pip install -e '.[serve]'" in lines[0]
    assert "arborgraph[" not in lines[0]
