"""Build stages for the derived structures (RAPTOR tree, entity graph), per access scope.

Summaries and community reports are derived text: a summary of a restricted document
must never reach someone who may not read that document. Rather than filtering
derived nodes after the fact (which, with one tree over everything, would hide the
root and most summaries from every restricted caller), Arborgraph builds one tree and
one graph **per access scope** — the set of documents sharing one ACL. A caller
searches every scope it may read. No derived node ever mixes two scopes, so nothing
derived can leak, and nothing derived is lost for the callers who may see it. Cost is
unchanged: each chunk belongs to exactly one scope.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from arborgraph.config import Config
from arborgraph.core.protocols import Embedder
from arborgraph.pipeline.embedding_cache import EmbeddingCache
from arborgraph.pipeline.shared_embedding_cache import SharedEmbeddingCache
from arborgraph.pipeline.executor import cyclic_gc_paused, extract_many_on, fit_many_on
from arborgraph.index.layout import TREE, scoped, tree_bm25_dir
from arborgraph.core.lexical import LexicalIndex
from arborgraph.core.protocols import ProgressCallback
from arborgraph.index.scoped import PUBLIC, scope_of
from arborgraph.index.store import GenerationWriter
from ingest.models import Chunk, Document

@dataclass(frozen=True)
class ScopePart:
    """The chunks of one access scope; ``tag`` names its files (s0, s1, ...)."""

    tag: str
    scope: str
    chunks: list[Chunk]
    rows: np.ndarray  # row of each chunk in the chunks table / chunk vectors


def partition_by_scope(docs: Sequence[Document], chunks: Sequence[Chunk]) -> list[ScopePart]:
    acl = {d.doc_id: d.metadata.acl for d in docs}
    groups: dict[str, list[int]] = {}
    for row, chunk in enumerate(chunks):
        groups.setdefault(scope_of(acl[chunk.doc_id]), []).append(row)
    ordered = sorted(groups, key=lambda s: (s != PUBLIC, s))
    return [
        ScopePart(
            tag=f"s{i}",
            scope=scope,
            chunks=[chunks[r] for r in groups[scope]],
            rows=np.asarray(groups[scope], dtype=np.int64),
        )
        for i, scope in enumerate(ordered)
    ]


def _embed_fn(
    embedder: Embedder | None, cache: EmbeddingCache | None, shared: SharedEmbeddingCache | None = None
) -> Callable[[Sequence[str]], np.ndarray]:
    def embed(texts: Sequence[str]) -> np.ndarray:
        if embedder is None or cache is None:
            raise RuntimeError("no embedder")
        return cache.embed(embedder, list(texts), shared=shared)

    return embed


def _hashing_embed(dim: int = 256) -> Callable[[Sequence[str]], np.ndarray]:
    """Lexical stand-in vectors (hashed stemmed terms) for lexical-only builds.

    With no embedding model the tree still needs vectors to cluster and to pick
    representative sentences; hashed bag-of-words vectors give a sound, deterministic
    lexical geometry. They are never mixed with model vectors.
    """
    import hashlib

    from arborgraph.core.text import analyse

    def embed(texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for token in analyse(text):
                h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=4).digest(), "little")
                out[i, h % dim] += 1.0 if (h >> 31) & 1 else -1.0
            norm = np.linalg.norm(out[i])
            if norm > 0:
                out[i] /= norm
            else:
                out[i, 0] = 1.0
        return out

    return embed


def run_tree_stage(
    *,
    parts: Sequence[ScopePart],
    chunk_vectors: np.ndarray | None,
    embedder: Embedder | None,
    cache: EmbeddingCache | None,
    count_tokens: Callable[[str], int],
    shared: SharedEmbeddingCache | None = None,
    config: Config,
    writer: GenerationWriter,
    progress: ProgressCallback,
    chat: Any = None,
    reusable: Callable[[ScopePart], bool] = lambda part: False,
    previous_tree: Callable[[ScopePart], Any] = lambda part: None,
    drift_threshold: float = 0.25,
) -> dict[str, Any]:
    """Build and write one RAPTOR tree per scope; returns stats for the build report.

    A scope for which ``reusable(part)`` is true keeps the previous generation's tree
    (the caller has linked its files already). A scope whose previous tree
    ``previous_tree(part)`` returns (same settings, other chunks) is updated: a
    clustered tree in place (new leaves join their nearest clusters and only the
    summaries above changed leaves are redone, unless the change passes
    ``drift_threshold``: then a full build); an outline tree is built again, and the
    summaries it counts as redone are those that differ from the previous tree's.
    Summaries are embedded through ``cache``, and behind it the ``shared`` user-level
    cache when there is one.
    """
    embed = _embed_fn(embedder, cache, shared) if chunk_vectors is not None else _hashing_embed()
    stats: dict[str, Any] = {"trees": 0, "reused": 0, "updated": 0, "summaries": 0, "summaries_redone": 0, "levels": 0}
    for part in parts:
        if reusable(part):
            stats["reused"] += 1
            continue
        # imported here: UMAP and scikit-learn cost seconds to import, a reuse needs neither
        from raptor import ExtractiveSummariser, Leaf, LLMSummariser, build_tree, tree_to_tables
        from raptor.build import tree_workers

        leaves = [Leaf.from_chunk(c) for c in part.chunks]
        leaf_vectors = chunk_vectors[part.rows] if chunk_vectors is not None else embed([c.context_text() for c in part.chunks])
        # No sentence embeddings: ranked by their member's vector and key terms.
        # Embedding even 6 candidates per cluster was ~8 % of the tree's time on the
        # sample manual (32 were 95 %), and its trees did worse on drill-down
        # questions (tree-route recall 0.59 vs 0.67); summaries are still embedded.
        extractive = ExtractiveSummariser(
            embed=embed, count_tokens=count_tokens,
            max_tokens=config.tree.summary_max_tokens, max_sentences_embedded=16,
            sentence_vectors=False,
        )
        summariser: Any = extractive
        if chat is not None:
            from raptor.llm_summary import STAGE, FallbackSummariser

            summariser = LLMSummariser(chat, min_grounding=config.llm.local.min_grounding if config.llm.is_local else None)
            if config.llm.fallback:
                summariser = FallbackSummariser(summariser, extractive, counter(chat, STAGE))
        # An outline tree is rebuilt: its outline costs nothing to redo (no model call,
        # centroid vectors), and a page's nodes come out the same when the page did;
        # what a rebuild redoes is what differs from the previous tree.
        old = previous_tree(part)
        if old is not None and not config.tree.outline:
            from raptor import update_tree

            tree, update = update_tree(
                old, leaves, leaf_vectors, embed=embed, count_tokens=count_tokens,
                summariser=summariser, config=config.tree, drift_threshold=drift_threshold,
                progress=progress,
            )
            stats["updated"] += 0 if update.full_rebuild else 1
            stats["summaries_redone"] += update.summaries_redone
        else:
            tree = build_tree(
                leaves, leaf_vectors, embed=embed, count_tokens=count_tokens,
                summariser=summariser, config=config.tree, progress=progress,
            )
            kept = {(n.chunk_ids, n.title, n.text) for n in old.summaries()} if old is not None else set()
            stats["updated"] += old is not None
            stats["summaries_redone"] += sum((n.chunk_ids, n.title, n.text) not in kept for n in tree.summaries())
        for name, table in tree_to_tables(tree).items():
            writer.write_table(scoped(name, part.tag), table)
        writer.write_vectors(scoped(TREE, part.tag), tree.vectors)
        summaries = tree.summaries()
        LexicalIndex.build([f"{n.title}\n{n.text}" for n in summaries]).save(
            writer.dir_for(tree_bm25_dir(part.tag))
        )
        stats["trees"] += 1
        # processes a full build of this tree runs on (helpers refine clusters side by side)
        stats["workers"] = max(stats.get("workers", 1), tree_workers(config.tree, len(leaves)))
        stats["summaries"] += len(summaries)
        stats["levels"] = max(stats["levels"], tree.height)
    stats["summariser"] = "llm" if chat is not None else "extractive"
    return stats


def counter(chat: Any, stage: str) -> Callable[[], None]:
    """What counts one fallback of ``stage`` in ``chat``'s usage (if it keeps one)."""
    usage = getattr(chat, "usage", None)
    return (lambda: usage.record_fallback(stage)) if usage is not None else (lambda: None)


def _llm_graph_writers(chat: Any, rules: Any, config: Config) -> tuple[Any, Any]:
    """The LLM extractor and report writer, each falling back per item to the rules'
    extraction and the extractive report when ``llm.fallback`` is on."""
    from graphrag import LLMExtractor, LLMReportWriter
    from graphrag.build import default_report_writer
    from graphrag.extract.llm import STAGE as EXTRACT, FallbackExtractor
    from graphrag.llm_reports import STAGE as REPORT, FallbackReportWriter

    extract, writer_settings = config.graph_extract.llm, {}
    if config.llm.is_local:  # a small model: checked replies, fewer turns
        local = config.llm.local
        extract = extract.model_copy(update={"grounded_only": True, "gleaning": local.gleaning, "retries": local.retries})
        writer_settings = {"min_grounding": local.min_grounding, "retries": local.retries}
    extractor: Any = LLMExtractor(chat, extract)
    writer: Any = LLMReportWriter(chat, **writer_settings)
    if config.llm.fallback:
        extractor = FallbackExtractor(extractor, rules, counter(chat, EXTRACT))
        writer = FallbackReportWriter(writer, default_report_writer(config.graph), counter(chat, REPORT))
    return extractor, writer


def run_graph_stage(
    *,
    parts: Sequence[ScopePart],
    config: Config,
    writer: GenerationWriter,
    progress: ProgressCallback,
    chat: Any = None,
    reusable: Callable[[ScopePart], bool] = lambda part: False,
    executor: Any = None,
    previous_graph: Callable[[ScopePart], Any] = lambda part: None,
    drift_threshold: float = 0.25,
) -> dict[str, Any]:
    """Build and write one entity graph (with communities and reports) per scope;
    returns stats for the build report.

    A scope for which ``reusable(part)`` is true keeps the previous generation's graph
    (the caller has linked its files already). A scope whose previous graph state
    ``previous_graph(part)`` returns (a :class:`graphrag.update.GraphState`: same
    settings, other chunks) is updated: only new and changed chunks are extracted,
    community ids are kept where membership did not change and only changed
    communities get new reports; past ``drift_threshold`` of changed chunks the
    extractor is refitted and everything re-extracted. Rule-based extraction, and the
    counting of its term statistics for a fit, run on ``executor``'s workers when it
    has several.
    """
    stats: dict[str, Any] = {
        "graphs": 0, "reused": 0, "updated": 0, "entities": 0, "relations": 0, "communities": 0, "reports": 0,
        "chunks_extracted": 0, "chunks_reused": 0, "communities_kept": 0, "communities_new": 0,
        "communities_removed": 0, "reports_reused": 0, "reports_redone": 0, "refits": [],
    }
    for part in parts:
        if reusable(part):
            stats["reused"] += 1
            continue
        from graphrag import RuleExtractor
        from graphrag.update import build_graph_state, state_to_tables, update_graph

        extract = config.graph_extract
        extractor: Any = RuleExtractor(extract.rules)
        report_writer: Any = None
        if chat is not None:
            extractor, report_writer = _llm_graph_writers(chat, extractor, config)
        parallel = chat is None and executor is not None and executor.workers > 1
        settings: dict[str, Any] = {
            "config": config.graph, "progress": progress,
            "report_writer": report_writer,
            "extract_many": extract_many_on(executor) if parallel else None,
            "fit_many": fit_many_on(executor) if parallel else None,
        }
        with cyclic_gc_paused():
            old = previous_graph(part)
            if old is not None:
                state, update = update_graph(
                    old, part.chunks, extractor=extractor, refit_threshold=drift_threshold, **settings
                )
                stats["updated"] += 0 if update.full_refit else 1
                if update.full_refit:
                    stats["refits"].append({"scope": part.tag, "reason": update.refit_reason})
            else:
                state, update = build_graph_state(part.chunks, extractor=extractor, **settings)
            tables = state_to_tables(state)
        for name, table in tables.items():
            writer.write_table(scoped(name, part.tag), table)
        kg = state.graph
        stats["graphs"] += 1
        stats["entities"] += len(kg.entities)
        stats["relations"] += len(kg.relations)
        stats["communities"] += len(kg.communities)
        stats["reports"] += len(kg.reports)
        for key in ("chunks_extracted", "chunks_reused", "communities_kept", "communities_new",
                    "communities_removed", "reports_reused", "reports_redone"):
            stats[key] += getattr(update, key)
    stats["extractor"] = "llm" if chat is not None else "rules"
    return stats
