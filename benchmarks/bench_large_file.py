"""A very large file: one ~200 MB Markdown file, loaded, chunked and built.

The file is the bundled SQLite manual's pages one after another, repeated until it
reaches the size (so its 330,000-odd chunks repeat ~5,000 distinct texts: the
embedding stage computes only those, and this measures memory and time of loading,
chunking, BM25 and storing a file this size, not of embedding 330,000 new texts).

Measured in child processes whose peak RSS is sampled with their children (the
loader sandbox, the build's pool):
1. ingest only (load + chunk, as a build does), parsed a part at a time (the default
   ``ingest.part_mb``), and parsed whole (part size above the file size: how every
   file was parsed before parts existed);
2. the CLI build of the file, lookup only (``--no-tree --no-graph``), with
   ``ingest.max_file_mb`` raised to 256 (by default a file above 50 MB is skipped unread).

Writes benchmarks/results/large_file.json.

    python benchmarks/bench_large_file.py [--mb 200] [--skip-whole]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_build_and_query import run_build, run_sampled  # noqa: E402

SAMPLE = ROOT / "examples" / "sqlite"

INGEST = """
import json, sys, time
from ingest import iter_collection, chunk_document, load_token_counter
from ingest.chunking import ChunkingConfig
start = time.perf_counter()
(doc,) = iter_collection([sys.argv[1]], max_file_bytes=2**30, part_bytes=int(sys.argv[2]),
                        load_timeout_s=float(sys.argv[3]))
loaded = time.perf_counter()
if not hasattr(doc, "blocks"):
    raise SystemExit("skipped: " + doc.reason)
chunks = chunk_document(doc, ChunkingConfig(), load_token_counter())
print(json.dumps({"blocks": len(doc.blocks), "chunks": len(chunks), "load_s": round(loaded - start, 1),
                  "chunk_s": round(time.perf_counter() - loaded, 1)}))
"""


def make_file(path: Path, megabytes: int) -> int:
    pages = []
    for page in sorted(SAMPLE.glob("*.md")):
        text = page.read_text()
        if text.startswith("---"):
            text = text.split("---", 2)[2]
        pages.append(text.strip())
    body = ("\n\n".join(pages) + "\n\n").encode()
    size = 0
    with open(path, "wb") as out:
        while size < megabytes * 2**20:
            out.write(body)
            size += len(body)
    return size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--skip-whole", action="store_true", help="do not measure the whole-file parse")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "large_file.json")
    args = parser.parse_args()
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    from arborgraph.config import Config

    part_bytes = int(Config().ingest.part_mb * 2**20)
    result: dict = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "load_avg_at_start": os.getloadavg(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "docs" / "manual.md"
        big.parent.mkdir()
        size = make_file(big, args.mb)
        result["file"] = {"format": "markdown", "bytes": size, "mb": round(size / 2**20, 1),
                          "made_of": "the sample manual's pages, repeated"}
        ingest = {}
        runs = [("in_parts", part_bytes)] + ([] if args.skip_whole else [("whole_file", 2**31 - 1)])
        for name, part in runs:
            # the whole file gets an hour, not the default minute per part: the parser needs minutes
            timeout = "60" if name == "in_parts" else "3600"
            out, wall, peak = run_sampled([sys.executable, "-c", INGEST, str(big), str(part), timeout], env)
            ingest[name] = {"part_bytes": part, "wall_s": round(wall, 1), "peak_rss_mb": round(peak / 2**20, 1),
                            **json.loads(out)}
        result["ingest"] = ingest
        # above the default ingest.max_file_mb (50), which skips such a file unread
        build_env = dict(env, ARBORGRAPH_INGEST__MAX_FILE_MB="256")
        build = run_build(big.parent, Path(tmp) / "index", ["--no-tree", "--no-graph"], build_env)
        index_bytes = sum(f.stat().st_size for f in (Path(tmp) / "index").rglob("*") if f.is_file())
        result["build_lookup_only"] = {**build, "index_mb": round(index_bytes / 2**20, 1),
                                       "settings": {"ingest.max_file_mb": 256}}
    result["load_avg_at_end"] = os.getloadavg()
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
