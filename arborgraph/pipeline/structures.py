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
from typing import Any

import numpy as np

from arborgraph.config import Config
from arborgraph.core.lexical import LexicalIndex
from arborgraph.core.protocols import Embedder, ProgressCallback
from arborgraph.index.layout import TREE, scoped, tree_bm25_dir
from arborgraph.index.store import GenerationWriter
from arborgraph.pipeline.embedding_cache import EmbeddingCache
from arborgraph.pipeline.executor import cyclic_gc_paused, extract_many_on, fit_many_on
from arborgraph.pipeline.scopes import ScopePart
from arborgraph.pipeline.shared_embedding_cache import SharedEmbeddingCache


def _embed_fn(
    embedder: Embedder | None, cache: EmbeddingCache | None, shared: SharedEmbeddingCache | None = None
) -> Callable[[Sequence[str]], np.ndarray]:
    def embed(texts: Sequence[str]) -> np.ndarray:
        if embedder is None or cache is None:
            raise RuntimeError("no embedder")
        return cache.embed(embedder, list(texts), shared=shared)

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
    """Build and write one RAPTOR tree per scope (:func:`raptor.build.tree_from_chunks`
    with this build's summariser); returns stats for the build report.

    A scope for which ``reusable(part)`` is true keeps the previous generation's tree
    (the caller has linked its files already). A scope whose previous tree
    ``previous_tree(part)`` returns (same settings, other chunks) is updated, past
    ``drift_threshold`` rebuilt. Summaries are embedded through ``cache``, and behind it
    the ``shared`` user-level cache when there is one; a build without chunk vectors
    clusters lexical stand-ins (:func:`raptor.build.hashing_embed`).
    """
    stats: dict[str, Any] = {"trees": 0, "reused": 0, "updated": 0, "summaries": 0, "summaries_redone": 0, "levels": 0}
    for part in parts:
        if reusable(part):
            stats["reused"] += 1
            continue
        # imported here: UMAP and scikit-learn cost seconds to import, a reuse needs neither
        from raptor import ExtractiveSummariser, LLMSummariser, tree_to_tables
        from raptor.build import hashing_embed, tree_from_chunks, tree_workers

        embed = _embed_fn(embedder, cache, shared) if chunk_vectors is not None else hashing_embed()
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
        built = tree_from_chunks(
            part.chunks, chunk_vectors[part.rows] if chunk_vectors is not None else None,
            embed=embed, count_tokens=count_tokens, summariser=summariser, config=config.tree,
            previous=previous_tree(part), drift_threshold=drift_threshold, progress=progress,
            navigation=part.navigation,
        )
        tree = built.tree
        stats["updated"] += built.updated
        stats["summaries_redone"] += built.summaries_redone
        for name, table in tree_to_tables(tree).items():
            writer.write_table(scoped(name, part.tag), table)
        writer.write_vectors(scoped(TREE, part.tag), tree.vectors)
        summaries = tree.summaries()
        LexicalIndex.build([f"{n.title}\n{n.text}" for n in summaries]).save(
            writer.dir_for(tree_bm25_dir(part.tag))
        )
        stats["trees"] += 1
        # processes a full build of this tree runs on (helpers refine clusters side by side)
        stats["workers"] = max(stats.get("workers", 1), tree_workers(config.tree, len(part.chunks)))
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
    """Build and write one entity graph (with communities and reports) per scope
    (:func:`graphrag.build.graph_from_chunks` with this build's extractor and report
    writer); returns stats for the build report.

    A scope for which ``reusable(part)`` is true keeps the previous generation's graph
    (the caller has linked its files already). A scope whose previous graph state
    ``previous_graph(part)`` returns (a :class:`graphrag.update.GraphState`: same
    settings, other chunks) is updated, past ``drift_threshold`` of changed chunks
    refitted. Rule-based extraction, and the counting of its term statistics for a fit,
    run on ``executor``'s workers when it has several.
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
        from graphrag.build import graph_from_chunks
        from graphrag.update import state_to_tables

        extractor: Any = RuleExtractor(config.graph_extract.rules)
        report_writer: Any = None
        if chat is not None:
            extractor, report_writer = _llm_graph_writers(chat, extractor, config)
        parallel = chat is None and executor is not None and executor.workers > 1
        with cyclic_gc_paused():
            old = previous_graph(part)
            state, update = graph_from_chunks(
                part.chunks, extractor=extractor, config=config.graph, previous=old,
                refit_threshold=drift_threshold, report_writer=report_writer, progress=progress,
                extract_many=extract_many_on(executor) if parallel else None,
                fit_many=fit_many_on(executor) if parallel else None,
            )
            tables = state_to_tables(state)
        if old is not None:
            stats["updated"] += 0 if update.full_refit else 1
            if update.full_refit:
                stats["refits"].append({"scope": part.tag, "reason": update.refit_reason})
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
