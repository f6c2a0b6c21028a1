"""Closing a knowledge base closes what it opened: its generation's pin and the graph
server's connections (a real Bolt server on loopback)."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest
from falkordb_server import FalkorServer, falkordb  # noqa: F401  (the Bolt server fixture)

import arborgraph
from arborgraph.config import GraphBackendConfig
from arborgraph.neo4j import GraphBackendError, graph_server


def _connections_to(port: int) -> int:
    return sum(
        1 for c in psutil.Process().net_connections(kind="tcp")
        if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
    )


def test_close_releases_the_graph_servers_connections(sample_index: Path, falkordb: FalkorServer) -> None:  # noqa: F811
    before = _connections_to(falkordb.bolt_port)
    for _ in range(3):
        kb = arborgraph.open(sample_index)
        kb.graph_backend = graph_server(GraphBackendConfig(uri=falkordb.uri))
        with pytest.raises(GraphBackendError, match="export the index to it"):  # nothing exported: it says so
            kb.query("How do checkpoints relate to the WAL file?", route="graph")
        assert _connections_to(falkordb.bolt_port) > before  # ... after asking the server
        kb.close()
        assert kb.closed
    assert _connections_to(falkordb.bolt_port) == before
