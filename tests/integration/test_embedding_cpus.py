"""The shipped embedding model gives the same vectors on an older x86-64 CPU.

The model runs natively and under ``qemu-x86_64 -cpu Haswell`` (Debian's ``qemu-user``:
AVX2 and FMA, no AVX-512), where onnxruntime picks other kernels than on an AVX-512
machine; the int8 model shipped before differed there by up to 0.05. Emulation is slow
(~400x for the model's arithmetic), so this embeds three short texts: about a minute.
A machine without AVX-512 emulates a Sandy Bridge instead (AVX without FMA: other kernels
again; older models cannot run numpy's and onnxruntime's wheels).
scripts/test installs qemu-user; without it the test skips locally and fails on CI.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from needs import native_isa, program

from arborgraph.models.embedding import EmbeddingConfig, load_embedder

ROOT = Path(__file__).resolve().parents[2]
# Emulated, each token costs about 2 s of model arithmetic: three short texts (prose,
# code, empty) are enough: other kernels show on any text (the int8 model shipped before
# differed by up to 0.05 on Haswell, 0.005 on Sandy Bridge).
TEXTS = [
    "How do I speed up lookups on a column?",
    "PRAGMA journal_mode=WAL;",
    "",
]
# Measured at most 1.9e-7 between AVX-512, AVX2 and AVX kernels
# (benchmarks/results/embedding_cpu_independence.json); the target is 1e-4.
SAME_VECTORS = 1e-6
EMBED = """
import json, sys
import numpy as np
from numpy._core._multiarray_umath import __cpu_features__ as features
from arborgraph.models.embedding import EmbeddingConfig, load_embedder
texts, out = json.loads(sys.argv[1]), sys.argv[2]
np.save(out, load_embedder(EmbeddingConfig(threads=1)).encode(texts))
print(json.dumps(sorted(name for name, present in features.items() if present)))
"""



def test_an_emulated_older_cpu_gives_the_same_vectors(tmp_path: Path) -> None:
    qemu = program(
        "qemu-x86_64", "qemu-user is not installed (apt-get install -y qemu-user; scripts/test installs it)",
        "compare the embedding across CPUs",
    )
    here = native_isa()
    cpu, lacks = ("Haswell", "AVX512F") if "AVX512F" in here else ("SandyBridge", "FMA3")
    out = tmp_path / "emulated.npy"
    run = subprocess.run(
        [qemu, "-cpu", cpu, sys.executable, "-c", EMBED, json.dumps(TEXTS), str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    emulated_isa = set(json.loads(run.stdout.strip().splitlines()[-1]))
    # the emulated CPU really lacks what this one has, so other kernels ran
    assert lacks in here and lacks not in emulated_isa, (cpu, sorted(emulated_isa))
    native = load_embedder(EmbeddingConfig(threads=1)).encode(TEXTS)
    emulated = np.load(out)
    assert emulated.shape == native.shape == (len(TEXTS), 384)
    assert float(np.abs(emulated - native).max()) <= SAME_VECTORS
