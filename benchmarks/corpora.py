"""Materialise the held-out manuals of ``corpora.json`` as plain folders.

Each entry names a Debian documentation package, the folder it installs, the globs
(relative to that folder) that make up the manual, and its role: ``train`` manuals are
the ranker's leave-one-manual-out folds, ``eval`` manuals are only ever scored. The files are copied, keeping
their relative paths, so an index built from ``DEST/NAME`` has doc ids such as
``mod/core.html`` that the question sets under ``questions/`` refer to.

    python benchmarks/corpora.py NAME [NAME ...] --dest /tmp/manuals

Exits 2 when a package is not installed (``apt-get install PACKAGE``) or a name is
unknown.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

SPECS = Path(__file__).resolve().parent / "corpora.json"


def load_specs() -> dict[str, dict]:
    return {k: v for k, v in json.loads(SPECS.read_text()).items() if not k.startswith("_")}


def manual_files(spec: dict) -> list[Path]:
    """The manual's files, relative to its root, in a stable order."""
    root = Path(spec["root"])
    chosen: set[Path] = set()
    for pattern in spec["include"]:
        chosen.update(p.relative_to(root) for p in root.glob(pattern) if p.is_file())
    excluded = {p.relative_to(root) for pattern in spec["exclude"] for p in root.glob(pattern)}
    # "limit": the first N files in path order (as bench_build_and_query.py --limit-docs)
    return sorted(chosen - excluded)[: spec.get("limit")]


def materialise(name: str, spec: dict, dest: Path) -> int:
    root = Path(spec["root"])
    if not root.is_dir():
        raise SystemExit(f"{name}: {root} is missing; install it with: apt-get install {spec['package']}")
    files = manual_files(spec)
    target = dest / name
    if target.exists():
        shutil.rmtree(target)
    for rel in files:
        out = target / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / rel, out)
    return len(files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="manuals to materialise (default: all)")
    parser.add_argument("--dest", type=Path, required=True)
    args = parser.parse_args(argv)
    specs = load_specs()
    unknown = [n for n in args.names if n not in specs]
    if unknown:
        print(f"unknown manual(s): {', '.join(unknown)}; known: {', '.join(specs)}", file=sys.stderr)
        return 2
    for name in args.names or list(specs):
        try:
            count = materialise(name, specs[name], args.dest)
        except SystemExit as exc:
            print(exc, file=sys.stderr)
            return 2
        print(f"{name}: {count} files -> {args.dest / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
