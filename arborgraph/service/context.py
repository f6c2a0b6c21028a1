"""What every route of the service shares: the served index, the limits, the worker
threads, the authenticator and the metrics, and the two ways routes use them.

Each area's routes (:mod:`arborgraph.service.routes`, :mod:`arborgraph.web`) are an
``APIRouter`` made from one :class:`Service`; :func:`arborgraph.service.app.create_app`
assembles them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import Request

from arborgraph.service.auth import Authenticator, Caller
from arborgraph.service.documents import DocumentFolder
from arborgraph.service.limits import ServeSettings, WorkerThreads
from arborgraph.service.metrics import Metrics
from arborgraph.service.rebuild import Rebuilds
from arborgraph.service.swap import ServedIndex


@dataclass(frozen=True)
class Service:
    """The served index and what guards it, for the routes."""

    served: ServedIndex
    settings: ServeSettings
    threads: WorkerThreads
    authenticator: Authenticator
    metrics: Metrics
    # serve --docs DIR: the folder the index is built from, and its rebuilds
    documents: DocumentFolder | None = None
    rebuilds: Rebuilds | None = None

    async def caller(self, request: Request) -> Caller:
        """The request's caller (a FastAPI dependency; async: no thread-pool hop)."""
        return self.authenticator.caller(request.headers)

    async def run(self, work: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``work(kb, *args, **kwargs)`` in a worker thread under the time limit, on a
        lease taken inside that thread (so work that outlives its request still holds
        the knowledge base it uses)."""

        def call() -> Any:
            with self.served.lease() as kb:
                return work(kb, *args, **kwargs)

        return await self.threads.run(call)

    async def run_pinned(self, pinned: Any, work: Callable[..., Any]) -> Any:
        """``work(kb)`` in a worker thread on the generation ``pinned`` holds (see
        :meth:`ServedIndex.pin`): the steps of one batch or stream share a generation."""

        def call() -> Any:
            with self.served.lease(pinned) as kb:
                return work(kb)

        return await self.threads.run(call)
