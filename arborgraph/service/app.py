"""The HTTP API: FastAPI routers per area over the served knowledge base.

:func:`create_app` makes one :class:`~arborgraph.service.context.Service` (the served
index, limits, worker threads, authenticator, metrics) and mounts the routers of each
area on it: :mod:`~arborgraph.service.routes.health`, :mod:`~arborgraph.service.routes.query`,
:mod:`~arborgraph.service.routes.explore`, :mod:`~arborgraph.service.routes.documents`, the web explorer (:mod:`arborgraph.web`) and
MCP at ``/mcp``. Every route derives the caller from the request's key in one place (the
service's ``caller`` dependency, and the same authenticator in front of ``/mcp``) and
hands the principal to the same :mod:`~arborgraph.service.views` function the MCP tools
call. Blocking work runs in a worker thread under a time limit, on a lease taken in
that thread.
"""

# no "from __future__ import annotations": FastAPI reads the request models from the
# route functions' live annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.security import APIKeyHeader, HTTPBearer
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from arborgraph.core.errors import ExportError, LLMError, QueryError
from arborgraph.core.version import __version__
from arborgraph.display import printable
from arborgraph.service import views
from arborgraph.service.auth import AmbiguousCredentials, Authenticator, KeysUnavailable, Unauthorized
from arborgraph.service.context import Service
from arborgraph.service.documents import DocumentFolder
from arborgraph.service.limits import BodyLimit, HostCheck, ServeSettings, WorkerThreads, accepted_hosts
from arborgraph.service.metrics import Metrics
from arborgraph.service.problems import PROBLEM_TYPE, problem, unexpected, validation_detail
from arborgraph.service.rebuild import Rebuilds
from arborgraph.service.routes import documents, explore, health, query
from arborgraph.service.routes.query import ROUTE_LABEL
from arborgraph.service.swap import ServedIndex


class McpAuth:
    """In front of ``/mcp``: 401 for a bad key (or none, with --require-key), else the
    caller is put in the request's state for the tools to read."""

    def __init__(self, app: ASGIApp, authenticator: Authenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from arborgraph.service.mcp_server import CALLER_STATE

        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope.get("headers") or []]
        try:
            caller = self.authenticator.caller(headers)
        except Unauthorized as exc:
            await problem(401, str(exc), {"WWW-Authenticate": "Bearer"})(scope, receive, send)
            return
        except AmbiguousCredentials as exc:
            await problem(400, str(exc))(scope, receive, send)
            return
        except KeysUnavailable as exc:
            await problem(503, str(exc), {"Retry-After": "5"})(scope, receive, send)
            return
        scope.setdefault("state", {})[CALLER_STATE] = caller
        await self.app(scope, receive, send)


access_log = logging.getLogger("arborgraph.service.access")


class Timing:
    """Records each request's endpoint (its route template), route and status, and
    writes the access log: client, method, path and status, never the query string
    (it can hold a question or a key) nor any header."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        started = time.perf_counter()
        status = 500

        async def record(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, record)
        finally:
            route = scope.get("route")
            endpoint = getattr(route, "path", None) or ("/mcp" if scope["path"].startswith("/mcp") else "unmatched")
            self.metrics.observe(
                scope["method"], endpoint, str(state.get(ROUTE_LABEL, "-")), status, time.perf_counter() - started
            )
            client = scope.get("client") or ("-", 0)
            # the path is the caller's: CR, LF or ESC in it must not forge lines
            access_log.info('%s:%s - "%s %s" %d', client[0], client[1], scope["method"], printable(scope["path"]), status)


def create_app(served: ServedIndex, settings: ServeSettings, authenticator: Authenticator, *, store: Any = None) -> FastAPI:
    """The ASGI app serving ``served``; see the module docstring. ``store``: the Neo4j
    store ``served``'s knowledge base takes its candidates from, whose driver the app
    closes when it stops."""
    folder = rebuilds = None
    if settings.docs_dir is not None:
        folder = DocumentFolder(settings.docs_dir)
        rebuilds = Rebuilds(
            folder.root, served.index_dir, config=lambda: served.kb.engine.config, served_generation=lambda: served.generation,
        )
    service = Service(
        served=served, settings=settings, authenticator=authenticator, metrics=Metrics(settings.metrics_dir),
        threads=WorkerThreads(settings.concurrency, settings.request_timeout_s, narrow=served.preparing),
        documents=folder, rebuilds=rebuilds,
    )
    mcp_app = None
    if settings.mcp:
        from mcp.server.streamable_http_manager import StreamableHTTPASGIApp

        from arborgraph.service.mcp_server import build_mcp, principal_from_request

        mcp = build_mcp(served, principal_from_request, threads=service.threads, max_question_chars=settings.max_question_chars)
        # A session lives in the process that opened it, and with several worker processes
        # a client's next connection may be handed to another: every MCP request then
        # stands alone (stateless), which the tools, each one request and its answer, allow.
        mcp.streamable_http_app(host=settings.host, stateless_http=settings.workers > 1)  # creates its session manager
        mcp_app = McpAuth(StreamableHTTPASGIApp(mcp.session_manager), authenticator)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        served.start()
        try:
            if mcp_app is not None:
                async with mcp.session_manager.run():
                    yield
            else:
                yield
        finally:
            served.stop()
            service.threads.close()
            if store is not None:
                store.driver.close()

    app = FastAPI(
        # no /docs or /redoc: they load Swagger UI from a CDN onto the explorer's origin,
        # where the page keeps its key; the spec itself is at /openapi.json
        docs_url=None,
        redoc_url=None,
        title="Arborgraph knowledge service",
        version=__version__,
        description="Cited answers and exploration over one Arborgraph index. Errors are "
        "application/problem+json. Authenticate with `Authorization: Bearer KEY` or `X-API-Key`; "
        "no key is the anonymous caller (public documents only).",
        lifespan=lifespan,
    )
    app.state.served = served
    # documented in the OpenAPI spec; the caller dependency does the checking
    documented_auth = [
        Security(HTTPBearer(auto_error=False)),
        Security(APIKeyHeader(name="X-API-Key", auto_error=False)),
    ]
    errors: dict[int | str, dict[str, Any]] = {
        code: {"description": desc, "content": {PROBLEM_TYPE: {"schema": {"type": "object"}}}}
        for code, desc in [(400, "bad input"), (401, "unknown or revoked key"), (403, "needs a key with the write permission"),
                           (404, "nothing readable by that name"), (409, "conflicts with the server's state"),
                           (413, "body too large"), (422, "invalid field"), (503, "time limit")]
    }
    _add_error_handlers(app, settings)
    app.include_router(health.router(service))
    app.include_router(query.router(service, documented_auth, errors))
    app.include_router(documents.router(service, documented_auth, errors))
    app.include_router(explore.router(service, documented_auth, errors))
    if mcp_app is not None:
        app.router.add_route("/mcp", mcp_app, methods=["GET", "POST", "DELETE"], include_in_schema=False)  # type: ignore[arg-type]

    from arborgraph import web  # the browser explorer: page at /, files at /static, lists at /v1/web/

    app.include_router(web.router(service))
    app.mount("/static", StaticFiles(directory=web.STATIC), name="static")
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes, timeout_s=settings.body_timeout_s)
    app.add_middleware(HostCheck, hosts=accepted_hosts(settings.host, settings.allowed_hosts))
    app.add_middleware(Timing, metrics=service.metrics)
    return app


def _add_error_handlers(app: FastAPI, settings: ServeSettings) -> None:
    """Every error a problem+json answer with a one-line detail (4xx for the caller's)."""

    async def on_validation(request: Request, exc: RequestValidationError) -> Any:
        status, detail = validation_detail(list(exc.errors()))
        return problem(status, detail)

    async def on_http(request: Request, exc: StarletteHTTPException) -> Any:
        return problem(exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    async def on_unauthorized(request: Request, exc: Exception) -> Any:
        return problem(401, str(exc), {"WWW-Authenticate": "Bearer"})

    async def on_bad_request(request: Request, exc: Exception) -> Any:
        return problem(400, str(exc))

    async def on_keys_unavailable(request: Request, exc: Exception) -> Any:
        return problem(503, str(exc), {"Retry-After": "5"})

    async def on_not_found(request: Request, exc: Exception) -> Any:
        return problem(404, str(exc))

    async def on_timeout(request: Request, exc: Exception) -> Any:
        return problem(503, f"no answer within the {settings.request_timeout_s:g} s time limit", {"Retry-After": "1"})

    async def on_llm_error(request: Request, exc: Exception) -> Any:
        return problem(502, f"the LLM call failed: {exc}")

    async def on_store_error(request: Request, exc: Exception) -> Any:
        # the database the candidates come from failed or changed under the server: not
        # the caller's doing, and nothing is answered without it
        return problem(503, f"the Neo4j store failed: {exc}", {"Retry-After": "5"})

    app.add_exception_handler(RequestValidationError, on_validation)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, on_http)  # type: ignore[arg-type]
    app.add_exception_handler(Unauthorized, on_unauthorized)
    app.add_exception_handler(QueryError, on_bad_request)
    app.add_exception_handler(AmbiguousCredentials, on_bad_request)
    app.add_exception_handler(KeysUnavailable, on_keys_unavailable)
    app.add_exception_handler(views.NotFound, on_not_found)
    app.add_exception_handler(TimeoutError, on_timeout)
    app.add_exception_handler(LLMError, on_llm_error)
    app.add_exception_handler(ExportError, on_store_error)
    app.add_exception_handler(Exception, unexpected)
