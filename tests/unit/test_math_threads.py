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


_SERVICE_PROCESS = """
from arborgraph.core.math_threads import one_math_thread, one_math_thread_from_now
one_math_thread_from_now()  # before numpy is imported: it must load numpy's BLAS to limit it
import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

def blas():
    return sorted({lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"})

print(blas())
with one_math_thread():
    np.ones((64, 64)) @ np.ones(64)
print(blas())
"""


def test_a_service_process_keeps_one_blas_thread_between_questions() -> None:
    # a subprocess: the setting is the whole process's, for the rest of its life
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _SERVICE_PROCESS], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[:2] == ["[1]", "[1]"], run.stdout
