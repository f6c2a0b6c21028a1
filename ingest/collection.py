"""Walking a document collection: files, directories and globs to Documents.

Every problem with a file (empty, binary, too large, unreadable, a duplicate, a
parser failure, a timeout) becomes a ``SkippedFile`` with a human reason; the walk
itself never raises for a bad file.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import json
import contextlib
import os
import queue
import stat
from collections import deque
from collections.abc import Collection, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ingest.errors import SkipFile
from ingest.loaders._common import Format, decode_text, fallback_title
from ingest.metadata import (
    MAX_METADATA_CHARS,
    SIDECAR_SUFFIX,
    GivenMetadata,
    markdown_metadata,
    merge_metadata,
    names_metadata_key,
    parse_metadata_yaml,
    refuse_unread_acl,
    split_frontmatter,
)
from ingest.models import Document, DocumentMetadata, SkippedFile
from ingest.parse_cache import ParseCache, parse_key
from ingest.parts import can_cut, iter_parts, load_in_parts
from ingest.safe_load import load_or_skip
from ingest.sandbox import LoaderSandbox
from ingest.sniff import SNIFF_BYTES, binary_kind, detect_format

# Above this a file is skipped unread: a build's memory grows with a file's chunks
# (a lookup-only build of one 200 MB Markdown file peaked at 5.4 GB,
# benchmarks/results/large_file.json), and a build killed by the system for memory
# would index nothing; a clear skip lets the rest build. The limit is a setting.
DEFAULT_MAX_FILE_BYTES = 50 * 2**20
# Text and Markdown files above this are read and parsed a part at a time (see
# ingest.parts); other files above it get a proportionally longer time limit.
DEFAULT_PART_BYTES = 8 * 2**20
DEFAULT_LOAD_TIMEOUT_S = 60.0
MAX_SIDECAR_BYTES = 1 * 2**20
_READ_BLOCK = 1 * 2**20
# Folders nested deeper than this below an input folder are not walked, but reported:
# no collection needs more, and one nested 1,400 deep (a hostile upload) made every walk
# cost more than a recursion limit allows and ends in paths the system refuses anyway.
MAX_FOLDER_DEPTH = 64
_HEAD_BYTES = max(SNIFF_BYTES, MAX_METADATA_CHARS + 8)  # what a big file's checks read
_WILDCARDS = frozenset("*?[")


@dataclass(frozen=True)
class _Candidate:
    path: Path  # as found (not resolved: a symlink keeps its own name)
    doc_id: str
    root: Path  # the collection root the file must stay inside
    # where the bytes are read from, when not at ``path`` yet (an upload is loaded, and
    # its metadata checked, as the file it will be before it is stored under that name)
    source: Path | None = None

    @property
    def data(self) -> Path:
        return self.source if self.source is not None else self.path


def iter_collection(
    inputs: Sequence[str | Path],
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    load_timeout_s: float | None = DEFAULT_LOAD_TIMEOUT_S,
    loaders: int = 1,
    parsed: ParseCache | None = None,
    metadata: GivenMetadata | None = None,
    part_bytes: int = DEFAULT_PART_BYTES,
) -> Iterator[Document | SkippedFile]:
    """Yield a ``Document`` or a ``SkippedFile`` for every file the inputs name.

    ``inputs`` are files, directories (walked recursively in sorted order, skipping
    hidden entries and ``*.meta.yaml`` sidecars, never following a link to a folder) or
    glob patterns (``**`` allowed; matched under the same rules).
    ``doc_id`` is the path relative to the input directory, the glob's fixed base
    directory, or, for a file input, the file name. Files above ``max_file_bytes``
    are skipped without being read. Each file is parsed in a worker process that is
    killed after ``load_timeout_s`` seconds; ``None`` parses in this process with
    no time limit (faster for trusted input, but a pathological file can hang).
    ``loaders`` worker processes parse files side by side (with a timeout only);
    results come in the same order, with the same content, whatever their number.
    With a ``parsed`` cache, a file parsed before from the same bytes (same doc id,
    path, format and loader code) is not parsed again. ``metadata`` (given through the
    API) overrides a file's frontmatter and sidecar. Text and Markdown files larger
    than ``part_bytes`` are parsed in parts of about that size (each within the time
    limit, cached on its own) and joined, so a parser never holds more than a part;
    other files larger than that get the time limit once per ``part_bytes``.
    """
    seen_hashes: dict[str, str] = {}
    seen_ids: dict[str, str] = {}
    n_loaders = max(1, loaders) if load_timeout_s is not None else 1
    sandboxes = [LoaderSandbox(load_timeout_s) for _ in range(n_loaders)] if load_timeout_s is not None else []
    try:
        if n_loaders == 1:
            only = sandboxes[0] if sandboxes else None
            results: Iterator[_Loaded] = (
                c if isinstance(c, SkippedFile)
                else _load_candidate(c, max_file_bytes, only, seen_hashes, parsed, metadata, part_bytes)
                for item in inputs
                for c in _expand(item)
            )
        else:
            results = _load_side_by_side(
                inputs, max_file_bytes, sandboxes, seen_hashes, parsed, metadata, part_bytes
            )
        for loaded in results:
            if isinstance(loaded, SkippedFile):
                yield loaded
                continue
            result, dedup_key = loaded
            if isinstance(result, Document):
                owner = seen_ids.get(result.doc_id)
                if owner is not None:
                    result = SkippedFile(
                        path=result.path, reason=f"doc_id {result.doc_id!r} is already used by {owner}"
                    )
                else:
                    seen_ids[result.doc_id] = result.path
                    seen_hashes[dedup_key] = result.doc_id
            yield result
    finally:
        for sandbox in sandboxes:
            sandbox.close()


_Loaded = tuple[Document | SkippedFile, str] | SkippedFile


def _load_side_by_side(
    inputs: Sequence[str | Path],
    max_file_bytes: int,
    sandboxes: list[LoaderSandbox],
    seen_hashes: dict[str, str],
    parsed: ParseCache | None = None,
    metadata: GivenMetadata | None = None,
    part_bytes: int = DEFAULT_PART_BYTES,
) -> Iterator[_Loaded]:
    """Load candidates on several sandboxes at once, yielding in input order.

    ``seen_hashes`` only learns of a document when the caller takes it, so a file
    whose bytes are still loading elsewhere is loaded again rather than called a
    duplicate; the caller's check then decides, exactly as in a serial walk.
    """
    free: queue.Queue[LoaderSandbox] = queue.Queue()
    for sandbox in sandboxes:
        free.put(sandbox)

    def load(candidate: _Candidate) -> tuple[Document | SkippedFile, str]:
        sandbox = free.get()
        try:
            return _load_candidate(candidate, max_file_bytes, sandbox, seen_hashes, parsed, metadata, part_bytes)
        finally:
            free.put(sandbox)

    window: deque[SkippedFile | Future[tuple[Document | SkippedFile, str]]] = deque()
    with ThreadPoolExecutor(max_workers=len(sandboxes)) as pool:
        for item in inputs:
            for candidate in _expand(item):
                window.append(candidate if isinstance(candidate, SkippedFile) else pool.submit(load, candidate))
                # a bounded window: files in flight are held in memory
                while len(window) > 4 * len(sandboxes):
                    yield _take(window.popleft(), seen_hashes)
        while window:
            yield _take(window.popleft(), seen_hashes)


def _take(entry: SkippedFile | Future[tuple[Document | SkippedFile, str]], seen_hashes: dict[str, str]) -> _Loaded:
    if isinstance(entry, SkippedFile):
        return entry
    result, dedup_key = entry.result()
    if isinstance(result, Document) and dedup_key in seen_hashes:
        # an identical file ahead of it finished loading after this one started
        return SkippedFile(path=result.path, reason=f"duplicate of {seen_hashes[dedup_key]}"), ""
    return result, dedup_key


def count_files(inputs: Sequence[str | Path]) -> int:
    """How many results :func:`iter_collection` will yield for ``inputs`` (each file
    named, found or matched, and each input that names nothing), without reading any:
    a walk of the folders, for progress totals."""
    return sum(1 for item in inputs for _ in _expand(item))


def list_files(folder: Path) -> list[str]:
    """The doc ids of the files a walk of ``folder`` would load or report, in its order,
    without reading any (hidden entries, sidecars, linked and too deep folders left out)."""
    return [c.doc_id for c in _walk_dir(folder, folder) if isinstance(c, _Candidate)]


def _expand(item: str | Path) -> Iterator[_Candidate | SkippedFile]:
    text = os.fspath(item)
    if any(c in _WILDCARDS for c in text) and not os.path.lexists(text):
        yield from _expand_glob(text)
        return
    path = Path(text)
    if not os.path.lexists(path):
        yield SkippedFile(path=str(path.absolute()), reason="not found")
    elif path.is_dir():
        yield from _walk_dir(path, path)
    else:
        yield _Candidate(path=path.absolute(), doc_id=path.name, root=path.absolute().parent)


def _expand_glob(pattern: str) -> Iterator[_Candidate | SkippedFile]:
    """The files a glob pattern matches, under the rules of a directory walk.

    ``glob.glob`` follows symbolic links to folders (out of the collection, and round a
    link loop), so the pattern is matched here against a walk of its fixed base folder
    that never follows one: a linked folder the pattern reaches is reported, as the
    walk reports it. ``*`` and ``**`` do not match hidden names; a matched folder
    stands for every file below it, as a directory input does.
    """
    parts = Path(pattern).parts
    n_fixed = next((i for i, part in enumerate(parts) if any(c in _WILDCARDS for c in part)), len(parts))
    base = Path(*parts[:n_fixed]) if n_fixed else Path(".")
    wanted = tuple(parts[n_fixed:])
    folders_only = pattern.endswith(("/", os.sep))  # as in glob: "docs/*/" names folders
    root_abs = base.absolute()
    found: list[tuple[tuple[str, ...], _Candidate | SkippedFile]] = []
    # (a folder below base, whether it matched: "docs/**" matches docs itself)
    folders: list[tuple[tuple[str, ...], bool]] = [((), _glob_match((), wanted))]
    while folders:
        rel, matched = folders.pop()
        folder = base.joinpath(*rel)
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # not a folder, or unreadable: glob matches nothing there either
        for entry in entries:
            sub = (*rel, entry.name)
            if matched and entry.name.startswith("."):
                continue
            path = folder / entry.name
            is_folder = _is_folder(entry)
            hit = matched or ((is_folder or not folders_only) and _glob_match(sub, wanted))
            if is_folder:
                if not (hit or _may_match_below(sub, wanted)):
                    continue
                refused = _unwalked(entry, path, sub)
                if refused is not None:
                    found.append((sub, refused))
                else:
                    folders.append((sub, hit))
            elif hit and not _is_sidecar(entry.name):
                found.append((sub, _Candidate(path=path.absolute(), doc_id="/".join(sub), root=root_abs)))
    if not found:
        yield SkippedFile(path=str(Path(pattern).absolute()), reason="no files match the pattern")
        return
    found.sort(key=lambda item: item[0])
    for _, candidate in found:
        yield candidate


_LINKED_FOLDER = "symbolic link to a folder (not followed)"
_TOO_DEEP = f"folder nested more than {MAX_FOLDER_DEPTH} levels deep (not walked)"


def _unwalked(entry: os.DirEntry[str], path: Path, sub: tuple[str, ...]) -> SkippedFile | None:
    """Why a walk does not enter the folder ``entry`` (``sub`` below the root), if it does not."""
    if entry.is_symlink():
        return SkippedFile(path=str(path.absolute()), reason=_LINKED_FOLDER)
    if len(sub) > MAX_FOLDER_DEPTH:
        return SkippedFile(path=str(path.absolute()), reason=_TOO_DEEP)
    return None


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # (through a link: a linked folder is reported, not entered)
    except OSError:
        return False


@functools.lru_cache(maxsize=4096)
def _glob_match(parts: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    """Whether a relative path matches a glob pattern, both as components."""
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return _glob_match(parts, pattern[1:]) or (
            bool(parts) and not parts[0].startswith(".") and _glob_match(parts[1:], pattern)
        )
    return bool(parts) and _name_matches(parts[0], pattern[0]) and _glob_match(parts[1:], pattern[1:])


@functools.lru_cache(maxsize=4096)
def _may_match_below(parts: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    """Whether some path below the folder ``parts`` could match the pattern."""
    if not parts:
        return bool(pattern)
    if not pattern:
        return False
    if pattern[0] == "**":
        return _may_match_below(parts, pattern[1:]) or (
            not parts[0].startswith(".") and _may_match_below(parts[1:], pattern)
        )
    return _name_matches(parts[0], pattern[0]) and _may_match_below(parts[1:], pattern[1:])


def _name_matches(name: str, pattern: str) -> bool:
    if name.startswith(".") and not pattern.startswith("."):
        return False  # as in glob: a wildcard never matches a hidden name
    return fnmatch.fnmatchcase(name, pattern)


def _walk_dir(directory: Path, root: Path) -> Iterator[_Candidate | SkippedFile]:
    """Every file below ``directory``, in the order of their '/'-separated relative paths.

    A loop over a stack of folders, not ``os.walk`` (which recurses, one frame a level, in
    Python 3.11): how deep a folder is costs no stack. A folder deeper than
    :data:`MAX_FOLDER_DEPTH`, or one that cannot be listed, is reported with its reason."""
    root_abs = root.absolute()
    found: list[tuple[tuple[str, ...], _Candidate | SkippedFile]] = []
    folders: list[tuple[Path, tuple[str, ...]]] = [(directory, _key(directory, root) if directory != root else ())]
    while folders:
        here, rel = folders.pop()
        try:
            with os.scandir(here) as listing:
                entries = list(listing)
        except OSError as exc:
            found.append((rel, SkippedFile(path=str(here.absolute()), reason=f"unreadable folder: {exc.strerror or exc}")))
            continue
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            path, sub = here / name, (*rel, name)
            if _is_folder(entry):
                refused = _unwalked(entry, path, sub)
                if refused is not None:
                    found.append((sub, refused))
                else:
                    folders.append((path, sub))
            elif not _is_sidecar(name):
                found.append((sub, _Candidate(path=path.absolute(), doc_id="/".join(sub), root=root_abs)))
    found.sort(key=lambda item: item[0])
    for _, candidate in found:
        yield candidate


def _key(path: Path, root: Path) -> tuple[str, ...]:
    return Path(_rel(path, root)).parts


def _rel(path: Path, base: Path) -> str:
    return path.absolute().relative_to(base.absolute()).as_posix()


def _is_sidecar(name: str) -> bool:
    return name.endswith(SIDECAR_SUFFIX)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def _check_file(candidate: _Candidate) -> os.stat_result | str:
    """The file's status if it may be read, else why not: before anything opens it
    (opening a FIFO blocks; a device never ends), a file must be a regular file, and a
    symbolic link must stay inside the collection."""
    path = candidate.data
    if _is_sidecar(candidate.path.name):
        return "metadata sidecar, not a document"
    if path.is_symlink() and not _inside(path, candidate.root):
        return "symbolic link to a file outside the collection"
    try:
        info = path.stat()
    except FileNotFoundError:
        return "not found (broken symbolic link?)"
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    if not stat.S_ISREG(info.st_mode):
        return f"not a regular file ({_file_type(info.st_mode)})"
    return info


def _file_type(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


def input_kilobytes(
    inputs: Sequence[str | Path], unchanged: Collection[str] = (), *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> int:
    """Kilobytes of the files ``iter_collection`` would read from ``inputs``, measured
    before anything is loaded (to size a build's executor). Files whose bytes hash
    (SHA-256) to one of ``unchanged`` are not counted, nor files the walk would skip
    unread: only files that pass its checks are opened, so this never blocks on a FIFO,
    reads a device or leaves the collection."""
    total = 0
    for item in inputs:
        for candidate in _expand(item):
            if isinstance(candidate, SkippedFile):
                continue
            info = _check_file(candidate)
            if isinstance(info, str) or info.st_size > max_file_bytes:
                continue
            if unchanged:
                try:
                    if _file_sha256(candidate.path, max_file_bytes) in unchanged:
                        continue
                except OSError:
                    continue
            total += info.st_size
    return total // 1000


@dataclass(frozen=True)
class _Checked:
    """A file that passed every check made before a parse, and what lies beside it."""

    raw: bytes  # the whole file; for a big one, its head
    big: bool
    fmt: Format
    sidecar: tuple[str | None, DocumentMetadata, list[str]] | None
    given: tuple[str | None, DocumentMetadata, list[str]] | None
    raw_sha256: str
    dedup_key: str  # equal for two files a walk takes for duplicates


def _check_candidate(
    candidate: _Candidate, max_file_bytes: int, metadata: GivenMetadata | None, part_bytes: int
) -> _Checked | str:
    """Check, read and sniff one file and read its sidecar; the reason to skip it, if any."""
    info = _check_file(candidate)
    if isinstance(info, str):
        return info
    if info.st_size == 0:
        return "empty file"
    if info.st_size > max_file_bytes:
        return (
            f"file too large ({_size(info.st_size)}; limit {_size(max_file_bytes)}; "
            "raise ingest.max_file_mb to index it)"
        )
    big = info.st_size > part_bytes
    try:
        # a big file is only sniffed here: it is hashed and parsed without being held whole
        raw = read_bytes(candidate.data, _HEAD_BYTES if big else max_file_bytes + 1)
    except PermissionError:
        return "unreadable: permission denied"
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    if len(raw) > max_file_bytes:  # it grew after stat()
        return f"file too large (more than the {_size(max_file_bytes)} limit)"
    if not big and not raw.strip():
        return "empty file (only whitespace)"
    head = raw[:SNIFF_BYTES]
    fmt = detect_format(candidate.path.name, head)
    kind = binary_kind(head) if fmt != "pdf" else None
    if kind is not None:
        return f"binary file ({kind})"
    if fmt is None:
        return f"unsupported file type {candidate.path.suffix.lower() or '(no extension)'!r}"
    try:
        sidecar = _read_sidecar(candidate.path, candidate.root)
        given = metadata.for_doc(candidate.doc_id) if metadata else None
    except SkipFile as exc:
        return exc.reason
    # Identical bytes under other metadata (another tenant's ACL, say) are not a duplicate.
    meta_json = json.dumps(
        [m[1].model_dump(mode="json") if m else None for m in (sidecar, given)], sort_keys=True
    )
    try:
        raw_sha256 = _file_sha256(candidate.data, max_file_bytes) if big else hashlib.sha256(raw).hexdigest()
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    return _Checked(raw, big, fmt, sidecar, given, raw_sha256, f"{raw_sha256}:{meta_json}")


def _load_candidate(
    candidate: _Candidate,
    max_file_bytes: int,
    sandbox: LoaderSandbox | None,
    seen_hashes: dict[str, str],
    parsed: ParseCache | None = None,
    metadata: GivenMetadata | None = None,
    part_bytes: int = DEFAULT_PART_BYTES,
) -> tuple[Document | SkippedFile, str]:
    """Check, read, sniff and load one file; also return the key that detects its duplicates."""
    where = str(candidate.path)

    def skip(reason: str) -> tuple[SkippedFile, str]:
        return SkippedFile(path=where, reason=reason), ""

    checked = _check_candidate(candidate, max_file_bytes, metadata, part_bytes)
    if isinstance(checked, str):
        return skip(checked)
    raw, fmt, raw_sha256 = checked.raw, checked.fmt, checked.raw_sha256
    if checked.dedup_key in seen_hashes:
        return skip(f"duplicate of {seen_hashes[checked.dedup_key]}")

    def load(data: bytes, part: str = "", timeout_s: float | None = None) -> Document | SkippedFile:
        digest = raw_sha256 if not part else hashlib.sha256(data).hexdigest()
        key = parse_key(digest, doc_id=candidate.doc_id, path=where + part, fmt=fmt) if parsed is not None else ""
        loaded = parsed.get(key) if parsed is not None else None
        if loaded is None:
            if sandbox is not None:
                loaded = sandbox.load(data, doc_id=candidate.doc_id, path=where, fmt=fmt, timeout_s=timeout_s)
            else:
                loaded = load_or_skip(data, doc_id=candidate.doc_id, path=where, fmt=fmt)
            if parsed is not None and isinstance(loaded, Document):
                parsed.put(key, loaded)
        return loaded

    if checked.big and can_cut(fmt, raw[:SNIFF_BYTES]):
        try:
            result = load_in_parts(
                iter_parts(candidate.data, fmt, part_bytes), lambda data, i: load(data, f"#part{i}"),
                path=where, content_hash=raw_sha256,
            )
        except OSError as exc:
            return skip(f"unreadable: {exc.strerror or exc}")
    else:
        if checked.big:
            try:
                raw = read_bytes(candidate.data, max_file_bytes + 1)
            except OSError as exc:
                return skip(f"unreadable: {exc.strerror or exc}")
            if not raw.strip():
                return skip("empty file (only whitespace)")
        scale = max(1.0, len(raw) / part_bytes)
        result = load(raw, timeout_s=sandbox.timeout_s * scale if sandbox is not None else None)
    if isinstance(result, Document) and checked.sidecar is not None:
        result = _apply_metadata(result, *checked.sidecar, origin="sidecar", over="the frontmatter")
    if isinstance(result, Document) and checked.given is not None:
        result = _apply_metadata(result, *checked.given, origin="build metadata", over="the file's own metadata")
    if isinstance(result, Document) and fmt != "markdown" and _frontmatter_like(raw):
        result = result.model_copy(update={"warnings": [*result.warnings, _UNREAD_FRONTMATTER]})
    return result, checked.dedup_key


def load_file(
    path: Path,
    root: Path,
    *,
    source: Path | None = None,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    load_timeout_s: float = DEFAULT_LOAD_TIMEOUT_S,
    parsed: ParseCache | None = None,
    part_bytes: int = DEFAULT_PART_BYTES,
) -> Document | SkippedFile:
    """Load the file ``path`` exactly as a walk of the folder ``root`` would (its doc id
    the path below ``root``, its sidecar beside it, the same checks and parse cache key),
    with its bytes read from ``source`` when given: a file can so be checked before it is
    stored under its name. Parsed in a sandbox killed after ``load_timeout_s``."""
    root = root.absolute()
    candidate = _Candidate(path=path.absolute(), doc_id=_rel(path, root), root=root, source=source)
    with LoaderSandbox(load_timeout_s) as sandbox:
        return _load_candidate(candidate, max_file_bytes, sandbox, {}, parsed, None, part_bytes)[0]


_FORMAT_NAMES = {"text": "text files", "rst": "reStructuredText", "html": "HTML"}  # as their loaders say


@dataclass(frozen=True)
class Declared:
    """What a file says about itself, read without parsing the document: its format,
    the title and metadata of its frontmatter (Markdown) and sidecar, and its hashes."""

    doc_id: str
    format: Format
    title: str | None
    metadata: DocumentMetadata
    content_hash: str  # the sha256 of its bytes, as a loaded Document's
    dedup_key: str  # equal for two files a walk would take for duplicates

    @property
    def name_title(self) -> str:
        """The title a loaded document takes from its file name when it names none."""
        return fallback_title(self.doc_id)


def declared(
    path: Path, root: Path, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES, part_bytes: int = DEFAULT_PART_BYTES
) -> Declared | SkippedFile:
    """What the file ``path`` (below the folder ``root``) declares, by the checks and
    the metadata rules of a walk, without its parse: a file skipped for its name, kind,
    size, sidecar or metadata is a ``SkippedFile``. The work is bounded: the file is
    read once (a big one's first part), its frontmatter and sidecar parsed as YAML."""
    root = root.absolute()
    candidate = _Candidate(path=path.absolute(), doc_id=_rel(path, root), root=root)
    where = str(candidate.path)
    checked = _check_candidate(candidate, max_file_bytes, None, part_bytes)
    if isinstance(checked, str):
        return SkippedFile(path=where, reason=checked)
    raw = checked.raw
    try:
        if checked.big and can_cut(checked.fmt, raw[:SNIFF_BYTES]):
            with contextlib.closing(iter_parts(candidate.path, checked.fmt, part_bytes)) as parts:
                raw = next(parts, b"")  # (the first part carries the frontmatter)
        elif checked.big:
            raw = read_bytes(candidate.path, max_file_bytes + 1)
    except OSError as exc:
        return SkippedFile(path=where, reason=f"unreadable: {exc.strerror or exc}")
    title, own = None, None
    try:
        if checked.fmt == "markdown":
            title, own, _, _ = markdown_metadata(decode_text(raw)[0])
        elif checked.fmt != "pdf":
            refuse_unread_acl(decode_text(raw)[0], _FORMAT_NAMES[checked.fmt])
    except SkipFile as exc:
        return SkippedFile(path=where, reason=exc.reason)
    metadata = own or DocumentMetadata()
    if checked.sidecar is not None:
        metadata = merge_metadata(metadata, checked.sidecar[1], origin="sidecar", over="the frontmatter")[0]
        title = checked.sidecar[0] or title
    return Declared(candidate.doc_id, checked.fmt, title, metadata, checked.raw_sha256, checked.dedup_key)


_UNREAD_FRONTMATTER = (
    "starts with a '---' metadata block, but frontmatter is only read from Markdown: its "
    "keys (acl, version, ...) were NOT applied and the block was indexed as text; put them "
    f"in a <file>{SIDECAR_SUFFIX} sidecar or pass them to the build"
)


def _frontmatter_like(raw: bytes) -> bool:
    if not raw.startswith(b"---"):
        return False
    yaml_text, _ = split_frontmatter(raw[: MAX_METADATA_CHARS + 8].decode("utf-8", errors="replace"))
    return yaml_text is not None and names_metadata_key(yaml_text)


def _file_sha256(path: Path, limit: int) -> str:
    """The sha256 of a file's first ``limit`` bytes, read a block at a time."""
    digest = hashlib.sha256()
    for block in _blocks(path, limit):
        digest.update(block)
    return digest.hexdigest()


def read_bytes(path: Path, limit: int) -> bytes:
    """Read at most ``limit`` bytes of a file (the one place the walk reads documents).

    Reads in blocks: ``read(limit)`` would allocate ``limit`` bytes even for a small file.
    """
    return b"".join(_blocks(path, limit))


def _blocks(path: Path, limit: int) -> Iterator[bytes]:
    # Non-blocking, then checked: a file swapped for a FIFO or a device after the walk
    # checked it must not hang or spin the build (regular files ignore O_NONBLOCK).
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise OSError(f"not a regular file ({_file_type(mode)})")
    total = 0
    with open(fd, "rb") as handle:
        while total < limit:
            block = handle.read(min(_READ_BLOCK, limit - total))
            if not block:
                return
            total += len(block)
            yield block


def _read_sidecar(path: Path, root: Path) -> tuple[str | None, DocumentMetadata, list[str]] | None:
    """Parse ``<file>.meta.yaml`` beside ``path`` if there is one inside the collection."""
    sidecar = path.with_name(path.name + SIDECAR_SUFFIX)
    if not os.path.lexists(sidecar):
        for near in _near_miss_sidecars(path):
            raise SkipFile(
                f"{near} looks like its metadata sidecar, but a sidecar is named {sidecar.name} "
                "(not indexed, so that its access list cannot be lost)"
            )
        return None
    origin = f"sidecar {sidecar.name}"
    if not _inside(sidecar, root) or not sidecar.is_file():
        raise SkipFile(f"{origin} is not a regular file inside the collection")
    try:
        if sidecar.stat().st_size > MAX_SIDECAR_BYTES:
            raise SkipFile(f"{origin} is larger than {_size(MAX_SIDECAR_BYTES)}")
        text = read_bytes(sidecar, MAX_SIDECAR_BYTES).decode("utf-8")
    except UnicodeDecodeError:
        raise SkipFile(f"{origin} is not UTF-8") from None
    except OSError as exc:
        raise SkipFile(f"{origin} is unreadable: {exc.strerror or exc}") from None
    return parse_metadata_yaml(text, origin=origin)


def _near_miss_sidecars(path: Path) -> Iterator[str]:
    """Names beside ``path`` that were likely meant as its sidecar (a misspelt one would
    leave the file public); a name that is the sidecar of another file is not one. (Only a
    file has a sidecar: a folder named as the stem, one a writer can make, leaves the check.)"""
    names = [f"{path.name}{suffix}" for suffix in (".meta.yml", ".META.YAML", ".Meta.yaml", ".yaml", ".yml")]
    stem = path.with_name(path.stem)
    if path.suffix and (not os.path.lexists(stem) or os.path.isdir(stem)):
        names += [f"{path.stem}.meta.yaml", f"{path.stem}.meta.yml"]
    for name in names:
        if os.path.lexists(path.with_name(name)):
            yield name


def _apply_metadata(
    doc: Document, title: str | None, metadata: DocumentMetadata, warnings: list[str], *, origin: str, over: str
) -> Document:
    """Keys from ``origin`` override the document's metadata so far and its title."""
    merged, conflicts = merge_metadata(doc.metadata, metadata, origin=origin, over=over)
    return doc.model_copy(
        update={
            "metadata": merged,
            "title": title or doc.title,
            "warnings": [*doc.warnings, *warnings, *conflicts],
        }
    )


def _size(n_bytes: int) -> str:
    if n_bytes >= 2**20:
        return f"{n_bytes / 2**20:.1f} MB"
    if n_bytes >= 2**10:
        return f"{n_bytes / 2**10:.1f} KB"
    return f"{n_bytes} bytes"
