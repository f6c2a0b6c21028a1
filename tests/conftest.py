"""Shared fixtures: a small real index over a slice of the bundled SQLite manual."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

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


@pytest.fixture(scope="session")
def sample_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding a copy of the manual slice (tests may not edit examples/)."""
    target = tmp_path_factory.mktemp("manual")
    for name in SLICE:
        shutil.copy(SAMPLE_MANUAL / name, target / name)
    return target


def copy_pages(sample_slice: Path, target: Path, pages: list[str] | tuple[str, ...]) -> Path:
    """A fresh folder ``target`` holding copies of some pages of the slice."""
    target.mkdir()
    for page in pages:
        shutil.copy(sample_slice / page, target / page)
    return target


@pytest.fixture(scope="session")
def sample_index(sample_slice: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index built once per session from the slice, with every structure."""
    import arborgraph

    index = tmp_path_factory.mktemp("index") / "idx"
    arborgraph.build([sample_slice], index)
    return index


@pytest.fixture(scope="session")
def sample_kb(sample_index: Path):  # type: ignore[no-untyped-def]
    import arborgraph

    return arborgraph.open(sample_index)
