"""Stage ``dense_index``: the approximate nearest-neighbour index of a large
collection's chunk vectors, kept, updated or built (small collections search exactly)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from arborgraph.config import VectorIndexConfig
from arborgraph.index import layout
from arborgraph.index import schema as S
from arborgraph.index.build_report import BuildReport
from arborgraph.index.index_files import sha256_file
from arborgraph.index.store import GenerationWriter
from arborgraph.index.vectors import ANN_MISSING, ann_available, build_ann, update_ann
from arborgraph.pipeline.incremental import PreviousIndex
from ingest.models import Chunk


def dense_index(
    settings: VectorIndexConfig, previous_index: PreviousIndex | None, writer: GenerationWriter,
    chunks: Sequence[Chunk], vectors: np.ndarray | None, report: BuildReport,
) -> None:
    """Stage ``dense_index``: the approximate nearest-neighbour index of the chunk vectors,
    for a collection of at least ``settings.ann_min_rows`` chunks: taken over from the
    previous generation when its vectors are the same, updated from it when a small part
    changed, else built; its account (or why it was skipped) goes into ``report``."""
    if vectors is None or len(vectors) < settings.ann_min_rows:
        return
    if not ann_available():
        report.stages["dense_index"] = {"rows": int(len(vectors)), "skipped": ANN_MISSING}
        report.warnings.append(f"{len(vectors):,} chunks: {ANN_MISSING}")
        return
    written = sha256_file(writer.path / layout.vectors_file(S.CHUNK_VECTORS))
    previous = previous_index.generation if previous_index is not None else None
    before = previous.manifest.files if previous is not None else {}
    same_vectors = before.get(layout.vectors_file(S.CHUNK_VECTORS))
    same_settings = previous_index is not None and previous_index.manifest.config.get("vectors") == settings.model_dump()
    if (
        previous is not None and layout.CHUNKS_ANN in before and same_vectors is not None
        and same_vectors.sha256 == written and same_settings
    ):
        writer.reuse(previous, (layout.CHUNKS_ANN,))
        report.stages["dense_index"] = {"rows": int(len(vectors)), "reused": 1}
        return
    began = time.perf_counter()
    updated = None
    if previous is not None and layout.CHUNKS_ANN in before and same_settings:
        # an update touches only what changed: a one-page change to a million chunks
        # costs that page's inserts, not the whole graph again
        updated = update_ann(
            previous.file(layout.CHUNKS_ANN), previous.table(S.CHUNKS, [S.CHUNK_ID])[S.CHUNK_ID].to_pylist(),
            previous.vectors(S.CHUNK_VECTORS, mmap=True), [c.chunk_id for c in chunks], vectors,
            writer.path / layout.CHUNKS_ANN,
        )
    if updated is None:
        build_ann(vectors, writer.path / layout.CHUNKS_ANN, connectivity=settings.connectivity, expansion_add=settings.expansion_add)
    report.stages["dense_index"] = {
        "rows": int(len(vectors)), "reused": 0, "updated": int(updated is not None), **(updated or {}),
        "seconds": round(time.perf_counter() - began, 3),
    }
