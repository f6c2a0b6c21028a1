"""An opened index generation: the tables, vectors, lexical index and scopes queries read.

:class:`Index` is the data side of a knowledge base (:class:`arborgraph.kb.KnowledgeBase`
puts the query engine and the explorer on it). It pins its generation, so no build
prunes it while it is open, and :meth:`Index.warm` loads every scope's tree and graph
ahead of the first question that needs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from arborgraph.core.lexical import LexicalIndex
from arborgraph.core.results import BuildMode
from arborgraph.index import layout
from arborgraph.index import schema as S
from arborgraph.index.chunk_store import ChunkStore
from arborgraph.index.manifest import Manifest, index_manifest
from arborgraph.index.scoped import Scope, load_scopes
from arborgraph.index.store import Generation, open_generation
from arborgraph.index.vectors import DenseIndex, load_ann

# what queries read of the tables (not the documents' whole texts)
DOCUMENT_COLUMNS = [
    S.DOC_ID, S.DOC_TITLE, S.DOC_SOURCE, S.DOC_VERSION, S.DOC_VALID_FROM, S.DOC_VALID_TO, S.DOC_ACL, S.DOC_IMPORTANCE,
]
CHUNK_COLUMNS = [
    S.CHUNK_ID, S.CHUNK_DOC_ID, S.CHUNK_TEXT, S.CHUNK_HEADING_PATH, S.CHUNK_START, S.CHUNK_END, S.CHUNK_TOKENS,
]


@dataclass(eq=False)
class Index:
    """One generation of an index, opened: its manifest, chunk store, BM25 index, chunk
    vectors (None for a lexical-only index) and access scopes (their trees and graphs
    load on first use, or all at once in :meth:`warm`)."""

    index_dir: Path
    on_disk: Generation
    manifest: Manifest
    store: ChunkStore
    lexical: LexicalIndex
    dense: DenseIndex | None
    scopes: list[Scope] = field(default_factory=list)

    @classmethod
    def open(cls, index_dir: str | Path) -> "Index":
        """Open (and pin) the live generation of ``index_dir``; raises
        :class:`arborgraph.IndexNotFound` / :class:`arborgraph.IndexDamaged`."""
        index_dir = Path(index_dir)
        generation = open_generation(index_dir, pin=True, shape=Manifest)
        try:
            dense = None
            if generation.has_vectors(S.CHUNK_VECTORS):
                large = layout.CHUNKS_ANN in generation.manifest.files
                ann = load_ann(generation.file(layout.CHUNKS_ANN)) if large else None
                # mapped, not read: a large collection's queries touch few rows (searched
                # exactly when usearch is not installed here), and a small one's first
                # exact search reads them all from the page cache (a one-off command saves
                # the copy: 8 ms for the sample manual's 4,856 rows)
                rows = generation.vector_rows(S.CHUNK_VECTORS) if large else None
                dense = DenseIndex(generation.vectors(S.CHUNK_VECTORS, mmap=True), ann, rows)
            opened = cls(
                index_dir=index_dir,
                on_disk=generation,
                manifest=index_manifest(generation),
                store=ChunkStore.from_tables(
                    generation.table(S.DOCUMENTS, columns=DOCUMENT_COLUMNS), generation.table(S.CHUNKS, columns=CHUNK_COLUMNS)
                ),
                lexical=LexicalIndex.load(generation.subdir(layout.CHUNKS_BM25)),
                dense=dense,
                scopes=load_scopes(generation),
            )
            generation.read_done()  # what the store keeps of its tables is held by it
            return opened
        except BaseException:
            generation.close()
            raise

    @property
    def generation(self) -> str:
        """The generation's name ("gen-000007")."""
        return self.on_disk.name

    @property
    def routes(self) -> list[str]:
        return list(self.manifest.routes)

    @property
    def mode(self) -> BuildMode:
        """How the index was built (with or without an LLM, which embedding model)."""
        mode = self.manifest.mode
        sources = sorted({s.communities.source for s in self.manifest.scopes if s.communities is not None})
        return BuildMode(
            llm_model=mode.llm_model, embedding=mode.embedding, lexical_fallback=mode.lexical_fallback,
            communities=", ".join(sources) or None,
        )

    def warm(self) -> None:
        """Load every scope's structures the index was built with now (each is otherwise
        read from disk by the first question that needs it)."""
        for scope in self.scopes:
            if "tree" in self.routes:
                scope.tree  # noqa: B018 - cached properties: loading is the point
                scope.tree_lexical  # noqa: B018
                scope.leaf_rows(self.store.row_of)
                scope.summary_rows  # noqa: B018
            if "graph" in self.routes:
                scope.graph  # noqa: B018

    @property
    def closed(self) -> bool:
        return self.on_disk.pin is None or not self.on_disk.pin.held

    def close(self) -> None:
        """Release the pin: a later build may prune the generation (structures not
        loaded by then cannot be). Closing twice is harmless."""
        self.on_disk.close()
