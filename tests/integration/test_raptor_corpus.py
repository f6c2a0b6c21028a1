"""The raptor tests' shared input is what it claims: real chunked, embedded manual text."""

from __future__ import annotations

import numpy as np
from raptor_corpus import SLICE, corpus


def test_corpus_is_real_chunked_manual_text() -> None:
    c = corpus()
    assert len(c.leaves) >= 25
    assert {leaf.doc_id for leaf in c.leaves} == set(SLICE)
    assert all(leaf.heading_path for leaf in c.leaves)
    norms = np.linalg.norm(c.vectors, axis=1)
    assert np.allclose(norms, 1.0, atol=1e-3)
