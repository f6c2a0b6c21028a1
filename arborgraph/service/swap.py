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


def live_generation(index_dir: Path) -> str | None:
    """The name of the index's live generation, or None when it has none."""
    import arborgraph
    from arborgraph.index.store import IndexUnusable

    try:
        return arborgraph.current_generation(index_dir)
    except IndexUnusable:
        return None


def reopen(kb: KnowledgeBase) -> KnowledgeBase:
    """A knowledge base on the live generation, sharing ``kb``'s loaded query model."""
    return kb.refresh()


def close(kb: KnowledgeBase) -> None:
    kb.close()


def validate(kb: KnowledgeBase) -> None:
    """Raise if ``kb`` cannot answer: a real query on every built route, and every
    scope's tree and graph loaded now (a later rebuild may prune this generation's
    files; nothing may be left to read from them)."""
    for route in kb.routes:
        kb.query(PROBE_QUESTION, route=route, top_k=3, budget_tokens=200)  # type: ignore[arg-type]
    for scope in kb.scopes:
        if "tree" in kb.routes:
            scope.tree  # noqa: B018 - loads the cached property
            scope.tree_lexical  # noqa: B018
        if "graph" in kb.routes:
            scope.graph  # noqa: B018
    kb.info()
    kb.count_tokens  # noqa: B018


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
    ) -> None:
        self.index_dir = Path(index_dir)
        self.poll_seconds = poll_seconds
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

    @property
    def generation(self) -> str:
        return self._current.generation

    @property
    def kb(self) -> KnowledgeBase:
        """The current knowledge base (prefer :meth:`lease` for a request's duration)."""
        return self._current.kb

    @contextlib.contextmanager
    def lease(self) -> Iterator[KnowledgeBase]:
        """The current knowledge base, kept open until the block ends."""
        with self._lock:
            held = self._current
            held.users += 1
        try:
            yield held.kb
        finally:
            with self._lock:
                held.users -= 1
                done = held.retired and held.users == 0
            if done:
                close(held.kb)

    def check(self) -> bool:
        """Swap in the live generation if it is new and answers; True if swapped."""
        try:
            live = live_generation(self.index_dir)
        except Exception as exc:  # a garbled CURRENT: keep serving what we have
            self._refuse("CURRENT", f"cannot read the live generation: {exc}")
            return False
        if live is None or live == self._current.generation or live == self._last_seen:
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
        self.swaps += 1
        log.info("serving %s (was %s), opened and checked in %.1f s", new.generation, old.generation, time.perf_counter() - began)
        if idle:
            close(old.kb)
        return True

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
