"""GraphRAG for technical manuals: entity-relation graph, hierarchical Leiden
communities, community reports, graph and global retrieval, exploration.

>>> from graphrag import RuleExtractor, GraphConfig, build_graph, graph_search
>>> kg = build_graph(chunks, extractor=RuleExtractor(), config=GraphConfig())  # doctest: +SKIP
>>> graph_search(kg, "Which pragma enables WAL?", chunk_text=chunks_by_id)  # doctest: +SKIP
"""

from graphrag.build import build_graph, detect_communities, extract_all
from graphrag.chunks import ChunkRef
from graphrag.communities import HierarchicalLeiden
from graphrag.config import GraphConfig
from graphrag.explore import GraphView
from graphrag.extract.base import CorpusAwareExtractor, Extractor
from graphrag.extract.llm import LLMExtractor, LLMExtractorConfig
from graphrag.extract.rules import RuleExtractor, RuleExtractorConfig
from graphrag.global_search import GlobalSearchConfig, global_search
from graphrag.graph import KnowledgeGraph
from graphrag.linking import LinkedEntity, link_entities
from graphrag.llm_reports import LLMReportWriter
from graphrag.model import (
    ChunkExtraction,
    Community,
    CommunityReport,
    Entity,
    Evidence,
    ExtractedEntity,
    ExtractedRelation,
    Finding,
    Mention,
    Relation,
)
from graphrag.reports import ExtractiveReportWriter, ReportWriter, write_reports
from graphrag.resolve import resolve
from graphrag.search import GraphSearchConfig, SearchResult, graph_search
from graphrag.tables import graph_from_tables, graph_to_tables

__all__ = [
    "ChunkExtraction",
    "ChunkRef",
    "Community",
    "CommunityReport",
    "CorpusAwareExtractor",
    "Entity",
    "Evidence",
    "ExtractedEntity",
    "ExtractedRelation",
    "ExtractiveReportWriter",
    "Extractor",
    "Finding",
    "GlobalSearchConfig",
    "GraphConfig",
    "GraphSearchConfig",
    "GraphView",
    "HierarchicalLeiden",
    "KnowledgeGraph",
    "LLMExtractor",
    "LLMExtractorConfig",
    "LLMReportWriter",
    "LinkedEntity",
    "Mention",
    "Relation",
    "ReportWriter",
    "RuleExtractor",
    "RuleExtractorConfig",
    "SearchResult",
    "build_graph",
    "detect_communities",
    "extract_all",
    "global_search",
    "graph_from_tables",
    "graph_search",
    "graph_to_tables",
    "link_entities",
    "resolve",
    "write_reports",
]
