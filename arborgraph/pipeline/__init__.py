"""The index build: a sequence of named stages, each a function plus a thin wrapper.

:func:`build_index` takes the index's build lock, reads the live generation (what a
rebuild may reuse), and runs :data:`~arborgraph.pipeline.stages.STAGES` in order over
one :class:`~arborgraph.pipeline.stages.BuildRun`; the timed ones appear under their
names in :attr:`BuildReport.timings_s`:

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
    scopes                 (untimed) chunks by access scope, their fingerprints
    tree                   a RAPTOR tree per scope (kept, updated or built)
    graph                  an entity graph per scope (kept, updated or built)

then writes the manifest (:mod:`arborgraph.manifest`) and commits: the new generation
replaces the live one only at the end. Any failure or interruption leaves the previous
index as it was.
"""

from arborgraph.build_report import BuildReport
from arborgraph.core.errors import BuildError, NoUsableDocuments
from arborgraph.chunk_rows import chunks_table
from arborgraph.pipeline.embed import try_load_embedder
from arborgraph.pipeline.load import (
    CHUNK_JOB_CHARS,
    LOCAL_CHUNK_CHARS,
    Loaded,
    chunk_remaining,
    input_kilobytes,
    load_documents,
)
from arborgraph.pipeline.run import LOCK_WAIT_STAGE, build_index, check_index_target
from arborgraph.pipeline.stages import STAGES, BuildRun, Stage
from arborgraph.pipeline.stages import start_umap_warmup as _start_umap_warmup
from arborgraph.pipeline.tables import documents_table

__all__ = [
    "BuildError",
    "BuildReport",
    "BuildRun",
    "CHUNK_JOB_CHARS",
    "LOCAL_CHUNK_CHARS",
    "LOCK_WAIT_STAGE",
    "Loaded",
    "NoUsableDocuments",
    "STAGES",
    "Stage",
    "build_index",
    "check_index_target",
    "chunk_remaining",
    "chunks_table",
    "documents_table",
    "input_kilobytes",
    "load_documents",
    "try_load_embedder",
    "_start_umap_warmup",
]
