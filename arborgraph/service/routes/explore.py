"""Exploration: ``/v1/index``, ``/v1/tree/...``, ``/v1/graph/...`` and ``/v1/documents/...``,
each answering with what the caller may read."""

# no "from __future__ import annotations": FastAPI reads the routes' live annotations

import datetime as dt
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query
from pydantic import StrictStr

from arborgraph.service import views
from arborgraph.service.auth import Caller
from arborgraph.service.context import Service


def router(service: Service, documented_auth: list[Any], errors: dict[int | str, dict[str, Any]]) -> APIRouter:
    routes = APIRouter(tags=["explore"], dependencies=documented_auth, responses=errors)
    CallerDep = Annotated[Caller, Depends(service.caller)]

    ScopeQ = Annotated[StrictStr | None, Query(description="access scope (default: the most specific readable one)", max_length=400)]
    IdQ = Annotated[str, Query(min_length=1, max_length=1000)]

    @routes.get("/v1/index")
    async def index(who: CallerDep) -> dict[str, Any]:
        """What `arborgraph inspect --json` shows, minus what this caller may not know;
        `answers`: whether this server has an LLM to answer with."""
        info = await service.run(views.index_info, who.principal)
        info["answers"] = bool(service.settings.llm_model or (info["config"].get("llm") or {}).get("model"))
        return info  # type: ignore[no-any-return]

    @routes.get("/v1/tree/outline")
    async def tree_outline(who: CallerDep, scope: ScopeQ = None, depth: Annotated[int, Query(ge=0, le=6)] = 2) -> dict[str, Any]:
        """An indented outline of the summary tree, root down `depth` levels."""
        return await service.run(views.tree_outline, who.principal, scope, depth)  # type: ignore[no-any-return]

    @routes.get("/v1/tree/node")
    async def tree_node(who: CallerDep, id: IdQ, scope: ScopeQ = None) -> dict[str, Any]:  # noqa: A002
        """One tree node: its text, children, parents, the documents it covers."""
        return await service.run(views.tree_node, who.principal, id, scope)  # type: ignore[no-any-return]

    @routes.get("/v1/tree/children")
    async def tree_children(who: CallerDep, id: IdQ, scope: ScopeQ = None) -> dict[str, Any]:  # noqa: A002
        """A tree node's children, each in full."""
        return await service.run(views.tree_children, who.principal, id, scope)  # type: ignore[no-any-return]

    @routes.get("/v1/tree/path")
    async def tree_path(who: CallerDep, id: IdQ, scope: ScopeQ = None) -> dict[str, Any]:  # noqa: A002
        """The path from a tree node up to the root."""
        return await service.run(views.tree_path, who.principal, id, scope)  # type: ignore[no-any-return]

    @routes.get("/v1/graph/entity")
    async def graph_entity(who: CallerDep, name: IdQ, scope: ScopeQ = None) -> dict[str, Any]:
        """An entity by id, name or alias."""
        return await service.run(views.entity, who.principal, name, scope)  # type: ignore[no-any-return]

    @routes.get("/v1/graph/neighbours")
    async def graph_neighbours(
        who: CallerDep, name: IdQ, scope: ScopeQ = None, limit: Annotated[int, Query(ge=1, le=100)] = 20
    ) -> dict[str, Any]:
        """An entity's strongest relations, with the sentence stating each."""
        return await service.run(views.entity_neighbours, who.principal, name, scope, limit)  # type: ignore[no-any-return]

    @routes.get("/v1/graph/communities/{community_id}")
    async def graph_community(
        who: CallerDep, community_id: Annotated[int, Path(ge=0, le=10_000_000)], scope: ScopeQ = None
    ) -> dict[str, Any]:
        """A community: members and report (title, summary, findings)."""
        return await service.run(views.community, who.principal, community_id, scope)  # type: ignore[no-any-return]

    @routes.get("/v1/documents/{doc_id:path}")
    async def document(
        who: CallerDep,
        doc_id: str,
        chunk: Annotated[str | None, Query(description="the cited passage's chunk id", max_length=1000)] = None,
        as_of: Annotated[dt.date | None, Query(description="date YYYY-MM-DD (default today)")] = None,
        include_stale: bool = False,
    ) -> dict[str, Any]:
        """A document's passages in page order, the cited one marked."""
        return await service.run(  # type: ignore[no-any-return]
            views.document, who.principal, doc_id, chunk_id=chunk, as_of=as_of, include_stale=include_stale
        )

    return routes
