"""The chunks and documents of an opened index, in memory, plus access/validity masks.

Ids, documents and offsets are Python lists and arrays (every query reads them); the
chunks' texts and heading paths stay in their Arrow columns, one buffer each, and become
Python values row by row as they are read (a million chunks' texts as Python strings
would take several times the memory).
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np
import pyarrow as pa

from arborgraph.index import schema as S
from arborgraph.core.results import Context


@dataclass
class DocInfo:
    doc_id: str
    title: str
    source: str | None
    version: str | None
    valid_from: dt.date | None
    valid_to: dt.date | None
    acl: list[str] | None
    importance: float | None


class ArrowColumn(Sequence[Any]):
    """One Arrow column read as a sequence: ``column[row]`` is that row's Python value.

    The rows read lately are kept as Python values (at most ``kept``): a question reads
    the same few hundred candidates' texts several times (linking, features, contexts),
    and converting an Arrow row costs far more than a lookup."""

    def __init__(self, column: "pa.Array | pa.ChunkedArray", kept: int = 20_000) -> None:
        self._column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        self._row = functools.lru_cache(maxsize=kept)(self._convert)

    def _convert(self, row: int) -> Any:
        return self._column[row].as_py()

    def __len__(self) -> int:
        return len(self._column)

    @overload
    def __getitem__(self, row: int) -> Any: ...
    @overload
    def __getitem__(self, row: slice) -> list[Any]: ...
    def __getitem__(self, row: int | slice) -> Any:
        if isinstance(row, slice):
            return self._column[row].to_pylist()
        return self._row(int(row))

    def __iter__(self) -> Iterator[Any]:
        return iter(self._column.to_pylist())


@dataclass
class ChunkStore:
    """Chunk columns aligned with the vector and BM25 rows, and per-document metadata."""

    chunk_ids: list[str]
    doc_ids: list[str]
    texts: Sequence[str]
    heading_paths: Sequence[list[str]]
    starts: list[int]
    ends: list[int]
    n_tokens: list[int]
    docs: dict[str, DocInfo]
    row_of: dict[str, int] = field(init=False)
    _doc_index: np.ndarray = field(init=False)
    _doc_order: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.superseded_by = superseded_documents(self.docs.values())
        self.row_of = {cid: i for i, cid in enumerate(self.chunk_ids)}
        self._doc_order = sorted(self.docs)
        position = {d: i for i, d in enumerate(self._doc_order)}
        self._doc_index = np.array([position[d] for d in self.doc_ids], dtype=np.int64)

    @classmethod
    def from_tables(cls, documents: pa.Table, chunks: pa.Table) -> "ChunkStore":
        docs = {}
        for row in documents.select(
            [S.DOC_ID, S.DOC_TITLE, S.DOC_SOURCE, S.DOC_VERSION, S.DOC_VALID_FROM,
             S.DOC_VALID_TO, S.DOC_ACL, S.DOC_IMPORTANCE]
        ).to_pylist():
            docs[row[S.DOC_ID]] = DocInfo(
                doc_id=row[S.DOC_ID],
                title=row[S.DOC_TITLE],
                source=row[S.DOC_SOURCE],
                version=row[S.DOC_VERSION],
                valid_from=row[S.DOC_VALID_FROM],
                valid_to=row[S.DOC_VALID_TO],
                acl=row[S.DOC_ACL],
                importance=row[S.DOC_IMPORTANCE],
            )
        return cls(
            chunk_ids=chunks.column(S.CHUNK_ID).to_pylist(),
            doc_ids=chunks.column(S.CHUNK_DOC_ID).to_pylist(),
            texts=ArrowColumn(chunks.column(S.CHUNK_TEXT)),
            heading_paths=ArrowColumn(chunks.column(S.CHUNK_HEADING_PATH)),
            starts=chunks.column(S.CHUNK_START).to_pylist(),
            ends=chunks.column(S.CHUNK_END).to_pylist(),
            n_tokens=chunks.column(S.CHUNK_TOKENS).to_pylist(),
            docs=docs,
        )

    def __len__(self) -> int:
        return len(self.chunk_ids)

    def readable_docs(self, principal: str | None) -> set[str]:
        """Documents ``principal`` may read; no principal reads public documents only."""
        return {
            doc_id
            for doc_id, info in self.docs.items()
            if info.acl is None or (principal is not None and principal in info.acl)
        }

    def stale_docs(self, as_of: dt.date | None) -> dict[str, str]:
        """Documents not current on ``as_of``, with why: superseded, expired, not yet valid."""
        stale: dict[str, str] = {d: f"superseded by {newer}" for d, newer in self.superseded_by.items()}
        if as_of is not None:
            for doc_id, info in self.docs.items():
                if info.valid_to is not None and as_of > info.valid_to:
                    stale[doc_id] = f"expired on {info.valid_to.isoformat()}"
                elif info.valid_from is not None and as_of < info.valid_from:
                    stale[doc_id] = f"valid only from {info.valid_from.isoformat()}"
        return stale

    def allowed_docs(
        self, principal: str | None, as_of: dt.date | None, include_stale: bool = False
    ) -> set[str]:
        """Documents a caller may see: readable by ``principal`` and, unless
        ``include_stale``, current on ``as_of`` (``None`` skips the date check)."""
        readable = self.readable_docs(principal)
        if include_stale:
            return readable
        return readable - set(self.stale_docs(as_of))

    def chunk_mask(self, allowed_docs: set[str]) -> np.ndarray:
        doc_ok = np.array([d in allowed_docs for d in self._doc_order], dtype=bool)
        return doc_ok[self._doc_index] if len(self._doc_index) else np.zeros(0, dtype=bool)

    def context(self, row: int, *, score: float, trace: list[str]) -> Context:
        return Context(
            text=self.texts[row],
            source=self.doc_ids[row],
            heading_path=list(self.heading_paths[row]),
            kind="chunk",
            score=float(score),
            node_id=self.chunk_ids[row],
            start=self.starts[row],
            end=self.ends[row],
            provenance=[self.chunk_ids[row]],
            trace=trace,
        )


def _version_key(version: str) -> tuple[tuple[int, object], ...]:
    """Natural order for version strings: "3.10" > "3.9", "2.0" > "2.0rc1"."""
    parts = re.findall(r"\d+|[A-Za-z]+", version)
    return tuple((0, int(p)) if p.isdigit() else (-1, p.lower()) for p in parts)


def _readers_covered(newer: DocInfo, older: DocInfo) -> bool:
    """Whether everyone who may read ``older`` may read ``newer`` too (``None``: public)."""
    if newer.acl is None:
        return True
    return older.acl is not None and set(older.acl) <= set(newer.acl)


def superseded_documents(docs: "Iterable[DocInfo]") -> dict[str, str]:
    """Documents that share a ``source`` with a newer ``version``: doc_id -> newest doc_id.

    A document is superseded only by a newer one that every reader of the older may
    read: otherwise a restricted document would hide a public one from callers who
    cannot read its replacement, and the stale flag would name a document they may not
    know exists."""
    groups: dict[str, list[DocInfo]] = {}
    for info in docs:
        if info.source and info.version:
            groups.setdefault(info.source, []).append(info)
    superseded: dict[str, str] = {}
    for members in groups.values():
        if len({m.version for m in members}) < 2:
            continue
        for member in members:
            key = _version_key(member.version or "")
            newer = [
                m for m in members
                if _version_key(m.version or "") > key and _readers_covered(m, member)
            ]
            if newer:
                superseded[member.doc_id] = max(
                    newer, key=lambda m: (_version_key(m.version or ""), m.doc_id)
                ).doc_id
    return superseded
