"""GraphRAG for technical manuals: entity-relation graph, hierarchical Leiden
communities, community reports, graph and global retrieval, exploration.

Library code that imports only itself, ``ingest`` and ``arborgraph.core`` (never
``raptor`` or the rest of ``arborgraph``; ``tests/test_layers.py`` keeps it so).

>>> from graphrag import RuleExtractor, GraphConfig, build_graph, graph_search
>>> kg = build_graph(chunks, extractor=RuleExtractor(), config=GraphConfig())  # doctest: +SKIP
>>> graph_search(kg, "Which pragma enables WAL?", chunk_text=chunks_by_id)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from arborgraph.core.lazy import lazy_exports

# Public names -> the module defining them. Imported on first use so that a process
# needing one piece (e.g. a pool worker running the rule extractor) does not pay for
# igraph, scipy, bm25s and numba.
_EXPORTS = {
    "ChunkExtraction": "graphrag.model",
    "ChunkRef": "graphrag.chunks",
    "Community": "graphrag.model",
    "CommunityDetail": "graphrag.explore",
    "CommunityReport": "graphrag.model",
    "CorpusAwareExtractor": "graphrag.extract.base",
    "Entity": "graphrag.model",
    "Evidence": "graphrag.model",
    "ExtractedEntity": "graphrag.model",
    "ExtractedRelation": "graphrag.model",
    "ExtractiveReportWriter": "graphrag.reports",
    "Extractor": "graphrag.extract.base",
    "Finding": "graphrag.model",
    "GlobalSearchConfig": "graphrag.config",
    "GraphConfig": "graphrag.config",
    "GraphSearchConfig": "graphrag.config",
    "GraphView": "graphrag.explore",
    "HierarchicalLeiden": "graphrag.communities",
    "KnowledgeGraph": "graphrag.graph",
    "LLMExtractor": "graphrag.extract.llm",
    "LLMExtractorConfig": "graphrag.extract.llm",
    "LLMReportWriter": "graphrag.llm_reports",
    "LinkedEntity": "graphrag.linking",
    "Mention": "graphrag.model",
    "Relation": "graphrag.model",
    "ReportWriter": "graphrag.reports",
    "RuleExtractor": "graphrag.extract.rules",
    "RuleExtractorConfig": "graphrag.extract.rules",
    "build_graph": "graphrag.build",
    "detect_communities": "graphrag.build",
    "extract_all": "graphrag.build",
    "global_search": "graphrag.search_global",
    "graph_from_tables": "graphrag.tables",
    "graph_search": "graphrag.search",
    "graph_to_tables": "graphrag.tables",
    "link_entities": "graphrag.linking",
    "resolve": "graphrag.resolution",
    "write_reports": "graphrag.reports",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from graphrag.build import build_graph, detect_communities, extract_all
    from graphrag.chunks import ChunkRef
    from graphrag.communities import HierarchicalLeiden
    from graphrag.config import GlobalSearchConfig, GraphConfig, GraphSearchConfig
    from graphrag.explore import CommunityDetail, GraphView
    from graphrag.extract.base import CorpusAwareExtractor, Extractor
    from graphrag.extract.llm import LLMExtractor, LLMExtractorConfig
    from graphrag.extract.rules import RuleExtractor, RuleExtractorConfig
    from graphrag.search_global import global_search
    from graphrag.graph import KnowledgeGraph
    from graphrag.linking import LinkedEntity, link_entities
    from graphrag.llm_reports import LLMReportWriter
    from graphrag.model import ChunkExtraction, Community, CommunityReport, Entity, Evidence, ExtractedEntity, ExtractedRelation, Finding, Mention, Relation
    from graphrag.reports import ExtractiveReportWriter, ReportWriter, write_reports
    from graphrag.resolution import resolve
    from graphrag.search import graph_search
    from graphrag.tables import graph_from_tables, graph_to_tables


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
