"""The manifest of a generation: its typed shape, and the one place it is read and written.

``manifest.json`` holds what the store needs (schema version, generation name, the
checksummed list of every file) and what a build recorded (config, mode, routes, access
scopes with their fingerprints, document hashes, counts, timings, the build report, LLM
usage). ``manifest.sha256`` beside it holds its SHA-256, checked before it is parsed.
Every open validates the whole shape: a manifest that does not have it is a damaged
index, refused in one line, never read field by field until something raises.

The file is ``json.dumps(..., indent=2, sort_keys=True)`` of the model dumped with only
the fields that were set, so a manifest read and written again is the same text, and a
field added here later never appears in (or is demanded of) an older index.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, field_validator

from arborgraph.core.embedding_identity import EmbeddingIdentity
from arborgraph.index import layout
from arborgraph.index.build_report import BuildReport
from arborgraph.core.errors import IndexDamaged
from arborgraph.index.index_files import damaged, read_small, shown, write_atomic
from arborgraph.index.schema import CHUNKS, DOCUMENTS, SCHEMA_VERSION

if TYPE_CHECKING:
    from arborgraph.index.store import Generation

MAX_MANIFEST_BYTES = 256 * 2**20

Route = Literal["lookup", "tree", "graph", "global"]


class FileRecord(BaseModel):
    """One file of a generation: its checksum, size, and rows for tables and vectors."""

    model_config = ConfigDict(extra="forbid")

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: StrictInt = Field(ge=0)
    rows: StrictInt | None = Field(default=None, ge=0)


class _Stored(BaseModel):
    def to_json(self) -> dict[str, Any]:
        """The record as stored: the fields that were set (or read), nothing added."""
        return self.model_dump(mode="json", exclude_unset=True)


class StoreManifest(_Stored):
    """What the store itself needs of a manifest: its version, its generation and the
    checksummed list of every file (no file outside the list is ever read)."""

    model_config = ConfigDict(extra="allow")

    schema_version: StrictInt
    generation: str = Field(pattern=layout.GENERATION_PATTERN)
    files: dict[str, FileRecord] = Field(min_length=1)

    @field_validator("files")
    @classmethod
    def _relative_paths(cls, files: dict[str, FileRecord]) -> dict[str, FileRecord]:
        for rel in files:
            parts = rel.split("/")
            if rel.startswith("/") or "\\" in rel or any(p in ("", ".", "..") for p in parts):
                raise ValueError("a file path is not a plain relative path inside the generation")
        return files


class ModeRecord(BaseModel):
    """How the index was built: LLM model, embedding model, or why it is lexical-only."""

    model_config = ConfigDict(extra="allow")

    llm_model: str | None = None
    embedding: str | None = None
    # the facts behind ``embedding`` (model file digest, precision, pooling, runtime...);
    # absent from indexes built before it was recorded
    embedding_identity: EmbeddingIdentity | None = None
    lexical_fallback: StrictBool = False
    lexical_fallback_reason: str | None = None


class CommunitiesRecord(BaseModel):
    """Where a scope's communities came from when not from the build's own Leiden:
    ``gds-leiden``, GDS's hierarchical Leiden adopted from a Neo4j database
    (``export-neo4j --gds-leiden --adopt``), with the settings GDS ran with."""

    model_config = ConfigDict(extra="allow")

    source: Literal["gds-leiden"]
    gds_version: str
    settings: dict[str, Any]  # resolution, min_edge_weight, seed, max_levels
    levels: StrictInt = Field(ge=0)  # the levels of the adopted table
    communities: StrictInt = Field(ge=0)
    adopted_at: str


class ScopeRecord(BaseModel):
    """One access scope: its tag (in file names), its scope key, its chunk count, and the
    fingerprints a rebuild compares to reuse or update its tree and graph."""

    model_config = ConfigDict(extra="allow")

    tag: str = Field(pattern=r"^s\d{1,6}$")
    scope: str = Field(min_length=1)
    chunks: StrictInt = Field(ge=0)
    # of the chunks and settings (None: the structure was not built)
    tree_fingerprint: str | None = None
    graph_fingerprint: str | None = None
    # of the settings alone: equal means the previous structure can be updated
    tree_settings: str | None = None
    graph_settings: str | None = None
    # None: the communities are the build's own (in-process Leiden)
    communities: CommunitiesRecord | None = None


class BuildRecord(_Stored):
    """What a build records in the manifest, besides the store's part."""

    model_config = ConfigDict(extra="allow")

    arborgraph_version: str
    built_at: str
    config: dict[str, Any]
    mode: ModeRecord
    routes: list[Route] = Field(min_length=1)
    scopes: list[ScopeRecord]
    documents: dict[str, str]  # doc id -> content hash
    # the loaders' code and parser versions the documents were read with
    # (ingest.parse_cache.loader_fingerprint): chunks cut from another reading are not
    # reused; None for a manifest written before it was recorded
    loader: str | None = None
    counts: dict[str, StrictInt]
    timings_s: dict[str, float] = Field(default_factory=dict)
    # the timings of the last build that reused no document (this one's, or carried from
    # the generation it updated): an update's timings alone say little about the index
    full_build_timings_s: dict[str, float] = Field(default_factory=dict)
    # as BuildReport.stored() writes it; a manifest without one reads as an empty report
    report: BuildReport = Field(default_factory=lambda: BuildReport(index_dir=""))
    # LLM usage, present only for builds with an LLM (``LLMUsage.to_dict``)
    llm_calls: StrictInt | None = None
    llm_cache_hits: StrictInt | None = None
    llm_failures: StrictInt | None = None
    llm_fallbacks: StrictInt | None = None
    llm_repairs: StrictInt | None = None
    llm_retries: StrictInt | None = None
    llm_tokens_in: StrictInt | None = None
    llm_tokens_out: StrictInt | None = None
    llm_seconds: float | None = None
    llm_by_stage: dict[str, dict[str, Any]] | None = None

    def scope(self, tag: str) -> ScopeRecord | None:
        """The record of the scope tagged ``tag``, None when there is none."""
        return next((s for s in self.scopes if s.tag == tag), None)

    def llm_usage(self) -> dict[str, Any]:
        """The ``llm_*`` fields this manifest holds, by name (sorted, as on disk)."""
        data = self.model_dump(mode="json", exclude_unset=True)
        return {k: v for k, v in sorted(data.items()) if k.startswith("llm")}


class Manifest(StoreManifest, BuildRecord):
    """The manifest of an index a build wrote: the store's part and what queries read."""

    @field_validator("files")
    @classmethod
    def _has_the_core_tables(cls, files: dict[str, FileRecord]) -> dict[str, FileRecord]:
        for rel in (layout.table_file(DOCUMENTS), layout.table_file(CHUNKS)):
            if rel not in files:
                raise ValueError(f"the file list has no {rel}")
        return files


Shape = TypeVar("Shape", bound=StoreManifest)


def manifest_text(data: Mapping[str, Any]) -> str:
    """The text of ``manifest.json`` for ``data``."""
    return json.dumps(data, indent=2, sort_keys=True)


def write_manifest(gen_dir: Path, data: Mapping[str, Any]) -> None:
    """Write ``manifest.json`` and its checksum sidecar into ``gen_dir``."""
    text = manifest_text(data)
    write_atomic(gen_dir / layout.MANIFEST, text)
    write_atomic(gen_dir / layout.MANIFEST_SUM, hashlib.sha256(text.encode()).hexdigest() + "\n")


def read_manifest(index_dir: Path, gen: Path, shape: type[Shape]) -> Shape:
    """The manifest of generation ``gen`` as ``shape``; raises
    :class:`IndexDamaged` (one line) when it is missing, oversized, not JSON, of another
    schema version, fails its checksum, lacks the shape, or describes another generation."""
    name = layout.MANIFEST
    path = gen / name
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise IndexDamaged(f"{index_dir}: the live generation {gen.name} has no manifest") from None
    if not stat.S_ISREG(info.st_mode):
        raise damaged(index_dir, f"{gen.name}/{name} is not a regular file")
    if info.st_size > MAX_MANIFEST_BYTES:
        raise damaged(index_dir, f"{gen.name}/{name} is {info.st_size} bytes, far too large")
    try:
        with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as handle:
            raw = handle.read(MAX_MANIFEST_BYTES + 1)
    except OSError as exc:
        raise IndexDamaged(f"{index_dir}: unreadable manifest ({exc.strerror})") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise damaged(index_dir, f"{gen.name}/{name} is not valid JSON") from None
    if not isinstance(data, dict):
        raise damaged(index_dir, f"{gen.name}/{name} is not a JSON object")
    # the version first: an index from another release is named as such, not as damage
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise IndexDamaged(f"{index_dir}: manifest has no schema version")
    if version > SCHEMA_VERSION:
        raise IndexDamaged(
            f"{index_dir}: index schema {version} is newer than this Arborgraph supports "
            f"({SCHEMA_VERSION}); upgrade arborgraph"
        )
    if version < SCHEMA_VERSION:
        raise IndexDamaged(
            f"{index_dir}: index schema {version} is older than {SCHEMA_VERSION}; rebuild it"
        )
    sum_name = layout.MANIFEST_SUM
    expected = read_small(gen / sum_name, f"{gen.name}/{sum_name}", index_dir, limit=80)
    if expected is None:
        raise damaged(
            index_dir,
            f"{gen.name}/{sum_name} is missing (tampered, or written by an older "
            "Arborgraph: rebuild the index)",
        )
    if expected.strip() != hashlib.sha256(raw).hexdigest().encode():
        raise damaged(index_dir, f"{gen.name}/{name} fails its checksum (tampered or corrupt)")
    record = validated(data, shape, index_dir)
    if record.generation != gen.name:
        raise damaged(index_dir, f"{gen.name}/{name} describes {record.generation}")
    return record


def validated(data: Mapping[str, Any], shape: type[Shape], index_dir: Path) -> Shape:
    """``data`` as ``shape``, or :class:`IndexDamaged` naming the first problem."""
    try:
        return shape.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(shown(str(part), 40) if isinstance(part, str) else str(part) for part in first["loc"])
        raise damaged(index_dir, f"{layout.MANIFEST} {where or 'top level'}: {first['msg']}") from None


def index_manifest(generation: "Generation") -> Manifest:
    """The typed manifest of an index ``generation`` (opened with ``shape=Manifest``, or
    validated now); :class:`IndexDamaged` when it is not an index a build wrote."""
    if isinstance(generation.manifest, Manifest):
        return generation.manifest
    # a store manifest keeps every field it was read with (extra="allow"): the whole text
    return validated(generation.manifest.to_json(), Manifest, generation.path.parent)
