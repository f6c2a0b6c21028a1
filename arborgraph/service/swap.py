"""The served knowledge base, swapped for each new generation a build lands.

A watcher thread polls the index's live generation. A new one is opened beside the
old, checked with real queries on every route it has built (and its per-scope trees
and graphs loaded, so nothing is read lazily from disk later), and only then swapped
in. A request takes a :meth:`ServedIndex.lease` on the knowledge base current when it
starts and finishes on it, whatever lands meanwhile; the old one is closed when its
last lease ends. A generation that fails to open or to answer is refused: the old one
keeps serving and :attr:`ServedIndex.refused` says why (``/v1/health`` shows it).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arborgraph.kb import KnowledgeBase

log = logging.getLogger("arborgraph.service")

# a question every index can answer on every route: it checks the new generation end to end
PROBE_QUESTION = "overview of the main topics and how they relate"


# -- the knowledge base's generation API, in the names the watcher uses ---------------

def generation_name(kb: KnowledgeBase) -> str:
    """The name of the generation ``kb`` serves ("gen-000007")."""
    return kb.generation


def live_generation(index_dir: Path) -> str:
    """The name of the index's live generation; IndexUnusable when ``CURRENT`` is
    missing or not a plain pointer to a generation directory."""
    import arborgraph

    return arborgraph.current_generation(index_dir)


def reopen(kb: KnowledgeBase) -> KnowledgeBase:
    """A knowledge base on the live generation, sharing ``kb``'s loaded query model."""
    return kb.refresh()


def close(kb: KnowledgeBase) -> None:
    kb.close()


def validate(kb: KnowledgeBase) -> None:
    """Raise if ``kb`` cannot answer: a real query on every built route, and every
    scope's tree and graph loaded now (a later rebuild may prune this generation's
    files; nothing may be left to read from them)."""
    kb.engine.warm()
    for route in kb.index.routes:
        kb.query(PROBE_QUESTION, route=route, top_k=3, budget_tokens=200)  # type: ignore[arg-type]
    kb.info()


@dataclass
class Refusal:
    generation: str
    reason: str
    at: str


class _Lease:
    """A knowledge base and how many requests are using it."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self.generation = generation_name(kb)
        self.users = 0
        self.retired = False


class ServedIndex:
    """The knowledge base being served, kept on the index's latest good generation."""

    def __init__(
        self,
        index_dir: str | Path,
        *,
        poll_seconds: float = 1.0,
        opener: Callable[[Path], KnowledgeBase] | None = None,
        verify_seconds: float = 600.0,
    ) -> None:
        self.index_dir = Path(index_dir)
        self.poll_seconds = poll_seconds
        self.verify_seconds = verify_seconds
        opener = opener or KnowledgeBase.open
        began = time.perf_counter()
        kb = opener(self.index_dir)
        opened = time.perf_counter()
        validate(kb)
        # what start-up spent where (the CLI logs it)
        self.open_seconds = round(opened - began, 2)
        self.check_seconds = round(time.perf_counter() - opened, 2)
        self._lock = threading.Lock()
        self._current = _Lease(kb)
        self.refused: Refusal | None = None
        self.swaps = 0
        self.started_at = time.time()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # set while a new generation is opened and checked (request work narrows meanwhile)
        self.preparing = threading.Event()
        # generations already tried and refused: not reopened until CURRENT moves on
        self._last_seen = self._current.generation
        self._info_cache: dict[str, Any] = {}
        # what is wrong with the index on disk now ("current": its pointer, "disk": the
        # served generation's files); empty when all is well. /v1/health shows it.
        self.problems: dict[str, str] = {}
        self._verified_at = time.monotonic()  # opening verified every file

    @property
    def generation(self) -> str:
        return self._current.generation

    @property
    def kb(self) -> KnowledgeBase:
        """The current knowledge base (prefer :meth:`lease` for a request's duration)."""
        return self._current.kb

    @contextlib.contextmanager
    def lease(self, pinned: "_Lease | None" = None) -> Iterator[KnowledgeBase]:
        """The current knowledge base (or ``pinned``'s), kept open until the block ends.
        Take it inside the worker thread that uses it: a call that outlives its request
        (timed out) still holds it, so a swap never closes it under the work."""
        with self._hold(pinned) as held:
            yield held.kb

    @contextlib.contextmanager
    def pin(self) -> Iterator[_Lease]:
        """The current generation, held until the block ends, for work that must finish
        on one generation across several worker calls (a batch, an answer stream): each
        call takes :meth:`lease` with it."""
        with self._hold(None) as held:
            yield held

    @contextlib.contextmanager
    def _hold(self, pinned: "_Lease | None") -> Iterator[_Lease]:
        with self._lock:
            held = pinned or self._current
            held.users += 1
        try:
            yield held
        finally:
            with self._lock:
                held.users -= 1
                done = held.retired and held.users == 0
            if done:
                close(held.kb)

    def check(self) -> bool:
        """Look at the index on disk: report a broken ``CURRENT`` or damaged files of the
        served generation in :attr:`problems` (cleared once mended), and swap in the
        live generation if it is new and answers; True if swapped."""
        from arborgraph.core.errors import IndexUnusable

        try:
            live = live_generation(self.index_dir)
        except IndexUnusable as exc:  # deleted, garbled or symlinked: keep serving what we have
            self._problem("current", f"{exc}; still serving {self.generation}, a restart would fail")
            return False
        self._problem("current", None)
        if live == self._current.generation:
            if self.refused is not None:  # CURRENT points back at what is served: nothing is refused now
                log.info("CURRENT names %s again; the refusal of %s is cleared", live, self.refused.generation)
                self.refused = None
            self._last_seen = live
            self._check_disk()
            return False
        if live == self._last_seen:  # refused already: tried again only once CURRENT moves on
            self._check_disk()
            return False
        self._last_seen = live
        began = time.perf_counter()
        self.preparing.set()
        try:
            kb = reopen(self._current.kb)
            validate(kb)
        except Exception as exc:
            self._refuse(live, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            return False
        finally:
            self.preparing.clear()
        new = _Lease(kb)
        with self._lock:
            old, self._current = self._current, new
            old.retired = True
            idle = old.users == 0
        self.refused = None
        self._problem("disk", None)  # the new generation was verified as it opened
        self._verified_at = time.monotonic()
        self.swaps += 1
        log.info("serving %s (was %s), opened and checked in %.1f s", new.generation, old.generation, time.perf_counter() - began)
        if idle:
            close(old.kb)
        return True

    def _check_disk(self) -> None:
        """Whether the served generation's files are still whole: sizes on every poll,
        every checksum each ``verify_seconds`` (the server answers from memory either
        way, but a restart would read them)."""
        from arborgraph.index.store import changed_on_disk, intact_problem, last_intact_generation

        gen = self._current.kb.index.on_disk
        problem = changed_on_disk(gen)
        # a known problem is looked at again sooner: it clears soon after it is mended
        interval = self.verify_seconds if "disk" not in self.problems else min(self.verify_seconds, 30.0)
        due = self.verify_seconds > 0 and time.monotonic() - self._verified_at >= interval
        if problem is None and due:
            self._verified_at = time.monotonic()
            problem = intact_problem(self.index_dir, gen.path)
        elif problem is None and "disk" in self.problems:
            return  # found by a checksum pass: only another pass clears it
        if problem is None:
            self._problem("disk", None)
            return
        good = last_intact_generation(self.index_dir, gen.path)
        advice = (
            f"; {good.name} is intact: 'arborgraph rollback --index DIR' makes it live" if good
            else "; no older intact generation: rebuild the index"
        )
        self._problem("disk", f"{gen.name} is damaged on disk ({problem.split(': ', 1)[-1]}); answering from memory{advice}")

    def _problem(self, kind: str, message: str | None) -> None:
        if message is None:
            if self.problems.pop(kind, None) is not None:
                log.info("the index's %s problem is gone", kind)
            return
        message = message.replace(str(self.index_dir), self.index_dir.name)  # no server paths in /v1/health
        if self.problems.get(kind) != message:
            log.warning("%s", message)
        self.problems[kind] = message

    def _refuse(self, generation: str, reason: str) -> None:
        reason = reason.replace(str(self.index_dir), self.index_dir.name)  # no server paths in /v1/health
        self.refused = Refusal(
            generation=generation,
            reason=reason,
            at=dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
        )
        log.warning("refused generation %s, still serving %s: %s", generation, self.generation, reason)

    # -- the watcher --------------------------------------------------------------

    def start(self) -> None:
        """Poll for new generations in a background thread until :meth:`stop`."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._watch, name="arborgraph-swap", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def _watch(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            try:
                self.check()
            except Exception:  # never let the watcher die: the next poll tries again
                log.exception("generation check failed")
