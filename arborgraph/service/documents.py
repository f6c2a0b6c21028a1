"""The folder a served index is built from (``arborgraph serve --docs DIR``): what it
holds beside the live index, and the writes a key with the write permission may make.

A document is listed only to a caller who may read it: an indexed one by the live
index's access filter, a file not indexed yet by the ``acl`` its own metadata declares
(its frontmatter and sidecar, read without parsing the document; one whose metadata
cannot be read is listed to nobody). Listing never parses a document: what a file
declares (with its content hash) is kept until the file, its sidecar or its folder
changes, and an upload's parsed title by its content, so no caller can hold the
service's workers by listing. A file a rebuild would skip as a duplicate (the same
bytes and metadata as a document before it) is listed as one, and can be deleted.

A write never reaches past what its caller may read: an upload is loaded as a build
would load it, from a hidden temporary file, and refused unless its caller may read
the result (its ``acl``) before it is stored under its name; deleting a document the
caller may not read is answered as for an unknown name; nothing is ever replaced.
Names are checked to stay inside the folder, within the system's limits (bytes, not
characters, count), and not to be hidden, a sidecar, a folder that would pass for a
sidecar, or a look-alike of a name the folder holds.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from arborgraph.core.cancel import checkpoint
from arborgraph.index.scoped import scope_of, scope_readable
from arborgraph.query.safety import normalise
from ingest.collection import DEFAULT_MAX_FILE_BYTES, DEFAULT_PART_BYTES, Declared, declared, list_files, load_file
from ingest.metadata import SIDECAR_SUFFIX
from ingest.models import Document, SkippedFile
from ingest.sniff import EXTENSIONS

# a plain file name: letters, digits and . _ - + and spaces, not starting with a dot
_NAME = re.compile(r"^[\w][\w .+\-]*$")
# The system's limits are in bytes (255 a name, 4096 a path on Linux): 190 × "é" is 380.
# A name leaves room for the upload's temporary name and a sidecar's suffix beside it.
MAX_NAME_BYTES = 200
MAX_FOLDERS = 16  # folders above a document: a walk of the folder reads every level
MAX_DOC_ID_BYTES = 1024
_PATH_MAX = 4096
# folder names that would pass for a sidecar of the file beside them (.meta.yaml, or a
# misspelt one a build refuses to guess about): a writer could so hide another's file
_SIDECAR_LIKE = (".yaml", ".yml")
LOAD_TIMEOUT_S = 30.0
_DISK_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


class DocumentRefused(ValueError):
    """An upload or delete that cannot be done; the message says why in one line, and
    ``status`` is the HTTP answer."""

    status = 400


class NameTaken(DocumentRefused):
    """An upload to a name the folder already holds, or one that looks like it (409)."""

    status = 409


class Unindexable(DocumentRefused):
    """An upload a build could not index (422)."""

    status = 422


class OutOfScope(DocumentRefused):
    """An upload its own writer could not read (403)."""

    status = 403


class DiskFull(DocumentRefused):
    """The documents folder's storage refused the write (507)."""

    status = 507


@dataclass(frozen=True)
class LoadLimits:
    """The served index's load settings, so an upload is checked as its rebuild will load it."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    part_bytes: int = DEFAULT_PART_BYTES


@dataclass(frozen=True)
class FileRow:
    """A file of the folder the live index does not hold, as the documents list shows it."""

    doc_id: str
    title: str
    format: str
    version: str
    status: str  # new | duplicate
    duplicate_of: str | None = None

    def row(self) -> dict[str, Any]:
        out = {"doc_id": self.doc_id, "title": self.title, "format": self.format, "version": self.version,
               "status": self.status}
        return out if self.duplicate_of is None else {**out, "duplicate_of": self.duplicate_of}


def _walk_key(doc_id: str) -> tuple[str, ...]:
    return tuple(doc_id.split("/"))  # the order a build walks the folder in


def _readable(found: Declared, principal: str | None) -> bool:
    return scope_readable(scope_of(found.metadata.acl), principal)


class DocumentFolder:
    """The documents folder of one served index."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        self._lock = threading.Lock()
        # doc id -> (the file's and its sidecar's stat, what it declares): read again
        # only when either changes
        self._seen: dict[str, tuple[tuple[Any, ...], Declared | SkippedFile]] = {}
        # an upload's parsed title, by doc id and content (the metadata alone has none)
        self._titles: dict[tuple[str, str], str] = {}

    def check_name(self, doc_id: str) -> Path:
        """The file for ``doc_id`` (a file name, or a '/'-separated path for one in a
        subfolder), or DocumentRefused when the name could leave the folder, is hidden,
        is a sidecar or could pass for one, is too long or too deep for the system, or
        has no format the build reads."""
        parts = PurePosixPath(doc_id).parts
        if not parts or any(not _NAME.match(p) for p in parts) or "\\" in doc_id:
            raise DocumentRefused(
                "a document name is a file name of letters, digits, spaces and . _ - + "
                "(not starting with a dot), optionally under folders named alike"
            )
        if any(len(p.encode()) > MAX_NAME_BYTES for p in parts):
            raise DocumentRefused(f"each file or folder name is at most {MAX_NAME_BYTES} bytes (UTF-8: 'é' is 2, '文' is 3)")
        if len(parts) - 1 > MAX_FOLDERS:
            raise DocumentRefused(f"a document may be at most {MAX_FOLDERS} folders deep")
        if len(doc_id.encode()) > MAX_DOC_ID_BYTES:
            raise DocumentRefused(f"a document name is at most {MAX_DOC_ID_BYTES} bytes long, folders included")
        if doc_id.casefold().endswith(SIDECAR_SUFFIX):
            raise DocumentRefused(f"names ending in {SIDECAR_SUFFIX} are metadata sidecars, not documents")
        if any(p.casefold().endswith(_SIDECAR_LIKE) for p in parts[:-1]):
            raise DocumentRefused("a folder name may not end in .yaml or .yml (it would pass for a metadata sidecar)")
        suffix = PurePosixPath(doc_id).suffix.lower()
        if suffix not in EXTENSIONS:
            raise DocumentRefused(f"no document format for {suffix or 'a name without an extension'} "
                                  f"(use one of {', '.join(sorted(EXTENSIONS))})")
        path = self.root.joinpath(*parts)
        if len(os.fsencode(path)) + len(SIDECAR_SUFFIX) + 32 > _PATH_MAX:
            raise DocumentRefused("that name is too long for this server's documents folder")
        if not path.resolve().is_relative_to(self.root):
            raise DocumentRefused("that name leads outside the documents folder")
        return path

    def files(self) -> list[str]:
        """Doc ids of the document files in the folder, in the order a build walks them
        (hidden entries, sidecars and folders too deep for a build left out)."""
        return list_files(self.root)

    # -- what the files not indexed declare -------------------------------------------

    def declared(self, doc_id: str, limits: LoadLimits = LoadLimits()) -> Declared | SkippedFile | None:
        """What the file ``doc_id`` declares (None: there is no such file), read again
        only when it, its sidecar or its folder changed."""
        path = self.root / doc_id
        try:
            signature = tuple(
                _stat_key(p) for p in (path, path.with_name(path.name + SIDECAR_SUFFIX), path.parent)
            )
        except OSError:
            return None
        if signature[0] is None:
            return None
        with self._lock:
            known = self._seen.get(doc_id)
        if known is not None and known[0] == signature:
            return known[1]
        found = declared(path, self.root, max_file_bytes=limits.max_file_bytes, part_bytes=limits.part_bytes)
        with self._lock:
            self._seen[doc_id] = (signature, found)
        return found

    def unindexed(
        self, indexed: Mapping[str, str], readable: Iterable[str], principal: str | None, limits: LoadLimits = LoadLimits(),
    ) -> list[FileRow]:
        """The files the live index does not hold that ``principal`` may read by their
        own metadata: ``new``, or ``duplicate`` when a rebuild would skip them for one
        (the same bytes and metadata as a document indexed, or listed before them).
        ``indexed``: every doc id the index holds, with its content hash."""
        on_disk = self.files()
        new = [d for d in on_disk if d not in indexed]
        present = set(on_disk)
        with self._lock:  # forget the files gone
            for gone in [d for d in self._seen if d not in present]:
                del self._seen[gone]
            for key in [k for k in self._titles if k[0] not in present]:
                del self._titles[key]
        by_hash: dict[str, list[str]] = {}
        for doc_id, content_hash in indexed.items():
            by_hash.setdefault(content_hash, []).append(doc_id)
        readable = set(readable)
        first: dict[str, str] = {}  # dedup key -> the file a rebuild keeps
        rows = []
        for doc_id in new:
            found = self.declared(doc_id, limits)
            if not isinstance(found, Declared):
                continue  # its metadata cannot be read: nobody is shown it
            original = first.get(found.dedup_key) or next(
                (x for x in sorted(by_hash.get(found.content_hash, ()), key=_walk_key)
                 if isinstance(other := self.declared(x, limits), Declared) and other.dedup_key == found.dedup_key),
                None,
            )
            if original is None:
                first[found.dedup_key] = doc_id
            if not _readable(found, principal):
                continue
            title = found.title or self._titles.get((doc_id, found.dedup_key)) or found.name_title
            rows.append(FileRow(
                doc_id=doc_id, title=title, format=found.format, version=found.metadata.version or "",
                status="new" if original is None else "duplicate",
                # (the same metadata: readable as this file is, unless indexed otherwise)
                duplicate_of=original if original is not None and (original in readable or original not in indexed) else None,
            ))
        return rows

    def may_change(self, doc_id: str, indexed: bool, index_readable: bool, principal: str | None,
                   limits: LoadLimits = LoadLimits()) -> bool:
        """Whether ``principal`` may delete the file ``doc_id``: readable by the index
        when it holds it, and by the file's own metadata when that can be read."""
        views = [index_readable] if indexed else []
        found = self.declared(doc_id, limits)
        if isinstance(found, Declared):
            views.append(_readable(found, principal))
        return bool(views) and all(views)

    # -- writes ----------------------------------------------------------------------

    def add(self, doc_id: str, data: bytes, principal: str | None, limits: LoadLimits = LoadLimits()) -> Document:
        """Write ``data`` as a new file ``doc_id``: loaded as a build would load it, and
        stored under its name only when it can be indexed and ``principal`` may read it
        (DocumentRefused otherwise; nothing is left behind)."""
        path = self.check_name(doc_id)
        self._check_free(doc_id, path)
        tmp = self.root / f".upload-{secrets.token_hex(8)}"  # hidden: no walk sees it
        try:
            with _storage(doc_id):
                with open(tmp, "xb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
            loaded = load_file(path, self.root, source=tmp, load_timeout_s=LOAD_TIMEOUT_S,
                               max_file_bytes=limits.max_file_bytes, part_bytes=limits.part_bytes)
            if not isinstance(loaded, Document):
                reason = loaded.reason.replace(str(path), doc_id).replace(str(tmp), doc_id)
                raise Unindexable(f"{doc_id} cannot be indexed: {reason}")
            acl = loaded.metadata.acl
            if not scope_readable(scope_of(acl), principal):
                raise OutOfScope(
                    f"{doc_id} declares acl {acl}, which this key's principal may not read: "
                    "a writer may only add documents it can read itself"
                )
            checkpoint()  # a request given up meanwhile stores nothing
            with _storage(doc_id):
                path.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(tmp, path)  # fails if the name was taken meanwhile: nothing is replaced
                except FileExistsError:
                    raise NameTaken(f"the documents folder already holds {doc_id!r}") from None
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        found = self.declared(doc_id, limits)
        if isinstance(found, Declared):
            with self._lock:
                self._titles[(doc_id, found.dedup_key)] = loaded.title
        return loaded

    def _check_free(self, doc_id: str, path: Path) -> None:
        """NameTaken when the name, its sidecar or a look-alike is in the folder, or a
        file stands where the name needs a folder."""
        if os.path.lexists(path) or os.path.lexists(path.with_name(path.name + SIDECAR_SUFFIX)):
            raise NameTaken(f"the documents folder already holds {doc_id!r}: delete it first, or pick another name")
        parent = path.parent
        while parent != self.root:
            if os.path.lexists(parent) and not parent.is_dir():
                raise NameTaken(f"{parent.relative_to(self.root).as_posix()!r} is a file, so {doc_id!r} cannot be in it")
            parent = parent.parent
        skeleton = normalise(doc_id)
        if any(normalise(other) == skeleton for other in self.files()):
            raise NameTaken(
                f"{doc_id!r} looks like a name the folder already holds (look-alike letters of another "
                "script, accents or case): pick another name"
            )

    def remove(self, doc_id: str) -> bool:
        """Delete the file ``doc_id`` and its sidecar; False when there is no such file."""
        path = self.check_name(doc_id)
        if not path.is_file():
            return False
        path.unlink()
        with contextlib.suppress(FileNotFoundError):
            path.with_name(path.name + SIDECAR_SUFFIX).unlink()
        with self._lock:
            self._seen.pop(doc_id, None)
        return True


def _stat_key(path: Path) -> tuple[int, ...] | None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


@contextlib.contextmanager
def _storage(doc_id: str) -> Any:
    """The system's refusals of a write, as the caller's answer: a full disk (507), a
    name too long (400), a file where a folder is needed (409)."""
    try:
        yield
    except OSError as exc:
        if exc.errno in _DISK_FULL:
            raise DiskFull(f"the documents folder's disk refused the write ({os.strerror(exc.errno)}): free space, then try again") from None
        if exc.errno == errno.ENAMETOOLONG:
            raise DocumentRefused("that name is too long for this server's documents folder") from None
        if exc.errno in (errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
            raise NameTaken(f"a file or folder of the documents folder is in the way of {doc_id!r}") from None
        raise


def listing(
    readable: dict[str, dict[str, Any]], indexed: Mapping[str, str], folder: DocumentFolder | None,
    principal: str | None, can_write: bool, limits: LoadLimits = LoadLimits(),
) -> list[dict[str, Any]]:
    """The documents page's rows: the indexed documents ``principal`` may read
    (``readable``: doc id -> title, format, version), each ``indexed`` or, when its
    file has left the folder, ``deleted``; then, for a writer, the readable files the
    index (``indexed``: every doc id it holds, with its content hash) does not hold:
    ``new``, or ``duplicate`` (see :meth:`DocumentFolder.unindexed`)."""
    on_disk = set(folder.files()) if folder is not None else None
    rows = [
        {"doc_id": doc_id, "title": d.get("title") or "", "format": d.get("format") or "",
         "version": d.get("version") or "",
         "status": "deleted" if on_disk is not None and doc_id not in on_disk else "indexed"}
        for doc_id, d in sorted(readable.items())
    ]
    if folder is not None and can_write:
        rows += [r.row() for r in folder.unindexed(indexed, readable, principal, limits)]
    return rows
