"""The shipped embedding model under other onnxruntime releases: how far apart the vectors are.

The project allows ``onnxruntime>=1.20``; its kernels change between releases. Each
``--python`` interpreter (a venv holding another onnxruntime release, ``tokenizers`` and
``numpy``, e.g. ``uv venv V && uv pip install --python V/bin/python onnxruntime==1.20.1
tokenizers numpy``) embeds the 55 reference texts of ``tests/data/embedding`` with the
shipped model, and so does this interpreter. The snippet each runs uses those three
packages only: one text per run, no padding, mean pooling over the tokens, unit length
(what :class:`arborgraph.models.embedding.OnnxEmbedder` computes for a text alone).
Reported per release: max |difference| from this interpreter's vectors and from the
recorded ones. Writes ``benchmarks/results/embedding_runtimes.json``.

    python benchmarks/bench_embedding_runtimes.py --python /tmp/ort120/bin/python --python /tmp/ort124/bin/python
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "arborgraph" / "data" / "models" / "all-MiniLM-L6-v2"
REFERENCE = ROOT / "tests" / "data" / "embedding"
RESULTS = ROOT / "benchmarks" / "results" / "embedding_runtimes.json"
SNIPPET = """
import json, sys
import numpy as np, onnxruntime as ort
from tokenizers import Tokenizer
model, texts, out = sys.argv[1], json.loads(open(sys.argv[2]).read()), sys.argv[3]
tokenizer = Tokenizer.from_file(model + "/tokenizer.json")
tokenizer.no_padding()
tokenizer.enable_truncation(max_length=256)
options = ort.SessionOptions()
options.intra_op_num_threads = 1
session = ort.InferenceSession(model + "/model.onnx", options, providers=["CPUExecutionProvider"])
rows = []
for encoding in tokenizer.encode_batch(texts):
    ids = np.array([encoding.ids], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    pooled = session.run(None, feeds)[0].mean(axis=1)
    rows.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
np.save(out, np.concatenate(rows).astype(np.float32))
print(ort.__version__)
"""


def vectors(python: str, texts_file: Path, out: Path) -> tuple[str, np.ndarray]:
    done = subprocess.run(
        [python, "-c", SNIPPET, str(MODEL), str(texts_file), str(out)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{python} failed: {done.stderr[-2000:]}")
    return done.stdout.strip().splitlines()[-1], np.load(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--python", action="append", default=[], help="an interpreter with another onnxruntime")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    recorded = np.load(REFERENCE / "reference_onnx.npy")
    texts = json.loads((REFERENCE / "reference.json").read_text(encoding="utf-8"))["texts"]
    releases = {}
    with tempfile.TemporaryDirectory(prefix="bench-runtimes-") as tmp:
        texts_file = Path(tmp) / "texts.json"
        texts_file.write_text(json.dumps(texts), encoding="utf-8")
        here_version, here = vectors(sys.executable, texts_file, Path(tmp) / "here.npy")
        for number, python in enumerate(args.python):
            version, theirs = vectors(python, texts_file, Path(tmp) / f"{number}.npy")
            releases[version] = {
                "python": python,
                f"max_abs_difference_vs_onnxruntime_{here_version}": float(np.abs(theirs - here).max()),
                "max_abs_difference_vs_recorded": float(np.abs(theirs - recorded).max()),
            }
    report = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "model_sha256": json.loads((MODEL / "manifest.json").read_text())["files"]["model.onnx"]["sha256"],
        "texts": len(texts),
        "this_interpreter": {
            "onnxruntime": here_version, "max_abs_difference_vs_recorded": float(np.abs(here - recorded).max()),
        },
        "releases": releases,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
