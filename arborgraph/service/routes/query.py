"""Questions: ``/v1/query``, ``/v1/query/batch`` (NDJSON) and ``/v1/query/stream``
(an LLM answer as NDJSON events).

Work that asks the chat model (an answer, an auto route the LLM router picks) runs on
the answer threads (:attr:`WorkerThreads.answers`), so that answers never take the
threads lookups need."""

# no "from __future__ import annotations": FastAPI reads the request models (built
# per app, with its limits) from the route functions' live annotations

import datetime as dt
import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from arborgraph.core.errors import ExportError, QueryError
from arborgraph.core.questions import question_problem
from arborgraph.core.results import Context
from arborgraph.query.answer import figure_notes, generate_answer
from arborgraph.service import views
from arborgraph.service.auth import Caller
from arborgraph.service.context import Service
from arborgraph.service.limits import ServeSettings
from arborgraph.service.problems import one_line, problem_body

ROUTE_LABEL = "arborgraph_route"
MAX_TURNS = 8  # earlier turns an answer may be given: older ones add tokens more than sense
MAX_ANSWER_CHARS = 8000
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
    def _askable(value: str) -> str:
        # the words every other surface uses for a question that cannot be asked
        if (problem := question_problem(value, settings.max_question_chars)) is not None:
            raise ValueError(problem)
        return value

    Question = Annotated[
        StrictStr, BeforeValidator(_text), AfterValidator(_askable),
        Field(json_schema_extra={"minLength": 1, "maxLength": settings.max_question_chars}),
    ]

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

    class Turn(BaseModel):
        model_config = ConfigDict(extra="forbid")

        question: Question
        answer: Annotated[StrictStr, BeforeValidator(_text), Field(max_length=MAX_ANSWER_CHARS)]

    class QueryBody(Options):
        """One question and how to answer it (every field but ``question`` optional)."""

        question: Question
        history: Annotated[list[Turn], Field(max_length=MAX_TURNS, description="earlier turns of a conversation "
                                             "(oldest first) for the streamed answer; retrieval uses the question alone")] = []

    class BatchItem(BaseModel):
        model_config = ConfigDict(extra="forbid")

        id: Annotated[StrictStr, Field(max_length=200)] | StrictInt | None = None
        question: Question

    class BatchBody(Options):
        """Questions answered in order, one NDJSON line each (the ``--batch`` contract)."""

        questions: Annotated[list[BatchItem], Field(min_length=1, max_length=settings.max_batch)]

    return QueryBody, BatchBody, Options


def router(service: Service, documented_auth: list[Any], errors: dict[int | str, dict[str, Any]]) -> APIRouter:
    routes = APIRouter(tags=["query"], dependencies=documented_auth, responses=errors)
    settings = service.settings
    QueryBody, BatchBody, _ = request_models(settings)
    CallerDep = Annotated[Caller, Depends(service.caller)]

    def asks_the_model(options: views.QueryOptions) -> bool:
        return options.answer or (options.route == "auto" and service.served.kb.engine.settings.router.llm)

    async def run(pinned: Any, work: Callable[[Any], Any], *, model: bool) -> Any:
        """``work(kb)`` on the generation ``pinned`` holds (None: the current one), on the
        answer threads when it asks the chat model."""
        if not model:
            return await service.run_pinned(pinned, work)

        def call() -> Any:
            with service.served.lease(pinned) as kb:
                return work(kb)

        return await service.threads.answers.run(call)

    @routes.post("/v1/query")
    async def query(body: QueryBody, request: Request, who: CallerDep) -> JSONResponse:  # type: ignore[valid-type]
        """Cited contexts for one question: the object `arborgraph query --json` prints,
        plus the `generation` that answered (and `explain` text when asked)."""
        options = body.options()  # type: ignore[attr-defined]
        question = body.question  # type: ignore[attr-defined]
        result = await run(
            None, lambda kb: views.query(kb, who.principal, question, options, llm_model=settings.llm_model),
            model=asks_the_model(options),
        )
        setattr(request.state, ROUTE_LABEL, result["route"])
        return JSONResponse(result)

    @routes.post("/v1/query/batch", response_class=StreamingResponse)
    async def query_batch(body: BatchBody, request: Request, who: CallerDep) -> StreamingResponse:  # type: ignore[valid-type]
        """Up to the server's batch limit of questions, answered in order on one
        generation: NDJSON, one line per question (`id` first; an `error` object for a
        question that failed)."""
        options = body.options()  # type: ignore[attr-defined]
        items = [(item.id, item.question) for item in body.questions]  # type: ignore[attr-defined]
        await service.run(views.check_route, options.route)
        setattr(request.state, ROUTE_LABEL, options.route)
        return StreamingResponse(_batch_lines(items, options, who.principal), media_type="application/x-ndjson")

    async def _batch_lines(items: list[tuple[Any, str]], options: views.QueryOptions, principal: str | None) -> AsyncIterator[str]:
        with service.served.pin() as pinned:  # the whole batch on the generation it started on
            for qid, question in items:
                def answer(kb: Any, qid: Any = qid, question: str = question) -> dict[str, Any]:
                    return views.query(kb, principal, question, options, qid, llm_model=settings.llm_model)

                try:
                    line = await run(pinned, answer, model=asks_the_model(options))
                except TimeoutError:
                    line = {"id": qid, "error": problem_body(503, f"no answer within {settings.request_timeout_s:g} s")}
                except (QueryError, ValueError) as exc:
                    line = {"id": qid, "error": problem_body(400, str(exc))}
                except ExportError as exc:  # serve --store: the database failed under this question
                    line = {"id": qid, "error": problem_body(503, f"the Neo4j store failed: {exc}")}
                yield json.dumps(line, ensure_ascii=False) + "\n"

    @routes.post("/v1/query/stream", response_class=StreamingResponse)
    async def query_stream(body: QueryBody, request: Request, who: CallerDep) -> StreamingResponse:  # type: ignore[valid-type]
        """An answer from the configured LLM (given the conversation's earlier turns in
        `history`, if any), streamed as NDJSON events: `contexts`
        (the query result), then `token` (the answer's text), then `citations` (the
        contexts the answer cites by [n]), then `done`. 400 when no LLM is configured."""
        options = views.QueryOptions(**{**body.options().__dict__, "answer": False})  # type: ignore[attr-defined]
        question = body.question  # type: ignore[attr-defined]
        history = [(turn.question, turn.answer) for turn in body.history]  # type: ignore[attr-defined]
        # QueryError (400) now, before the stream starts, if there is no LLM
        await service.run(lambda kb: kb.engine.chat_model(settings.llm_model))
        setattr(request.state, ROUTE_LABEL, options.route)
        return StreamingResponse(_answer_events(question, options, who.principal, history), media_type="application/x-ndjson")

    async def _answer_events(
        question: str, options: views.QueryOptions, principal: str | None, history: list[tuple[str, str]]
    ) -> AsyncIterator[str]:
        with service.served.pin() as pinned:  # contexts and answer from one generation
            try:
                result = await run(
                    pinned, lambda kb: views.query(kb, principal, question, options), model=asks_the_model(options)
                )
                yield json.dumps({"event": "contexts", **result}, ensure_ascii=False) + "\n"
                contexts = [Context.model_validate(c) for c in result["contexts"]]
                # the LLM client returns whole completions: the answer is one token event
                text = await run(
                    pinned, lambda kb: generate_answer(kb.engine.chat_model(settings.llm_model), question, contexts, history),
                    model=True,
                )
                yield json.dumps({"event": "token", "text": text}, ensure_ascii=False) + "\n"
                cited = sorted({int(n) for n in _CITATION.findall(text) if 1 <= int(n) <= len(contexts)})
                citations = [
                    {"n": n, "node_id": contexts[n - 1].node_id, "source": contexts[n - 1].source,
                     "heading_path": contexts[n - 1].heading_path}
                    for n in cited
                ]
                # sentences giving a figure their cited passages lack (see figure_notes)
                checks = figure_notes(text, contexts, question) if contexts else []
                yield json.dumps({"event": "citations", "citations": citations, "checks": checks}, ensure_ascii=False) + "\n"
            except TimeoutError:  # the time limit (the work was told to stop)
                yield json.dumps({"event": "error", "detail": f"no answer within {settings.request_timeout_s:g} s"}) + "\n"
            except Exception as exc:  # the status line is sent: the stream says what went wrong
                yield json.dumps({"event": "error", "detail": one_line(str(exc) or type(exc).__name__)}) + "\n"
            yield json.dumps({"event": "done"}) + "\n"

    return routes
