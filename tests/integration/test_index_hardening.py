"""Issue 16's hardening of the index on disk, each item reproduced with real builds.

Concurrent builds exclude each other and never reuse a generation number; an open
knowledge base keeps working through rebuilds; ``CURRENT`` and the manifest are
validated and never echoed; damaged caches are replaced; a killed build's status
reads ``interrupted``.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import arborgraph
from arborgraph.config import load_config
from arborgraph.core.errors import IndexBusy, IndexUnusable, StorageError
from arborgraph.pipeline.incremental import BuildStatus
from arborgraph.pipeline import LOCK_WAIT_STAGE, build_index
from arborgraph.index.store import BuildLock, GenerationWriter, open_generation
from conftest import SAMPLE_MANUAL, copy_pages

LOOKUP_ONLY = load_config(overrides={"build_tree": False, "build_graph": False})
SECRET = """---
title: Project Bluefin operations notes
acl: [team-a]
---
# Project Bluefin

The launch code for Project Bluefin is ZEBRA-7731. Bluefin keeps its queue in SQLite
in WAL mode with a busy timeout of 9000 ms.
"""


def cli(*args: str, **popen: Any) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "arborgraph.cli", *args], capture_output=True, text=True,
        timeout=600, env=env, **popen,
    )


def _ctrl_c_as_on_a_terminal() -> None:
    # A suite started in the background by a non-interactive shell runs with SIGINT
    # ignored, and a child keeps an ignored SIGINT: Ctrl-C would never reach the build.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_cli(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    return subprocess.Popen(
        [sys.executable, "-m", "arborgraph.cli", *args], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=env, preexec_fn=_ctrl_c_as_on_a_terminal,
    )


def one_clean_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


@pytest.fixture(scope="module")
def docs(sample_slice: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = copy_pages(sample_slice, tmp_path_factory.mktemp("hardening") / "docs", ["wal.md"])
    (folder / "bluefin.md").write_text(SECRET)
    return folder


@pytest.fixture(scope="module")
def built(docs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lookup-only index of the docs, copied by tests that change it."""
    index = tmp_path_factory.mktemp("built") / "idx"
    build_index([docs], index, LOOKUP_ONLY)
    return index


@pytest.fixture()
def index(built: Path, tmp_path: Path) -> Path:
    target = tmp_path / "idx"
    shutil.copytree(built, target, symlinks=True)
    return target


def live(index: Path) -> str:
    return arborgraph.current_generation(index)


# -- 1. builds exclude each other; generation numbers are never reused ----------------


def test_a_second_build_fails_at_once_or_waits_for_the_first(index: Path, docs: Path) -> None:
    before = live(index)
    running = BuildLock(index)  # what a running build holds
    run = cli("build", str(docs), "--index", str(index), "-q", "--no-tree", "--no-graph")
    assert run.returncode == 2
    line = one_clean_line(run.stderr)
    assert "another build" in line and f"pid {os.getpid()}" in line and "--wait" in line
    with pytest.raises(IndexBusy, match="wait_for_lock=True"):
        build_index([docs], index, LOOKUP_ONLY)
    assert live(index) == before

    # --wait queues behind it, saying so, and builds once the first is done
    waiting = start_cli("build", str(docs), "--index", str(index), "-q", "--no-tree", "--no-graph", "--wait", "--force")
    assert waiting.stderr is not None
    assert LOCK_WAIT_STAGE in waiting.stderr.readline()
    assert waiting.poll() is None  # still waiting
    running.release()
    assert waiting.wait(timeout=600) == 0
    after = live(index)
    assert after > before

    # the library reports the wait through the progress callback
    running = BuildLock(index)
    stages: list[str] = []

    def progress(stage: str, done: int, total: int | None) -> None:
        stages.append(stage)
        if stage == LOCK_WAIT_STAGE:
            running.release()  # the other build finishes

    report = build_index([docs], index, LOOKUP_ONLY, progress=progress, wait_for_lock=True, force=True)
    assert stages[0] == LOCK_WAIT_STAGE and f"pid {os.getpid()}" in (report.lock_wait or "")
    assert report.generation > after and live(index) == report.generation


def test_two_builds_at_once_commit_one_after_the_other(index: Path, docs: Path, sample_slice: Path) -> None:
    more = copy_pages(sample_slice, index.parent / "more", ["wal.md", "isolation.md"])
    builds = [
        start_cli("build", str(folder), "--index", str(index), "--json", "--no-tree", "--no-graph", "--wait")
        for folder in (more, docs)
    ]
    reports = []
    for proc in builds:
        out, errors = proc.communicate(timeout=600)
        assert proc.returncode == 0, errors
        reports.append(json.loads(out))
    generations = {r["generation"] for r in reports}
    assert len(generations) == 2  # before the lock both reported the same number
    assert live(index) == max(generations)
    open_generation(index)  # every file checks out
    assert arborgraph.open(index).query("What is WAL mode?", route="lookup").contexts


def test_generation_numbers_are_never_reused(index: Path, docs: Path) -> None:
    first = live(index)
    # a build dies after creating its generation; the next build removes the remains
    writer = GenerationWriter(index)
    abandoned = writer.path.name
    del writer
    shutil.rmtree(index / abandoned)
    report = build_index([docs], index, LOOKUP_ONLY, force=True)
    assert report.generation not in (first, abandoned)
    assert report.generation > abandoned
    # pruning removes old generations; their numbers stay used
    names = [build_index([docs], index, LOOKUP_ONLY, force=True).generation for _ in range(3)]
    assert len({first, abandoned, report.generation, *names}) == 6
    assert sorted(p.name for p in index.glob("gen-*")) == names[-2:]


# -- 2. an open knowledge base keeps working after any number of rebuilds -------------


def test_an_open_knowledge_base_survives_rebuilds(sample_slice: Path, tmp_path: Path) -> None:
    docs = copy_pages(sample_slice, tmp_path / "docs", ["wal.md", "lockingv3.md"])
    index = tmp_path / "idx"
    kb = arborgraph.build([docs], index)  # with its tree and graph
    opened = kb.generation
    assert opened == live(index) and opened.startswith("gen-")
    assert kb.query("What is a checkpoint?", route="lookup").contexts
    for _ in range(2):  # rebuilds that drop the tree and graph: nothing of them is left live
        build_index([docs], index, LOOKUP_ONLY, force=True)
    assert live(index) != opened
    for route in ("tree", "graph", "global", "auto"):
        res = kb.query("How does a checkpoint move WAL content into the database?", route=route)
        assert res.contexts, route
    assert len(kb.explorer.tree_view().levels) > 1
    assert kb.generation == opened and (index / opened).is_dir()

    newest = kb.refresh()
    assert newest.generation == live(index) and newest.index.routes == ["lookup"]
    assert kb.query("What is a checkpoint?", route="tree").contexts  # the old one still works
    kb.close()
    with newest:
        build_index([docs], index, LOOKUP_ONLY, force=True)  # now prunes the closed one
        assert not (index / opened).exists()
        assert newest.query("What is a checkpoint?", route="lookup").contexts
    assert newest.closed


# -- 5. CURRENT is validated and never echoed ------------------------------------------


SECRET_FILE_TEXT = "root:TOPSECRET:0:0:root:/root:/bin/bash\n"
POINTER_SPOILERS = ("symlink", "random_bytes", "huge", "not_utf8", "escapes_the_index", "parent_path")


def spoil_pointer(how: str, index: Path, scratch: Path) -> None:
    """Damage ``index``'s CURRENT the way ``how`` says; ``scratch`` is a folder outside it."""
    secret = scratch / "passwd"
    secret.write_text(SECRET_FILE_TEXT)
    pointer = index / "CURRENT"
    if how == "symlink":
        pointer.unlink()
        pointer.symlink_to(secret)
    elif how == "random_bytes":
        pointer.write_bytes(random.Random(16).randbytes(64))
    elif how == "huge":
        pointer.write_bytes(b"gen-000001" + b"TOPSECRET" * 200_000)
    elif how == "not_utf8":
        # at most a short escaped prefix is quoted: control bytes in it, the rest not
        pointer.write_bytes(b"\xff\xfe\x1b]0;title\x07" + b"-" * 30 + b"TOPSECRET")
    elif how == "escapes_the_index":  # a generation name that is a symlink out of the index
        outside = scratch / "elsewhere"
        shutil.copytree(index / live(index), outside)
        (index / "gen-000777").symlink_to(outside, target_is_directory=True)
        pointer.write_text("gen-000777\n")
    elif how == "parent_path":
        pointer.write_text(f"../{secret.name}\n")


@pytest.mark.parametrize("how", POINTER_SPOILERS)
def test_a_bad_current_pointer_is_refused_in_one_line_without_its_content(
    how: str, index: Path, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    spoil_pointer(how, index, scratch)
    for attempt, hint in ((lambda: arborgraph.open(index), True), (lambda: arborgraph.current_generation(index), False)):
        with pytest.raises(IndexUnusable) as caught:
            attempt()
        message = str(caught.value)
        assert "\n" not in message and "TOPSECRET" not in message, message
        assert "\x1b" not in message and "\x07" not in message, message
        # a short escaped prefix at most, and (opening) the intact generation to roll back to
        assert len(message) < len(str(index)) + 180, message
        assert message.endswith("gen-000001 is intact (arborgraph rollback makes it live)") == hint, message
    if how in ("symlink", "random_bytes"):
        run = cli("query", "--index", str(index), "what is WAL?")
        assert run.returncode == 2 and "TOPSECRET" not in run.stderr
        one_clean_line(run.stderr)


# -- 6. the manifest's shape is validated and tampering with it is detected ------------


def edit_manifest(index: Path, change: Callable[[dict[str, Any]], None], *, forge_checksum: bool) -> Path:
    """Apply ``change`` to the live manifest; ``forge_checksum`` also rewrites its sidecar
    (an edit made knowing the format: then only the shape checks stand in its way)."""
    gen = index / live(index)
    manifest = json.loads((gen / "manifest.json").read_text())
    change(manifest)
    text = json.dumps(manifest, indent=2, sort_keys=True)
    (gen / "manifest.json").write_text(text)
    if forge_checksum:
        (gen / "manifest.sha256").write_text(hashlib.sha256(text.encode()).hexdigest() + "\n")
    return gen


def refused(index: Path, match: str) -> str:
    with pytest.raises(IndexUnusable, match=match) as caught:
        arborgraph.open(index)
    message = str(caught.value)
    assert "\n" not in message and len(message) < len(str(index)) + 160, message
    return message


def first_table(manifest: dict[str, Any]) -> dict[str, Any]:
    return manifest["files"]["tables/chunks.parquet"]


MALFORMED: dict[str, Callable[[dict[str, Any]], None]] = {
    "no files list": lambda m: m.pop("files"),
    "empty files list": lambda m: m.update(files={}),
    "files as a list": lambda m: m.update(files=list(m["files"])),
    "size as a string": lambda m: first_table(m).update(bytes=str(first_table(m)["bytes"])),
    "entry without checksum": lambda m: first_table(m).pop("sha256"),
    "entry of the wrong type": lambda m: m["files"].update({"tables/chunks.parquet": 7}),
    "path out of the generation": lambda m: m["files"].update({"../../CURRENT": first_table(m)}),
    "no documents table": lambda m: m["files"].pop("tables/documents.parquet"),
    "unknown route": lambda m: m.update(routes=["lookup", "teleport"]),
    "mode not an object": lambda m: m.update(mode="hybrid"),
    "scope without tag": lambda m: m["scopes"][0].pop("tag"),
    "no config": lambda m: m.pop("config"),
    "generation of another": lambda m: m.update(generation="gen-000999"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_manifest_is_refused_as_damaged(name: str, index: Path) -> None:
    edit_manifest(index, MALFORMED[name], forge_checksum=True)
    refused(index, "index damaged")
    run = cli("inspect", "--index", str(index)) if name == "no files list" else None
    if run is not None:
        assert run.returncode == 2 and "index damaged" in one_clean_line(run.stderr)


def test_an_edited_scope_is_refused(index: Path) -> None:
    kb = arborgraph.open(index)
    assert "acl:team-a" in kb.explorer.readable_scopes("team-a")
    assert "ZEBRA-7731" not in " ".join(c.text for c in kb.query("Bluefin launch code", route="lookup").contexts)
    kb.close()

    def publish(manifest: dict[str, Any]) -> None:
        for scope in manifest["scopes"]:
            if scope["scope"] == "acl:team-a":
                scope["scope"] = "public"

    edit_manifest(index, publish, forge_checksum=False)
    refused(index, "manifest.json fails its checksum")


def test_unlisted_files_are_never_read(index: Path) -> None:
    # the files list loses the chunks table and the table is damaged: verification
    # must not be turned off for it
    gen = edit_manifest(index, lambda m: m["files"].pop("tables/chunks.parquet"), forge_checksum=True)
    data = bytearray((gen / "tables/chunks.parquet").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (gen / "tables/chunks.parquet").write_bytes(bytes(data))
    refused(index, "index damaged")


def test_a_missing_manifest_checksum_is_refused(index: Path) -> None:
    (index / live(index) / "manifest.sha256").unlink()
    refused(index, "manifest.sha256 is missing")


# -- 10. damaged caches are moved aside and rebuilt -----------------------------------


def test_damaged_caches_are_moved_aside_and_rebuilt(index: Path, docs: Path, sample_slice: Path) -> None:
    cache = index / "cache"
    more = copy_pages(sample_slice, index.parent / "more", ["wal.md", "isolation.md"])
    shutil.copy(docs / "bluefin.md", more / "bluefin.md")
    damages = [("embeddings.sqlite", "random"), ("parsed.sqlite", "truncated")]
    for attempt in range(2):
        for name, how in damages:
            data = (cache / name).read_bytes()
            damaged = random.Random(10).randbytes(len(data)) if how == "random" else data[: len(data) // 2]
            (cache / name).write_bytes(damaged)
        report = build_index([more] if attempt else [docs], index, LOOKUP_ONLY, force=True)
        for name, _ in damages:
            assert any(f"cache {name} was damaged" in w for w in report.warnings), report.warnings
            assert list(cache.glob(f"{name}.corrupt-*")), name
        assert report.embeddings_computed > 0 and report.stages["documents"]["parses_reused"] == 0
        kb = arborgraph.open(index)
        assert kb.query("What is WAL mode?", route="lookup").contexts
        kb.close()
        damages = [(name, "truncated" if how == "random" else "random") for name, how in damages]
    # the caches work again: an unchanged rebuild takes everything from them
    again = build_index([more], index, LOOKUP_ONLY)
    assert again.embeddings_computed == 0 and not [w for w in again.warnings if "cache" in w]


# -- minor: a killed build's status is "interrupted", not "running" -----------------------


def wait_until_running(index: Path, proc: subprocess.Popen[str]) -> None:
    """Wait until the build ``proc`` has recorded itself as running in ``index``."""
    deadline = time.time() + 300
    status = None
    while time.time() < deadline and proc.poll() is None:
        status = BuildStatus.load(index)
        if status is not None and status.state == "running" and status.pid == proc.pid:
            break
        time.sleep(0.05)
    assert status is not None and status.state == "running" and status.pid == proc.pid


def test_a_killed_builds_status_reads_interrupted(index: Path, sample_slice: Path) -> None:
    more = copy_pages(sample_slice, index.parent / "more", ["lockingv3.md", "isolation.md", "tempfiles.md"])
    proc = start_cli("build", str(more), "--index", str(index), "-q", "--no-tree", "--no-graph")
    wait_until_running(index, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    on_disk = json.loads((index / "build-status.json").read_text())
    assert on_disk["state"] == "running"  # what the killed build left
    loaded = BuildStatus.load(index)
    assert loaded is not None and loaded.state == "interrupted"
    with BuildLock(index):  # while a build holds the lock, it is running
        loaded = BuildStatus.load(index)
        assert loaded is not None and loaded.state == "running"


def test_a_query_after_ctrl_c_in_a_first_build_says_it_was_interrupted_and_how_to_resume(
    docs: Path, tmp_path: Path
) -> None:
    index = tmp_path / "first"
    # enough pages that the build is still embedding when Ctrl-C lands, however late a
    # busy machine lets this test send it
    pages = sorted(p.name for p in SAMPLE_MANUAL.glob("*.md"))[:40]
    docs = copy_pages(SAMPLE_MANUAL, tmp_path / "pages", pages)
    build = ("build", str(docs), "--index", str(index), "-q", "--no-tree", "--no-graph")
    proc = start_cli(*build)
    wait_until_running(index, proc)
    proc.send_signal(signal.SIGINT)  # Ctrl-C
    proc.wait()
    assert not (index / "CURRENT").exists()  # the first build left no index
    run = cli("query", "--index", str(index), "WAL mode")
    line = one_clean_line(run.stderr)
    assert run.returncode == 2
    assert line == (
        f"error: {index}: the first build was interrupted before it finished; run "
        f"`arborgraph build SOURCES --index {index}` again (the same SOURCES) to resume"
    ), line
    rerun = cli(*build)  # what the message says resumes it
    assert rerun.returncode == 0, rerun.stderr
    assert cli("query", "--index", str(index), "WAL mode").returncode == 0


# -- damage found after the build: the intact generation is named, and made live again --


def _second_generation(index: Path, docs: Path, tmp_path: Path) -> tuple[str, str]:
    first = live(index)
    more = tmp_path / "more"
    shutil.copytree(docs, more)
    (more / "notes.md").write_text("# Notes\n\nThe page cache keeps recently used pages in memory.\n")
    build_index([more], index, LOOKUP_ONLY)
    return first, live(index)


def test_a_damaged_live_generation_names_the_intact_one_and_rollback_restores_it(index: Path, docs: Path, tmp_path: Path) -> None:
    first, second = _second_generation(index, docs, tmp_path)
    vectors = index / second / "vectors" / "chunks.npy"
    data = bytearray(vectors.read_bytes())
    data[-3] ^= 0x55
    vectors.unlink()  # a new file: the first generation's hard links keep the good bytes
    vectors.write_bytes(bytes(data))
    run = cli("query", "--index", str(index), "WAL mode")
    line = one_clean_line(run.stderr)
    assert run.returncode == 2 and "fails its checksum" in line
    assert line.endswith(f"; {first} is intact (arborgraph rollback makes it live)")
    run = cli("rollback", "--index", str(index))
    assert run.returncode == 0 and one_clean_line(run.stderr) == f"{index}: {first} is live now (every file checked), was {second}"
    assert live(index) == first
    assert cli("query", "--index", str(index), "WAL mode").returncode == 0
    # nothing intact to go back to: a clear refusal, CURRENT untouched
    run = cli("rollback", "--index", str(index))
    assert run.returncode == 2 and f"no intact generation older than {first}" in one_clean_line(run.stderr)
    run = cli("rollback", "--index", str(index), "--to", second)
    assert run.returncode == 2 and f"cannot roll back to {second}" in one_clean_line(run.stderr)
    assert live(index) == first


def test_rollback_mends_a_deleted_current_pointer(index: Path) -> None:
    serving = live(index)
    (index / "CURRENT").unlink()
    run = cli("rollback", "--index", str(index))
    assert run.returncode == 0 and f"{serving} is live now" in one_clean_line(run.stderr)
    assert live(index) == serving


def test_rollback_while_a_build_runs_says_what_to_do(index: Path) -> None:
    """rollback has no --wait: while a build holds the index it says to run it again."""
    serving = live(index)
    lock = BuildLock(index)
    try:
        run = cli("rollback", "--index", str(index))
    finally:
        lock.release()
    line = one_clean_line(run.stderr)
    assert run.returncode == 2 and "another build" in line and "--wait" not in line
    assert line.endswith("run the rollback again when it has finished")
    assert live(index) == serving


def test_a_full_disk_stops_a_build_in_one_line_and_changes_nothing(index: Path, docs: Path, tmp_path: Path) -> None:
    import resource

    serving = live(index)
    more = tmp_path / "more"
    shutil.copytree(docs, more)
    (more / "big.md").write_text("# Big\n\n" + "\n\n".join(f"Paragraph {i} about page caches and WAL frames." for i in range(3000)))

    def small_files() -> None:  # as a full disk does: writes past 256 KiB fail (EFBIG)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, 256 * 1024))

    run = cli("build", str(more), "--index", str(index), "--no-tree", "--no-graph", preexec_fn=small_files)
    line = one_clean_line(run.stderr.replace("\r", "\n").splitlines()[-1] if run.stderr else "")
    assert run.returncode == 1 and "the disk refused a write" in line and "previous index is unchanged" in line, run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    assert live(index) == serving
    assert cli("query", "--index", str(index), "WAL mode").returncode == 0



def test_a_full_disk_while_writing_vectors_is_a_storage_problem(tmp_path: Path) -> None:
    """numpy reports a short write of the vectors ("N requested and M written") without
    an errno; the build must still see a full disk (one line, exit 1), not a bug (a
    59-line traceback)."""
    from arborgraph.pipeline.run import storage_problem

    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)], capture_output=True, check=False)
    if mounted.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"a tmpfs cannot be mounted: {mounted.stderr.decode().strip()}")
        pytest.skip(f"a tmpfs cannot be mounted here: {mounted.stderr.decode().strip()}")
    try:
        writer = GenerationWriter(disk / "idx")
        try:
            with pytest.raises(OSError) as failed:
                writer.write_vectors("chunks", np.zeros((1000, 384), dtype=np.float32))
        finally:
            writer.abort()
        problem = storage_problem(failed.value)
        assert problem is not None and "No space left on device" in problem and ".npy" in problem
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
