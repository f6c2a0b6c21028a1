"""What a rebuild can take from the live index instead of recomputing.

A build over an existing index parses only files it has not parsed before (the parse
cache, :mod:`ingest.parse_cache`, keyed by the file's bytes and the loader code) and
compares each document's content hash with the manifest: unchanged documents keep
their chunks, every chunk's vector comes from the embedding cache, and a scope whose
chunks are all unchanged keeps its tree and graph as they were; a scope whose chunks
changed updates its previous tree (:func:`arborgraph.index.scoped.load_scope_tree`) and
graph (:func:`load_graph_state`). Per-document status is persisted while the build
runs, so an interrupted batch can be told apart from a finished one and resumed.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from arborgraph.index import layout
from arborgraph.index import schema as S
from arborgraph.index.chunk_rows import chunks_from_table
from arborgraph.index.manifest import Manifest, index_manifest
from arborgraph.core.errors import IndexUnusable
from arborgraph.index.index_dir import build_running
from arborgraph.index.store import Generation, open_generation
from ingest.models import Chunk, Document
from ingest.parse_cache import loader_fingerprint

DocStatus = Literal["pending", "processing", "done", "failed", "skipped"]


@dataclass
class PreviousIndex:
    """The parts of the live generation a rebuild may reuse."""

    generation: Generation
    doc_hashes: dict[str, str]
    chunking: dict[str, Any]
    chunks_by_doc: dict[str, list[Chunk]] = field(default_factory=dict)
    loader: str | None = None  # the loader fingerprint its documents were read with

    def reusable_chunks(self, doc: Document, chunking: dict[str, Any]) -> list[Chunk] | None:
        """The live generation's chunks of ``doc`` when they are what chunking it now
        would give: the same bytes, chunking settings and loaders (a loader that reads the
        same bytes otherwise, such as a heading that is now a paragraph, cuts other
        chunks); else None."""
        if chunking != self.chunking or self.doc_hashes.get(doc.doc_id) != doc.content_hash:
            return None
        if self.loader is None or self.loader != loader_fingerprint():
            return None
        return self.chunks_by_doc.get(doc.doc_id)

    @property
    def manifest(self) -> Manifest:
        """The live generation's typed manifest."""
        return index_manifest(self.generation)


def load_previous(index_dir: Path) -> PreviousIndex | None:
    """The live generation of ``index_dir``, or None for a first build (or an unreadable one)."""
    try:
        gen = open_generation(index_dir, shape=Manifest)
    except IndexUnusable:
        return None
    manifest = index_manifest(gen)
    by_doc: dict[str, list[Chunk]] = {}
    for chunk in chunks_from_table(gen.table(S.CHUNKS)):
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    return PreviousIndex(
        generation=gen,
        doc_hashes=dict(manifest.documents),
        chunking=manifest.config.get("chunking", {}),
        chunks_by_doc=by_doc,
        loader=manifest.loader,
    )


def load_graph_state(generation: Generation, tag: str) -> Any:
    """The graph of one scope with its stored extractions (a
    :class:`graphrag.update.GraphState`), or None when the generation predates them."""
    from graphrag.schema import TABLE_NAMES, UPDATE_TABLE_NAMES
    from graphrag.update import state_from_tables

    from arborgraph.index.layout import scoped

    names = (*TABLE_NAMES, *UPDATE_TABLE_NAMES)
    if not all(generation.has_table(scoped(name, tag)) for name in names):
        return None
    return state_from_tables({name: generation.table(scoped(name, tag)) for name in names})


def fingerprint(chunks: Sequence[Chunk], settings: dict[str, Any], acl_key: str) -> str:
    """A hash of everything a scope's structures depend on: its chunks, settings and ACL."""
    digest = hashlib.sha256()
    digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
    digest.update(acl_key.encode())
    for chunk in chunks:
        digest.update(f"\x00{chunk.chunk_id}\x00{chunk.context_text()}".encode())
    return digest.hexdigest()


class DocumentStatus(BaseModel):
    status: DocStatus
    content_hash: str | None = None
    reason: str | None = None


class BuildStatus(BaseModel):
    """Per-document status of the build in progress (or the last one), on disk.

    ``running`` is written by a build holding the index's build lock; a build killed
    before it could write ``done`` or ``failed`` leaves ``running`` behind, which
    :meth:`load` reports as ``interrupted`` once no build holds the lock.
    """

    state: Literal["running", "done", "failed", "interrupted"] = "running"
    pid: int | None = None  # of the process that ran the build
    documents: dict[str, DocumentStatus] = Field(default_factory=dict)

    def save(self, index_dir: Path) -> None:
        path = layout.status_file(index_dir)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(self.model_dump_json(indent=1), encoding="utf-8")
        os.replace(tmp, path)

    @classmethod
    def load(cls, index_dir: Path) -> "BuildStatus | None":
        path = layout.status_file(index_dir)
        if not path.is_file():
            return None
        try:
            status = cls.model_validate_json(path.read_text(encoding="utf-8"))
        except ValueError:
            return None
        if status.state == "running" and not build_running(index_dir):
            status.state = "interrupted"
        return status


def document_changes(docs: Sequence[Any], previous: PreviousIndex | None, reused: int) -> Mapping[str, int]:
    """What changed since the live index: added, changed, removed, unchanged documents."""
    if previous is None:
        return {"added": len(docs), "changed": 0, "removed": 0, "unchanged": 0, "chunks_reused_from": 0}
    old = previous.doc_hashes
    current = {d.doc_id: d.content_hash for d in docs}
    return {
        "added": sum(1 for d in current if d not in old),
        "changed": sum(1 for d, h in current.items() if d in old and old[d] != h),
        "removed": sum(1 for d in old if d not in current),
        "unchanged": sum(1 for d, h in current.items() if old.get(d) == h),
        "chunks_reused_from": reused,
    }
