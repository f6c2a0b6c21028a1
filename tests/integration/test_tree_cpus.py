"""The outline tree is the same on an older x86-64 CPU: given the same chunk vectors,
its sections, clusters above them (PCA and a Gaussian mixture), names, digests and
node vectors come out equal, with pages nested by their navigation too, under ``qemu-x86_64 -cpu Haswell`` (AVX2, no AVX-512; a
machine without AVX-512 emulates a Sandy Bridge), where numpy and LAPACK take other
kernels. About 25 s emulated. scripts/test installs qemu-user; without it the test
skips locally and fails on CI.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pytest
from needs import native_isa, program
from raptor_corpus import OUTLINE_CONFIG, embedder, token_counter, twenty_pages

from raptor import ExtractiveSummariser, build_tree

ROOT = Path(__file__).resolve().parents[2]
BUILD = """
import json, sys
import numpy as np
from raptor import ExtractiveSummariser, Leaf, RaptorConfig, build_tree
from ingest import load_token_counter
leaves = [Leaf(**{**row, "heading_path": tuple(row["heading_path"]), "nav_up": tuple(row["nav_up"])})
          for row in json.load(open(sys.argv[1]))]
vectors = np.load(sys.argv[2])
count = load_token_counter()
def embed(texts):
    raise RuntimeError("extractive summaries embed nothing")
config = RaptorConfig.model_validate_json(sys.argv[3])
tree = build_tree(leaves, vectors, embed=embed, count_tokens=count, config=config,
                  summariser=ExtractiveSummariser(embed=embed, count_tokens=count, max_tokens=config.summary_max_tokens))
json.dump([[n.node_id, n.title, n.text, list(n.children), n.label] for n in tree.summaries()], open(sys.argv[4], "w"))
np.save(sys.argv[5], tree.vectors)
"""



@pytest.mark.parametrize("navigation", [False, True], ids=["folders", "navigation"])
def test_an_emulated_older_cpu_builds_the_same_outline_tree(tmp_path: Path, navigation: bool) -> None:
    qemu = program(
        "qemu-x86_64", "qemu-user is not installed (apt-get install -y qemu-user; scripts/test installs it)",
        "compare the tree across CPUs",
    )
    leaves, vectors, tree = twenty_pages()
    config = OUTLINE_CONFIG
    if navigation:
        # the first page the table of contents of the other nineteen, grouped under it
        # past twice a fan-out of eight
        toc = leaves[0].doc_id
        leaves = [replace(leaf, nav_up=() if leaf.doc_id == toc else (toc,)) for leaf in leaves]
        config = OUTLINE_CONFIG.model_copy(update={"max_cluster_tokens": 8 * OUTLINE_CONFIG.summary_max_tokens})
        count = token_counter()
        summariser = ExtractiveSummariser(embed=embedder(), count_tokens=count, max_tokens=config.summary_max_tokens)
        tree = build_tree(leaves, vectors, embed=embedder(), count_tokens=count, config=config, summariser=summariser)
        assert tree.root.doc_ids[0] == toc
    assert any(n.origin == "cluster" and n.parents for n in tree.summaries())  # clustering ran
    (tmp_path / "leaves.json").write_text(json.dumps([asdict(leaf) for leaf in leaves]))
    np.save(tmp_path / "vectors.npy", vectors)
    cpu = "Haswell" if "AVX512F" in native_isa() else "SandyBridge"
    token_counter()  # the tokenizer file is read the same way in both processes
    run = subprocess.run(
        [qemu, "-cpu", cpu, sys.executable, "-c", BUILD, str(tmp_path / "leaves.json"), str(tmp_path / "vectors.npy"),
         config.model_dump_json(), str(tmp_path / "nodes.json"), str(tmp_path / "tree.npy")],
        capture_output=True, text=True, cwd=ROOT, timeout=900,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    emulated = json.loads((tmp_path / "nodes.json").read_text())
    native = [[n.node_id, n.title, n.text, list(n.children), n.label] for n in tree.summaries()]
    assert emulated == native
    assert np.allclose(np.load(tmp_path / "tree.npy"), tree.vectors, atol=1e-6)
