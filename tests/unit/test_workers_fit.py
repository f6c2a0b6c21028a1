"""How many serve workers the free memory holds: each takes what the first one holds,
within a share of what is free once it serves (the operating system's counters are the
boundary faked here: the memory free, and what the first worker holds, which a real
process's would change between two readings while the suite runs beside it)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import psutil
import pytest

from arborgraph.service import dispatch

HELD = 300 * 2**20  # what the first worker holds


def _counters(monkeypatch: pytest.MonkeyPatch, available: int, pid: int) -> None:
    monkeypatch.setattr(psutil, "virtual_memory", lambda: SimpleNamespace(available=available))

    def process(asked: int) -> SimpleNamespace:
        assert asked == pid  # the worker asked about is the one measured
        return SimpleNamespace(memory_info=lambda: SimpleNamespace(rss=HELD))

    monkeypatch.setattr(psutil, "Process", process)


def test_as_many_as_the_free_memory_holds_and_no_more_than_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    _counters(monkeypatch, int(10 * HELD / dispatch.MEMORY_SHARE) + 1, os.getpid())
    assert dispatch.workers_that_fit(os.getpid(), 3) == 3
    assert dispatch.workers_that_fit(os.getpid(), 20) == 10


def test_none_more_when_the_free_memory_holds_no_second_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    _counters(monkeypatch, int(HELD / dispatch.MEMORY_SHARE) - 1, os.getpid())
    assert dispatch.workers_that_fit(os.getpid(), 3) == 0
    _counters(monkeypatch, 0, os.getpid())
    assert dispatch.workers_that_fit(os.getpid(), 3) == 0
