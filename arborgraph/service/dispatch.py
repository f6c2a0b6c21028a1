"""``serve --workers N``: one port, N worker processes, each connection handed to the
worker holding the fewest.

uvicorn's own ``--workers`` lets every process accept from the shared socket, and
asyncio accepts every connection waiting at once: a burst of keep-alive clients lands
in whichever process woke first (15 of 16 connections in one process, and 16 of 16, in
two trials of ``bench_serve.py``'s load), and a keep-alive connection stays where it
landed, so one core queued while the other idled. Here the parent process accepts
every connection and passes its descriptor (``SCM_RIGHTS`` over a Unix socket pair) to
the ready worker with the fewest open connections; the worker runs uvicorn's own HTTP
protocol on it. The connection is the client's own socket, so the peer address, host
checks and limits are as in one process.

The parent holds no index. A worker that dies after it was ready is started again; one
that dies before (an index that cannot be opened, say) stops the service with its
error already printed. SIGINT or SIGTERM stops accepting and gives the workers
uvicorn's graceful shutdown; a worker whose parent is gone (its control socket closed)
shuts down by itself.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("arborgraph.service")

READY = b"r"  # worker -> parent: serving
CLOSED = b"x"  # worker -> parent: one of its connections closed
CONNECTION = b"c"  # parent -> worker: a connection's descriptor rides along
STOP_WAIT_S = 15.0  # uvicorn's graceful shutdown (5 s) and then some, before a kill
# the share of the memory free once the first worker is serving that further workers may
# take: a worker grows under load (the sample manual's, about a fifth), and the
# machine's other processes keep theirs
MEMORY_SHARE = 0.75


@dataclass
class _Worker:
    number: int
    process: subprocess.Popen[bytes]
    control: socket.socket  # the parent's end of the pair
    ready: bool = False
    open_connections: int = 0
    handed: int = 0  # connections ever handed over: ties go to the one handed fewer


def _least_busy(workers: list[_Worker]) -> _Worker | None:
    ready = [w for w in workers if w.ready]
    return min(ready, key=lambda w: (w.open_connections, w.handed, w.number)) if ready else None


# prometheus_client's own variable, read when a process first imports it: the workers'
# counts go to files in this folder, and a scrape of any worker sums them all
METRICS_ENV = "PROMETHEUS_MULTIPROC_DIR"


def _spawn_worker(number: int, settings: dict[str, Any], settings_env: str, metrics_dir: str) -> _Worker:
    parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    env = {**os.environ, settings_env: json.dumps(settings), METRICS_ENV: metrics_dir}
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "arborgraph.service.worker", str(child_end.fileno())],
            pass_fds=(child_end.fileno(),), env=env,
        )
    finally:
        child_end.close()
    parent_end.setblocking(False)
    return _Worker(number=number, process=process, control=parent_end)


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.create_server((host, port), family=family, backlog=2048)
    listener.setblocking(False)
    return listener


def workers_that_fit(first_pid: int, at_most: int) -> int:
    """How many more workers the memory free now holds (at most ``at_most``), each
    taking what the serving worker ``first_pid`` holds; see :data:`MEMORY_SHARE`."""
    import psutil

    held = psutil.Process(first_pid).memory_info().rss
    free = psutil.virtual_memory().available
    return max(0, min(at_most, int(free * MEMORY_SHARE // max(held, 1))))


def _held_mb(pid: int) -> int:
    import psutil

    return int(psutil.Process(pid).memory_info().rss // 2**20)


def run(
    settings: dict[str, Any], settings_env: str, workers: int, host: str, port: int, *, fit_memory: bool = False
) -> int:
    """Serve on ``host:port`` with ``workers`` processes until SIGINT or SIGTERM; the
    exit code (0, or that of a worker that could not start: its error is printed).
    With ``fit_memory`` (a number of workers the user did not choose), the first
    starts alone, and the others only as far as the memory then free holds them."""
    listener = _listen(host, port)
    bound = listener.getsockname()[1]
    selector = selectors.DefaultSelector()
    stopping = False

    def stop(_signum: int, _frame: Any) -> None:
        nonlocal stopping
        stopping = True

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    metrics = tempfile.TemporaryDirectory(prefix="arborgraph-metrics-")
    pool = [_spawn_worker(number, settings, settings_env, metrics.name) for number in range(1 if fit_memory else workers)]
    for worker in pool:
        selector.register(worker.control, selectors.EVENT_READ, worker)
    to_fit = workers - len(pool)  # started once the first serves and its size is known
    log.info("listening on http://%s:%d: %s%d worker processes, each connection to the one holding the fewest", host, bound,
             "up to " if fit_memory else "", workers)
    accepting = False
    code = 0
    try:
        while not stopping:
            for key, _ in selector.select(timeout=0.5):
                if key.fileobj is listener:
                    _hand_over(listener, pool)
                    continue
                worker: _Worker = key.data
                if not _read_control(worker):
                    selector.unregister(worker.control)
                    worker.control.close()
                    returncode = worker.process.wait()
                    if not worker.ready:
                        log.error("worker process %d exited with %s before it was ready: stopping", worker.number, returncode)
                        code = returncode if returncode and returncode > 0 else 1
                        stopping = True
                        break
                    log.warning("worker process %d exited with %s: starting another", worker.number, returncode)
                    replacement = _spawn_worker(worker.number, settings, settings_env, metrics.name)
                    pool[pool.index(worker)] = replacement
                    selector.register(replacement.control, selectors.EVENT_READ, replacement)
            if to_fit and pool[0].ready:
                import psutil

                try:
                    more = workers_that_fit(pool[0].process.pid, to_fit)
                    held_mb = _held_mb(pool[0].process.pid)
                except psutil.Error:  # the first worker exited meanwhile: measure its replacement
                    continue
                if more < to_fit:
                    log.warning(
                        "%d of %d worker processes: each holds about %d MB and the memory free holds no more "
                        "(--workers N to choose)", 1 + more, workers, held_mb,
                    )
                for number in range(1, 1 + more):
                    worker = _spawn_worker(number, settings, settings_env, metrics.name)
                    pool.append(worker)
                    selector.register(worker.control, selectors.EVENT_READ, worker)
                to_fit = 0
            # connections wait in the backlog while no worker is ready (at start, or all restarting)
            can_accept = not stopping and _least_busy(pool) is not None
            if can_accept != accepting:
                if can_accept:
                    selector.register(listener, selectors.EVENT_READ)
                else:
                    selector.unregister(listener)
                accepting = can_accept
    finally:
        selector.close()
        listener.close()
        _stop_workers(pool)
        metrics.cleanup()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return code


def _hand_over(listener: socket.socket, pool: list[_Worker]) -> None:
    """Accept every waiting connection, each passed to the least busy ready worker."""
    while _least_busy(pool) is not None:
        try:
            connection, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:  # out of descriptors, a connection reset while queued
            log.warning("accept failed: %s", exc)
            return
        with connection:
            worker = _least_busy(pool)
            assert worker is not None  # the loop's condition; nothing else changes the pool here
            try:
                socket.send_fds(worker.control, [CONNECTION], [connection.fileno()])
            except OSError as exc:  # the worker is going away; the client sees a reset
                log.warning("could not hand a connection to worker process %d: %s", worker.number, exc)
                continue
            worker.open_connections += 1
            worker.handed += 1


def _read_control(worker: _Worker) -> bool:
    """Take the worker's messages; False when its end has closed (it exited)."""
    while True:
        try:
            message = worker.control.recv(16)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            return False
        if not message:
            return False
        if message == READY:
            worker.ready = True
            log.info("worker process %d (pid %d) is serving", worker.number, worker.process.pid)
        elif message == CLOSED:
            worker.open_connections = max(0, worker.open_connections - 1)


def _stop_workers(workers: list[_Worker]) -> None:
    for worker in workers:
        if worker.process.poll() is None:
            worker.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    for worker in workers:
        try:
            worker.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            worker.process.kill()
            worker.process.wait()
        worker.control.close()
