"""A real Neo4j 5 with the Graph Data Science library on loopback, for tests:
``scripts/neo4j-server`` (Neo4j's in-process test server and GDS, fetched by Maven).

Use the ``neo4j`` fixture (session-scoped; call ``server.clear()`` for an empty
database). Each pytest process starts its own server (about 20 s) in its own folder, so
xdist workers never share one; ``tests/conftest.py`` runs every file that asks for it on
one worker, so a run starts one server. Neo4j's community edition has a single user
database, which the files would otherwise empty under each other.

``start_neo4j`` / ``Neo4jServer.stop`` serve scripts such as benchmarks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from needs import unavailable

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "neo4j-server"
ADMIN_BIN = ROOT / "scripts" / "neo4j" / "bin"  # holds the neo4j-admin command
USER = "neo4j"
START_TIMEOUT = 300.0  # seconds; a first start also has Maven fetch the jars


def password() -> str:
    return os.environ.get("NEO4J_PASSWORD", "arborgraph")


@dataclass
class Neo4jServer:
    """A running Neo4j: ``uri`` is its Bolt address on loopback, ``directory`` its
    folder (pid, URI, log and store)."""

    uri: str
    directory: Path
    user: str = USER
    password: str = field(default_factory=password)
    _driver: Any = None

    def driver(self):  # type: ignore[no-untyped-def]
        """The server's shared, verified driver (do not close it; :meth:`stop` does)."""
        from arborgraph.neo4j import connect

        if self._driver is None:
            self._driver = connect(self.uri, self.user, self.password)
        return self._driver

    def clear(self) -> None:
        """An empty database: no nodes, no constraints or indexes but Neo4j's own
        token lookups, no GDS graph in memory."""
        with self.driver().session() as session:
            session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS").consume()
            for record in session.run("SHOW CONSTRAINTS YIELD name RETURN name").data():
                session.run(f"DROP CONSTRAINT `{record['name']}`").consume()
            for record in session.run("SHOW INDEXES YIELD name, type WHERE type <> 'LOOKUP' RETURN name").data():
                session.run(f"DROP INDEX `{record['name']}`").consume()
            session.run("CALL gds.graph.list() YIELD graphName CALL gds.graph.drop(graphName) YIELD graphName AS g RETURN count(*)").consume()

    def log_tail(self, lines: int = 20) -> str:
        log = self.directory / "neo4j.log"
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else ""

    def stop(self) -> None:
        if self._driver is not None:
            self._driver.close()
            self._driver = None
        subprocess.run([str(SCRIPT), "stop", "--dir", str(self.directory)], check=False, timeout=120)


def missing_tools() -> str | None:
    """What the server needs and the machine lacks (scripts/test installs it)."""
    lacking = [name for name in ("java", "javac", "mvn") if shutil.which(name) is None]
    return f"{', '.join(lacking)} not found (Neo4j runs on Java 17; Maven fetches it)" if lacking else None


def start_neo4j(directory: Path, *, port: int = 0, from_home: Path | None = None) -> Neo4jServer:
    """Start Neo4j in ``directory`` (``port`` 0: a free one; ``from_home``: on a copy of
    that Neo4j home); raises RuntimeError with the script's message if it fails."""
    args = [str(SCRIPT), "start", "--dir", str(directory), "--port", str(port)]
    if from_home is not None:
        args += ["--from", str(from_home)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=START_TIMEOUT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"scripts/neo4j-server start failed:\n{done.stderr[-3000:]}")
    return Neo4jServer(done.stdout.strip().splitlines()[-1], directory)


@pytest.fixture(scope="session")
def neo4j(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neo4jServer]:
    """A Neo4j 5 server with GDS for the whole session (this process's own)."""
    lacking = missing_tools()
    if lacking:
        unavailable(lacking, "install Java and Maven (scripts/test does)")
    server = start_neo4j(tmp_path_factory.mktemp("neo4j"))
    try:
        yield server
    finally:
        server.stop()
