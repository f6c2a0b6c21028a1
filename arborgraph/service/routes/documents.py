"""Documents and rebuilds: ``GET /v1/documents`` (the documents the caller may read),
and for keys with the write permission, with ``serve --docs DIR``: ``PUT`` and
``DELETE /v1/documents/{doc_id}`` (a file of the folder) and ``POST``/``GET /v1/rebuild``
(a rebuild through the build pipeline, swapped in when it has been checked).

Every write is refused with 403 unless the request's key carries the write permission
(anonymous never writes), whatever else is wrong with it; a document the caller may
not read is "not found" to a delete, as an unknown one, and an upload its writer could
not read is a 403. Uploads are loaded on threads of their own, never on the workers
that answer queries and listings: a slow parse holds only other uploads.
"""

# no "from __future__ import annotations": FastAPI reads the routes' live annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import JSONResponse

from arborgraph.service.auth import Caller
from arborgraph.service.context import Service
from arborgraph.service.documents import LOAD_TIMEOUT_S, DocumentFolder, DocumentRefused, LoadLimits, listing
from arborgraph.service.limits import WorkerThreads
from arborgraph.service.rebuild import RebuildBusy
from arborgraph.service.views import NotFound

NO_WRITE = "this needs a key with the write permission (arborgraph keys add --write)"
NO_FOLDER = "this server was started without --docs DIR: its documents cannot be changed over HTTP"
UPLOAD_THREADS = 2
# an upload waits for its parse (killed at LOAD_TIMEOUT_S) and, at worst, one ahead of it
UPLOAD_TIMEOUT_S = 2 * LOAD_TIMEOUT_S + 10


def load_limits(kb: Any) -> LoadLimits:
    """The served index's load settings, which its rebuild loads the folder with."""
    ingest = kb.engine.config.ingest
    return LoadLimits(max_file_bytes=int(ingest.max_file_mb * 2**20), part_bytes=max(1, int(ingest.part_mb * 2**20)))


def router(service: Service, documented_auth: list[Any], errors: dict[int | str, dict[str, Any]]) -> APIRouter:
    routes = APIRouter(tags=["documents"], dependencies=documented_auth, responses=errors)
    CallerDep = Annotated[Caller, Depends(service.caller)]
    folder = service.documents
    uploads = WorkerThreads(UPLOAD_THREADS, UPLOAD_TIMEOUT_S)

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
        not indexed yet (`new`, or `duplicate` with `duplicate_of` when a rebuild would skip
        it as one). `writable`: this caller may add, delete and rebuild."""

        def rows(kb: Any) -> dict[str, Any]:
            readable = kb.info(who.principal)["documents"]
            hashes = kb.index.manifest.documents
            indexed = {doc_id: hashes.get(doc_id, "") for doc_id in kb.index.store.docs}
            return {
                "documents": listing(readable, indexed, folder, who.principal, who.can_write, load_limits(kb)),
                "writable": folder is not None and who.can_write and who.principal is not None,
                "generation": kb.generation,
            }

        return await service.run(rows)  # type: ignore[no-any-return]

    @routes.put("/v1/documents/{doc_id:path}", status_code=201)
    async def add_document(doc_id: str, request: Request, who: CallerDep) -> dict[str, Any]:
        """Add a document: the request body is the file, `doc_id` its name in the folder
        (a name already there, or one that looks like it, is refused with 409: delete it
        first). It is loaded as a build would load it (422 when it cannot be indexed, 403
        when its `acl` leaves out this key's principal) before it is stored, and joins the
        index at the next rebuild. 507 when the folder's disk is full."""
        docs = writer(who)
        data = await request.body()
        if not data:
            raise HTTPException(400, "the request body is the document's file, and it is empty")
        limits = load_limits(service.served.kb)
        try:
            doc = await uploads.run(lambda: docs.add(doc_id, data, who.principal, limits))
        except DocumentRefused as exc:
            raise HTTPException(exc.status, str(exc)) from None
        except TimeoutError:
            raise HTTPException(503, f"the upload was not loaded within {UPLOAD_TIMEOUT_S:g} s: "
                                     "others are being loaded, try again", headers={"Retry-After": "5"}) from None
        return {"doc_id": doc_id, "title": doc.title, "format": doc.format, "status": "new",
                "note": "added to the documents folder: rebuild to index it"}

    @routes.delete("/v1/documents/{doc_id:path}")
    async def delete_document(doc_id: str, who: CallerDep) -> dict[str, Any]:
        """Delete a document's file (and sidecar) from the folder; it leaves the index at
        the next rebuild. 404 for a name this caller may not read (by the index, and by
        the file's own metadata), as for an unknown one."""
        docs = writer(who)

        def delete(kb: Any) -> bool:
            docs.check_name(doc_id)
            indexed = doc_id in kb.index.store.docs
            readable = doc_id in kb.index.store.readable_docs(who.principal)
            return docs.may_change(doc_id, indexed, readable, who.principal, load_limits(kb)) and docs.remove(doc_id)

        try:
            removed = await service.run(delete)
        except DocumentRefused as exc:
            raise HTTPException(exc.status, str(exc)) from None
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
        """The last rebuild: `state` (idle, running, done, failed, or interrupted: the
        server stopped while it ran), the running `stage`,
        `stages_done` of `stages_total`, the `generation` it wrote and whether it is
        `served` yet, or the `error` that stopped it."""
        writer(who)
        assert service.rebuilds is not None
        return service.rebuilds.status()

    return routes
