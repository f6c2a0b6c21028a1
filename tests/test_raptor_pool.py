"""TreePool: a tree build's jobs shared between its own process and helper processes."""

from __future__ import annotations

import os

import pytest

from raptor.pool import TreePool


def _where(i: int) -> tuple[int, int]:
    return i, os.getpid()


def _fail(i: int) -> int:
    if i == 3:
        raise ValueError("job 3 failed")
    return i


def test_results_come_back_in_job_order_from_both_processes_and_failures_propagate() -> None:
    with TreePool(2) as pool:
        assert pool.wait_ready(timeout=120)
        # once a helper is up, deferred jobs go to it
        assert pool.defer(_where, -1).result()[1] != os.getpid()
        results = pool.run_all(_where, [(i,) for i in range(12)], cost=[i % 5 for i in range(12)])
        assert [i for i, _ in results] == list(range(12))
        pids = {pid for _, pid in results}
        assert os.getpid() in pids and len(pids) == 2  # the build's process and the helper
        assert pool.helper_cpu_s > 0.0
        with pytest.raises(ValueError, match="job 3 failed"):
            pool.run_all(_fail, [(i,) for i in range(6)], cost=[1.0] * 6)


def test_one_worker_is_not_a_pool() -> None:
    with pytest.raises(ValueError):
        TreePool(1)
