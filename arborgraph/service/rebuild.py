"""A rebuild of the served index from its documents folder, run by the server in a
background thread through the real build pipeline (:func:`arborgraph.pipeline.build_index`,
with the index's own settings); the served index's watcher swaps the new generation in
once it has been opened and checked, as for a build from the command line.

One rebuild runs at a time (the index's build lock holds for other processes too).
Its status says which stage runs and how far the whole build is, as stage names and
a share of the stages, never counts of documents or chunks: a writer may not be able
to read every document the index holds, and a count would tell how much is hidden.

The status is kept in the index directory (``rebuild-status.json``) at every change, so
a server started again says what became of the last rebuild: one that was running when
the server died (``kill -9``, a crash, a reboot) is ``interrupted``; the build's own
commit keeps the index as it was before it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from arborgraph.config import Config
from arborgraph.index import layout
from arborgraph.index.index_files import write_atomic

# the pipeline's stages in order, as progress() names them (the untimed ones are quick)
STAGE_ORDER = ("load", "chunk", "contradictions", "contextual_prefixes", "embed", "lexical", "dense_index", "tree", "graph")


class RebuildBusy(Exception):
    """A rebuild was asked for while one runs (answered 409)."""


@dataclass
class RebuildStatus:
    state: str = "idle"  # idle | running | done | failed | interrupted
    stage: str | None = None
    stages_done: int = 0
    stages_total: int = len(STAGE_ORDER)
    started_at: str | None = None
    finished_at: str | None = None
    seconds: float | None = None
    generation: str | None = None  # the generation the build wrote
    unchanged: bool = False  # nothing had changed: no new generation
    served: bool = False  # the served index is on that generation now
    error: str | None = None
    started_by: str | None = None  # the key id that asked for it
    history: list[dict[str, Any]] = field(default_factory=list)  # stages as they began, with their time


INTERRUPTED = "the server stopped while this rebuild ran; the index is as it was before it: rebuild again"
_MAX_STATUS_BYTES = 1 << 20


def _read_status(path: Path) -> RebuildStatus:
    """The status a server before this one left (a running one is ``interrupted``
    now); a fresh one when there is none or it cannot be read."""
    try:
        with path.open("rb") as handle:
            data = json.loads(handle.read(_MAX_STATUS_BYTES))
        known = {f.name for f in fields(RebuildStatus)}
        status = RebuildStatus(**{k: v for k, v in data.items() if k in known})
    except (OSError, ValueError, TypeError, AttributeError):
        return RebuildStatus()
    if status.state not in ("idle", "running", "done", "failed", "interrupted"):
        return RebuildStatus()
    if status.state == "running":
        status.state, status.error = "interrupted", INTERRUPTED
    return status


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


class Rebuilds:
    """Starts rebuilds and keeps the status of the last one."""

    def __init__(
        self, docs_dir: Path, index_dir: Path, config: Callable[[], Config],
        served_generation: Callable[[], str],
    ) -> None:
        self.docs_dir = docs_dir
        self.index_dir = index_dir
        self._config = config
        self._served_generation = served_generation
        self._lock = threading.Lock()
        self._file = layout.rebuild_status_file(index_dir)
        self._status = _read_status(self._file)
        self._thread: threading.Thread | None = None
        if self._status.state == "interrupted":
            self._save()

    def _save(self) -> None:
        """Keep the status on disk (called under the lock, or before any thread runs);
        a disk that refuses it costs only what a restarted server can tell."""
        with contextlib.suppress(OSError):
            write_atomic(self._file, json.dumps(asdict(self._status)))

    def status(self) -> dict[str, Any]:
        with self._lock:
            status = asdict(self._status)
        if status["generation"] and not status["unchanged"]:
            status["served"] = self._served_generation() == status["generation"]
        elif status["unchanged"]:
            status["served"] = True
        return status

    def start(self, key_id: str | None) -> dict[str, Any]:
        """Begin a rebuild in a background thread; RebuildBusy when one runs."""
        with self._lock:
            if self._status.state == "running":
                raise RebuildBusy("a rebuild is running already: follow it at GET /v1/rebuild")
            self._status = RebuildStatus(state="running", started_at=_now(), started_by=key_id)
            self._save()
            self._thread = threading.Thread(target=self._run, name="arborgraph-rebuild", daemon=True)
            self._thread.start()
        return self.status()

    def wait(self, timeout: float | None = None) -> None:
        """Until the running rebuild ends (tests; the server never waits)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _progress(self, stage: str, done: int, total: int | None) -> None:
        with self._lock:
            if stage == self._status.stage or stage not in STAGE_ORDER:
                return
            self._status.stage = stage
            self._status.stages_done = STAGE_ORDER.index(stage)
            self._status.history.append({"stage": stage, "at": _now()})
            self._save()

    def _run(self) -> None:
        began = time.perf_counter()
        from arborgraph.pipeline import build_index

        try:
            report = build_index([self.docs_dir], self.index_dir, self._config(), progress=self._progress, wait_for_lock=False)
        except Exception as exc:
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            # the server's paths are nobody's business over HTTP
            for path in (str(self.index_dir), str(self.docs_dir)):
                message = message.replace(path, Path(path).name)
            with self._lock:
                self._status.state, self._status.error = "failed", message
                self._status.finished_at, self._status.seconds = _now(), round(time.perf_counter() - began, 1)
                self._save()
            return
        with self._lock:
            self._status.state, self._status.stage = "done", None
            self._status.stages_done = len(STAGE_ORDER)
            self._status.generation, self._status.unchanged = report.generation, bool(report.unchanged)
            self._status.finished_at, self._status.seconds = _now(), round(time.perf_counter() - began, 1)
            self._save()
