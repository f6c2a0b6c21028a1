"""The server's limits and settings, and the ASGI guards that enforce the byte limit."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import anyio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arborgraph.service.problems import PROBLEM_TYPE, problem_body


@dataclass(frozen=True)
class ServeSettings:
    """How ``arborgraph serve`` runs; every limit answers with a 4xx, never a hang."""

    index_dir: Path
    host: str = "127.0.0.1"
    port: int = 8765
    keys_file: Path | None = None
    require_key: bool = False
    max_question_chars: int = 4000
    max_batch: int = 64
    max_body_bytes: int = 1 << 20
    request_timeout_s: float = 30.0
    concurrency: int = 4  # blocking calls at once; more only queue for the same cores
    poll_seconds: float = 1.0
    mcp: bool = True
    llm_model: str | None = None  # chat model for answers (default: the index's llm.model)


T = TypeVar("T")


class WorkerThreads:
    """Runs blocking calls (queries, tree and graph views) in worker threads, at most
    ``concurrency`` at once, each under ``timeout_s`` (a TimeoutError past it; the
    thread is abandoned, not killed). Queries are CPU-bound: more threads than cores
    only share the same cores, and starve the thread that opens a new generation.
    While ``narrow`` is set (a new generation is being opened and checked), calls start
    one at a time, so the swap gets a fair share of the process and lands in seconds."""

    def __init__(self, concurrency: int, timeout_s: float, narrow: threading.Event | None = None) -> None:
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.narrow = narrow
        self._limiter: anyio.CapacityLimiter | None = None
        self._one: anyio.CapacityLimiter | None = None

    async def run(self, work: Callable[[], T]) -> T:
        if self._limiter is None or self._one is None:  # made in the event loop that uses them
            self._limiter = anyio.CapacityLimiter(self.concurrency)
            self._one = anyio.CapacityLimiter(1)
        with anyio.fail_after(self.timeout_s):
            if self.narrow is not None and self.narrow.is_set():
                async with self._one:
                    return await anyio.to_thread.run_sync(work, abandon_on_cancel=True, limiter=self._limiter)
            return await anyio.to_thread.run_sync(work, abandon_on_cancel=True, limiter=self._limiter)


class BodyLimit:
    """413 for a request body over ``limit`` bytes, read before the app sees any of it
    (a declared Content-Length over the limit is refused without reading)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

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
        while True:
            message = await receive()
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
        payload = json.dumps(problem_body(413, f"the request body is over the {self.limit} byte limit")).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", PROBLEM_TYPE.encode()), (b"content-length", str(len(payload)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": payload})
