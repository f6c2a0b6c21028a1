"""Configuration of the graph build (pydantic)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class GraphConfig(BaseModel):
    """Settings of :func:`graphrag.build_graph`: resolution, communities, reports.

    The extractor carries its own config; ``seed`` drives every random choice (Leiden).
    """

    model_config = ConfigDict(extra="forbid")

    seed: int = 42

    # entity resolution
    split_min_chunks: int = Field(
        2, description="a second strong type splits a name only with this many chunks..."
    )
    split_min_share: float = Field(0.2, description="...and this share of the name's chunks")
    infer_acronyms: bool = Field(
        True, description="merge an acronym with a term spelling it that shares a chunk with it"
    )
    min_inferred_acronym_len: int = 3
    max_evidence: int = Field(5, description="evidence sentences kept per relation")
    max_weight_per_chunk: float = Field(2.0, description="cap on one chunk's weight for one relation")

    # communities (hierarchical Leiden)
    max_cluster_size: int = Field(
        25, description="communities larger than this are split again at the next level"
    )
    resolution: float = Field(1.0, description="modularity resolution at every level")
    leiden_iterations: int = Field(
        2, description="Leiden passes per partition (-1: until stable, several times slower)"
    )
    max_levels: int = 4
    min_edge_weight: float = Field(
        1.0, description="edges lighter than this are ignored by Leiden (kept in the graph)"
    )
    min_community_size: int = Field(2, description="smaller groups get no community")

    # community reports
    min_report_size: int = Field(3, description="communities smaller than this get no report")
    report_entities: int = Field(6, description="central entities named in a report")
    report_findings: int = Field(5, description="key findings per report")
