"""TreePool: a tree build's jobs shared between its own process and helper processes."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from raptor.pool import TreePool


@pytest.fixture(scope="module")
def pool() -> Iterator[TreePool]:
    with TreePool(2) as started:
        assert started.wait_ready(timeout=120)
        yield started


def _where(i: int) -> tuple[int, int]:
    return i, os.getpid()


def _nap(i: int) -> tuple[int, int]:
    time.sleep(0.02)
    return _where(i)


def _fail(i: int) -> int:
    if i == 3:
        raise ValueError("job 3 failed")
    return i


def test_results_come_back_in_job_order_from_both_processes(pool: TreePool) -> None:
    # once a helper is up, deferred jobs go to it
    assert pool.defer(_where, -1).result()[1] != os.getpid()
    results = pool.run_all(_nap, [(i,) for i in range(12)], cost=[i % 5 for i in range(12)])
    assert [i for i, _ in results] == list(range(12))
    pids = {pid for _, pid in results}
    assert os.getpid() in pids and len(pids) == 2  # the build's process and the helper
    assert pool.helper_cpu_s > 0.0


def test_a_failing_job_fails_the_run(pool: TreePool) -> None:
    with pytest.raises(ValueError, match="job 3 failed"):
        pool.run_all(_fail, [(i,) for i in range(6)], cost=[1.0] * 6)


def test_imap_yields_in_order_and_can_stop_early(pool: TreePool) -> None:
    seen = []
    for value in pool.imap(_where, [(i,) for i in range(40)]):
        seen.append(value)
        if len(seen) == 5:
            break
    assert [i for i, _ in seen] == list(range(5))
    # jobs that take a moment: the helper is free again soon after the stop above
    results = list(pool.imap(_nap, [(i,) for i in range(20)]))
    assert [i for i, _ in results] == list(range(20))
    assert len({pid for _, pid in results}) == 2  # a helper computed jobs ahead


def test_one_worker_is_not_a_pool() -> None:
    with pytest.raises(ValueError):
        TreePool(1)
