"""RAPTOR summary tree: clustering, summaries, build, retrieval and exploration.

Pure library code: the index store and CLI wire it up in ``arborgraph``.
"""

from raptor.cluster import RaptorClusterer
from raptor.config import RaptorConfig
from raptor.tree import Leaf, Node, Tree

__all__ = ["Leaf", "Node", "RaptorClusterer", "RaptorConfig", "Tree"]
