"""The default embedder of two commits side by side: vectors, and `arborgraph eval`.

Written when the model first shipped in ``arborgraph/data/models/`` (before: exported to
ONNX int8 on first use, with torch), used again when the shipped int8 model gave way to
the float one (CPU-independent vectors). Each side runs its own checkout's code (a
detached git worktree for before, this tree for after) in a fresh process of the same
Python, which must have what both sides' default embedders need.

1. Vectors of the benchmark texts of ``bench_embedding.py`` (600 200-word chunks and 600
   sentences of the sample manual) from the default embedder of each side: cosine per
   text (mean, min) and how many are bit-identical. Target: mean cosine >= 0.999.
2. ``arborgraph build`` of the sample manual and ``arborgraph eval`` with
   ``benchmarks/questions/sqlite.jsonl`` on each side: per system, the metrics of both and
   every question whose score (evidence found, first-hit rank, route) differs, and the
   after-minus-before evidence recall with its paired bootstrap interval.

Writes ``benchmarks/results/packaged_model.json``.

    python benchmarks/bench_packaged_model.py [--before REF] [--no-eval] [--lookup-only] [--evidence-pages] [--sets chunks_200_words]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from before_after import checkout, default_before, resolve  # noqa: E402
from bench_embedding import CORPUS, corpus_chunks, corpus_sentences, pages_of  # noqa: E402

sys.path.insert(0, str(ROOT))
from arborgraph.query.evaluation import paired_bootstrap  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "packaged_model.json"
QUESTIONS = ROOT / "benchmarks" / "questions" / "sqlite.jsonl"
TEXTS = 600
# Run with the checkout as cwd: `python -c` puts the cwd first on sys.path, so that
# checkout's arborgraph is the one imported.
EMBED = """
import json, sys
import numpy as np
import arborgraph.models.embedding as embedding
texts = json.loads(open(sys.argv[1], encoding="utf-8").read())
embedder = embedding.load_embedder(embedding.EmbeddingConfig())
np.save(sys.argv[2], embedder.encode(texts))
print(json.dumps({"name": embedder.name, "module": embedding.__file__}))
"""


def run(args: list[str], cwd: Path) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed in {cwd}:\n{done.stderr[-3000:]}")
    return done.stdout


def embed(tree: Path, texts: list[str], scratch: Path, side: str) -> tuple[np.ndarray, dict[str, Any]]:
    source, target = scratch / "texts.json", scratch / f"{side}.npy"
    source.write_text(json.dumps(texts), encoding="utf-8")
    start = time.perf_counter()
    facts = json.loads(run([sys.executable, "-c", EMBED, str(source), str(target)], tree).splitlines()[-1])
    facts["seconds"] = round(time.perf_counter() - start, 1)
    return np.load(target), facts


def compare_vectors(before: np.ndarray, after: np.ndarray) -> dict[str, Any]:
    cosines = np.sum(before * after, axis=1)
    return {
        "texts": len(cosines),
        "cosine_mean": round(float(cosines.mean()), 6),
        "cosine_min": round(float(cosines.min()), 6),
        "bit_identical": int(np.sum(np.all(before == after, axis=1))),
    }


def evidence_pages(target: Path) -> Path:
    """A folder holding copies of the pages the questions' evidence is on."""
    pages = {e["page"] for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()
             for e in json.loads(line)["evidence"] if e.get("page")}
    target.mkdir()
    for page in sorted(pages):
        shutil.copyfile(ROOT / page, target / Path(page).name)
    return target


def build_and_eval(
    tree: Path, docs: Path | None, scratch: Path, side: str, lookup_only: bool
) -> tuple[dict[str, Any], float]:
    index, report = scratch / f"index-{side}", scratch / f"eval-{side}.json"
    cli = [sys.executable, "-m", "arborgraph.cli"]
    start = time.perf_counter()
    structures = ["--no-tree", "--no-graph"] if lookup_only else []
    source = docs or tree / "examples" / "sqlite"
    run([*cli, "build", str(source), "--index", str(index), "--quiet", *structures], tree)
    run([*cli, "eval", "--index", str(index), str(QUESTIONS), "--output", str(report)], tree)
    return json.loads(report.read_text(encoding="utf-8")), round(time.perf_counter() - start, 1)


def compare_evals(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    keys = ("found", "total", "first_hit_rank", "route")
    systems = {}
    for name, system in after["systems"].items():
        theirs = {q["id"]: q for q in before["systems"][name]["per_question"]}
        differing = [
            {"id": q["id"], "type": q["type"], "before": {k: theirs[q["id"]][k] for k in keys}, "after": {k: q[k] for k in keys}}
            for q in system["per_question"]
            if {k: q[k] for k in keys} != {k: theirs[q["id"]][k] for k in keys}
        ]
        recall = [
            (q["found"] / q["total"], theirs[q["id"]]["found"] / theirs[q["id"]]["total"])
            for q in system["per_question"]
        ]
        diff, low, high = paired_bootstrap([a for a, _ in recall], [b for _, b in recall])
        systems[name] = {
            "before": before["systems"][name]["overall"],
            "after": system["overall"],
            "evidence_recall_after_minus_before": {"mean": diff, "ci95_low": low, "ci95_high": high},
            "questions_differing": differing,
        }
    return systems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--before", default=None, help="commit of the before side (default: where this branch left main)")
    parser.add_argument("--no-eval", action="store_true", help="compare vectors only")
    parser.add_argument("--lookup-only", action="store_true", help="build without tree and graph (eval: auto, lookup, baselines)")
    parser.add_argument("--evidence-pages", action="store_true", help="build only the pages holding the questions' evidence")
    parser.add_argument("--sets", default="chunks_200_words,sentences", help="text sets whose vectors to compare")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    before_commit = resolve(args.before) if args.before else default_before()
    pages = pages_of(CORPUS)
    text_sets = {"chunks_200_words": corpus_chunks(pages, TEXTS), "sentences": corpus_sentences(pages, TEXTS)}
    text_sets = {name: texts for name, texts in text_sets.items() if name in args.sets.split(",")}
    report: dict[str, Any] = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "before_commit": before_commit,
        "after": f"{resolve('HEAD')} (work tree {ROOT})",
        "python": sys.executable,
        "vectors": {},
    }
    with tempfile.TemporaryDirectory(prefix="bench-packaged-") as tmp, checkout(before_commit, Path(tmp) / "before") as before_tree:
        scratch = Path(tmp)
        for set_name, texts in text_sets.items():
            old, old_facts = embed(before_tree, texts, scratch, "before")
            new, new_facts = embed(ROOT, texts, scratch, "after")
            report["vectors"][set_name] = {**compare_vectors(old, new), "before": old_facts, "after": new_facts}
            print(set_name, json.dumps(report["vectors"][set_name]), flush=True)
        if not args.no_eval:
            docs = evidence_pages(scratch / "pages") if args.evidence_pages else None
            old_eval, old_s = build_and_eval(before_tree, docs, scratch, "before", args.lookup_only)
            new_eval, new_s = build_and_eval(ROOT, docs, scratch, "after", args.lookup_only)
            report["eval"] = {
                "questions": str(QUESTIONS.relative_to(ROOT)),
                "index": ("lookup only (no tree, no graph)" if args.lookup_only else "full build")
                + (f" of the {len(list(docs.iterdir()))} pages holding the evidence" if docs else " of the sample manual"),
                "build_and_eval_s": {"before": old_s, "after": new_s},
                "systems": compare_evals(old_eval, new_eval),
            }
            differing = {k: len(v["questions_differing"]) for k, v in report["eval"]["systems"].items()}
            print("questions differing per system:", differing, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
