"""Hot swaps under load: a rebuild lands while the real server answers, and a damaged
generation is refused while the old one keeps serving."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from service_server import Server, request, running_server

from arborgraph.pipeline import build_index

PAGES = ["wal.md", "autoinc.md", "foreignkeys.md", "c3ref_busy_timeout.md"]
NEW_PAGE = """# Pelican replication

The Pelican replication daemon ships WAL frames to a standby every PELICAN-3141 seconds,
after each checkpoint of the write-ahead log.
"""
QUESTIONS = [
    ("How often does the Pelican daemon ship WAL frames?", "lookup"),
    ("How does WAL mode work?", "auto"),
    ("What does AUTOINCREMENT do to rowid selection?", "tree"),
    ("How are foreign key constraints and WAL related?", "graph"),
    ("Give an overview of the topics of this manual", "global"),
]


@pytest.fixture(scope="module")
def swap_index(tmp_path_factory: pytest.TempPathFactory, sample_slice: Path) -> tuple[Path, Path]:
    docs = tmp_path_factory.mktemp("swap-docs")
    for page in PAGES:
        shutil.copy(sample_slice / page, docs / page)
    index = tmp_path_factory.mktemp("swap-index") / "idx"
    build_index([docs], index)
    return docs, index


@pytest.fixture(scope="module")
def server(swap_index: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Server:
    with running_server(
        swap_index[1], tmp_path_factory.mktemp("swap-logs"), "--poll-seconds", "0.2", "--verify-seconds", "1"
    ) as running:
        yield running


def _health(server: Server) -> dict[str, Any]:
    status, _, data = request("GET", server.url + "/v1/health")
    assert status == 200
    return json.loads(data)


class Load:
    """Clients asking the mixed questions in a loop, each answer recorded with when it
    was asked and which generation answered."""

    def __init__(self, server: Server, clients: int = 4) -> None:
        self.server = server
        self.stop = threading.Event()
        self.results: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._client, args=(i,), daemon=True) for i in range(clients)]

    def _client(self, offset: int) -> None:
        i = offset
        while not self.stop.is_set():
            question, route = QUESTIONS[i % len(QUESTIONS)]
            i += 1
            asked = time.monotonic()
            status, _, data = request("POST", self.server.url + "/v1/query", {"question": question, "route": route, "top_k": 5}, timeout=60)
            body = json.loads(data) if status == 200 else {}
            with self.lock:
                self.results.append({
                    "asked": asked, "status": status, "generation": body.get("generation"),
                    "pelican": any("PELICAN-3141" in c["text"] for c in body.get("contexts", [])),
                    "question": question,
                })

    def __enter__(self) -> "Load":
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=120)


def test_a_rebuild_lands_under_load_without_a_failed_request(server: Server, swap_index: tuple[Path, Path]) -> None:
    docs, index = swap_index
    old = _health(server)["generation"]
    (docs / "pelican.md").write_text(NEW_PAGE)
    with Load(server) as load:
        time.sleep(2)
        report = build_index([docs], index)  # incremental: the four old pages are reused
        landed = time.monotonic()
        new = report.generation
        assert new != old
        while _health(server)["generation"] != new:
            assert time.monotonic() - landed < 20, "the new generation was not served within 20 s"
            time.sleep(0.1)
        swapped = time.monotonic()
        time.sleep(3)
    results = load.results
    assert results and all(r["status"] == 200 for r in results), [r for r in results if r["status"] != 200][:3]
    assert {r["generation"] for r in results} == {old, new}
    # asked after the swap: answered by the new generation, which knows the new page
    after = [r for r in results if r["asked"] > swapped]
    assert after and all(r["generation"] == new for r in after)
    pelican = [r for r in results if r["question"].startswith("How often does the Pelican")]
    assert any(r["pelican"] for r in pelican if r["generation"] == new)
    assert not any(r["pelican"] for r in pelican if r["generation"] == old)
    health = _health(server)
    assert health["swaps"] >= 1 and health["refused"] is None


def test_a_damaged_generation_is_refused_and_the_old_one_keeps_serving(server: Server, swap_index: tuple[Path, Path]) -> None:
    _, index = swap_index
    serving = _health(server)["generation"]
    number = int(serving.split("-")[1]) + 1
    damaged = index / f"gen-{number:06d}"
    shutil.copytree(index / serving, damaged)
    manifest = json.loads((damaged / "manifest.json").read_text())
    manifest["generation"] = damaged.name
    (damaged / "manifest.json").write_text(json.dumps(manifest))
    table = damaged / "tables" / "chunks.parquet"
    data = bytearray(table.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte: same size, wrong checksum
    table.write_bytes(bytes(data))
    (index / "CURRENT").write_text(damaged.name + "\n")
    try:
        deadline = time.monotonic() + 20
        while _health(server)["refused"] is None:
            assert time.monotonic() < deadline, "the damaged generation was not noticed within 20 s"
            time.sleep(0.1)
        health = _health(server)
        assert health["generation"] == serving
        assert health["refused"]["generation"] == damaged.name
        assert "checksum" in health["refused"]["reason"] and str(index) not in health["refused"]["reason"]
        status, _, data = request("POST", server.url + "/v1/query", {"question": "How does WAL mode work?"})
        assert status == 200 and json.loads(data)["generation"] == serving
        assert "arborgraph_generation_refused 1" in request("GET", server.url + "/metrics")[2].decode()
    finally:
        (index / "CURRENT").write_text(serving + "\n")
        shutil.rmtree(damaged)


def _wait_for(server: Server, ok: Any, what: str, within: float = 20) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while not ok(health := _health(server)):
        assert time.monotonic() < deadline, f"{what} within {within} s: {health}"
        time.sleep(0.1)
    return health


def test_a_broken_current_pointer_is_reported_at_once_and_clears_when_mended(server: Server, swap_index: tuple[Path, Path]) -> None:
    _, index = swap_index
    pointer = index / "CURRENT"
    serving = _health(server)["generation"]
    for breakage in ("deleted", "garbled", "symlinked"):
        pointer.unlink()
        if breakage == "garbled":
            pointer.write_bytes(b"\x1b[31mgen-??\n")
        elif breakage == "symlinked":
            (index.parent / "elsewhere").write_text(serving + "\n")
            pointer.symlink_to(index.parent / "elsewhere")
        try:
            health = _wait_for(server, lambda h: "current" in h["problems"], f"a {breakage} CURRENT was not reported")
            assert health["status"] == "degraded" and "a restart would fail" in health["problems"]["current"]
            assert str(index) not in health["problems"]["current"] and "\x1b" not in json.dumps(health)
            status, _, data = request("POST", server.url + "/v1/query", {"question": "How does WAL mode work?"})
            assert status == 200 and json.loads(data)["generation"] == serving
        finally:
            pointer.unlink(missing_ok=True)
            pointer.write_text(serving + "\n")
        _wait_for(server, lambda h: h["status"] == "ok" and not h["problems"], f"the mended CURRENT ({breakage}) was not cleared")


def test_damage_to_the_served_generation_is_reported_and_rolled_back(server: Server, swap_index: tuple[Path, Path]) -> None:
    from service_server import cli

    _, index = swap_index
    serving = _health(server)["generation"]
    older = sorted(p.name for p in index.glob("gen-*") if p.name < serving)
    assert older, "the rebuild test left an older generation"
    vectors = index / serving / "vectors" / "chunks.npy"
    data = bytearray(vectors.read_bytes())
    data[-7] ^= 0xFF  # same size; a new inode, so no older generation shares the damage
    vectors.unlink()
    vectors.write_bytes(bytes(data))
    health = _wait_for(server, lambda h: "disk" in h["problems"], "the damaged file was not reported")
    problem = health["problems"]["disk"]
    assert health["status"] == "degraded" and serving in problem and "vectors/chunks.npy" in problem
    assert f"{older[-1]} is intact" in problem and "arborgraph rollback" in problem and str(index) not in problem
    status, _, answer = request("POST", server.url + "/v1/query", {"question": "How does WAL mode work?"})
    assert status == 200 and json.loads(answer)["generation"] == serving  # still answering from memory
    run = cli("rollback", "--index", str(index))
    assert run.returncode == 0 and f"{older[-1]} is live now" in run.stderr, run.stderr
    health = _wait_for(server, lambda h: h["generation"] == older[-1], "the rollback was not served")
    assert health["status"] == "ok" and not health["problems"]
