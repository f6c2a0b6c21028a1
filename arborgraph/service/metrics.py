"""Prometheus metrics (prometheus_client): requests, errors and latency per endpoint and
route, and the server's state at each scrape (generation, swaps, worker threads, problems).

Each app has a registry of its own (several apps can live in one process, as in the
tests). The processes of ``serve --workers N`` run in prometheus_client's multiprocess
mode (the dispatcher sets its environment variable, read when a process first imports
it): each writes its counts to files in one folder, and a scrape, whichever worker it
reaches, reports the sum over all of them; the state (generation, threads busy) is the
scraped worker's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector

# seconds; queries on the sample manual take tens of milliseconds
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
CONTENT_TYPE = CONTENT_TYPE_LATEST


@dataclass(frozen=True)
class _State:
    generation: str
    swaps: int
    refused: bool
    uptime_s: float
    busy: int
    busy_max: int
    problems: int


class _StateCollector(Collector):
    """The values the server holds elsewhere, read at scrape time (set by ``render``)."""

    def __init__(self) -> None:
        self.state: _State | None = None

    def collect(self) -> Iterator[Metric]:
        s = self.state
        if s is None:
            return
        yield InfoMetricFamily("arborgraph_generation", "The generation being served.", value={"generation": s.generation})
        yield CounterMetricFamily("arborgraph_generation_swaps", "Generations swapped in since start.", value=s.swaps)
        yield GaugeMetricFamily(
            "arborgraph_generation_refused", "Whether the latest new generation was refused.", value=int(s.refused)
        )
        yield GaugeMetricFamily("arborgraph_uptime_seconds", "Seconds since the server started.", value=s.uptime_s)
        yield GaugeMetricFamily(
            "arborgraph_index_problems", "Problems with the index on disk or the keys file (see /v1/health).",
            value=s.problems,
        )
        yield GaugeMetricFamily(
            "arborgraph_workers_busy", "Worker threads running a request's work now (timed-out work included).",
            value=s.busy,
        )
        yield GaugeMetricFamily(
            "arborgraph_workers_busy_max", "The most worker threads that ever ran at once.", value=s.busy_max
        )


class Metrics:
    """Counters and latency histograms in a registry of this app's own; with
    ``shared_dir`` (the worker processes' folder, in multiprocess mode) the rendered
    counts are those of every process writing there."""

    def __init__(self, shared_dir: Path | None = None) -> None:
        self.registry = CollectorRegistry()
        self._requests = Counter(
            "arborgraph_requests", "Requests by endpoint, route and status.",
            ["method", "endpoint", "route", "status"], registry=self.registry,
        )
        self._errors = Counter(
            "arborgraph_request_errors", "Requests answered with a 4xx or 5xx status.",
            ["endpoint", "route", "kind"], registry=self.registry,
        )
        self._seconds = Histogram(
            "arborgraph_request_seconds", "Request latency by endpoint and route.",
            ["endpoint", "route"], buckets=BUCKETS, registry=self.registry,
        )
        self._state = _StateCollector()
        self.registry.register(self._state)
        self._exposed = self.registry
        if shared_dir is not None:
            from prometheus_client import multiprocess

            self._exposed = CollectorRegistry()
            multiprocess.MultiProcessCollector(self._exposed, path=str(shared_dir))
            self._exposed.register(self._state)
        self._render_lock = threading.Lock()

    def observe(self, method: str, endpoint: str, route: str, status: int, seconds: float) -> None:
        self._requests.labels(method, endpoint, route, str(status)).inc()
        if status >= 400:
            self._errors.labels(endpoint, route, "server" if status >= 500 else "client").inc()
        self._seconds.labels(endpoint, route).observe(seconds)

    def render(
        self, *, generation: str, swaps: int, refused: bool, uptime_s: float, busy: int = 0, busy_max: int = 0,
        problems: int = 0,
    ) -> bytes:
        """The exposition text (``CONTENT_TYPE``), with the server's state as given."""
        with self._render_lock:
            self._state.state = _State(generation, swaps, refused, uptime_s, busy, busy_max, problems)
            return generate_latest(self._exposed)
