"""MCP's ``explain_routing`` asks the router only (issue #37): over the real server on a
loopback port it gives the decision a query of the same question reports, and no
route's retriever runs for it.

The server runs as ``arborgraph serve`` does, with a ``sitecustomize`` on its path that
records each call of a retriever's ``retrieve`` in a file: nothing is replaced, the
calls are only counted, so the test sees what the server really ran.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from service_server import ROOT, Server, request, running_server

# one question the router sends to each route (the slice has every structure)
QUESTIONS = [
    "How long does a connection wait on a locked database before SQLITE_BUSY?",
    "Give an overview of how SQLite handles locking and concurrency.",
    "What is the relationship between WAL mode and checkpoints?",
    "What are the main themes of the manual?",
]

RECORDER = """
import os

from arborgraph.query import retrievers


def _recorded(cls):
    retrieve = cls.retrieve

    def recorded(self, query):
        with open(os.environ["RETRIEVAL_RECORD"], "a", encoding="utf-8") as out:
            out.write(cls.__name__ + "\\n")
        return retrieve(self, query)

    cls.retrieve = recorded


for _cls in (retrievers.LookupRetriever, retrievers.TreeRetriever, retrievers.GraphRetriever, retrievers.GlobalRetriever):
    _recorded(_cls)
"""


async def _explain(url: str, questions: list[str]) -> list[dict[str, Any]]:
    with anyio.fail_after(600):
        async with httpx2.AsyncClient(timeout=120) as client:
            async with streamable_http_client(url + "/mcp", http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    out = []
                    for question in questions:
                        result = await session.call_tool("explain_routing", {"question": question})
                        assert not result.is_error, result.content
                        out.append(json.loads(" ".join(getattr(c, "text", "") for c in result.content)))
                    return out


def _retrievals(record: Path) -> list[str]:
    return record.read_text(encoding="utf-8").split() if record.exists() else []


def test_explain_routing_gives_the_query_s_decision_without_retrieving(sample_index: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(RECORDER, encoding="utf-8")
    record = tmp_path / "retrievals.txt"
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "RETRIEVAL_RECORD": str(record)}
    with running_server(sample_index, tmp_path / "logs", env=env) as server:
        started = _retrievals(record)  # the server's probe of each route before it serves
        explained = anyio.run(_explain, server.url, QUESTIONS)
        assert _retrievals(record) == started  # the router alone decided
        queried = [_query(server, q) for q in QUESTIONS]
        assert len(_retrievals(record)) >= len(started) + len(QUESTIONS)  # and the recorder does see retrievals
    for question, explain, query in zip(QUESTIONS, explained, queried):
        assert explain["question"] == question and explain["generation"] == query["generation"]
        assert explain["route"] == query["route"] and explain["routing"] == query["routing"], question
        assert set(explain) == {"question", "route", "routing", "generation"}  # no passages
    assert len({e["route"] for e in explained}) >= 3, [e["route"] for e in explained]


def _query(server: Server, question: str) -> dict[str, Any]:
    status, _, data = request("POST", server.url + "/v1/query", {"question": question})
    assert status == 200, data[:300]
    return json.loads(data)
