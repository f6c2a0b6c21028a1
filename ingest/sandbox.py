"""Time-bounded loading: parsers run in a child process that is killed on a deadline.

Pure-Python parsers (pypdf, docutils) cannot be interrupted from another thread, and
``signal.alarm`` works only in the main thread, so the only sound bound on a parser
that loops on malformed input is a separate process. One worker process is reused
for all files of a walk; after a timeout or a crash it is killed and a fresh one
started for the next file.

The worker is a plain ``python -m ingest._worker`` subprocess speaking
length-prefixed JSON over its stdin/stdout, rather than ``multiprocessing``, whose
spawn mode re-imports the caller's ``__main__`` (breaking unguarded scripts) and whose
fork mode is unsafe in processes that already run threads (torch, tokenizers).
"""

from __future__ import annotations

import json
import os
import selectors
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ingest.models import Document, SkippedFile

_HEADER = struct.Struct(">I")
_STARTUP_TIMEOUT_S = 120.0
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)


class WorkerFailed(Exception):
    """The worker timed out or died; ``reason`` says which, for the build report."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def write_frame(stream: Any, payload: bytes) -> None:
    """Write one length-prefixed frame."""
    stream.write(_HEADER.pack(len(payload)))
    stream.write(payload)
    stream.flush()


def read_frame(stream: Any) -> bytes | None:
    """Read one length-prefixed frame from a blocking stream; None at end of stream."""
    header = _read_exactly(stream, _HEADER.size)
    if header is None:
        return None
    payload = _read_exactly(stream, _HEADER.unpack(header)[0])
    if payload is None:
        return None
    return payload


def _read_exactly(stream: Any, n: int) -> bytes | None:
    chunks: list[bytes] = []
    while n:
        chunk = stream.read(n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


class LoaderSandbox:
    """A reusable worker process that loads files with a per-file time limit.

    Use as a context manager, or call ``close()``; the worker is started on first use.
    ``command`` replaces the worker command line (tests use it to stand in a worker
    that hangs or dies).
    """

    def __init__(self, timeout_s: float, *, command: list[str] | None = None) -> None:
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        self.timeout_s = timeout_s
        self._command = command or [sys.executable, "-m", "ingest._worker"]
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> LoaderSandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def load(
        self, raw: bytes, *, doc_id: str, path: str, fmt: str, timeout_s: float | None = None
    ) -> Document | SkippedFile:
        """Load one file in the worker; a timeout or crash becomes a ``SkippedFile``.

        ``timeout_s`` replaces the sandbox's limit for this file (a very large file may
        take longer than the limit meant for one ordinary file).
        """
        try:
            proc = self._ensure_started()
            request = json.dumps({"doc_id": doc_id, "path": path, "fmt": fmt}).encode()
            try:
                assert proc.stdin is not None
                write_frame(proc.stdin, request)
                write_frame(proc.stdin, raw)
            except (BrokenPipeError, OSError):
                raise WorkerFailed(self._death_reason(proc)) from None
            reply = self._read_reply(proc, timeout_s or self.timeout_s, what="loader")
        except WorkerFailed as exc:
            self.close()
            return SkippedFile(path=path, reason=exc.reason)
        message = json.loads(reply)
        if "document" in message:
            return Document.model_validate(message["document"])
        return SkippedFile(path=path, reason=message["skipped"])

    def close(self) -> None:
        """Stop the worker (killing it if it is busy)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        if proc.poll() is None:
            proc.kill()
        proc.wait()

    def _ensure_started(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self.close()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        self._proc = subprocess.Popen(
            self._command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
            env=env,
            close_fds=True,
        )
        ready = self._read_reply(self._proc, _STARTUP_TIMEOUT_S, what="loader worker start-up")
        if ready != b"ready":
            raise WorkerFailed("loader worker failed to start")
        return self._proc

    def _read_reply(self, proc: subprocess.Popen[bytes], timeout_s: float, *, what: str) -> bytes:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        buffer = bytearray()
        needed: int | None = None
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while needed is None or len(buffer) < needed:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining):
                    raise WorkerFailed(f"{what} timed out after {timeout_s:g} s (malformed or pathological input?)")
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise WorkerFailed(self._death_reason(proc))
                buffer += chunk
                if needed is None and len(buffer) >= _HEADER.size:
                    needed = _HEADER.size + _HEADER.unpack(bytes(buffer[: _HEADER.size]))[0]
        return bytes(buffer[_HEADER.size : needed])

    @staticmethod
    def _death_reason(proc: subprocess.Popen[bytes]) -> str:
        try:
            code = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        if code is not None and code < 0:
            return f"loader crashed (killed by signal {-code})"
        return f"loader crashed (exit code {code})"
