"""The no-LLM tree summaries and names, and the community names and reports, of a
stored index recomputed with the code checked out, without rebuilding it.

The tree's shape (its clusters) and the graph (entities, relations, communities) stay
as stored; only what a reader sees of them is written again: every extractive summary
bottom-up from its children (as the build does, ranked without sentence vectors),
every summary's name (:func:`raptor.naming.named`), and every community's name and
extractive report. Summary vectors stay as stored: they steer retrieval, not what the
rater reads. Used by the rating samplers (``--recompute``) and by
``benchmarks/rename_sample.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

CountTokens = Callable[[str], int]


def _no_embedding(texts: Sequence[str]) -> np.ndarray:
    raise AssertionError("summaries are ranked without sentence vectors here")


def resummarised_tree(tree: Any, count_tokens: CountTokens, *, max_tokens: int = 200) -> Any:
    """``tree`` with its extractive summaries written again, level by level, and its
    summaries named again. Nodes another summariser wrote keep their text."""
    from raptor import ExtractiveSummariser
    from raptor.config import RaptorConfig
    from raptor.naming import named
    from raptor.summary import Cluster, ClusterMember
    from raptor.tree import Tree

    summariser = ExtractiveSummariser(
        embed=_no_embedding, count_tokens=count_tokens, max_tokens=max_tokens,
        max_sentences_embedded=16, sentence_vectors=False,
    )
    order = {n.node_id: i for i, n in enumerate(tree.leaves())}
    nodes = {n.node_id: n for n in tree.nodes}
    vectors = tree.node_vectors
    for level in range(1, tree.height + 1):
        for node_id in tree.level_ids(level):
            node = nodes[node_id]
            if node.summariser != summariser.name:
                continue
            children = [nodes[c] for c in node.children]
            members = tuple(
                ClusterMember(c.node_id, c.text, c.heading_path, c.title if c.level > 0 else "", c.level, order[c.chunk_ids[0]])
                for c in children
            )
            rows = [tree.position(c.node_id) for c in children]
            cluster = Cluster(node_id=node_id, level=level, members=members, vectors=vectors[rows])
            summary = summariser.summarise(cluster)
            nodes[node_id] = replace(node, text=summary.text, title=summary.title)
    rebuilt = Tree(nodes=tuple(nodes[n.node_id] for n in tree.nodes), root_id=tree.root_id, vectors=tree.vectors)
    return named(rebuilt, RaptorConfig(), summariser.name)


def rewritten_reports(kg: Any, headings: dict[str, list[str]], *, min_size: int = 3) -> dict[int, Any]:
    """Every community report of ``kg`` written again (names included) by the extractive
    writer; ``headings``: chunk id -> heading path, page title first."""
    from graphrag.reports import ExtractiveReportWriter, write_reports

    return write_reports(kg, ExtractiveReportWriter(), min_size=min_size, headings=headings)


def leaf_headings(tree: Any) -> dict[str, list[str]]:
    """Chunk id -> heading path of every leaf of ``tree`` (what names communities)."""
    return {leaf.node_id: list(leaf.heading_path) for leaf in tree.leaves()}
