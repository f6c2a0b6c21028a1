"""How long the four notebooks take to run top to bottom, as the test suite runs them.

Each notebook runs in a fresh kernel of this interpreter (nbclient), in order: the
quickstart builds the index (the 28-page slice of the sample manual the tests use,
``ARBORGRAPH_NB_SUBSET=1``, into an empty directory), the others open it. With
``--index DIR`` they instead open an existing index of the whole manual (what a user
who ran ``scripts/demo`` gets) and nothing is built. ``--cold-numba`` gives the run an
empty numba cache (a first run on a fresh machine compiles umap-learn's kernels).

Writes benchmarks/results/notebooks.json.

    python benchmarks/bench_notebooks.py [--index DIR] [--cold-numba]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ["01_quickstart.ipynb", "02_tree.ipynb", "03_communities.ipynb", "04_router.ipynb"]
KERNEL = "arborgraph-notebook-bench"


def kernel_spec(where: Path) -> None:
    spec = where / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": KERNEL, "language": "python"}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, help="an existing index of the whole manual, opened as it is")
    parser.add_argument("--cold-numba", action="store_true", help="an empty numba cache for this run")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "notebooks.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        kernel_spec(work / "jupyter")
        os.environ.update(JUPYTER_PATH=str(work / "jupyter"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        if args.index:
            os.environ["ARBORGRAPH_NB_INDEX"] = str(args.index.resolve())
            os.environ.pop("ARBORGRAPH_NB_SUBSET", None)
        else:
            # the quickstart builds the slice: asked for explicitly, as notebooks require
            os.environ.update(ARBORGRAPH_NB_INDEX=str(work / "index"), ARBORGRAPH_NB_SUBSET="1", ARBORGRAPH_NB_BUILD="1")
        if args.cold_numba:
            os.environ["NUMBA_CACHE_DIR"] = str(work / "numba")
        result: dict = {
            "date": dt.datetime.now().isoformat(timespec="seconds"),
            "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
            "index": str(args.index) if args.index else "28-page slice, built by the quickstart",
            "numba_cache": "empty" if args.cold_numba else os.environ.get("NUMBA_CACHE_DIR", "default"),
            "load_avg_at_start": os.getloadavg(),
            "seconds": {},
            "errors": {},
        }
        for name in NOTEBOOKS:
            nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
            client = NotebookClient(
                nb, kernel_name=KERNEL, timeout=900, startup_timeout=120, allow_errors=True,
                resources={"metadata": {"path": str(ROOT / "notebooks")}},
            )
            start = time.perf_counter()
            client.execute()
            result["seconds"][name] = round(time.perf_counter() - start, 1)
            errors = [o.get("ename") for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
            result["errors"][name] = errors
        result["total_s"] = round(sum(result["seconds"].values()), 1)
        result["limit_s"] = 180
        result["within_limit"] = result["total_s"] <= 180
        result["load_avg_at_end"] = os.getloadavg()
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    if any(result["errors"].values()):
        raise SystemExit("a notebook raised: see errors")


if __name__ == "__main__":
    main()
