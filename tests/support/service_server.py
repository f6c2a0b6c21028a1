"""The real ``arborgraph serve`` on a free loopback port, for the service tests.

``running_server`` starts the command line in a subprocess (port 0: the kernel picks a
free port, read back from uvicorn's start-up line), waits until ``/v1/health``
answers, and stops it by its pid. Its stdout and stderr go to files, so tests can check
what the server logged.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
_RUNNING = re.compile(r"(?:Uvicorn running|listening) on http://([\d.]+):(\d+)")  # one process, or --workers


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(ROOT)})
    env.update(extra or {})
    return env


# A guard against a hung command, not a speed check: a local-model build that takes 80 s
# on a quiet machine took over 300 s beside another build, and the suite must pass there.
CLI_TIMEOUT_S = 1800


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``arborgraph ARGS`` from this checkout; returns the finished process."""
    return subprocess.run(
        [sys.executable, "-m", "arborgraph.cli", *args],
        capture_output=True, text=True, env=cli_env(env), cwd=ROOT, timeout=CLI_TIMEOUT_S,
    )


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log_dir: Path

    def logs(self) -> str:
        return (self.log_dir / "stdout.log").read_text(errors="replace") + (self.log_dir / "stderr.log").read_text(errors="replace")


@contextlib.contextmanager
def running_server(
    index: Path, log_dir: Path, *args: str, env: dict[str, str] | None = None, start_timeout: float = 600,
    one_process: bool = True,
) -> Iterator[Server]:
    log_dir.mkdir(parents=True, exist_ok=True)
    out = (log_dir / "stdout.log").open("wb")
    err = (log_dir / "stderr.log").open("wb")
    if one_process and "--workers" not in args:
        # one process unless a test asks for more (serve's default is one per core);
        # the workers' own behaviour is tested by test_service_workers.py
        args = ("--workers", "1", *args)
    process = subprocess.Popen(
        [sys.executable, "-m", "arborgraph.cli", "serve", "--index", str(index), "--port", "0", *args],
        stdout=out, stderr=err, env=cli_env(env), cwd=ROOT,
    )
    try:
        url = _wait_for_start(process, log_dir / "stderr.log", start_timeout)
        yield Server(url=url, process=process, log_dir=log_dir)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        out.close()
        err.close()


def _wait_for_start(process: subprocess.Popen[bytes], stderr: Path, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}: {stderr.read_text(errors='replace')[-2000:]}")
        match = _RUNNING.search(stderr.read_text(errors="replace"))
        if match:
            url = f"http://{match.group(1)}:{match.group(2)}"
            if request("GET", url + "/v1/health")[0] == 200:
                return url
        time.sleep(0.2)
    raise RuntimeError(f"server did not start within {timeout} s")


def request(
    method: str, url: str, body: Any = None, *, key: str | None = None, raw: bytes | None = None,
    headers: dict[str, str] | None = None, timeout: float = 60,
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of one HTTP request; JSON-encodes ``body``."""
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    sent = {"Content-Type": "application/json"} if data is not None else {}
    if key is not None:
        sent["Authorization"] = f"Bearer {key}"
    sent.update(headers or {})
    req = urllib.request.Request(url, data=data, method=method, headers=sent)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()
