"""Documents and rebuilds: ``GET /v1/documents`` (the documents the caller may read),
and for keys with the write permission, with ``serve --docs DIR``: ``PUT`` and
``DELETE /v1/documents/{doc_id}`` (a file of the folder) and ``POST``/``GET /v1/rebuild``
(a rebuild through the build pipeline, swapped in when it has been checked).

Every write is refused with 403 unless the request's key carries the write permission
(anonymous never writes), whatever else is wrong with it; a document the caller may
not read is "not found" to a delete, as an unknown one.
"""

# no "from __future__ import annotations": FastAPI reads the routes' live annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import JSONResponse

from arborgraph.service.auth import Caller
from arborgraph.service.context import Service
from arborgraph.service.documents import DocumentFolder, DocumentRefused, NameTaken, listing
from arborgraph.service.rebuild import RebuildBusy
from arborgraph.service.views import NotFound

NO_WRITE = "this needs a key with the write permission (arborgraph keys add --write)"
NO_FOLDER = "this server was started without --docs DIR: its documents cannot be changed over HTTP"


def router(service: Service, documented_auth: list[Any], errors: dict[int | str, dict[str, Any]]) -> APIRouter:
    routes = APIRouter(tags=["documents"], dependencies=documented_auth, responses=errors)
    CallerDep = Annotated[Caller, Depends(service.caller)]
    folder = service.documents

    def writer(who: Caller) -> DocumentFolder:
        """The folder, for a caller allowed to write; 403 (or 409 without --docs) otherwise."""
        if who.principal is None or not who.can_write:
            raise HTTPException(403, NO_WRITE)
        if folder is None or service.rebuilds is None:
            raise HTTPException(409, NO_FOLDER)
        return folder

    @routes.get("/v1/documents")
    async def documents(who: CallerDep) -> dict[str, Any]:
        """The documents this caller may read, `indexed` (or `deleted`: its file has left
        the folder, the index still holds it); for a writer, also the readable files
        not indexed yet (`new`). `writable`: this caller may add, delete and rebuild."""

        def rows(kb: Any) -> dict[str, Any]:
            readable = kb.info(who.principal)["documents"]
            return {
                "documents": listing(readable, kb.store.docs, folder, who.principal, who.can_write),
                "writable": folder is not None and who.can_write and who.principal is not None,
                "generation": kb.generation,
            }

        return await service.run(rows)  # type: ignore[no-any-return]

    @routes.put("/v1/documents/{doc_id:path}", status_code=201)
    async def add_document(doc_id: str, request: Request, who: CallerDep) -> dict[str, Any]:
        """Add a document: the request body is the file, `doc_id` its name in the folder
        (a name already there is refused with 409: delete it first). It is loaded as a
        build would load it (422 when it cannot be indexed) and joins the index at the
        next rebuild."""
        docs = writer(who)
        data = await request.body()
        if not data:
            raise HTTPException(400, "the request body is the document's file, and it is empty")
        try:
            doc = await service.threads.run(lambda: docs.add(doc_id, data))
        except NameTaken as exc:
            raise HTTPException(409, str(exc)) from None
        except DocumentRefused as exc:
            raise HTTPException(422 if "cannot be indexed" in str(exc) else 400, str(exc)) from None
        return {"doc_id": doc_id, "title": doc.title, "format": doc.format, "status": "new",
                "note": "added to the documents folder: rebuild to index it"}

    @routes.delete("/v1/documents/{doc_id:path}")
    async def delete_document(doc_id: str, who: CallerDep) -> dict[str, Any]:
        """Delete a document's file (and sidecar) from the folder; it leaves the index at
        the next rebuild. 404 for a name this caller may not read, as for an unknown one."""
        docs = writer(who)

        def delete(kb: Any) -> bool:
            docs.check_name(doc_id)
            readable = doc_id in kb.store.readable_docs(who.principal)
            if not readable and doc_id not in kb.store.docs:
                readable = any(p.doc_id == doc_id for p in docs.pending(kb.store.docs, who.principal))
            return readable and docs.remove(doc_id)

        try:
            removed = await service.run(delete)
        except DocumentRefused as exc:
            raise HTTPException(400, str(exc)) from None
        if not removed:
            raise NotFound(f"no document {doc_id!r} in the folder readable by this caller")
        return {"doc_id": doc_id, "status": "deleted", "note": "removed from the documents folder: rebuild to drop it from the index"}

    @routes.post("/v1/rebuild", status_code=202)
    async def rebuild(who: CallerDep) -> JSONResponse:
        """Rebuild the index from the documents folder, with the index's own settings,
        in the background (409 while one runs); follow it at `GET /v1/rebuild`."""
        writer(who)
        assert service.rebuilds is not None
        try:
            status = service.rebuilds.start(who.key_id)
        except RebuildBusy as exc:
            raise HTTPException(409, str(exc)) from None
        return JSONResponse(status, status_code=202)

    @routes.get("/v1/rebuild")
    async def rebuild_status(who: CallerDep) -> dict[str, Any]:
        """The last rebuild: `state` (idle, running, done, failed), the running `stage`,
        `stages_done` of `stages_total`, the `generation` it wrote and whether it is
        `served` yet, or the `error` that stopped it."""
        writer(who)
        assert service.rebuilds is not None
        return service.rebuilds.status()

    return routes
