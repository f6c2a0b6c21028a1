"""How many serve workers the free memory holds: each takes what the first one holds,
within a share of what is free once it serves (the operating system's counters are the
boundary faked here; the process measured is this one)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import psutil
import pytest

from arborgraph.service import dispatch


def _free(monkeypatch: pytest.MonkeyPatch, available: int) -> None:
    monkeypatch.setattr(psutil, "virtual_memory", lambda: SimpleNamespace(available=available))


def test_as_many_as_the_free_memory_holds_and_no_more_than_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    held = psutil.Process(os.getpid()).memory_info().rss
    _free(monkeypatch, int(10 * held / dispatch.MEMORY_SHARE) + 1)
    assert dispatch.workers_that_fit(os.getpid(), 3) == 3
    assert dispatch.workers_that_fit(os.getpid(), 20) == 10


def test_none_more_when_the_free_memory_holds_no_second_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    held = psutil.Process(os.getpid()).memory_info().rss
    _free(monkeypatch, int(held / dispatch.MEMORY_SHARE) - 1)
    assert dispatch.workers_that_fit(os.getpid(), 3) == 0
    _free(monkeypatch, 0)
    assert dispatch.workers_that_fit(os.getpid(), 3) == 0
