"""The HTTP API: FastAPI routes over the served knowledge base.

Every route derives the caller from the request's key in one place (:func:`create_app`'s
``caller`` dependency, and the same :class:`Authenticator` in front of ``/mcp``), and
hands the principal to the same :mod:`views` function the MCP tools call. Blocking work
runs in a worker thread under a time limit, holding a lease on the knowledge base it
started with.
"""

# no "from __future__ import annotations": FastAPI reads the request models (built
# per app, with its limits) from the route functions' live annotations

import contextlib
import datetime as dt
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Path, Query, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from fastapi.security import APIKeyHeader, HTTPBearer
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt, StrictStr
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from arborgraph.core.version import __version__
from arborgraph.query.answer import generate_answer
from arborgraph.kb import QueryError
from arborgraph.core.errors import LLMError
from arborgraph.core.results import Context
from arborgraph.service import views
from arborgraph.service.auth import AmbiguousCredentials, Authenticator, Caller, KeysUnavailable, Unauthorized
from arborgraph.service.limits import BodyLimit, HostCheck, ServeSettings, WorkerThreads, accepted_hosts
from arborgraph.service.metrics import Metrics
from arborgraph.service.problems import PROBLEM_TYPE, one_line, problem, problem_body, unexpected, validation_detail
from arborgraph.service.swap import ServedIndex

ROUTE_LABEL = "arborgraph_route"
_CITATION = re.compile(r"\[(\d{1,3})\]")


def _iso_date(value: Any) -> Any:
    # pydantic would take a number as a Unix timestamp: only "YYYY-MM-DD" is a date here
    if not isinstance(value, str):
        raise ValueError("must be a date like 2026-01-31")
    return value


def _text(value: Any) -> Any:
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("must not contain NUL characters")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("must be valid Unicode text (no lone surrogates)") from None
    return value


IsoDate = Annotated[dt.date, BeforeValidator(_iso_date)]
RouteField = Literal["auto", "lookup", "tree", "graph", "global"]


def request_models(settings: ServeSettings) -> tuple[type[BaseModel], type[BaseModel], type[BaseModel]]:
    """The request bodies, with this server's limits in their schemas."""
    Question = Annotated[StrictStr, BeforeValidator(_text), Field(min_length=1, max_length=settings.max_question_chars)]

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid")

        route: RouteField = "auto"
        top_k: Annotated[StrictInt, Field(ge=1, le=200)] = 20
        budget_tokens: Annotated[StrictInt, Field(ge=1, le=32000)] = 2000
        as_of: IsoDate | None = Field(None, description="keep documents current on this date (default: today)")
        include_stale: StrictBool = False
        explain: StrictBool = False
        answer: StrictBool = False

        def options(self) -> views.QueryOptions:
            return views.QueryOptions(**self.model_dump(include=set(Options.model_fields)))

    class QueryBody(Options):
        """One question and how to answer it (every field but ``question`` optional)."""

        question: Question

    class BatchItem(BaseModel):
        model_config = ConfigDict(extra="forbid")

        id: Annotated[StrictStr, Field(max_length=200)] | StrictInt | None = None
        question: Question

    class BatchBody(Options):
        """Questions answered in order, one NDJSON line each (the ``--batch`` contract)."""

        questions: Annotated[list[BatchItem], Field(min_length=1, max_length=settings.max_batch)]

    return QueryBody, BatchBody, Options


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
            access_log.info('%s:%s - "%s %s" %d', client[0], client[1], scope["method"], scope["path"], status)


def create_app(served: ServedIndex, settings: ServeSettings, authenticator: Authenticator) -> FastAPI:
    """The ASGI app serving ``served``; see the module docstring."""
    metrics = Metrics()
    threads = WorkerThreads(settings.concurrency, settings.request_timeout_s, narrow=served.preparing)
    QueryBody, BatchBody, _ = request_models(settings)
    mcp_app = None
    if settings.mcp:
        from mcp.server.streamable_http_manager import StreamableHTTPASGIApp

        from arborgraph.service.mcp_server import build_mcp, principal_from_request

        mcp = build_mcp(served, principal_from_request, threads=threads, max_question_chars=settings.max_question_chars)
        mcp.streamable_http_app(host=settings.host)  # creates its session manager
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
            threads.close()

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
        for code, desc in [(400, "bad input"), (401, "unknown or revoked key"), (404, "nothing readable by that name"),
                           (413, "body too large"), (422, "invalid field"), (503, "time limit")]
    }

    async def caller(request: Request) -> Caller:  # async: no thread-pool hop per request
        return authenticator.caller(request.headers)

    CallerDep = Annotated[Caller, Depends(caller)]

    async def run(work: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``work(kb, *args)`` in a worker thread under the time limit, on a lease."""

        def call() -> Any:
            with served.lease() as kb:
                return work(kb, *args, **kwargs)

        return await threads.run(call)

    # -- errors -----------------------------------------------------------------------

    async def on_validation(request: Request, exc: RequestValidationError) -> Any:
        status, detail = validation_detail(list(exc.errors()))
        return problem(status, detail)

    async def on_http(request: Request, exc: StarletteHTTPException) -> Any:
        return problem(exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    async def on_unauthorized(request: Request, exc: Exception) -> Any:
        return problem(401, str(exc), {"WWW-Authenticate": "Bearer"})

    async def on_query_error(request: Request, exc: Exception) -> Any:
        return problem(400, str(exc))

    async def on_keys_unavailable(request: Request, exc: Exception) -> Any:
        return problem(503, str(exc), {"Retry-After": "5"})

    async def on_not_found(request: Request, exc: Exception) -> Any:
        return problem(404, str(exc))

    async def on_timeout(request: Request, exc: Exception) -> Any:
        return problem(503, f"no answer within the {settings.request_timeout_s:g} s time limit", {"Retry-After": "1"})

    async def on_llm_error(request: Request, exc: Exception) -> Any:
        return problem(502, f"the LLM call failed: {exc}")

    app.add_exception_handler(RequestValidationError, on_validation)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, on_http)  # type: ignore[arg-type]
    app.add_exception_handler(Unauthorized, on_unauthorized)
    app.add_exception_handler(QueryError, on_query_error)
    app.add_exception_handler(AmbiguousCredentials, on_query_error)
    app.add_exception_handler(KeysUnavailable, on_keys_unavailable)
    app.add_exception_handler(views.NotFound, on_not_found)
    app.add_exception_handler(TimeoutError, on_timeout)
    app.add_exception_handler(LLMError, on_llm_error)
    app.add_exception_handler(Exception, unexpected)

    # -- liveness and metrics ---------------------------------------------------------

    @app.get("/v1/health", tags=["service"])
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

    @app.get("/metrics", tags=["service"], response_class=PlainTextResponse)
    async def prometheus() -> PlainTextResponse:
        """Prometheus text: requests, errors and latency per endpoint and route, generation."""
        text = metrics.render(
            generation=served.generation, swaps=served.swaps,
            refused=served.refused is not None, uptime_s=time.time() - served.started_at,
            busy=threads.busy, busy_max=threads.busy_max,
            problems=len(served.problems) + (authenticator.problem() is not None),
        )
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    # -- questions --------------------------------------------------------------------

    @app.post("/v1/query", tags=["query"], dependencies=documented_auth, responses=errors)
    async def query(body: QueryBody, request: Request, who: CallerDep) -> JSONResponse:  # type: ignore[valid-type]
        """Cited contexts for one question: the object `arborgraph query --json` prints,
        plus the `generation` that answered (and `explain` text when asked)."""
        result = await run(
            views.query, who.principal, body.question, body.options(), llm_model=settings.llm_model  # type: ignore[attr-defined]
        )  # type: ignore[attr-defined]
        setattr(request.state, ROUTE_LABEL, result["route"])
        return JSONResponse(result)

    @app.post("/v1/query/batch", tags=["query"], dependencies=documented_auth, responses=errors,
              response_class=StreamingResponse)
    async def query_batch(body: BatchBody, request: Request, who: CallerDep) -> StreamingResponse:  # type: ignore[valid-type]
        """Up to the server's batch limit of questions, answered in order on one
        generation: NDJSON, one line per question (`id` first; an `error` object for a
        question that failed)."""
        options = body.options()  # type: ignore[attr-defined]
        items = [(item.id, item.question) for item in body.questions]  # type: ignore[attr-defined]
        await run(views.check_route, options.route)
        setattr(request.state, ROUTE_LABEL, options.route)
        return StreamingResponse(_batch_lines(items, options, who.principal), media_type="application/x-ndjson")

    async def _batch_lines(items: list[tuple[Any, str]], options: views.QueryOptions, principal: str | None) -> AsyncIterator[str]:
        with served.pin() as pinned:  # the whole batch on the generation it started on
            for qid, question in items:
                def answer(qid: Any = qid, question: str = question) -> dict[str, Any]:
                    with served.lease(pinned) as kb:
                        return views.query(kb, principal, question, options, qid, llm_model=settings.llm_model)

                try:
                    line = await threads.run(answer)
                except TimeoutError:
                    line = {"id": qid, "error": problem_body(503, f"no answer within {settings.request_timeout_s:g} s")}
                except (QueryError, ValueError) as exc:
                    line = {"id": qid, "error": problem_body(400, str(exc))}
                yield json.dumps(line, ensure_ascii=False) + "\n"

    @app.post("/v1/query/stream", tags=["query"], dependencies=documented_auth, responses=errors,
              response_class=StreamingResponse)
    async def query_stream(body: QueryBody, request: Request, who: CallerDep) -> StreamingResponse:  # type: ignore[valid-type]
        """An answer from the configured LLM, streamed as NDJSON events: `contexts`
        (the query result), then `token` (the answer's text), then `citations` (the
        contexts the answer cites by [n]), then `done`. 400 when no LLM is configured."""
        options = views.QueryOptions(**{**body.options().__dict__, "answer": False})  # type: ignore[attr-defined]
        question = body.question  # type: ignore[attr-defined]
        # QueryError (400) now, before the stream starts, if there is no LLM
        await run(lambda kb: kb.chat_model(settings.llm_model))
        setattr(request.state, ROUTE_LABEL, options.route)
        return StreamingResponse(_answer_events(question, options, who.principal), media_type="application/x-ndjson")

    async def _answer_events(question: str, options: views.QueryOptions, principal: str | None) -> AsyncIterator[str]:
        with served.pin() as pinned:  # contexts and answer from one generation
            def on_pinned(work: Callable[[Any], Any]) -> Callable[[], Any]:
                def call() -> Any:
                    with served.lease(pinned) as kb:
                        return work(kb)
                return call

            try:
                result = await threads.run(on_pinned(lambda kb: views.query(kb, principal, question, options)))
                yield json.dumps({"event": "contexts", **result}, ensure_ascii=False) + "\n"
                contexts = [Context.model_validate(c) for c in result["contexts"]]
                # the LLM client returns whole completions: the answer is one token event
                text = await threads.run(
                    on_pinned(lambda kb: generate_answer(kb.chat_model(settings.llm_model), question, contexts))
                )
                yield json.dumps({"event": "token", "text": text}, ensure_ascii=False) + "\n"
                cited = sorted({int(n) for n in _CITATION.findall(text) if 1 <= int(n) <= len(contexts)})
                citations = [
                    {"n": n, "node_id": contexts[n - 1].node_id, "source": contexts[n - 1].source,
                     "heading_path": contexts[n - 1].heading_path}
                    for n in cited
                ]
                yield json.dumps({"event": "citations", "citations": citations}, ensure_ascii=False) + "\n"
            except Exception as exc:  # the status line is sent: the stream says what went wrong
                yield json.dumps({"event": "error", "detail": one_line(str(exc) or type(exc).__name__)}) + "\n"
            yield json.dumps({"event": "done"}) + "\n"

    # -- the index, tree, graph and documents -------------------------------------------

    ScopeQ = Annotated[StrictStr | None, Query(description="access scope (default: the most specific readable one)", max_length=400)]
    IdQ = Annotated[str, Query(min_length=1, max_length=1000)]

    @app.get("/v1/index", tags=["explore"], dependencies=documented_auth, responses=errors)
    async def index(who: CallerDep) -> dict[str, Any]:
        """What `arborgraph inspect --json` shows, minus what this caller may not know."""
        return await run(views.index_info, who.principal)  # type: ignore[no-any-return]

    @app.get("/v1/tree/outline", tags=["explore"], dependencies=documented_auth, responses=errors)
    async def tree_outline(who: CallerDep, scope: ScopeQ = None, depth: Annotated[int, Query(ge=0, le=6)] = 2) -> dict[str, Any]:
        """An indented outline of the summary tree, root down `depth` levels."""
        return await run(views.tree_outline, who.principal, scope, depth)  # type: ignore[no-any-return]

    @app.get("/v1/tree/node", tags=["explore"], dependencies=documented_auth, responses=errors)
    async def tree_node(who: CallerDep, id: IdQ, scope: ScopeQ = None) -> dict[str, Any]:  # noqa: A002
        """One tree node: its text, children, parents, the documents it covers."""
        return await run(views.tree_node, who.principal, id, scope)  # type: ignore[no-any-return]

    @app.get("/v1/tree/children", tags=["explore"], dependencies=documented_auth, responses=errors)
    async def tree_children(who: CallerDep, id: IdQ, scope: ScopeQ = None) -> dict[str, Any]:  # noqa: A002
        """A tree node's children, each in full."""
        return await run(views.tree_children, who.principal, id, scope)  # type: ignore[no-any-return]

    @app.get("/v1/tree/path", tags=["explore"], dependencies=documented_auth, responses=errors)
    async def tree_path(who: CallerDep, id: IdQ, scope: ScopeQ = None) -> dict[str, Any]:  # noqa: A002
        """The path from a tree node up to the root."""
        return await run(views.tree_path, who.principal, id, scope)  # type: ignore[no-any-return]

    @app.get("/v1/graph/entity", tags=["explore"], dependencies=documented_auth, responses=errors)
    async def graph_entity(who: CallerDep, name: IdQ, scope: ScopeQ = None) -> dict[str, Any]:
        """An entity by id, name or alias."""
        return await run(views.entity, who.principal, name, scope)  # type: ignore[no-any-return]

    @app.get("/v1/graph/neighbours", tags=["explore"], dependencies=documented_auth, responses=errors)
    async def graph_neighbours(
        who: CallerDep, name: IdQ, scope: ScopeQ = None, limit: Annotated[int, Query(ge=1, le=100)] = 20
    ) -> dict[str, Any]:
        """An entity's strongest relations, with the sentence stating each."""
        return await run(views.entity_neighbours, who.principal, name, scope, limit)  # type: ignore[no-any-return]

    @app.get("/v1/graph/communities/{community_id}", tags=["explore"], dependencies=documented_auth, responses=errors)
    async def graph_community(
        who: CallerDep, community_id: Annotated[int, Path(ge=0, le=10_000_000)], scope: ScopeQ = None
    ) -> dict[str, Any]:
        """A community: members and report (title, summary, findings)."""
        return await run(views.community, who.principal, community_id, scope)  # type: ignore[no-any-return]

    @app.get("/v1/documents/{doc_id:path}", tags=["explore"], dependencies=documented_auth, responses=errors)
    async def document(
        who: CallerDep,
        doc_id: str,
        chunk: Annotated[str | None, Query(description="the cited passage's chunk id", max_length=1000)] = None,
        as_of: Annotated[dt.date | None, Query(description="date YYYY-MM-DD (default today)")] = None,
        include_stale: bool = False,
    ) -> dict[str, Any]:
        """A document's passages in page order, the cited one marked."""
        return await run(  # type: ignore[no-any-return]
            views.document, who.principal, doc_id, chunk_id=chunk, as_of=as_of, include_stale=include_stale
        )

    if mcp_app is not None:
        app.router.add_route("/mcp", mcp_app, methods=["GET", "POST", "DELETE"], include_in_schema=False)  # type: ignore[arg-type]

    from arborgraph.web import mount as mount_web  # the browser explorer (arborgraph/web): page at /, lists at /v1/web/
    mount_web(app, authenticator, threads)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes, timeout_s=settings.body_timeout_s)
    app.add_middleware(HostCheck, hosts=accepted_hosts(settings.host, settings.allowed_hosts))
    app.add_middleware(Timing, metrics=metrics)
    return app
