"""The index build: a sequence of named stages, each a function from typed inputs to a
typed output.

:func:`build_index` takes the index's build lock, reads the live generation (what a
rebuild may reuse), and runs the stages of :data:`~arborgraph.pipeline.stages.STAGES`
in order (:func:`~arborgraph.pipeline.stages.build_stages`), each a function handed what
the earlier ones returned, with what lives for the whole build (lock, executor, report,
embedders, the new generation) in one :class:`~arborgraph.pipeline.stages.BuildContext`;
the timed ones appear under their names in :attr:`BuildReport.timings_s`:

    load                   read and parse the inputs (parse cache); chunk on a pool while loading
    prepare                (untimed) refuse empty input; open the LLM provider and the new generation
    chunk                  chunk what the pool did not
    documents              (untimed) counts, change statistics, UMAP warm-up
    contradictions         candidate contradictions between documents
    texts                  (untimed) the text each chunk is indexed by
    contextual_prefixes    with an LLM, when asked: a sentence situating each chunk
    embed                  chunk vectors, through the embedding cache
    lexical                the BM25 index
    tables                 (untimed) documents and chunks tables, chunk vectors
    dense_index            (untimed; times itself) the chunk vectors' approximate nearest-neighbour index, large collections only
    scopes                 (untimed) chunks by access scope, their fingerprints
    tree                   a RAPTOR tree per scope (kept, updated or built)
    graph                  an entity graph per scope (kept, updated or built)

then writes the manifest (:mod:`arborgraph.index.manifest`) and commits: the new generation
replaces the live one only at the end. Any failure or interruption leaves the previous
index as it was.

The names below load on first use, so that the pool's work functions
(:mod:`arborgraph.pipeline.executor`) import only what they run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from arborgraph.core.lazy import lazy_exports

_EXPORTS = {
    "BuildReport": "arborgraph.index.build_report",
    "try_load_embedder": "arborgraph.pipeline.embed",
    "CHUNK_JOB_CHARS": "arborgraph.pipeline.load",
    "LOCAL_CHUNK_CHARS": "arborgraph.pipeline.load",
    "Loaded": "arborgraph.pipeline.load",
    "chunk_remaining": "arborgraph.pipeline.load",
    "input_kilobytes": "arborgraph.pipeline.load",
    "load_documents": "arborgraph.pipeline.load",
    "LOCK_WAIT_STAGE": "arborgraph.pipeline.run",
    "build_index": "arborgraph.pipeline.run",
    "STAGES": "arborgraph.pipeline.stages",
    "BuildContext": "arborgraph.pipeline.stages",
    "Stage": "arborgraph.pipeline.stages",
    "start_umap_warmup": "arborgraph.pipeline.stages",
    "documents_table": "arborgraph.pipeline.tables",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from arborgraph.index.build_report import BuildReport
    from arborgraph.pipeline.embed import try_load_embedder
    from arborgraph.pipeline.load import (
        CHUNK_JOB_CHARS,
        LOCAL_CHUNK_CHARS,
        Loaded,
        chunk_remaining,
        input_kilobytes,
        load_documents,
    )
    from arborgraph.pipeline.run import LOCK_WAIT_STAGE, build_index
    from arborgraph.pipeline.stages import STAGES, BuildContext, Stage, start_umap_warmup
    from arborgraph.pipeline.tables import documents_table

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
