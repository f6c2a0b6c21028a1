"""The server's limits and settings, and the ASGI guards that enforce the byte limit."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arborgraph.core.cancel import cancellable
from arborgraph.core.questions import MAX_QUESTION_CHARS
from arborgraph.core.errors import Cancelled
from arborgraph.service.problems import PROBLEM_TYPE, problem_body


@dataclass(frozen=True)
class ServeSettings:
    """How ``arborgraph serve`` runs; every limit answers with a 4xx, never a hang."""

    index_dir: Path
    host: str = "127.0.0.1"
    port: int = 8765
    keys_file: Path | None = None
    require_key: bool = False
    max_question_chars: int = MAX_QUESTION_CHARS
    max_batch: int = 64
    max_body_bytes: int = 1 << 20
    request_timeout_s: float = 30.0
    # blocking calls at once in a process: past two its threads mostly take the
    # interpreter lock from each other (benchmarks/results/serve_concurrency.json)
    concurrency: int = 2
    workers: int = 1  # processes serving the port; above one, MCP sessions cannot be kept (see app.py)
    poll_seconds: float = 1.0
    mcp: bool = True
    llm_model: str | None = None  # chat model for answers (default: the index's llm.model)
    body_timeout_s: float = 10.0  # a request body must arrive whole within this
    verify_seconds: float = 600.0  # how often every checksum of the served generation is checked (0: never)
    allowed_hosts: tuple[str, ...] = ()  # Host header names accepted besides the bound address and loopback
    docs_dir: Path | None = None  # the documents folder writers may change and rebuild from
    # serve --store: the Neo4j the index was exported to with --search, which finds each
    # question's flat candidates (the password is handed over apart from the settings)
    store_uri: str | None = None
    store_user: str | None = None
    store_database: str | None = None
    # the folder every --workers process writes its metrics to (set in the workers only)
    metrics_dir: Path | None = None


T = TypeVar("T")


class WorkerThreads:
    """Runs blocking calls (queries, tree and graph views) on ``concurrency`` worker
    threads, each call answered within ``timeout_s`` (a TimeoutError past it, counting
    the time it waited for a thread).

    A thread is a slot: a call that timed out keeps its thread until its work has really
    stopped, so no more than ``concurrency`` calls ever run at once (queries are
    CPU-bound: more threads would only share the same cores). Its work is told to stop
    (:func:`arborgraph.core.cancel.checkpoint` raises inside it at its next step, and
    :func:`~arborgraph.core.cancel.time_left` tells blocking calls when that will be), and
    a call still waiting for a thread when its time is up never starts. While ``narrow``
    is set (a new generation is being opened and checked), calls run one at a time, so
    the swap gets a fair share of the process and lands in seconds.

    Work that asks a chat model (answers, the LLM router) runs on ``answers``: threads of
    its own, ``answer_slots`` of them (default: as many as ``concurrency``; 0: these
    same threads), under the same limits. A model slow to answer, or one still stopping
    after its time limit, then holds no thread a lookup or a view needs."""

    def __init__(
        self, concurrency: int, timeout_s: float, narrow: threading.Event | None = None, answer_slots: int | None = None
    ) -> None:
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.narrow = narrow
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="arborgraph-work")
        self._one = threading.Lock()
        self._count = threading.Lock()
        self.busy = 0  # calls running now
        self.busy_max = 0  # the most that ever ran at once
        # answers never narrow: a model call holds its thread for seconds, and a lookup
        # waiting behind it for the one-at-a-time lock would be starved again
        self.answers: WorkerThreads = (
            self if answer_slots == 0 else WorkerThreads(answer_slots or concurrency, timeout_s, answer_slots=0)
        )

    async def run(self, work: Callable[[], T]) -> T:
        flag = threading.Event()
        deadline = time.monotonic() + self.timeout_s
        future = self._pool.submit(self._call, work, flag, deadline)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), self.timeout_s)
        except (TimeoutError, asyncio.CancelledError):
            flag.set()  # stop at the next checkpoint; never start if still queued
            future.cancel()
            raise

    def _call(self, work: Callable[[], T], flag: threading.Event, deadline: float) -> T:
        if flag.is_set():
            raise Cancelled("given up while waiting for a worker thread")
        with self._count:
            self.busy += 1
            self.busy_max = max(self.busy_max, self.busy)
        try:
            with cancellable(flag, deadline):
                if self.narrow is not None and self.narrow.is_set():
                    with self._one:
                        return work()
                return work()
        finally:
            with self._count:
                self.busy -= 1

    def close(self) -> None:
        """Stop taking calls; queued ones are dropped, running ones told to stop."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self.answers is not self:
            self.answers.close()


class BodyLimit:
    """413 for a request body over ``limit`` bytes, read before the app sees any of it
    (a declared Content-Length over the limit is refused without reading); 408 for a
    body that has not arrived whole within ``timeout_s`` (a client trickling bytes, or
    one that stopped sending, does not hold a connection and its memory for long)."""

    def __init__(self, app: ASGIApp, limit: int, timeout_s: float = 10.0) -> None:
        self.app = app
        self.limit = limit
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._refuse(send)
            return
        chunks: list[bytes] = []
        size = 0
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - asyncio.get_running_loop().time()))
            except TimeoutError:
                await _send_problem(send, 408, f"the request body did not arrive within {self.timeout_s:g} s")
                return
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.limit:
                await self._refuse(send)
                return
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        await _send_problem(send, 413, f"the request body is over the {self.limit} byte limit")


async def _send_problem(send: Send, status: int, detail: str) -> None:
    payload = json.dumps(problem_body(status, detail)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", PROBLEM_TYPE.encode()), (b"content-length", str(len(payload)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": payload})


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARD_ADDRESSES = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def accepted_hosts(bound: str, extra: tuple[str, ...]) -> frozenset[str] | None:
    """The Host names a server bound to ``bound`` answers (None: any). A loopback server
    answers only loopback names, so a web page whose name a DNS rebinding pointed at
    127.0.0.1 reads nothing; one bound to one address answers that address, loopback and
    ``extra``; one bound to every address answers ``extra`` and loopback when ``extra``
    names any, else any name (its keys guard it; see ``serve --allow-anonymous``)."""
    names = {h.lower().strip("[]") for h in extra}
    if bound in WILDCARD_ADDRESSES:
        return frozenset(names | set(LOOPBACK_NAMES)) if names else None
    return frozenset(names | set(LOOPBACK_NAMES) | {bound.lower().strip("[]")})


def host_name(header: str) -> str:
    """The name in a Host header, without its port (``[::1]:8765`` -> ``::1``)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


# not Starlette's TrustedHostMiddleware: its 400 is text/plain, not problem+json, and it reads only the first Host header
class HostCheck:
    """400 for a request whose Host header names no host this server answers for."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str] | None) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and self.hosts is not None:
            values = [v for k, v in scope.get("headers") or [] if k == b"host"]
            name = host_name(values[0].decode("latin-1")) if len(values) == 1 else None
            if name not in self.hosts:
                await _send_problem(send, 400, "the Host header names a host this server does not answer for")
                return
        await self.app(scope, receive, send)
