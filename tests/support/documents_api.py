"""A served documents folder (``serve --docs``) for the service tests: the folder, its
index and keys file; a JSON request with a raw body; a rebuild followed until served."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import copy_pages
from service_server import Server, request

from arborgraph.pipeline import build_index
from arborgraph.service.keys import KeyStore


def served_folder(
    factory: pytest.TempPathFactory, sample_slice: Path, name: str, pages: list[str], files: dict[str, str] | None = None,
) -> tuple[Path, Path, KeyStore]:
    """A documents folder of ``pages`` of the slice (and ``files``: name -> text), the
    index built from it, and an empty keys file, for one test module's server."""
    docs = copy_pages(sample_slice, factory.mktemp(name) / "docs", pages)
    for file_name, text in (files or {}).items():
        (docs / file_name).write_text(text)
    index = factory.mktemp(f"{name}-index") / "idx"
    build_index([docs], index)
    return docs, index, KeyStore(factory.mktemp(f"{name}-keys") / "keys.json")


def call(server: Server, method: str, path: str, key: str | None = None, raw: bytes | None = None) -> tuple[int, Any]:
    """(status, decoded JSON body) of one request; ``raw`` is sent as the body, as a file."""
    status, _, body = request(method, server.url + path, key=key, raw=raw,
                              headers={"Content-Type": "application/octet-stream"} if raw is not None else None)
    return status, json.loads(body) if body else None


def rebuild(server: Server, key: str, timeout: float = 1200) -> dict[str, Any]:
    """Start a rebuild and follow it until it is served: its last status, with the stages
    seen on the way under ``seen_stages``. Fails the test if it fails or takes too long."""
    status, body = call(server, "POST", "/v1/rebuild", key)
    assert status == 202 and body["state"] == "running", body
    deadline = time.monotonic() + timeout
    seen_stages = set()
    while time.monotonic() < deadline:
        status, body = call(server, "GET", "/v1/rebuild", key)
        assert status == 200
        if body["stage"]:
            seen_stages.add(body["stage"])
        if body["state"] == "failed":
            pytest.fail(f"the rebuild failed: {body['error']}")
        if body["state"] == "done" and body["served"]:
            body["seen_stages"] = seen_stages
            return body
        time.sleep(0.2)
    pytest.fail(f"the rebuild was not served within {timeout:g} s")
