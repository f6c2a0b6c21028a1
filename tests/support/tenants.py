"""Tenant documents shared by the governance and service tests: three restricted
projects (two with frontmatter ACLs, one given its ACL through the build API), the
words that must never reach another caller, and questions that go after them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

# public manual pages the tenant documents sit among
PUBLIC_PAGES = ("wal.md", "c3ref_busy_timeout.md", "autoinc.md", "foreignkeys.md", "c3ref_wal_checkpoint_v2.md")

SECRET_A = """---
title: Project Bluefin operations notes
acl: [team-a]
---
# Project Bluefin

The launch code for Project Bluefin is ZEBRA-7731. Bluefin stores its queue in SQLite
with the `journal_mode` pragma set to WAL and `sqlite3_busy_timeout` set to 9000 ms.

## Bluefin checkpoints

Bluefin runs `sqlite3_wal_checkpoint_v2` every night after the ZEBRA-7731 batch.
"""

SECRET_B = """---
title: Project Marlin budget
acl: [team-b]
---
# Project Marlin

Project Marlin's database encryption passphrase is OCELOT-5520. Marlin keeps
`PRAGMA foreign_keys` enabled and uses AUTOINCREMENT on every ledger table.
"""

# no frontmatter: its acl is given to the build through the API (by pattern)
SECRET_C = """# Project Tarpon

The Tarpon vault PIN is HERON-4242. Tarpon keeps `PRAGMA journal_mode` at WAL and runs
`sqlite3_wal_checkpoint_v2` after every HERON-4242 batch.
"""
API_METADATA = {"private/*": {"acl": ["team-c"]}}

# two versions of one source, for supersession (format with version and value)
VERSIONED = """---
title: Cache settings {version}
source: https://example.org/cache-settings
version: "{version}"
---
# Cache settings

The default value of the `cache_spill_limit` setting is {value} pages.
"""

# who may read each secret document, and words that must not reach anyone else
SECRETS = {
    "bluefin.md": ("team-a", ["ZEBRA", "Bluefin"]),
    "marlin.md": ("team-b", ["OCELOT", "Marlin"]),
    "private/tarpon.md": ("team-c", ["HERON", "Tarpon"]),
}

PHRASINGS = [
    "What is the launch code for Project Bluefin?",
    "ZEBRA-7731",
    "How does Bluefin configure its busy timeout and checkpoints?",
    "The launch code for Project Bluefin is ZEBRA-7731.",
    "What is Project Marlin's encryption passphrase?",
    "OCELOT-5520",
    "Give an overview of the projects that use SQLite and their settings",
    "Tarpon vault PIN",
    "HERON-4242",
]


def write_tenant_docs(docs: Path, sample_slice: Path) -> Path:
    """Fill ``docs`` with the public pages and the three restricted projects."""
    for name in PUBLIC_PAGES:
        shutil.copy(sample_slice / name, docs / name)
    (docs / "bluefin.md").write_text(SECRET_A)
    (docs / "marlin.md").write_text(SECRET_B)
    (docs / "private").mkdir()
    (docs / "private" / "tarpon.md").write_text(SECRET_C)
    return docs


def build_tenant_index(docs: Path, index: Path, sample_slice: Path, config: Any = None) -> Path:
    """An index of the tenant documents (:func:`write_tenant_docs` into ``docs``), the
    third project's access list given through the build API (``config``: the build's)."""
    from arborgraph.pipeline import build_index

    build_index([write_tenant_docs(docs, sample_slice)], index, config, metadata=API_METADATA)
    return index


def write_versioned_docs(folder: Path) -> None:
    """Two versions of the cache settings (1.10 supersedes 1.9) and a retention policy
    that expired on 2021-01-01."""
    (folder / "cache-v1.md").write_text(VERSIONED.format(version="1.9", value="500"))
    (folder / "cache-v2.md").write_text(VERSIONED.format(version="1.10", value="2000"))
    (folder / "old-policy.md").write_text(
        "---\ntitle: Retention policy 2020\nvalid_to: 2021-01-01\n---\n# Retention\n\n"
        "Backups of the cache database are kept for ninety days under the retention policy.\n"
    )
