"""The same build in-process, on a local process pool and on a real Dask LocalCluster
gives identical tables; a bad executor spec or unreachable scheduler is a clear error."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from arborgraph.config import load_config
from arborgraph.core.errors import ExecutorError
from arborgraph.core.processes import available_cores
from arborgraph.index.chunk_rows import decode_chunks
from arborgraph.pipeline.executor import (
    AUTO_POOL_MIN_KB,
    SerialExecutor,
    chunk_batch,
    extract_batch,
    make_executor,
    map_as_produced,
    map_batched,
    tapering_batches,
)
from arborgraph.pipeline import build_index, input_kilobytes, load_documents
from graphrag.extract.encoding import decode_extraction
from arborgraph.core.protocols import no_progress
from ingest import load_token_counter

PAGES = ["wal.md", "c3ref_busy_timeout.md", "lockingv3.md", "autoinc.md"]
TABLES = ["chunks", "entities.s0", "relationships.s0", "communities.s0", "community_reports.s0"]


def _tables(index: Path) -> dict[str, object]:
    gen = (index / "CURRENT").read_text().strip()
    return {t: pq.read_table(index / gen / "tables" / f"{t}.parquet") for t in TABLES}


def test_serial_process_and_dask_builds_are_identical(tmp_path: Path, sample_slice: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for page in PAGES:
        shutil.copy(sample_slice / page, docs / page)
    results = {}
    for spec in ("serial", "process", "dask"):
        cfg = load_config(overrides={"build_tree": False, "executor": spec})
        report = build_index([docs], tmp_path / spec, cfg)
        assert report.stages["executor"]["name"].startswith(spec)
        if spec != "serial":
            assert report.stages["executor"]["workers"] >= 2
        results[spec] = _tables(tmp_path / spec)
    for table in TABLES:
        assert results["serial"][table].num_rows > 0
        assert results["serial"][table].equals(results["process"][table]), table
        assert results["serial"][table].equals(results["dask"][table]), table


def test_bad_executor_specs_are_clear_errors() -> None:
    with pytest.raises(ExecutorError, match="unknown executor"):
        make_executor("threads", 10)
    with pytest.raises(ExecutorError, match="cannot reach the Dask scheduler"):
        make_executor("tcp://127.0.0.1:9", 10)


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")  # the warm-up thread
def test_auto_runs_a_pool_only_for_large_inputs_on_several_cores(tmp_path: Path) -> None:
    assert make_executor("auto", AUTO_POOL_MIN_KB - 1).name == "serial"
    large = make_executor("auto", AUTO_POOL_MIN_KB)
    try:
        assert large.name == ("process" if available_cores() >= 2 else "serial")
    finally:
        large.close()


def test_input_size_counts_files_folders_and_patterns(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.md").write_bytes(b"x" * 3000)
    (tmp_path / "a" / "two.txt").write_bytes(b"x" * 5000)
    (tmp_path / "three.md").write_bytes(b"x" * 2000)
    assert input_kilobytes([tmp_path / "a"]) == 8
    assert input_kilobytes([tmp_path / "three.md", str(tmp_path / "a" / "*.md")]) == 5
    assert input_kilobytes([tmp_path]) == 10 and input_kilobytes([tmp_path / "missing"]) == 0


def test_tapering_batches_cover_every_item_once_and_shrink_as_the_work_runs_out() -> None:
    weights = [float(1 + (i * 37) % 50) for i in range(1000)]
    total = sum(weights)
    batches = tapering_batches(weights, 2)
    assert [i for b in batches for i in b] == list(range(len(weights)))  # in order, each once
    shares = [sum(weights[i] for i in b) / total for b in batches]
    assert 0.24 < shares[0] < 0.27  # a quarter of the work per batch on 2 workers at first...
    assert shares[-2] < 0.02 and shares[-1] < 0.02  # ...the last ones about 1/64 of it
    assert all(a >= b - 1e-9 for a, b in zip(shares[:4], shares[1:5]))
    assert tapering_batches([], 2) == [] and tapering_batches([3.0], 8) == [range(0, 1)]
    assert [len(b) for b in tapering_batches([100.0, 0.0, 0.0, 1.0], 2)] == [1, 3]  # heavy item alone
    assert sum(len(b) for b in tapering_batches([0.0] * 5, 2)) == 5


def test_a_batch_context_is_unpickled_once_for_the_batches_sharing_it() -> None:
    import pickle

    from arborgraph.pipeline.executor import _run_batch

    first, same = pickle.dumps({"k": 1}), pickle.dumps({"k": 1})
    a = _run_batch((_context_of, first, [1]))
    assert _run_batch((_context_of, same, [2])) is a  # equal bytes: the object already made
    b = _run_batch((_context_of, pickle.dumps({"k": 2}), [3]))
    assert b == {"k": 2} and a == {"k": 1}


def _context_of(job: tuple[object, list[int]]) -> object:
    return job[0]


def test_map_batched_returns_one_result_per_item_in_input_order() -> None:
    items = [f"item-{i}" * (i % 5 + 1) for i in range(23)]
    out = map_batched(SerialExecutor(), _upper_batch, "!", items, [len(x) for x in items])
    assert out == [x.upper() + "!" for x in items]
    decoded = map_batched(
        SerialExecutor(), _upper_batch, "!", items, [len(x) for x in items],
        decode=lambda item, result: (len(item), result),
    )
    assert decoded == [(len(x), x.upper() + "!") for x in items]


def test_map_as_produced_keeps_order_and_raises_what_either_side_raised() -> None:
    def produce(n: int, fail: bool = False):  # type: ignore[no-untyped-def]
        for i in range(n):
            yield None if i == 3 else i
        if fail:
            raise OSError("disk gone")

    assert map_as_produced(SerialExecutor(), repr, produce(6)) == ["0", "1", "2", "None", "4", "5"]
    with pytest.raises(OSError, match="disk gone"):
        map_as_produced(SerialExecutor(), repr, produce(6, fail=True))
    with pytest.raises(ZeroDivisionError):
        map_as_produced(SerialExecutor(), lambda x: 1 / x, [1, 0, 2])


def _upper_batch(job: tuple[str, list[str]]) -> list[str]:
    suffix, batch = job
    return [x.upper() + suffix for x in batch]


def test_compact_worker_results_decode_to_the_in_process_objects(sample_slice: Path) -> None:
    """What workers send back (rows, text as offsets) rebuilds the very same chunks and
    extractions the serial build makes."""
    from graphrag import RuleExtractor
    from ingest import chunk_document, load_token_counter

    cfg = load_config()
    docs = load_documents([sample_slice / p for p in PAGES], cfg, no_progress).docs
    chunking = cfg.chunking.model_dump(mode="json")
    rows = chunk_batch((chunking, docs))
    count = load_token_counter()
    chunks = []
    for doc, doc_rows in zip(docs, rows):
        expected = chunk_document(doc, cfg.chunking, count)
        assert decode_chunks(doc, doc_rows) == expected
        chunks.extend(expected)
    extractor = RuleExtractor().fit(chunks)
    found = extract_batch((extractor, chunks))
    decoded = [decode_extraction(c, row) for c, row in zip(chunks, found)]
    assert decoded == [extractor.extract(c) for c in chunks]
    assert sum(len(d.relations) for d in decoded) > 100


def test_pool_work_functions_import_no_index_stack(sample_slice: Path) -> None:
    """A pool worker chunks and extracts without importing the index-building stack
    (numpy, pyarrow, RAPTOR, BM25): each worker would pay ~1 CPU-s of imports."""
    import subprocess
    import sys

    script = f"""
import sys
from arborgraph.pipeline.executor import chunk_batch, extract_batch
from graphrag import RuleExtractor
from ingest import ChunkingConfig, chunk_document, load_token_counter
from ingest.loaders import load_document

raw = open({str(sample_slice / PAGES[0])!r}, "rb").read()
doc = load_document(raw, doc_id="wal.md", path="wal.md", fmt="markdown")
chunking = ChunkingConfig()
assert chunk_batch((chunking.model_dump(mode="json"), [doc]))[0]
chunks = chunk_document(doc, chunking, load_token_counter())
assert extract_batch((RuleExtractor().fit(chunks), chunks))
heavy = ("numpy", "pyarrow", "scipy", "raptor", "bm25s", "arborgraph.pipeline.structures")
print(sorted(m for m in heavy if m in sys.modules))
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]", run.stdout + run.stderr


class _RecordingExecutor(SerialExecutor):
    """In-process, but with two workers: the pool's path through load_documents, with
    every job it was sent kept."""

    workers = 2

    def __init__(self) -> None:
        self.jobs: list[list[str]] = []

    def map(self, fn, items):  # type: ignore[no-untyped-def]
        def record(item):  # type: ignore[no-untyped-def]
            self.jobs.append([d.doc_id for d in item[1]])
            return fn(item)

        return [record(item) for item in items]


def test_the_longest_documents_are_chunked_here_not_shipped_to_the_pool(
    sample_slice: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import arborgraph.pipeline.load as pipeline  # where load_documents reads it

    cfg = load_config()
    paths = [sample_slice / p for p in PAGES]
    serial = load_documents(paths, cfg, no_progress)
    sizes = {d.doc_id: len(d.text) for d in serial.docs}
    limit = sorted(sizes.values())[1]  # the two longest pages stay here
    monkeypatch.setattr(pipeline, "LOCAL_CHUNK_CHARS", limit)
    pool = _RecordingExecutor()
    loaded = load_documents(paths, cfg, no_progress, executor=pool)
    shipped = {doc_id for job in pool.jobs for doc_id in job}
    assert shipped == {d for d, n in sizes.items() if n <= limit} and len(shipped) == 2
    assert set(loaded.chunks) == shipped  # the others are left to chunk_remaining
    chunks = pipeline.chunk_remaining(loaded.docs, loaded.chunks, cfg, load_token_counter())
    assert chunks == pipeline.chunk_remaining(serial.docs, serial.chunks, cfg, load_token_counter())


OWNER_SCRIPT = """
import sys, time
from arborgraph.core.processes import worker_context

workers = [worker_context().Process(target=time.sleep, args=(600,)) for _ in range(2)]
for w in workers:
    w.start()
print(" ".join(str(w.pid) for w in workers), flush=True)
time.sleep(600)
"""


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie waiting for a reaper."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_workers_die_when_their_owner_is_killed() -> None:
    """A notebook kernel killed under nbconvert left its build's workers running for 24
    minutes (#38 item 4): workers end with the process that started them."""
    import os
    import signal
    import subprocess
    import sys
    import time

    owner = subprocess.Popen([sys.executable, "-c", OWNER_SCRIPT], stdout=subprocess.PIPE, text=True)
    try:
        line = owner.stdout.readline()  # type: ignore[union-attr]
        pids = [int(p) for p in line.split()]
        assert len(pids) == 2 and all(_running(p) for p in pids)
    finally:
        owner.send_signal(signal.SIGKILL)  # no cleanup: as when nbconvert's kernel is killed
        owner.wait()
    # a guard against a hang, not a speed limit: the workers would otherwise sleep 600 s
    deadline = time.monotonic() + 120
    while any(_running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [p for p in pids if _running(p)]
    for pid in left:  # do not leave them behind for the next test either
        os.kill(pid, signal.SIGKILL)
    assert not left, f"workers {left} outlived their owner"
