"""Configuration of the graph build and of graph and global search (pydantic)."""

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
    min_cooccurrence_sentences: int = Field(
        # at 2, co-occurrence was 50-57 % of the relations of three of the six training
        # manuals (apache2, bind9, zsh), the bulk of the graph again; at 3, 20-36 %
        3,
        description="two entities only named together (no typed relation between them) are "
        "related when this many different sentences name them so (overlapping chunks repeat one)",
    )

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
    min_report_size: int = Field(
        3, description="communities smaller than this get the no-model report even with an LLM (every community has one)"
    )
    report_entities: int = Field(6, description="central entities named in a report")
    report_findings: int = Field(5, description="key findings per report")


class GraphSearchConfig(BaseModel):
    """Limits and weights of :func:`graphrag.search.graph_search` (``Config.graph_search``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    budget_words: int = Field(1500, description="stop adding contexts beyond this many words")
    max_linked: int = 6
    max_expand_nodes: int = Field(300, description="bound on the walk's neighbourhood")
    neighbours_per_node: int = Field(40, description="strongest edges followed from each node")
    damping: float = Field(0.7, description="PageRank damping; the restart goes to linked entities")
    top_entities: int = Field(30, description="entities whose chunks become candidates")
    max_candidates: int = Field(200, description="graph chunks scored against the question")
    max_prior: int = Field(40, description="chunks of candidate_chunks considered")
    max_relations: int = Field(2, description="relation contexts before the chunks")
    max_path_len: int = 3
    min_chain_specificity: float = Field(
        0.3, description="entities in more chunks than this allows (normalised idf) stay out of chains"
    )
    graph_weight: float = 1.0
    lexical_weight: float = 1.0
    dense_weight: float = 1.0
    prior_weight: float = 1.0
    first_hop: int = Field(6, description="with candidate_chunks: how many of them lead the answer")
    bridge_chunks: int = Field(2, description="second-hop home sections put into the answer's window")
    min_bridge_score: float = Field(0.5, description="a second-hop section scoring below this is left out")
    max_quote_words: int = Field(40, description="relation contexts quote at most this much")
    time_limit_s: float = Field(2.0, description="the walk stops expanding after this long")


class GlobalSearchConfig(BaseModel):
    """Limits and weights of :func:`graphrag.search_global.global_search` (``Config.global_search``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    budget_words: int = 1500
    first_hop: int = Field(4, description="with candidate_chunks: how many of them lead the answer")
    max_reports: int = Field(3, description="community reports returned")
    max_findings: int = Field(
        # measured on the SQLite questions: each further finding (~50 words) pushed
        # a chunk holding evidence out of a 1,500-word window
        1, description="findings shown per report: those that match the question best"
    )
    chunks_per_community: int = Field(40, description="candidate chunks considered per community")
    lexical_weight: float = 1.0
    entity_weight: float = 0.5
    dense_weight: float = 1.0
    prior_weight: float = 1.0
    min_report_size: int = 3
    lead_chunks: int = Field(3, description="with candidate_chunks: page leads put into the answer's window")
    max_lead_rank: int = Field(4, description="a page lead ranked below this among all page leads is left out")
