"""Arborgraph: a RAPTOR tree, an entity graph and hybrid lookup over technical manuals.

>>> import arborgraph
>>> kb = arborgraph.build(["docs/"], "my-index")        # doctest: +SKIP
>>> res = kb.query("How does WAL mode work?")            # doctest: +SKIP
>>> res.route, [c.source for c in res.contexts]          # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from arborgraph.core.lazy import lazy_exports
from arborgraph.core.version import __version__

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from arborgraph.config import Config
    from arborgraph.kb import KnowledgeBase
    from arborgraph.core.protocols import ProgressCallback
    from arborgraph.neo4j.store import Neo4jStore
    from arborgraph.query.settings import QuerySettings

__all__ = [
    "build", "open", "current_generation", "IndexUnusable", "IndexNotFound", "IndexDamaged", "QueryError",
    "QuerySettings", "__version__",
]


# the error classes and the settings type, imported on first use so that
# ``import arborgraph`` stays light
__getattr__ = lazy_exports(__name__, {
    "IndexUnusable": "arborgraph.core.errors",
    "IndexNotFound": "arborgraph.core.errors",
    "IndexDamaged": "arborgraph.core.errors",
    "QueryError": "arborgraph.core.errors",
    "QuerySettings": "arborgraph.query.settings",
}, globals())


def build(
    paths: "Sequence[str | Path] | str | Path",
    index_dir: str | Path,
    config: "Config | None" = None,
    *,
    metadata: "Mapping[str, Mapping[str, Any]] | None" = None,
    progress: "ProgressCallback | None" = None,
    wait_for_lock: bool = False,
    force: bool = False,
) -> "KnowledgeBase":
    """Build (or update) the index at ``index_dir`` from files, directories or globs.

    ``metadata`` gives documents metadata without touching the files: doc id (or an
    ``fnmatch`` pattern over doc ids) -> ``{"acl": [...], "version": ..., ...}``,
    validated like a sidecar and overriding frontmatter and sidecars.

    Builds of one index exclude each other: while another holds it, this raises
    ``arborgraph.core.errors.IndexBusy`` at once, or with ``wait_for_lock=True`` waits for it
    (telling ``progress`` first, stage ``"waiting for another build"``).

    When nothing changed since the live generation, none is written (``force``: one is).
    """
    from arborgraph.pipeline import build_index
    from arborgraph.kb import KnowledgeBase
    from arborgraph.core.protocols import no_progress

    if isinstance(paths, (str, Path)):
        paths = [paths]
    build_index(
        list(paths), index_dir, config, metadata=metadata, progress=progress or no_progress,
        wait_for_lock=wait_for_lock, force=force,
    )
    return KnowledgeBase.open(index_dir)


def open(  # noqa: A001 - the API the issue names
    index_dir: str | Path,
    settings: "QuerySettings | Mapping[str, Any] | None" = None,
    *,
    graph_password: str | None = None,
    warm: bool = True,
    store: "Neo4jStore | None" = None,
) -> "KnowledgeBase":
    """Open an existing index; raises :class:`arborgraph.IndexNotFound` when there is
    none at ``index_dir`` and :class:`arborgraph.IndexDamaged` when it cannot be used
    (both are :class:`arborgraph.IndexUnusable`).

    ``settings`` are its query settings (:class:`arborgraph.QuerySettings`, or changes to
    the index's own: ``{"top_k": 5, "retrieval": {"ranker": False}}``); ``warm`` loads
    what every route needs now, so that no question pays for it; with ``store`` (an
    :class:`arborgraph.neo4j.Neo4jStore` on the database the index was exported to with
    its search indexes) every ``query`` takes its flat candidates from that database (see
    :meth:`arborgraph.kb.KnowledgeBase.open`)."""
    from arborgraph.kb import KnowledgeBase

    return KnowledgeBase.open(index_dir, settings, graph_password=graph_password, warm=warm, store=store)


def current_generation(index_dir: str | Path) -> str:
    """The name of ``index_dir``'s live generation ("gen-000007"), read from its
    ``CURRENT`` pointer with full validation and without opening the index: compare it
    with ``KnowledgeBase.generation`` to learn whether a ``refresh()`` would change
    anything. Raises ``arborgraph.IndexNotFound`` when there is no index there and
    ``arborgraph.IndexDamaged`` for a pointer that is not a plain one to a generation.
    """
    from arborgraph.index.index_dir import live_generation

    return live_generation(Path(index_dir)).name
