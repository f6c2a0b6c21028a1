"""Orders with many equal scores are the same on an older x86-64 CPU: the top-k helpers,
the lookup's top rows, the tree walk's lexical head, the exact neighbours UMAP is given
and the BM25 postings come out equal under ``qemu-x86_64 -cpu Haswell`` (AVX2, no
AVX-512; a machine without AVX-512 emulates a Sandy Bridge), where numpy's sorting
kernels differ. There numpy 2.4's default float ``argsort`` and ``argpartition``
returned unsorted orders, and the code before ``arborgraph/core/ordering.py`` crashed the
process (SIGSEGV) in the neighbours' 2-D ``argpartition`` and in the BM25 build's int64
``argsort``. About 20 s in all. scripts/test installs qemu-user; without it the test skips locally and fails
on CI.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from needs import native_isa, program

ROOT = Path(__file__).resolve().parents[2]
ORDERS = """
import json, sys
import numpy as np
from arborgraph.core.lexical import LexicalIndex
from arborgraph.core.ordering import top_k_indices, top_k_per_row, unique_inverse
from arborgraph.query.fusion import top_indices
from raptor.cluster import exact_cosine_knn
from raptor.retrieve import _lexical_head

rng = np.random.default_rng(39)
scores = (rng.integers(0, 5, 50_000) / 5).astype(np.float32)  # five values: ties everywhere
mask = rng.random(50_000) < 0.7
points = np.zeros((300, 8))
for row in range(300):  # cosines are sums of 0.25: exact, and tying
    points[row, rng.choice(8, 4, replace=False)] = rng.choice([-1.0, 1.0], 4)
words = ["journal", "mode", "wal", "lock", "busy", "timeout", "vacuum", "page", "cache", "index"]
postings = LexicalIndex.build([" ".join(rng.choice(words, 12)) for _ in range(2000)])._postings
out = {
    "top_k_indices": [top_k_indices(scores, k).tolist() for k in (1, 10, 100, 5000, 60_000)],
    "top_k_indices_f64": [top_k_indices(scores.astype(np.float64), k).tolist() for k in (7, 3000)],
    "top_indices": [top_indices(scores, k, mask).tolist() for k in (1, 100, 5000)],
    "lexical_head": _lexical_head(scores.astype(np.float64), 1000).tolist(),
    "top_k_per_row": top_k_per_row(scores[:30_000].reshape(300, 100), 15).tolist(),
    "unique_inverse": [a.tolist() for a in unique_inverse(rng.integers(0, 300, 5000).astype(np.int32))],
    "knn": exact_cosine_knn(points, 10, block=64)[0].tolist(),
    # by term: the vocabulary's numbering follows the strings' hashes, one per process
    "postings": {term: [postings.indices[postings.indptr[i]:postings.indptr[i + 1]].tolist(),
                        np.asarray(postings.data[postings.indptr[i]:postings.indptr[i + 1]]).tolist()]
                 for term, i in postings.vocab.items() if i + 1 < len(postings.indptr)},
}
json.dump(out, open(sys.argv[1], "w"), sort_keys=True)
"""


def test_an_emulated_older_cpu_orders_ties_the_same(tmp_path: Path) -> None:
    qemu = program(
        "qemu-x86_64", "qemu-user is not installed (apt-get install -y qemu-user; scripts/test installs it)",
        "compare the orders across CPUs",
    )
    cpu = "Haswell" if "AVX512F" in native_isa() else "SandyBridge"
    runs = {}
    for name, prefix in (("native", []), ("emulated", [qemu, "-cpu", cpu])):
        out = tmp_path / f"{name}.json"
        run = subprocess.run(
            [*prefix, sys.executable, "-c", ORDERS, str(out)], capture_output=True, text=True, cwd=ROOT, timeout=600,
        )
        assert run.returncode == 0, f"{name}: {run.stderr[-2000:]}"
        runs[name] = json.loads(out.read_text())
    different = [part for part in runs["native"] if runs["native"][part] != runs["emulated"][part]]
    assert not different, f"differ on an emulated {cpu}: {different}"
