"""The folder a served index is built from (``arborgraph serve --docs DIR``): what it
holds beside the live index, and the writes a key with the write permission may make.

A document is listed only to a caller who may read it: an indexed one by the live
index's access filter, a file not indexed yet by the ``acl`` its own metadata declares
(it is loaded, as a build would, to find out; one that cannot be loaded is listed to
nobody). A write never touches a document its caller may not read: deleting one is
answered as for an unknown name, and an upload never replaces a file (the name must
be free). Paths are checked to stay inside the folder; hidden names and sidecars are
refused.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from arborgraph.index.scoped import scope_of, scope_readable
from ingest.collection import iter_collection
from ingest.metadata import SIDECAR_SUFFIX
from ingest.models import Document
from ingest.sniff import EXTENSIONS

# a plain file name: letters, digits and . _ - + and spaces, not starting with a dot
_NAME = re.compile(r"^[\w][\w .+\-]{0,199}$")
LOAD_TIMEOUT_S = 30.0


class DocumentRefused(ValueError):
    """An upload or delete that cannot be done; the message says why in one line."""


class NameTaken(DocumentRefused):
    """An upload to a name the folder already holds (answered 409)."""


@dataclass(frozen=True)
class PendingFile:
    doc_id: str
    title: str
    format: str
    acl: list[str] | None
    version: str = ""


class DocumentFolder:
    """The documents folder of one served index."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()

    def check_name(self, doc_id: str) -> Path:
        """The file for ``doc_id`` (a file name, or a '/'-separated path for one in a
        subfolder), or DocumentRefused when the name could leave the folder, is hidden,
        is a sidecar or has no format the build reads."""
        parts = PurePosixPath(doc_id).parts
        if not parts or any(not _NAME.match(p) for p in parts) or "\\" in doc_id:
            raise DocumentRefused(
                "a document name is a file name of letters, digits, spaces and . _ - + "
                "(up to 200 characters, not starting with a dot), optionally under folders named alike"
            )
        if doc_id.endswith(SIDECAR_SUFFIX):
            raise DocumentRefused(f"names ending in {SIDECAR_SUFFIX} are metadata sidecars, not documents")
        suffix = PurePosixPath(doc_id).suffix.lower()
        if suffix not in EXTENSIONS:
            raise DocumentRefused(f"no document format for {suffix or 'a name without an extension'} "
                                  f"(use one of {', '.join(sorted(EXTENSIONS))})")
        path = self.root.joinpath(*parts)
        if not path.resolve().is_relative_to(self.root):
            raise DocumentRefused("that name leads outside the documents folder")
        return path

    def files(self) -> set[str]:
        """Doc ids of the document files in the folder (hidden entries and sidecars left out)."""
        found = set()
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in filenames:
                if name.startswith(".") or name.endswith(SIDECAR_SUFFIX):
                    continue
                found.add(Path(dirpath, name).relative_to(self.root).as_posix())
        return found

    def pending(self, indexed: Iterable[str], principal: str | None) -> list[PendingFile]:
        """Files not in the live index yet that ``principal`` may read, by their own metadata."""
        new = sorted(self.files() - set(indexed))
        if not new:
            return []
        out = []
        for loaded in iter_collection([self.root / n for n in new], load_timeout_s=LOAD_TIMEOUT_S):
            if not isinstance(loaded, Document):
                continue  # unreadable: its acl is unknown, so nobody is shown it
            doc_id = Path(loaded.path).resolve().relative_to(self.root).as_posix()
            acl = loaded.metadata.acl
            if scope_readable(scope_of(acl), principal):
                out.append(PendingFile(
                    doc_id=doc_id, title=loaded.title, format=loaded.format, acl=acl, version=loaded.metadata.version or "",
                ))
        return out

    def add(self, doc_id: str, data: bytes) -> Document:
        """Write ``data`` as a new file ``doc_id`` and load it as a build would; the file
        is removed again, and DocumentRefused raised, when it cannot be indexed."""
        path = self.check_name(doc_id)
        if path.exists() or path.with_name(path.name + SIDECAR_SUFFIX).exists():
            raise NameTaken(f"the documents folder already holds {doc_id!r}: delete it first, or pick another name")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.upload")
        try:
            with open(tmp, "xb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(tmp, path)  # fails if the name was taken meanwhile: nothing is replaced
            except FileExistsError:
                raise NameTaken(f"the documents folder already holds {doc_id!r}") from None
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        loaded = next(iter_collection([path], load_timeout_s=LOAD_TIMEOUT_S), None)
        if not isinstance(loaded, Document):
            with contextlib.suppress(OSError):
                path.unlink()
            reason = getattr(loaded, "reason", "it could not be read")
            raise DocumentRefused(f"{doc_id} cannot be indexed: {reason.replace(str(path), doc_id)}")
        return loaded

    def remove(self, doc_id: str) -> bool:
        """Delete the file ``doc_id`` and its sidecar; False when there is no such file."""
        path = self.check_name(doc_id)
        if not path.is_file():
            return False
        path.unlink()
        with contextlib.suppress(FileNotFoundError):
            path.with_name(path.name + SIDECAR_SUFFIX).unlink()
        return True


def listing(
    readable: dict[str, dict[str, Any]], indexed: Iterable[str], folder: DocumentFolder | None,
    principal: str | None, can_write: bool,
) -> list[dict[str, Any]]:
    """The documents page's rows: the indexed documents ``principal`` may read
    (``readable``: doc id -> title, format, version), each ``indexed`` or, when its
    file has left the folder, ``deleted``; then, for a writer, the readable files the
    index (``indexed``: every doc id it holds, readable or not) does not hold yet, ``new``."""
    on_disk = folder.files() if folder is not None else None
    rows = [
        {"doc_id": doc_id, "title": d.get("title") or "", "format": d.get("format") or "",
         "version": d.get("version") or "",
         "status": "deleted" if on_disk is not None and doc_id not in on_disk else "indexed"}
        for doc_id, d in sorted(readable.items())
    ]
    if folder is not None and can_write:
        rows += [
            {"doc_id": p.doc_id, "title": p.title, "format": p.format, "version": p.version, "status": "new"}
            for p in folder.pending(indexed, principal)
        ]
    return rows
