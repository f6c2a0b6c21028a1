"""A hostile writer against the documents folder (#34): the real ``arborgraph serve --docs``
on a loopback port, keys of two teams, and the probes that once planted a passage in
another team's scope, held every listing with deep folders or duplicate tables, or
answered a caller's mistake with a 500.

Each test leaves the shared folder as it found it (the server and its index are shared
by the module)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from deep_folders import make_deep, remove_deep
from documents_api import call, rebuild, served_folder
from service_server import Server, cli, request, running_server


PAGES = ["wal.md", "autoinc.md"]
TEAM_B_SECRET = """---
acl: [team-b]
---
# Team B runbook

The Osprey cluster's failover code is OSPREY-7731.
"""


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, sample_slice: Path) -> dict[str, Any]:
    docs, index, store = served_folder(tmp_path_factory, sample_slice, "hostile", PAGES, {"osprey.md": TEAM_B_SECRET})
    return {
        "docs": docs, "index": index, "keys": store.path,
        "a-writer": store.add("team-a", write=True)[0],
        "b-writer": store.add("team-b", write=True)[0],
        "b-reader": store.add("team-b")[0],
    }


@pytest.fixture(scope="module")
def server(setup: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # a short time limit and two workers: a listing or an upload that held a worker for
    # seconds would show as 503s
    with running_server(
        setup["index"], tmp_path_factory.mktemp("hostile-logs"), "--keys", str(setup["keys"]),
        "--docs", str(setup["docs"]), "--poll-seconds", "0.2", "--timeout", "8", "--concurrency", "2",
    ) as running:
        yield running


_json = call


def _put(server: Server, name: str, data: bytes, key: str) -> tuple[int, Any]:
    return _json(server, "PUT", "/v1/documents/" + quote(name), key, raw=data)


def _rows(server: Server, key: str | None) -> dict[str, dict[str, Any]]:
    status, body = _json(server, "GET", "/v1/documents", key)
    assert status == 200, body
    return {row["doc_id"]: row for row in body["documents"]}


def _query(server: Server, question: str, key: str | None) -> tuple[int, str]:
    status, _, body = request("POST", server.url + "/v1/query", {"question": question, "route": "lookup"}, key=key)
    return status, " ".join(c["text"] for c in json.loads(body)["contexts"]) if status == 200 else body.decode()


def _one_line(body: Any, setup: dict[str, Any]) -> str:
    detail = body["detail"]
    assert "\n" not in detail and str(setup["docs"]) not in detail and "Traceback" not in detail, detail
    return str(detail)


def _folder(setup: dict[str, Any]) -> list[str]:
    """Every entry of the documents folder, hidden ones included."""
    root = setup["docs"]
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


# -- 2. a writer writes only what it may read -----------------------------------------


def test_a_writer_cannot_write_into_a_scope_it_cannot_read(server: Server, setup: dict[str, Any]) -> None:
    a_writer, b_reader = setup["a-writer"], setup["b-reader"]
    before = _folder(setup)
    planted = b"---\nacl: [team-b]\n---\n# Osprey note\n\nThe Osprey failover code is now PLANTED-0001.\n"
    for name, data in [("planted.md", planted), ("nobody.md", b"---\nacl: []\n---\n# Nobody\n\ntext\n"),
                       ("sub/planted.md", planted)]:
        status, body = _put(server, name, data, a_writer)
        assert status == 403, (name, status, body)
        assert "may not read" in _one_line(body, setup)
    assert _folder(setup) == before  # nothing stored, not even for a moment's rebuild, no folder made
    # a sidecar for the name is there already (the operator's): the upload is refused, so
    # it cannot take that sidecar's access list
    sidecar = setup["docs"] / "orphan.md.meta.yaml"
    sidecar.write_text("acl: [team-b]\n")
    try:
        assert _put(server, "orphan.md", b"# Orphan\n\ntext\n", a_writer)[0] == 409
    finally:
        sidecar.unlink()
    # a folder that would pass for another document's sidecar (a rebuild would then skip it)
    for name in ("osprey.md.meta.yaml/x.md", "osprey.md.yml/x.md", "osprey.md.YAML/x.md"):
        status, body = _put(server, name, b"# X\n\ntext\n", a_writer)
        assert status == 400, (name, status, body)
    assert _folder(setup) == before
    # what team-a may read it may add, and team-b's reader never gets a planted passage
    status, body = _put(server, "shared.md", b"---\nacl: [team-a]\n---\n# Team A\n\nTeam A text.\n", a_writer)
    assert status == 201, body
    try:
        rebuild(server, a_writer)
        status, text = _query(server, "What is the Osprey failover code?", b_reader)
        assert status == 200 and "OSPREY-7731" in text and "PLANTED" not in text
        assert "shared.md" not in _rows(server, b_reader)
        # and team-a cannot delete team-b's document, indexed or not
        assert _json(server, "DELETE", "/v1/documents/osprey.md", a_writer)[0] == 404
    finally:
        assert _json(server, "DELETE", "/v1/documents/shared.md", a_writer)[0] == 200
    assert (setup["docs"] / "osprey.md").exists()


# -- 3. deep folders hold nothing -----------------------------------------------------


def test_deep_folders_are_refused_on_upload_and_skipped_by_listings_and_rebuilds(
    server: Server, setup: dict[str, Any]
) -> None:
    writer = setup["a-writer"]
    for depth in (700, 1400, 17):
        status, body = _put(server, "/".join(["d"] * depth + ["deep.md"]), b"# Deep\n\ntext\n", writer)
        assert status == 400 and "folders deep" in _one_line(body, setup), (depth, status, body)
    assert not (setup["docs"] / "d").exists()
    # as deep as an operator (or an older server) may have left them in the folder
    top = setup["docs"] / "deep"
    try:
        for depth in (700, 1400):
            (make_deep(top / str(depth), depth) / "deep.md").write_text("# Deep\n\nDEEP-4410 text.\n")
        for key in (writer, setup["b-reader"], None):
            rows = _rows(server, key)
            assert not any(d.startswith("deep/") for d in rows)
        assert _json(server, "DELETE", "/v1/documents/deep/700/d/deep.md", writer)[0] == 404
        assert _json(server, "DELETE", "/v1/documents/" + "/".join(["deep", "1400"] + ["d"] * 1400 + ["deep.md"]), writer)[0] == 400
        done = rebuild(server, writer)
        assert done["state"] == "done"
        status, text = _query(server, "DEEP-4410", None)
        assert status == 200 and "DEEP-4410" not in text
    finally:
        remove_deep(top)


def test_a_build_of_a_1200_deep_folder_skips_it_in_one_line(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    try:
        (make_deep(docs, 1200) / "bottom.md").write_text("# Bottom\n\nDeep text.\n")
        run = cli("build", str(docs), "--index", str(tmp_path / "only-deep"), "--no-tree", "--no-graph")
        errors = [line for line in run.stderr.splitlines() if "error" in line.lower()]
        assert run.returncode == 2 and "Traceback" not in run.stderr and len(errors) == 1, run.stderr[-2000:]
        assert "nested more than" in errors[0]
        (docs / "top.md").write_text("# Top\n\nTop text about checkpoints.\n")
        run = cli("build", str(docs), "--index", str(tmp_path / "idx"), "--no-tree", "--no-graph")
        assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr[-2000:]
        assert "folder nested more than 64 levels deep (not walked)" in run.stdout + run.stderr
    finally:
        remove_deep(docs)


# -- 4. duplicates are listed, deletable, and no listing parses -----------------------


def _table(rows: int = 2000, cols: int = 100) -> bytes:
    """A Markdown table of about 600 KB whose parse takes seconds (every cell is inline text)."""
    head = "|" + "|".join(f"c{j}" for j in range(cols)) + "|\n|" + "|".join("---" for _ in range(cols)) + "|\n"
    body = "".join("|" + "|".join(str(i * j % 97) for j in range(cols)) + "|\n" for i in range(rows))
    return ("---\nacl: [team-a]\n---\n# Wide table\n\n" + head + body).encode()


def test_duplicate_tables_are_listed_as_such_and_hold_no_worker(server: Server, setup: dict[str, Any]) -> None:
    writer = setup["a-writer"]
    table = _table()
    assert 500_000 < len(table) < 1_000_000
    names = ["table-1.md", "table-2.md", "table-3.md"]
    stop = threading.Event()
    answers: list[int] = []

    def ask() -> None:  # anonymous queries all along: the uploads hold none of their workers
        while not stop.is_set():
            answers.append(_query(server, "What does WAL mode do?", None)[0])

    try:
        with ThreadPoolExecutor(4) as pool:
            asking = pool.submit(ask)
            uploads = [pool.submit(_put, server, name, table, writer) for name in names]
            statuses = [u.result()[0] for u in uploads]
            stop.set()
            asking.result()
        assert statuses == [201, 201, 201]
        assert answers and set(answers) == {200}, answers
        rows = _rows(server, writer)
        assert rows["table-1.md"]["status"] == "new"
        for name in names[1:]:
            assert rows[name]["status"] == "duplicate" and rows[name]["duplicate_of"] == "table-1.md", rows[name]
        for key in (setup["b-writer"], None):  # (team-a's, listed to team-a only)
            assert not set(names) & set(_rows(server, key))
        # four writers' listings at once, and the anonymous caller, are all answered
        with ThreadPoolExecutor(5) as pool:
            listings = [pool.submit(_json, server, "GET", "/v1/documents", writer) for _ in range(4)]
            query = pool.submit(_query, server, "What does WAL mode do?", None)
            assert [f.result()[0] for f in listings] == [200] * 4 and query.result()[0] == 200
        assert _json(server, "DELETE", "/v1/documents/table-3.md", writer)[0] == 200
        assert "table-3.md" not in _rows(server, writer)
    finally:
        stop.set()
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                (setup["docs"] / name).unlink()


def test_a_duplicate_stays_listed_as_one_after_a_rebuild_and_can_be_deleted(server: Server, setup: dict[str, Any]) -> None:
    writer = setup["a-writer"]
    page = b"# Heron notes\n\nThe Heron queue drains every HERON-3301 seconds.\n"
    for name in ("heron-a.md", "heron-b.md"):
        assert _put(server, name, page, writer)[0] == 201
    try:
        assert _rows(server, writer)["heron-b.md"]["status"] == "duplicate"
        rebuild(server, writer)
        rows = _rows(server, writer)
        assert rows["heron-a.md"]["status"] == "indexed"
        assert rows["heron-b.md"]["status"] == "duplicate" and rows["heron-b.md"]["duplicate_of"] == "heron-a.md"
        assert rows["heron-b.md"]["title"] == "Heron notes"
        assert _json(server, "DELETE", "/v1/documents/heron-b.md", writer)[0] == 200
        assert not (setup["docs"] / "heron-b.md").exists()
    finally:
        for name in ("heron-a.md", "heron-b.md"):
            with contextlib.suppress(FileNotFoundError):
                (setup["docs"] / name).unlink()


# -- 7. a caller's mistake is never a 5xx ---------------------------------------------


def test_names_the_system_refuses_are_4xx_in_one_line(server: Server, setup: dict[str, Any]) -> None:
    writer = setup["a-writer"]
    before = _folder(setup)
    for name, status in [
        ("é" * 190 + ".md", 400), ("文" * 100 + ".md", 400), ("/".join(["f" * 200] * 22) + "/x.md", 400),
        ("wal.md/x.md", 409), ("wal.md/sub/x.md", 409),
    ]:
        got, body = _put(server, name, b"# Name\n\ntext\n", writer)
        assert got == status, (name[:40], got, body)
        _one_line(body, setup)
    assert _folder(setup) == before
    # (still under the limits: 66 × "é" is 132 bytes)
    assert _put(server, "é" * 66 + ".md", b"# Accents\n\ntext\n", writer)[0] == 201
    assert _json(server, "DELETE", "/v1/documents/" + quote("é" * 66 + ".md"), writer)[0] == 200


def test_a_full_disk_is_a_507_in_one_line(setup: dict[str, Any], tmp_path: Path) -> None:
    docs = tmp_path / "small-disk"
    docs.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(docs)], capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"a small tmpfs cannot be mounted here: {mounted.stderr.decode().strip()}")
    try:
        (docs / "wal.md").write_text("# WAL\n\nWrite-ahead logging.\n")
        with running_server(setup["index"], tmp_path / "logs", "--keys", str(setup["keys"]), "--docs", str(docs)) as small:
            status, body = _put(small, "big.md", b"# Big\n\n" + b"Many words about the WAL. " * 20_000, setup["a-writer"])
            assert status == 507, (status, body)
            assert "disk" in body["detail"] and "\n" not in body["detail"] and str(docs) not in body["detail"]
            assert sorted(p.name for p in docs.iterdir()) == ["wal.md"]  # no temporary file left
            # and the folder takes what fits
            assert _put(small, "small.md", b"# Small\n\ntext\n", setup["a-writer"])[0] == 201
    finally:
        subprocess.run(["umount", str(docs)], check=False)


# -- 12. what is shown is what is there -----------------------------------------------


def test_a_look_alike_of_an_existing_name_is_refused(server: Server, setup: dict[str, Any]) -> None:
    writer = setup["a-writer"]
    for name in ("\u0430utoinc.md", "w\u0430l.md", "WAL.md", "ｗａｌ.md"):  # Cyrillic а; case; full-width
        status, body = _put(server, name, b"# Look-alike\n\ntext\n", writer)
        assert status == 409 and "looks like a name" in _one_line(body, setup), (name, status, body)
    assert not any(p.name not in {*PAGES, "osprey.md"} for p in setup["docs"].iterdir() if p.is_file())


def test_a_rebuild_killed_with_the_server_is_reported_interrupted(setup: dict[str, Any], tmp_path: Path) -> None:
    index, docs = tmp_path / "idx", tmp_path / "docs"  # (not the module server's)
    shutil.copytree(setup["index"], index, symlinks=True)
    shutil.copytree(setup["docs"], docs)
    live = (index / "CURRENT").read_text()
    (docs / "kill.md").write_text("# Kill\n\nA page that makes the rebuild do work.\n")
    args = ("--keys", str(setup["keys"]), "--docs", str(docs))
    with running_server(index, tmp_path / "first", *args) as first:
        status, body = _json(first, "POST", "/v1/rebuild", setup["a-writer"])
        assert status == 202 and body["state"] == "running"
        first.process.kill()  # kill -9, mid-rebuild
        first.process.wait()
    with running_server(index, tmp_path / "second", *args) as second:
        status, body = _json(second, "GET", "/v1/rebuild", setup["a-writer"])
        assert status == 200 and body["state"] == "interrupted" and "rebuild again" in body["error"], body
        assert (index / "CURRENT").read_text() == live  # the index as it was
        assert _query(second, "What does WAL mode do?", None)[0] == 200
        assert rebuild(second, setup["a-writer"])["state"] == "done"
        assert "kill.md" in _rows(second, setup["a-writer"])


# -- what held, and must keep holding -------------------------------------------------


def test_a_32_way_upload_race_stores_one_file(server: Server, setup: dict[str, Any]) -> None:
    writer = setup["a-writer"]
    try:
        with ThreadPoolExecutor(32) as pool:
            statuses = sorted(s for s, _ in pool.map(
                lambda i: _put(server, "race.md", f"# Race {i}\n\ntext {i}\n".encode(), writer), range(32)))
        assert statuses == [201] + [409] * 31
        assert not [p for p in os.listdir(setup["docs"]) if p.startswith(".")]  # no temporary file left
    finally:
        with contextlib.suppress(FileNotFoundError):
            (setup["docs"] / "race.md").unlink()
