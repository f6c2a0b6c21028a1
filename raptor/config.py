"""Configuration of the RAPTOR tree build."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ReducerName = Literal["auto", "umap", "pca"]
SummaryVectors = Literal["auto", "embed", "centroid"]
Naming = Literal["auto", "keyphrases", "summariser"]


class RaptorConfig(BaseModel):
    """Everything that shapes the tree. Same leaves + same config => the same tree."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int = 0
    # Dimensionality reduction before the Gaussian mixture.
    reduce_dims: int = Field(default=10, ge=2)
    reducer: ReducerName = "auto"
    # With reducer="auto", UMAP is used only from this many points on; smaller inputs
    # take a seeded PCA (UMAP's numba compile costs 30-40 s per process).
    umap_min_points: int = Field(default=500, ge=16)
    # Soft assignment: a node joins every cluster whose probability exceeds this.
    membership_threshold: float = Field(default=0.1, gt=0.0, lt=1.0)
    max_clusters: int = Field(default=50, ge=1)
    # Stop the BIC sweep after this many k without improvement: BIC curves here fall
    # to one minimum and rise; 3 instead of 8 saved about half of the mixture fits.
    bic_patience: int | None = Field(default=3, ge=1)
    local_pass: bool = True
    # The summariser's input budget: a cluster whose text is longer is re-clustered.
    max_cluster_tokens: int = Field(default=3000, ge=16)
    # Length budget of one summary.
    summary_max_tokens: int = Field(default=200, ge=8)
    # A summary's vector: its embedded title and text, or the normalised mean of its
    # children's vectors (no model call; suits extractive summaries, which are made of
    # the children's own sentences). "auto": centroid for extractive summaries, else
    # embed. On the sample manual the centroid cut the tree's CPU time by a third and
    # the tree route's drill-down recall went 0.67 -> 0.69.
    summary_vectors: SummaryVectors = "auto"
    # A summary's name (its title): short keyphrases of its chunks, distinct among its
    # siblings (:mod:`raptor.naming`), or the title the summariser wrote. "auto":
    # keyphrases for extractive summaries (whose own titles are heading labels),
    # the summariser's for an LLM's.
    naming: Naming = "auto"
    # Build the lower levels from the manual's own outline (chunks -> sections ->
    # pages -> folders, named with its titles) and cluster only above it; False, or a
    # collection with no outline (one page without headings), clusters the chunks.
    outline: bool = True
    # A level with at most this many nodes gets a single root above it.
    stop_at: int = Field(default=5, ge=1)
    max_levels: int = Field(default=8, ge=1)
    # Processes the build runs on (its own and helpers): independent parts (the
    # refinement of each global cluster, the layout) run side by side, and the tree is
    # the same for any value. None: every available core, from umap_min_points leaves
    # on (smaller trees are built in one process, helpers' start-up costs more than
    # they save). Not a setting of the tree, so left out of dumps (and fingerprints).
    workers: int | None = Field(default=None, ge=1, exclude=True)

    @model_validator(mode="after")
    def _budgets_allow_progress(self) -> RaptorConfig:
        # Each level above the leaves must merge nodes, which needs room for two summaries.
        if self.max_cluster_tokens < 2 * self.summary_max_tokens:
            raise ValueError("max_cluster_tokens must be at least 2 * summary_max_tokens")
        return self
