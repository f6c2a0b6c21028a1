"""Build manuals with today's code and with this checkout's, and time both builds.

For each manual of ``corpora.json`` named (plus ``sqlite``, the sample manual), the
folder is materialised (:mod:`corpora`), built first with the code of ``--base`` (a
commit, extracted with ``git archive`` and run from the same environment, so every
dependency is the same) and then with this checkout's code on a copy of that build's
caches, so that both builds embed nothing the other did not and their structure
stages compare directly; the base build's total is today's full build time, embedding
included. Per-stage seconds of both builds come from their build reports. The indexes
are kept under ``--work`` for the structure check (``bench_structure.py``) and the
retrieval comparison (``train_ranker.py --indexes WORK/base`` and ``WORK/new``).

    python benchmarks/bench_structure_builds.py --base 6dbfbd9 --work /tmp/sb apache2 git frr

Writes ``benchmarks/results/structure_builds.json`` (manuals of an earlier run that are
not built again are kept, with the commits they were built at). Timings from a loaded machine
compare the two builds only as a ratio; repeat on a quiet one for absolute figures.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "structure_builds.json"
SAMPLE = ROOT / "examples" / "sqlite"
# the stages the structure work changes, and the stages around them
STAGES = ("load", "chunk", "embed", "lexical", "tree", "graph", "total")


def extract(revision: str, dest: Path) -> str:
    """The tree of ``revision`` under ``dest``; returns the full commit id."""
    commit = subprocess.run(["git", "rev-parse", revision], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    return commit


def build(code: Path, docs: Path, index: Path) -> dict:
    """``arborgraph build`` with the code under ``code``; its report and wall seconds."""
    env = dict(os.environ, PYTHONPATH=str(code), HF_HUB_OFFLINE="1")
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from arborgraph.cli import main; sys.exit(main())",
         "build", str(docs), "--index", str(index), "--quiet", "--json"],
        env=env, capture_output=True, text=True, cwd=code,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"build of {docs} with {code} failed: {proc.stderr.strip()[-500:]}")
    report = json.loads(proc.stdout)
    return {"wall_s": round(wall, 1), "timings_s": {k: report["timings_s"].get(k) for k in STAGES},
            "chunks": report["chunks"], "documents": report["documents"],
            "summaries": report["stages"]["tree"]["summaries"], "relations": report["stages"]["graph"]["relations"]}


def finished(index: Path) -> dict | None:
    """A build left by an earlier run (``--reuse-base``), read from its manifest."""
    manifests = sorted(index.glob("gen-*/manifest.json"))
    if not (index / "CURRENT").is_file() or not manifests:
        return None
    manifest = json.loads(manifests[-1].read_text())
    report = manifest["report"]
    return {"wall_s": None, "timings_s": {k: manifest["timings_s"].get(k) for k in STAGES},
            "chunks": report["chunks"], "documents": report["documents"],
            "summaries": report["stages"]["tree"]["summaries"], "relations": report["stages"]["graph"]["relations"],
            "reused_from_earlier_run": True}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("manuals", nargs="+", help="names from corpora.json, or 'sqlite' for the sample manual")
    parser.add_argument("--base", required=True, help="the commit of today's code")
    parser.add_argument("--work", type=Path, required=True, help="folder for the manuals, the base code and the indexes")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--base-code", type=Path, default=None,
                        help="where the base commit is extracted (default WORK/base-code; give another while a run uses it)")
    parser.add_argument("--reuse-base", action="store_true",
                        help="keep a base build an earlier run left in WORK/base (its manifest's timings)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from corpora import load_specs, materialise

    specs = load_specs()
    unknown = [m for m in args.manuals if m != "sqlite" and m not in specs]
    if unknown:
        print(f"unknown manual(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    base_code = args.base_code or args.work / "base-code"
    base_commit = extract(args.base, base_code)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()
    result: dict = {
        "date": dt.datetime.now().isoformat(timespec="seconds"), "base": base_commit, "head": head,
        "dirty": bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                     capture_output=True, text=True).stdout.strip()),
        "load_avg_at_start": os.getloadavg(), "manuals": {},
    }
    # manuals of earlier runs not built again are kept, each with the commits it was built at
    earlier = json.loads(args.out.read_text()) if args.out.exists() else {}
    for name, entry in earlier.get("manuals", {}).items():
        if name not in args.manuals:
            result["manuals"][name] = {"head": earlier.get("head"), "base_commit": earlier.get("base")} | entry
    for name in args.manuals:
        if name == "sqlite":
            docs = SAMPLE
        else:
            materialise(name, specs[name], args.work / "manuals")
            docs = args.work / "manuals" / name
        base_index, new_index = args.work / "base" / name, args.work / "new" / name
        base = finished(base_index) if args.reuse_base else None
        for index in (new_index,) if base is not None else (base_index, new_index):
            if index.exists():
                shutil.rmtree(index)
            index.parent.mkdir(parents=True, exist_ok=True)
        if base is None:
            base = build(base_code, docs, base_index)
        # the base build's caches (embeddings, parsed pages): the new build embeds nothing
        shutil.copytree(base_index / "cache", new_index / "cache")
        new = build(ROOT, docs, new_index)
        structures = {side: round(sum(r["timings_s"][s] or 0.0 for s in ("tree", "graph")), 2) for side, r in (("base", base), ("new", new))}
        result["manuals"][name] = {
            "head": head, "base_commit": base_commit, "base": base, "new": new,
            "structure_stages_s": structures,
            # what the new structure stages add, as a share of today's full build
            "added_share_of_base_build": round((structures["new"] - structures["base"]) / base["timings_s"]["total"], 4),
            "load_avg_after": os.getloadavg(),
        }
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        print(f"{name}: {result['manuals'][name]['structure_stages_s']} added "
              f"{result['manuals'][name]['added_share_of_base_build']:+.1%} of {base['timings_s']['total']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
