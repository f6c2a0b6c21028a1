"""Questions run their BLAS on one thread, and give the process its own setting back."""

from __future__ import annotations

import threading

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from arborgraph.core.math_threads import on_one_math_thread, one_math_thread


def _blas_threads() -> set[int]:
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


def test_blas_runs_on_one_thread_inside_and_gets_its_setting_back_after() -> None:
    np.ones((2, 2)) @ np.ones(2)  # BLAS loaded
    with threadpool_limits(limits=2, user_api="blas"):  # as on a two-core machine
        assert _blas_threads() == {2}
        with one_math_thread():
            assert _blas_threads() == {1}
            with one_math_thread():  # nested: still one, and the outer block keeps it
                assert _blas_threads() == {1}
            assert _blas_threads() == {1}
        assert _blas_threads() == {2}


def test_questions_on_several_threads_each_run_on_one_until_the_last_is_done() -> None:
    np.ones((2, 2)) @ np.ones(2)
    first_in, second_done, seen = threading.Event(), threading.Event(), []

    @on_one_math_thread
    def short_question() -> None:
        first_in.wait(10)
        seen.append(("second, while the first answers", _blas_threads()))

    @on_one_math_thread
    def long_question() -> None:
        first_in.set()
        second_done.wait(10)
        seen.append(("first, after the second ended", _blas_threads()))

    with threadpool_limits(limits=2, user_api="blas"):
        worker = threading.Thread(target=lambda: (short_question(), second_done.set()))
        worker.start()
        long_question()
        worker.join(10)
        assert seen == [("second, while the first answers", {1}), ("first, after the second ended", {1})]
        assert _blas_threads() == {2}
