"""Liveness and metrics: ``/v1/health`` and ``/metrics`` (no key needed)."""

# no "from __future__ import annotations": FastAPI reads the routes' live annotations

import time
from typing import Any

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse, Response

from arborgraph.service.context import Service
from arborgraph.service.metrics import CONTENT_TYPE


def router(service: Service) -> APIRouter:
    routes = APIRouter(tags=["service"])
    served, authenticator, threads = service.served, service.authenticator, service.threads

    @routes.get("/v1/health")
    async def health() -> dict[str, Any]:
        """Liveness, the generation served, why the latest new one was refused (if it
        was), and what is wrong with the index on disk or the keys file (``problems``:
        ``current``, ``disk``, ``keys``); ``status`` is "degraded" while any is."""
        refused = served.refused
        problems = dict(served.problems)
        if (keys_problem := authenticator.problem()) is not None:
            problems["keys"] = keys_problem + "; keyed requests get 503 until it is mended"
        return {
            "status": "degraded" if problems or refused is not None else "ok",
            "generation": served.generation,
            "swaps": served.swaps,
            "refused": None if refused is None else refused.__dict__,
            "problems": problems,
            "uptime_s": round(time.time() - served.started_at, 1),
        }

    @routes.get("/metrics", response_class=PlainTextResponse)
    async def prometheus() -> Response:
        """Prometheus text (prometheus_client's exposition): requests, errors and latency
        per endpoint and route, the generation, swaps, worker threads, problems."""
        body = service.metrics.render(
            generation=served.generation, swaps=served.swaps,
            refused=served.refused is not None, uptime_s=time.time() - served.started_at,
            busy=threads.busy, busy_max=threads.busy_max,
            problems=len(served.problems) + (authenticator.problem() is not None),
        )
        return Response(body, media_type=CONTENT_TYPE)

    return routes
