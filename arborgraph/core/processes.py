"""Worker processes and the cores they may use.

Every Arborgraph process pool (the build's executor, the RAPTOR clustering pool) starts
its workers from :func:`worker_context`.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.context
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any


def available_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


# -- worker processes that never run the caller's script -------------------------------
#
# A fork server (or spawn) worker normally imports the parent's __main__ again before it
# runs anything. A script that calls arborgraph.build() at top level, without an
# ``if __name__ == "__main__":`` guard (the README's example as a file), would build
# again inside every worker; multiprocessing stops that with "An attempt has been made
# to start a new process before the current process has finished its bootstrapping
# phase", the pool breaks and the build fails. Our workers run only functions of
# arborgraph, ingest, raptor and graphrag, so they are started without the parent's
# __main__: a script works guarded or not (and so do notebooks and the REPL).
_launching = threading.local()
_patch_lock = threading.Lock()
_MAIN_KEYS = ("init_main_from_path", "init_main_from_name")


def _install_preparation_filter() -> None:
    """Wrap multiprocessing's preparation data once: for launches made by our pools
    (marked in a thread-local), leave out what would make the child import __main__."""
    from multiprocessing import spawn

    with _patch_lock:
        if getattr(spawn.get_preparation_data, "_arborgraph", False):
            return
        original = spawn.get_preparation_data

        def preparation_data(name: str) -> dict[str, Any]:
            data = original(name)
            if getattr(_launching, "library_pool", False):
                for key in _MAIN_KEYS:
                    data.pop(key, None)
            return data

        preparation_data._arborgraph = True  # type: ignore[attr-defined]
        spawn.get_preparation_data = preparation_data


def _library_popen(process_obj: Any) -> Any:
    from multiprocessing import popen_forkserver

    _launching.library_pool = True
    try:
        return popen_forkserver.Popen(process_obj)
    finally:
        _launching.library_pool = False


# -- workers die with their owner ----------------------------------------------------
#
# A worker blocked on its pool's queue outlives a parent killed without cleanup (a
# notebook kernel under a killed nbconvert left four of them running for 24 minutes).
# The fork server exits when its owner dies; each worker then follows: on Linux the
# kernel signals it (PR_SET_PDEATHSIG), elsewhere (and should that signal be missed)
# a watchdog thread sees its parent or owner gone and ends the process.
_PR_SET_PDEATHSIG = 1
_WATCH_EVERY_S = 1.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def _watch(owner: int, parent: int) -> None:
    while True:
        time.sleep(_WATCH_EVERY_S)
        if os.getppid() != parent or not _alive(owner):
            os._exit(1)  # no cleanup to run: the results have no one to go to


def _die_with_owner(owner: int) -> None:
    """Make this (worker) process end when ``owner`` or its own parent dies."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        except (OSError, AttributeError):  # no prctl in this libc: the watchdog remains
            pass
    if not _alive(owner) or os.getppid() != parent:  # died before the signal was armed
        os._exit(1)
    threading.Thread(target=_watch, args=(owner, parent), name="arborgraph-owner-watch", daemon=True).start()


class _LibraryProcess(multiprocessing.context.ForkServerProcess):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._arborgraph_owner = os.getpid()  # pickled to the child with the process

    def run(self) -> None:
        _die_with_owner(self._arborgraph_owner)
        super().run()

    @staticmethod
    def _Popen(process_obj: Any) -> Any:  # noqa: N802 - multiprocessing's name
        return _library_popen(process_obj)


class _LibraryContext(multiprocessing.context.ForkServerContext):
    Process = _LibraryProcess


def worker_context(preload: Sequence[str] = ()) -> multiprocessing.context.BaseContext:
    """The multiprocessing context of every Arborgraph pool: a fork server (forking the
    parent is unsafe once torch and ONNX Runtime have started threads) whose workers do
    not import the caller's ``__main__``. Functions sent to them must therefore be
    importable from a module, not defined in the calling script."""
    _install_preparation_filter()
    context = _LibraryContext()
    if preload:
        context.set_forkserver_preload(list(preload))
    return context
