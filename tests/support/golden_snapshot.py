"""The golden snapshot: what a seeded, rule-extractor, no-LLM build of the test slice
writes, and what its queries rank, kept in ``tests/data/golden/``.

``test_golden.py`` compares a fresh build and fresh queries with it, so a refactoring
that changes no behaviour leaves it identical. A deliberate change of behaviour updates
it in a commit of its own that says why::

    python tests/support/golden_snapshot.py --update
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

TESTS = Path(__file__).resolve().parents[1]
GOLDEN = TESTS / "data" / "golden"
ROUTES = ("lookup", "tree", "graph", "global", "auto")
# one or two per question type, each on every route
QUESTIONS = (
    "Which pragma sets the busy timeout?",
    "What is the default page size limit?",
    "How does a checkpoint move content from the WAL file back into the database?",
    "What happens to an AUTOINCREMENT column when the largest rowid is reached?",
    "How do foreign key constraints relate to transactions and deferred checking?",
    "Which locks does a writer hold while committing, and how do readers see them?",
    "What are the main themes of this documentation?",
    "Summarise how SQLite keeps data safe across crashes.",
)
# float columns may differ in the last bits between CPUs; anything else must be equal
RTOL, ATOL = 1e-4, 1e-5


def generation_dir(index_dir: Path) -> Path:
    return index_dir / (index_dir / "CURRENT").read_text().strip()


def query_ids(index_dir: Path) -> dict[str, dict[str, object]]:
    """Route taken and ranked context ids of every question on every route."""
    import arborgraph

    out: dict[str, dict[str, object]] = {}
    with arborgraph.open(index_dir) as kb:
        for question in QUESTIONS:
            for route in ROUTES:
                res = kb.query(question, route=route, as_of=None)  # type: ignore[arg-type]
                out[f"{route} | {question}"] = {
                    "route": res.route,
                    "contexts": [f"{c.kind}:{c.node_id}" for c in res.contexts],
                }
    return out


def capture(index_dir: Path, dest: Path) -> None:
    """Write the snapshot of ``index_dir`` to ``dest`` (replacing what is there)."""
    gen = generation_dir(index_dir)
    if dest.exists():
        shutil.rmtree(dest)
    for path in sorted(gen.rglob("*")):
        rel = path.relative_to(gen)
        if path.suffix in (".parquet", ".npy") or (rel.parts[0] == "bm25" and path.is_file()):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest / rel)
    (dest / "queries.json").write_text(json.dumps(query_ids(index_dir), indent=1, sort_keys=True) + "\n")


def _table_differences(name: str, got: pa.Table, want: pa.Table) -> list[str]:
    if got.schema != want.schema:
        return [f"{name}: schema {got.schema.names} != {want.schema.names} (or types differ)"]
    if got.num_rows != want.num_rows:
        return [f"{name}: {got.num_rows} rows, golden {want.num_rows}"]
    problems = []
    for column in want.schema.names:
        a, b = got.column(column).combine_chunks(), want.column(column).combine_chunks()
        if name.endswith("documents.parquet") and column == "path":
            # absolute paths of wherever the slice was copied: compare the part under it
            ids = want.column("doc_id").to_pylist()
            a, b = (pa.array([p[len(p) - len(i):] for p, i in zip(col.to_pylist(), ids)]) for col in (a, b))
        if pa.types.is_floating(b.type):
            x, y = a.to_numpy(zero_copy_only=False), b.to_numpy(zero_copy_only=False)
            if not np.allclose(x, y, rtol=RTOL, atol=ATOL, equal_nan=True):
                problems.append(f"{name}.{column}: values differ (max {np.nanmax(np.abs(x - y)):.3g})")
        elif not a.equals(b):
            rows = [i for i, (p, q) in enumerate(zip(a.to_pylist(), b.to_pylist())) if p != q]
            problems.append(f"{name}.{column}: {len(rows)} rows differ, first row {rows[:1]}")
    return problems


def bm25_postings(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """A BM25 index's postings by term: its files number terms in whatever order the
    term set came in (string hashing varies per process), so compare term by term."""
    vocab = json.loads((folder / "vocab.index.json").read_text())
    data, indices, indptr = (np.load(folder / f"{part}.csc.index.npy") for part in ("data", "indices", "indptr"))
    return {
        term: [(int(d), round(float(v), 4)) for d, v in zip(indices[indptr[i]:indptr[i + 1]], data[indptr[i]:indptr[i + 1]])]
        for term, i in vocab.items()
        if i + 1 < len(indptr)  # bm25s keeps an empty term past the matrix's columns
    }


def _bm25_differences(rel: Path, got: Path, want: Path) -> list[str]:
    problems = []
    for name in sorted(p.name for p in want.iterdir() if p.suffix in (".json", ".txt")):
        if name != "vocab.index.json" and (got / name).read_text() != (want / name).read_text():
            problems.append(f"{rel}/{name}: differs")
    a, b = bm25_postings(got), bm25_postings(want)
    if a != b:
        changed = sorted(t for t in a.keys() | b.keys() if a.get(t) != b.get(t))
        problems.append(f"{rel}: postings of {len(changed)} terms differ, first {changed[:3]}")
    return problems


def _files(root: Path) -> set[Path]:
    """Tables and vectors (BM25 folders are compared by :func:`bm25_postings`)."""
    found = {p.relative_to(root) for p in root.rglob("*") if p.suffix in (".parquet", ".npy")}
    return {p for p in found if p.parts[0] != "bm25"}


def differences(index_dir: Path, golden: Path = GOLDEN) -> list[str]:
    """How ``index_dir`` (tables, vectors, BM25 postings, query rankings) differs from
    the snapshot."""
    gen = generation_dir(index_dir)
    problems: list[str] = []
    want_files, got_files = _files(golden), _files(gen)
    want_bm25 = {p.relative_to(golden) for p in (golden / "bm25").iterdir()} if (golden / "bm25").is_dir() else set()
    got_bm25 = {p.relative_to(gen) for p in (gen / "bm25").iterdir()} if (gen / "bm25").is_dir() else set()
    for rel in sorted((got_files ^ want_files) | (got_bm25 ^ want_bm25), key=str):
        problems.append(f"{rel}: {'new' if rel in got_files | got_bm25 else 'missing'}")
    for rel in sorted(got_bm25 & want_bm25, key=str):
        problems += _bm25_differences(rel, gen / rel, golden / rel)
    for rel in sorted(got_files & want_files, key=str):
        if rel.suffix == ".parquet":
            problems += _table_differences(str(rel), pq.read_table(gen / rel), pq.read_table(golden / rel))
        else:
            a, b = np.load(gen / rel), np.load(golden / rel)
            if a.shape != b.shape or a.dtype != b.dtype:
                problems.append(f"{rel}: {a.dtype}{a.shape}, golden {b.dtype}{b.shape}")
            elif not np.allclose(a, b, rtol=RTOL, atol=ATOL):
                problems.append(f"{rel}: values differ (max {np.abs(a - b).max():.3g})")
    want = json.loads((golden / "queries.json").read_text())
    got = query_ids(index_dir)
    for key in sorted(want.keys() | got.keys()):
        if got.get(key) != want.get(key):
            problems.append(f"query {key!r}: {got.get(key)} != golden {want.get(key)}")
    return problems


def build(index_dir: Path) -> None:
    """The snapshot's build: the test slice, default (seeded, rule-extractor, no-LLM) config."""
    import arborgraph
    from conftest import SAMPLE_MANUAL, SLICE

    with tempfile.TemporaryDirectory() as tmp:
        for name in SLICE:
            shutil.copy(SAMPLE_MANUAL / name, Path(tmp) / name)
        arborgraph.build([tmp], index_dir).close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update", action="store_true", help="rebuild and rewrite the snapshot")
    args = parser.parse_args()
    sys.path.insert(0, str(TESTS))  # conftest: the slice
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp) / "idx"
        build(index)
        if args.update:
            capture(index, GOLDEN)
            print(f"wrote {GOLDEN}")
            return 0
        problems = differences(index)
        print("\n".join(problems) or "identical")
        return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
