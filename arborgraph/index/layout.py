"""Every file path of an index directory, in one place.

Layout of an index directory::

    INDEX/
      CURRENT            text file naming the live generation ("gen-000003")
      build.lock         the lock a build holds for its whole run (holds its pid)
      last-generation    the last generation number handed out (never reused)
      build-status.json  per-document status of the build in progress (or the last)
      rebuild-status.json  the state of the service's last rebuild (serve --docs)
      cache/             parse, embedding and LLM caches, shared by every generation
        parsed.sqlite  embeddings.sqlite  llm.sqlite
      gen-000003/
        manifest.json    schema version, config, model names, checksums, counts...
        manifest.sha256  the SHA-256 of manifest.json, checked before it is read
        tables/NAME.parquet  named tables (a scope's: NAME.s0.parquet)
        vectors/NAME.npy     float32 matrices, row order = table row order
        bm25/NAME/           lexical indexes (the chunks', each scope tree's)

Paths inside a generation are the relative POSIX strings its manifest lists; paths of
the index directory are :class:`~pathlib.Path` objects.
"""

from __future__ import annotations

import re
from pathlib import Path

# -- the index directory --------------------------------------------------------------
CURRENT = "CURRENT"
LOCK = "build.lock"
COUNTER = "last-generation"
STATUS = "build-status.json"
REBUILD_STATUS = "rebuild-status.json"
CACHE = "cache"

GENERATION_PATTERN = r"^gen-\d{6}$"
GENERATION_RE = re.compile(r"^gen-(\d{6})$")
MAX_GENERATION = 999_999
# a generation being deleted is renamed first, so no reader finds it half gone
PRUNED_PREFIX = ".pruned-"

# -- a generation ---------------------------------------------------------------------
MANIFEST = "manifest.json"
MANIFEST_SUM = "manifest.sha256"
TABLES = "tables"
VECTORS = "vectors"
BM25 = "bm25"
GENERATION_SUBDIRS = (TABLES, VECTORS, BM25)


def generation_name(number: int) -> str:
    """The directory name of generation ``number``: ``gen-000007``."""
    return f"gen-{number:06d}"


def generation_number(name: str) -> int | None:
    """The number of a generation directory name, None for any other name."""
    match = GENERATION_RE.match(name)
    return int(match.group(1)) if match else None


def cache_dir(index_dir: Path | str) -> Path:
    return Path(index_dir) / CACHE


def parse_cache_file(index_dir: Path | str) -> Path:
    return cache_dir(index_dir) / "parsed.sqlite"


def embedding_cache_file(index_dir: Path | str) -> Path:
    return cache_dir(index_dir) / "embeddings.sqlite"


def llm_cache_file(index_dir: Path | str) -> Path:
    return cache_dir(index_dir) / "llm.sqlite"


def status_file(index_dir: Path | str) -> Path:
    return Path(index_dir) / STATUS


def rebuild_status_file(index_dir: Path | str) -> Path:
    return Path(index_dir) / REBUILD_STATUS


def scoped(name: str, tag: str) -> str:
    """The name of one access scope's table, vector array or BM25 index: ``entities.s0``."""
    return f"{name}.{tag}"


def table_file(name: str) -> str:
    return f"{TABLES}/{name}.parquet"


def scope_tag_of(path: str) -> str | None:
    """The scope tag in a scoped file's path (``tables/entities.s1.parquet`` -> ``s1``), else None."""
    parts = Path(path).name.split(".")
    return next((p for p in parts[1:] if re.fullmatch(r"s\d{1,6}", p)), None)


def vectors_file(name: str) -> str:
    return f"{VECTORS}/{name}.npy"


def bm25_dir(name: str) -> str:
    return f"{BM25}/{name}"


# the lexical index of every chunk, and a scope tree's vectors and summary index
CHUNKS_BM25 = bm25_dir("chunks")
# the approximate nearest-neighbour index of the chunk vectors (large collections only)
CHUNKS_ANN = f"{VECTORS}/chunks.usearch"
TREE = "tree"


def tree_bm25_dir(tag: str) -> str:
    return bm25_dir(scoped(TREE, tag))


def scope_file_prefixes(kind: str, tag: str) -> tuple[str, ...]:
    """Path prefixes of one scope's ``tree`` or ``graph`` files in a generation (what a
    rebuild links over from the previous one when the scope did not change)."""
    if kind == "tree":
        from raptor.schema import NODES_TABLE

        return (f"{TABLES}/{scoped(NODES_TABLE, tag)}.", f"{VECTORS}/{scoped(TREE, tag)}.", tree_bm25_dir(tag) + "/")
    from graphrag.schema import TABLE_NAMES, UPDATE_TABLE_NAMES

    return tuple(f"{TABLES}/{scoped(name, tag)}." for name in (*TABLE_NAMES, *UPDATE_TABLE_NAMES))
