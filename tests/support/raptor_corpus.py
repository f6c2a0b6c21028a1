"""Shared real inputs for the raptor tests: a slice of the SQLite sample manual.

The slice is loaded and chunked by the real ingest pipeline, counted with the model's
own tokenizer and embedded with the real all-MiniLM-L6-v2 (the shipped ONNX
model, so no torch is needed). Everything is built once per test process
(``functools.cache``) and shared by the ``test_raptor_*`` modules that import it (``tests/support`` is on pytest's
pythonpath, so a unit test module can import it without an integration module first).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from raptor import ExtractiveSummariser, Leaf, RaptorConfig, Tree, build_tree

ROOT = Path(__file__).resolve().parents[2]
MANUAL = ROOT / "examples" / "sqlite"
# Four short, unrelated pages (~5k words, ~40 chunks): dates, transactions, VACUUM, UPSERT.
SLICE = ["lang_datefunc.md", "lang_transaction.md", "lang_vacuum.md", "lang_upsert.md"]


@dataclass(frozen=True)
class Corpus:
    leaves: list[Leaf]
    vectors: np.ndarray
    embed: Callable[[Sequence[str]], np.ndarray]
    count_tokens: Callable[[str], int]


class MemoEmbed:
    """The real embedder behind a text -> vector memo (tests embed the same texts often)."""

    def __init__(self, encode: Callable[[Sequence[str]], np.ndarray]) -> None:
        self._encode = encode
        self._memo: dict[str, np.ndarray] = {}
        self.calls = 0
        self.texts_embedded = 0

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            self.texts_embedded += len(missing)
            for t, v in zip(missing, self._encode(missing), strict=True):
                self._memo[t] = np.asarray(v, dtype=np.float32)
        return np.stack([self._memo[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)


@functools.cache
def embedder() -> MemoEmbed:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from arborgraph.models.embedding import EmbeddingConfig, load_embedder

    model = load_embedder(EmbeddingConfig())
    return MemoEmbed(model.encode)


@functools.cache
def token_counter() -> Callable[[str], int]:
    from ingest import load_token_counter

    return load_token_counter()


@functools.cache
def corpus() -> Corpus:
    from ingest import ChunkingConfig, Document, chunk_document, iter_collection

    count = token_counter()
    chunks = []
    for item in iter_collection([MANUAL / name for name in SLICE], load_timeout_s=None):
        assert isinstance(item, Document), item
        chunks.extend(chunk_document(item, ChunkingConfig.model_validate({}), count))
    leaves = [Leaf.from_chunk(c) for c in chunks]
    embed = embedder()
    vectors = embed([c.context_text() for c in chunks])
    return Corpus(leaves=leaves, vectors=vectors, embed=embed, count_tokens=count)


# The clustered tree: RAPTOR's levels over the chunks, as a collection without an
# outline gets and as update_tree maintains (clustering, summaries and naming tests).
CONFIG = RaptorConfig(seed=7, outline=False)
# The default: the slice's own outline, clustered above its pages.
OUTLINE_CONFIG = RaptorConfig(seed=7)


def _tree(config: RaptorConfig) -> Tree:
    c = corpus()
    summariser = ExtractiveSummariser(embed=c.embed, count_tokens=c.count_tokens, max_tokens=config.summary_max_tokens)
    return build_tree(c.leaves, c.vectors, embed=c.embed, count_tokens=c.count_tokens, summariser=summariser, config=config)


@functools.cache
def built_tree() -> Tree:
    """The clustered tree over the slice with the default extractive summariser."""
    return _tree(CONFIG)


@functools.cache
def outline_tree() -> Tree:
    """The default (outline) tree over the slice with the extractive summariser."""
    return _tree(OUTLINE_CONFIG)


# Twenty pages on several subjects: enough top nodes for clustering above the outline.
PAGES = sorted(p.name for p in MANUAL.glob("*.md"))[::14][:20]


@functools.cache
def twenty_pages() -> tuple[list[Leaf], np.ndarray, Tree]:
    from ingest import ChunkingConfig, Document, chunk_document, iter_collection

    count = token_counter()
    chunks = []
    for item in iter_collection([MANUAL / name for name in PAGES], load_timeout_s=None):
        assert isinstance(item, Document), item
        chunks.extend(chunk_document(item, ChunkingConfig(), count))
    leaves = [Leaf.from_chunk(c) for c in chunks]
    embed = embedder()
    vectors = embed([c.context_text() for c in chunks])
    summariser = ExtractiveSummariser(embed=embed, count_tokens=count, max_tokens=OUTLINE_CONFIG.summary_max_tokens)
    tree = build_tree(leaves, vectors, embed=embed, count_tokens=count, summariser=summariser, config=OUTLINE_CONFIG)
    return leaves, vectors, tree
