"""RAPTOR summary tree: clustering, summaries, build, retrieval and exploration.

Pure library code: it imports only itself, ``ingest`` and ``arborgraph.core`` (the
shared types, protocols and text tools; ``tests/test_layers.py`` keeps it so), and the
index store and CLI wire it up in ``arborgraph``. The heavy
parts (scikit-learn, UMAP, pyarrow) load on first use, so importing ``raptor`` for its
config stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from arborgraph.core.lazy import lazy_exports
from raptor.config import RaptorConfig
from raptor.summary import Cluster, ClusterMember, Summariser, Summary
from raptor.tree import Leaf, Node, Tree

if TYPE_CHECKING:  # pragma: no cover
    from raptor.build import build_tree
    from raptor.cluster import RaptorClusterer
    from raptor.explore import TreeView, figure_html
    from raptor.extractive import ExtractiveSummariser
    from raptor.llm_summary import LLMSummariser
    from raptor.retrieve import collapsed_search, traverse
    from raptor.tables import tree_from_tables, tree_to_tables
    from raptor.update import TreeUpdate, update_tree

_LAZY = {
    "build_tree": "raptor.build",
    "RaptorClusterer": "raptor.cluster",
    "TreeView": "raptor.explore",
    "figure_html": "raptor.explore",
    "ExtractiveSummariser": "raptor.extractive",
    "LLMSummariser": "raptor.llm_summary",
    "collapsed_search": "raptor.retrieve",
    "traverse": "raptor.retrieve",
    "tree_from_tables": "raptor.tables",
    "tree_to_tables": "raptor.tables",
    "TreeUpdate": "raptor.update",
    "update_tree": "raptor.update",
}

__all__ = [
    "Cluster",
    "ClusterMember",
    "ExtractiveSummariser",
    "LLMSummariser",
    "Leaf",
    "Node",
    "RaptorClusterer",
    "RaptorConfig",
    "Summariser",
    "Summary",
    "Tree",
    "TreeUpdate",
    "TreeView",
    "build_tree",
    "collapsed_search",
    "figure_html",
    "traverse",
    "tree_from_tables",
    "tree_to_tables",
    "update_tree",
]


__getattr__ = lazy_exports(__name__, _LAZY, globals())
