"""The browser explorer: a single page (Ask, Tree, Graph, Communities, Documents, Index)
over the HTTP API.

:func:`router` gives its routes to the service's FastAPI app: the page at ``/``, its scripts and
styles at ``/static/...`` (all shipped in the wheel, the vendored graph libraries
included: nothing is fetched from elsewhere),
and the few list endpoints of :mod:`arborgraph.web.api` under ``/v1/web/``. The page
sends the caller's key with every request, so it shows what that key's principal may
read and nothing more.
"""

# no "from __future__ import annotations": FastAPI reads the routes' dependencies and
# query limits (defined inside router) from their live annotations

from pathlib import Path as FilePath
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import FileResponse, Response
from pydantic import StrictStr

from arborgraph.service.auth import Caller
from arborgraph.service.context import Service
from arborgraph.web import api

STATIC = FilePath(__file__).resolve().parent / "static"
# the page itself holds no data: only the API responses (never cached) depend on the key
_PAGE_HEADERS = {
    "Cache-Control": "no-cache",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def router(service: Service) -> APIRouter:
    """The explorer's routes: the page at ``/``, its files at ``/static/...``, and its list
    endpoints (authenticated like every ``/v1`` route, their work on the service's
    worker threads, within its concurrency and time limit)."""
    routes = APIRouter()
    CallerDep = Annotated[Caller, Depends(service.caller)]
    ScopeQ = Annotated[StrictStr | None, Query(description="access scope (default: the most specific readable one)", max_length=400)]
    run = service.run

    @routes.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html", headers=_PAGE_HEADERS)

    @routes.get("/v1/web/access", tags=["web"])
    async def web_access() -> dict[str, bool]:
        """Whether this service takes API keys at all (``keys``) and requires one
        (``require_key``), no key needed to ask: a service started without --keys
        serves everyone as the anonymous caller, so the page opens as that caller
        instead of asking for a key no one has."""
        authenticator = service.authenticator
        return {"keys": authenticator.keys is not None, "require_key": authenticator.require_key}

    @routes.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")

    @routes.get("/v1/web/tree", tags=["web"])
    async def web_tree(
        who: CallerDep, scope: ScopeQ = None, depth: Annotated[int, Query(ge=0, le=8)] = 3,
        max_nodes: Annotated[int, Query(ge=1, le=20000)] = 2500,
    ) -> dict[str, Any]:
        """The summary tree from its root, breadth first, as one compact list (for the icicle)."""
        return await run(api.tree_nodes, who.principal, scope, depth, max_nodes)  # type: ignore[no-any-return]

    @routes.get("/v1/web/communities", tags=["web"])
    async def web_communities(who: CallerDep, scope: ScopeQ = None, level: Annotated[int, Query(ge=0, le=50)] = 0) -> dict[str, Any]:
        """The communities of one level, with their report titles and ranks."""
        return await run(api.communities, who.principal, scope, level)  # type: ignore[no-any-return]

    @routes.get("/v1/web/communities/{community_id}/graph", tags=["web"])
    async def web_community_graph(
        who: CallerDep, community_id: Annotated[int, Path(ge=0, le=10_000_000)], scope: ScopeQ = None, max_nodes: Annotated[int, Query(ge=1, le=200)] = 40,
    ) -> dict[str, Any]:
        """A community's most connected entities and the relations among them."""
        return await run(api.community_graph, who.principal, scope, community_id, max_nodes)  # type: ignore[no-any-return]

    @routes.get("/v1/web/graph", tags=["web"])
    async def web_graph(
        who: CallerDep, scope: ScopeQ = None, level: Annotated[int, Query(ge=0, le=50)] = 0,
        max_nodes: Annotated[int, Query(ge=1, le=20000)] = 2000,
        label: Annotated[str | None, Query(max_length=200)] = None,
        focus: Annotated[str | None, Query(min_length=1, max_length=1000)] = None,
        depth: Annotated[int, Query(ge=1, le=4)] = 1,
        min_degree: Annotated[int, Query(ge=0, le=1000)] = 0,
    ) -> dict[str, Any]:
        """The entity graph coloured by community at ``level``: the most connected
        entities with at least ``min_degree`` relations (whole-graph overview), or those
        around ``focus`` / matching ``label`` up to ``depth`` hops, at most ``max_nodes``."""
        return await run(  # type: ignore[no-any-return]
            api.graph_overview, who.principal, scope, level=level, max_nodes=max_nodes,
            label=(label or "").strip() or None, focus=focus, depth=depth, min_degree=min_degree,
        )

    @routes.get("/v1/web/entities", tags=["web"])
    async def web_entities(
        who: CallerDep, q: Annotated[str, Query(min_length=1, max_length=200)], scope: ScopeQ = None,
        limit: Annotated[int, Query(ge=1, le=100)] = 20,
    ) -> dict[str, Any]:
        """Entities whose name or alias contains ``q``, exact matches first."""
        return await run(api.search_entities, who.principal, scope, q, limit)  # type: ignore[no-any-return]

    return routes
