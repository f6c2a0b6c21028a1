"""Shared fixtures: a small real index over a slice of the bundled SQLite manual."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llm_server import llm_server  # noqa: F401  (the loopback OpenAI-API stand-in)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_MANUAL = ROOT / "examples" / "sqlite"

# A cross-referenced slice of the manual: WAL, locking, transactions, busy handling,
# table definitions. Small enough to build in seconds, linked enough for the graph.
SLICE = [
    "wal.md", "lockingv3.md", "lang_transaction.md", "isolation.md", "tempfiles.md",
    "c3ref_busy_timeout.md", "c3ref_busy_handler.md", "c3ref_wal_autocheckpoint.md",
    "c3ref_wal_checkpoint_v2.md", "foreignkeys.md", "autoinc.md", "lang_vacuum.md",
    "pgszchng2016.md", "limits.md", "datatype3.md", "withoutrowid.md", "stricttables.md",
    "lang_createtable.md", "rowidtable.md", "fasterthanfs.md",
]


def _shared_dir(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder of this test session shared by its xdist workers (one process's own
    temporary folder without xdist)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # .../pytest-N, above every worker's popen-gwK
    return base / name


@contextlib.contextmanager
def _session_lock(path: Path) -> Iterator[None]:
    """Held by one worker at a time: the first makes a shared thing, the others wait for
    it and then use it."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session", autouse=True)
def _session_user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """``$XDG_CACHE_HOME`` of the session's own (for this process and its subprocesses):
    no build in the suite reads or fills the user's shared embedding cache
    (~/.cache/arborgraph/embeddings), which would make counts of computed vectors depend
    on what ran before. The session's fixtures build under this one."""
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("user-cache"))
    yield
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


@pytest.fixture(autouse=True)
def _test_user_cache(_session_user_cache: None, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """... and each test an empty one of its own: a build in one test never takes vectors
    from the shared embedding cache another test filled. (Not under ``tmp_path``: tests
    list what their own folder holds.)"""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("user-cache")))


@pytest.fixture(scope="session")
def sample_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding a copy of the manual slice (tests may not edit examples/, nor
    this copy: the xdist workers share it)."""
    target = _shared_dir(tmp_path_factory, "manual")
    with _session_lock(target.with_name("manual.lock")):
        if not target.is_dir():
            partial = target.with_name("manual.partial")
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir()
            for name in SLICE:
                shutil.copy(SAMPLE_MANUAL / name, partial / name)
            partial.rename(target)
    return target


def copy_pages(sample_slice: Path, target: Path, pages: list[str] | tuple[str, ...]) -> Path:
    """A fresh folder ``target`` holding copies of some pages of the slice."""
    target.mkdir()
    for page in pages:
        shutil.copy(sample_slice / page, target / page)
    return target


@pytest.fixture(scope="session")
def sample_index(sample_slice: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index built once per session from the slice, with every structure: by the
    first xdist worker to ask for it, while the others wait (tests only read it)."""
    import arborgraph

    index = _shared_dir(tmp_path_factory, "index") / "idx"
    built = index.with_name("built")
    with _session_lock(index.parent.with_name("index.lock")):
        if not built.exists():
            index.parent.mkdir(exist_ok=True)
            arborgraph.build([sample_slice], index)
            built.touch()
    return index


@pytest.fixture(scope="session")
def sample_kb(sample_index: Path):  # type: ignore[no-untyped-def]
    import arborgraph

    return arborgraph.open(sample_index)


# -- spreading the files over the workers (scripts/test: -n 2 --dist loadfile) ----------

# Files in order of their time in this suite (a clean-clone run, slowest first), so that
# both workers start on the long ones and the short files fill in at the end, instead of
# one long file running alone while the other worker idles. Unlisted files follow in
# their usual order. (xdist keeps this order with --no-loadscope-reorder.)
SLOWEST_FILES = [
    "test_raptor_warmup.py", "test_raptor_build.py", "test_raptor_cluster.py", "test_notebooks.py",
    "test_local_model.py",
    "test_web.py", "test_neo4j_export.py", "test_foundation_e2e.py", "test_llm_build.py", "test_graph_update.py",
    "test_executors.py", "test_cli_output.py", "test_readme_snippets.py", "test_incremental.py",
    "test_incremental_reuse.py", "test_service.py", "test_results_contract.py",
    "test_hostile_inputs.py", "test_loader_fuzz.py", "test_index_hardening.py",
    "test_service_swap.py", "test_golden.py",
]
# Files run on the same worker, in this order, one after the other: every file that runs
# UMAP's numba kernels. In a clean clone numba's cache is empty; the warm-up test fills
# it (test_raptor_warmup.py) and the others load what it compiled, where side by side or
# first each would compile them itself (a minute of CPU each). The other worker starts on
# files that need no UMAP.
UMAP_FILES = ("test_raptor_warmup.py", "test_raptor_build.py", "test_raptor_cluster.py", "test_notebooks.py")
# ... and every file that uses the real Neo4j server (tests/support/neo4j_server.py): its
# community edition has one user database, which two files side by side would each empty
# under the other; and one worker starts one server.
NEO4J_FILES = ("test_neo4j_export.py", "test_neo4j_store.py", "test_neo4j_adopt.py")
SHARED_WORKER = {name: "umap-kernels" for name in UMAP_FILES} | {name: "neo4j-server" for name in NEO4J_FILES}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Slowest files first."""
    rank = {name: i for i, name in enumerate(SLOWEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: keeps order in a file


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # before xdist's own; absent without xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile``, each file one unit of work (so module fixtures build once),
    except that the files of one ``SHARED_WORKER`` group form a single unit. (Not
    ``--dist loadgroup`` with marks: xdist 3.8 cannot rename pytest 9's node ids.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedWorkerScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return SHARED_WORKER.get(Path(path).name, path)

    return SharedWorkerScheduling(config, log)
