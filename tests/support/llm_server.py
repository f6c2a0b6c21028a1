"""A stand-in for the OpenAI REST API on loopback, for contract tests of the LLM layer.

This is NOT OpenAI: it is a small threaded stdlib HTTP server that speaks the parts of
the OpenAI API Arborgraph uses (POST /v1/chat/completions and POST /v1/embeddings, with
the real JSON shapes, ``usage`` fields and error bodies), so the real ``openai`` client
can be exercised end to end without a network. Tests using it are contract tests
against this stand-in.

Replies are deterministic: a chat reply is whatever the registered ``reply`` function
returns for the request body (default: echo of the last user message); an embedding is
derived from a hash of the text. Failures are scripted with ``Fault`` objects queued
per request; every request is recorded.

Use the ``llm_server`` fixture, or ``with FakeOpenAIServer() as server:`` elsewhere
(benchmarks).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import pytest

CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"


@dataclass
class Fault:
    """A scripted misbehaviour, consumed by the next matching request.

    ``status`` answers with that HTTP error (and ``retry_after`` as the Retry-After
    header); ``delay_s`` waits before answering (to make the client time out);
    ``content`` replaces the chat reply text (e.g. malformed JSON). ``path`` limits the
    fault to one endpoint.
    """

    status: int | None = None
    retry_after: str | None = None
    delay_s: float = 0.0
    content: str | None = None
    path: str | None = None


@dataclass
class RecordedRequest:
    """One request as the server received it."""

    path: str
    body: dict[str, Any]
    authorization: str | None
    in_flight: int = 1
    """Requests the server was handling when this one arrived, this one included."""


def last_user_message(body: dict[str, Any]) -> str:
    """The content of the last user message of a chat request body."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return str(users[-1]["content"]) if users else ""


def echo_reply(body: dict[str, Any]) -> str:
    """The default chat reply: "echo: " and the last user message."""
    return f"echo: {last_user_message(body)}"


def _schema_properties(body: dict[str, Any]) -> set[str]:
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema") or {}
    return set(schema.get("properties", {}))


def manual_reply(body: dict[str, Any]) -> str:
    """Canned replies to Arborgraph's summary, extraction and report requests, made from
    words of the prompt, so that a build grows a connected graph with communities.

    Extraction: the passage's first five distinct long words as entities, chained by
    relations; gleaning finds nothing more. Reports cite the chunk ids the prompt lists.
    Summaries take their words from the excerpts. Anything else: ``echo_reply``.
    Deterministic: the reply depends on the request body only.
    """
    fields = _schema_properties(body)
    users = [str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user"]
    first = users[0] if users else ""
    if {"entities", "relations"} <= fields:
        if len(users) > 1:  # the gleaning turn
            return json.dumps({"entities": [], "relations": []})
        passage = first.split("<passage>", 1)[-1]
        names = list(dict.fromkeys(w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]{5,}", passage)))[:5]
        return json.dumps({
            "entities": [{"name": n, "type": "term", "description": f"{n} as the passage uses it"} for n in names],
            "relations": [
                {"source": a, "target": b, "type": "related_to", "description": f"{a} is used with {b}", "strength": 5}
                for a, b in zip(names, names[1:])
            ],
        })
    if "findings" in fields:
        cited = list(dict.fromkeys(re.findall(r"\[([^\[\]\s]+#\d+)\]", first)))[:3] or ["unknown#0"]
        return json.dumps({
            "title": "Community of " + " ".join(re.findall(r"^- (\S+)", first, re.MULTILINE)[:3]),
            "summary": "Entities that the manual mentions together.",
            "findings": [{"text": f"Stated in {c}.", "chunk_ids": [c]} for c in cited],
            "rating": 5,
        })
    if {"title", "text"} <= fields:
        words = re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", first.split("\n\n", 1)[-1])
        return json.dumps({"title": " ".join(words[:6]) or "Summary", "text": " ".join(words[:60]) or "Summary."})
    return echo_reply(body)


def fake_embedding(text: str, dim: int) -> list[float]:
    """A deterministic, not normalised vector in [-1, 1]^dim derived from the text."""
    values = []
    for j in range(dim):
        digest = hashlib.sha256(f"{j}|{text}".encode()).digest()
        values.append(int.from_bytes(digest[:4], "big") / 2**31 - 1.0)
    return values


def word_count(text: str) -> int:
    """The stand-in's token count: whitespace-separated words."""
    return len(text.split())


@dataclass
class _State:
    reply: Callable[[dict[str, Any]], str] = echo_reply
    delay_s: float = 0.0
    reject_json_schema: bool = False
    embedding_dim: int = 8
    faults: list[Fault] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0


class FakeOpenAIServer:
    """The loopback OpenAI stand-in. Start with ``start()`` or as a context manager."""

    def __init__(self, embedding_dim: int = 8) -> None:
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._state = _State(embedding_dim=embedding_dim)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # --- control -------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        port = self._httpd.server_address[1]
        return f"http://127.0.0.1:{port}/v1"

    def set_reply(self, reply: Callable[[dict[str, Any]], str]) -> None:
        """Register the function computing a chat reply from the request body."""
        with self._lock:
            self._state.reply = reply

    def set_delay(self, seconds: float) -> None:
        """Delay every reply by ``seconds`` (a slow model)."""
        with self._lock:
            self._state.delay_s = seconds

    def reject_json_schema(self, reject: bool = True) -> None:
        """Answer 400 to ``response_format`` type json_schema, like servers without it."""
        with self._lock:
            self._state.reject_json_schema = reject

    def add_faults(self, *faults: Fault) -> None:
        """Queue faults; each is used by the next request it matches, in order."""
        with self._lock:
            self._state.faults.extend(faults)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._state.requests)

    def count(self, path: str | None = None) -> int:
        """Requests received so far (on ``path`` only, if given), failed ones included."""
        with self._lock:
            return sum(1 for r in self._state.requests if path is None or r.path == path)

    @property
    def max_in_flight(self) -> int:
        """The most requests the server was handling at the same moment."""
        with self._lock:
            return self._state.max_in_flight

    def start(self) -> Self:
        # A short poll interval makes stop() quick (serve_forever checks it this often).
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in a delay
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- request handling ----------------------------------------------------------
    def _take_fault(self, path: str) -> Fault | None:
        with self._lock:
            for index, fault in enumerate(self._state.faults):
                if fault.path is None or fault.path == path:
                    return self._state.faults.pop(index)
        return None

    def _respond(
        self, path: str, body: dict[str, Any], authorization: str | None
    ) -> tuple[int, dict[str, str], dict[str, Any]]:
        with self._lock:
            self._state.requests.append(
                RecordedRequest(path, body, authorization, in_flight=self._state.in_flight)
            )
            state = self._state
            delay, reply, reject, dim = (
                state.delay_s,
                state.reply,
                state.reject_json_schema,
                state.embedding_dim,
            )
        fault = self._take_fault(path)
        wait = delay + (fault.delay_s if fault else 0.0)
        if wait > 0:
            self._stopping.wait(wait)
        if fault is not None and fault.status is not None:
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            return fault.status, headers, _error_body(fault.status, "scripted failure")
        if path == CHAT_PATH:
            fmt = body.get("response_format") or {}
            if reject and fmt.get("type") == "json_schema":
                return (
                    400,
                    {},
                    _error_body(
                        400, "response_format json_schema is not supported", param="response_format"
                    ),
                )
            content = (
                fault.content if fault is not None and fault.content is not None else reply(body)
            )
            return 200, {}, _chat_body(body, content)
        if path == EMBEDDINGS_PATH:
            return 200, {}, _embeddings_body(body, dim)
        return 404, {}, _error_body(404, f"no route {path}")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the openai client expects
            # Headers and body go out in separate writes; with Nagle on, the body
            # waits for the client's delayed ACK (~40 ms per request).
            disable_nagle_algorithm = True

            def do_POST(self) -> None:  # http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {}, _error_body(400, "request body is not JSON"))
                    return
                with server._lock:
                    server._state.in_flight += 1
                    server._state.max_in_flight = max(
                        server._state.max_in_flight, server._state.in_flight
                    )
                try:
                    status, headers, payload = server._respond(
                        self.path, body, self.headers.get("Authorization")
                    )
                finally:
                    with server._lock:
                        server._state.in_flight -= 1
                self._send(status, headers, payload)

            def _send(self, status: int, headers: dict[str, str], payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left; that is the point of the test

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        return Handler


def _error_body(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    kinds = {400: "invalid_request_error", 404: "not_found_error", 429: "rate_limit_exceeded"}
    return {
        "error": {
            "message": message,
            "type": kinds.get(status, "server_error"),
            "param": param,
            "code": None,
        }
    }


def _chat_body(request: dict[str, Any], content: str) -> dict[str, Any]:
    prompt_tokens = sum(word_count(str(m.get("content", ""))) for m in request.get("messages", []))
    completion_tokens = word_count(content)
    digest = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:16]
    return {
        "id": f"chatcmpl-{digest}",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model", ""),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _embeddings_body(request: dict[str, Any], dim: int) -> dict[str, Any]:
    inputs = request.get("input", [])
    texts = [inputs] if isinstance(inputs, str) else list(inputs)
    as_base64 = request.get("encoding_format") == "base64"
    data = []
    for index, text in enumerate(texts):
        vector = fake_embedding(str(text), dim)
        embedding: Any = (
            base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode() if as_base64 else vector
        )
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    tokens = sum(word_count(str(t)) for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": request.get("model", ""),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


@pytest.fixture
def llm_server() -> Iterator[FakeOpenAIServer]:
    """A running ``FakeOpenAIServer`` on loopback, stopped after the test."""
    with FakeOpenAIServer() as server:
        yield server
