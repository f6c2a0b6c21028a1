"""Prometheus text metrics: requests, errors and latency per endpoint and route."""

from __future__ import annotations

import threading
from collections import defaultdict

# seconds; queries on the sample manual take tens of milliseconds
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def _labels(**labels: str) -> str:
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Metrics:
    """Counters and latency histograms, rendered in the Prometheus text format."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[tuple[str, str, str, str], int] = defaultdict(int)
        self._buckets: dict[tuple[str, str], list[int]] = {}
        self._sums: dict[tuple[str, str], float] = defaultdict(float)
        self._counts: dict[tuple[str, str], int] = defaultdict(int)

    def observe(self, method: str, endpoint: str, route: str, status: int, seconds: float) -> None:
        key = (endpoint, route)
        with self._lock:
            self._requests[(method, endpoint, route, str(status))] += 1
            buckets = self._buckets.setdefault(key, [0] * len(BUCKETS))
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    buckets[i] += 1
            self._sums[key] += seconds
            self._counts[key] += 1

    def render(
        self, *, generation: str, swaps: int, refused: bool, uptime_s: float, busy: int = 0, busy_max: int = 0,
        problems: int = 0,
    ) -> str:
        lines = [
            "# HELP arborgraph_requests_total Requests by endpoint, route and status.",
            "# TYPE arborgraph_requests_total counter",
        ]
        with self._lock:
            requests = dict(self._requests)
            buckets = {k: list(v) for k, v in self._buckets.items()}
            sums, counts = dict(self._sums), dict(self._counts)
        for (method, endpoint, route, status), n in sorted(requests.items()):
            lines.append(
                f"arborgraph_requests_total{_labels(method=method, endpoint=endpoint, route=route, status=status)} {n}"
            )
        lines += [
            "# HELP arborgraph_request_errors_total Requests answered with a 4xx or 5xx status.",
            "# TYPE arborgraph_request_errors_total counter",
        ]
        errors: dict[tuple[str, str, str], int] = defaultdict(int)
        for (_m, endpoint, route, status), n in requests.items():
            if int(status) >= 400:
                errors[(endpoint, route, "server" if int(status) >= 500 else "client")] += n
        for (endpoint, route, kind), n in sorted(errors.items()):
            lines.append(f"arborgraph_request_errors_total{_labels(endpoint=endpoint, route=route, kind=kind)} {n}")
        lines += [
            "# HELP arborgraph_request_seconds Request latency by endpoint and route.",
            "# TYPE arborgraph_request_seconds histogram",
        ]
        for (endpoint, route), counts_le in sorted(buckets.items()):
            for bound, n in zip(BUCKETS, counts_le):
                lines.append(
                    f"arborgraph_request_seconds_bucket{_labels(endpoint=endpoint, route=route, le=str(bound))} {n}"
                )
            total = counts[(endpoint, route)]
            lines.append(f"arborgraph_request_seconds_bucket{_labels(endpoint=endpoint, route=route, le='+Inf')} {total}")
            lines.append(f"arborgraph_request_seconds_sum{_labels(endpoint=endpoint, route=route)} {sums[(endpoint, route)]:.6f}")
            lines.append(f"arborgraph_request_seconds_count{_labels(endpoint=endpoint, route=route)} {total}")
        lines += [
            "# HELP arborgraph_generation_info The generation being served.",
            "# TYPE arborgraph_generation_info gauge",
            f"arborgraph_generation_info{_labels(generation=generation)} 1",
            "# HELP arborgraph_generation_swaps_total Generations swapped in since start.",
            "# TYPE arborgraph_generation_swaps_total counter",
            f"arborgraph_generation_swaps_total {swaps}",
            "# HELP arborgraph_generation_refused Whether the latest new generation was refused.",
            "# TYPE arborgraph_generation_refused gauge",
            f"arborgraph_generation_refused {int(refused)}",
            "# HELP arborgraph_uptime_seconds Seconds since the server started.",
            "# TYPE arborgraph_uptime_seconds gauge",
            f"arborgraph_uptime_seconds {uptime_s:.1f}",
            "# HELP arborgraph_index_problems Problems with the index on disk or the keys file (see /v1/health).",
            "# TYPE arborgraph_index_problems gauge",
            f"arborgraph_index_problems {problems}",
            "# HELP arborgraph_workers_busy Worker threads running a request's work now (timed-out work included).",
            "# TYPE arborgraph_workers_busy gauge",
            f"arborgraph_workers_busy {busy}",
            "# HELP arborgraph_workers_busy_max The most worker threads that ever ran at once.",
            "# TYPE arborgraph_workers_busy_max gauge",
            f"arborgraph_workers_busy_max {busy_max}",
        ]
        return "\n".join(lines) + "\n"
