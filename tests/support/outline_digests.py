"""The digests the outline tree gives hand-made leaves, by node title: what the tree's
digest tests read (random vectors: digests do not read them)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from raptor.config import RaptorConfig
from raptor.outline_tree import outline_items
from raptor.tree import Leaf


def outline_digests(leaves: Sequence[Leaf]) -> dict[str, str]:
    """Each outline node's title -> its digest, word counts standing in for tokens."""
    vectors = np.random.default_rng(0).normal(size=(len(leaves), 8))
    items, _, _ = outline_items(leaves, vectors, count_tokens=lambda t: len(t.split()), config=RaptorConfig())
    return {it.title: it.text for it in items if it.origin == "outline"}
