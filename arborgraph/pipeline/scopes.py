"""Stages ``scopes`` (untimed), ``tree`` and ``graph``: the chunks split by access scope,
each scope's fingerprints, and its RAPTOR tree and entity graph, kept, updated or
built anew (:mod:`arborgraph.pipeline.structures` builds them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from arborgraph.core.version import __version__
from arborgraph.config import Config, GraphExtractConfig
from arborgraph.pipeline.incremental import PreviousIndex, fingerprint, load_graph_state
from arborgraph.index.layout import scope_file_prefixes
from arborgraph.index.manifest import ScopeRecord
from arborgraph.index.scoped import PUBLIC, load_scope_tree, scope_of
from arborgraph.index.store import GenerationWriter
from ingest.models import Chunk, Document

if TYPE_CHECKING:  # raptor's package costs a fifth of a second to import; a type needs none of it
    from raptor.tree import PageNavigation


@dataclass(frozen=True)
class ScopePart:
    """The chunks of one access scope; ``tag`` names its files (s0, s1, ...)."""

    tag: str
    scope: str
    chunks: list[Chunk]
    rows: np.ndarray  # row of each chunk in the chunks table / chunk vectors
    # its documents' places by their own navigation (pages above, page after), by
    # doc_id; only documents that have any
    navigation: dict[str, PageNavigation] = field(default_factory=dict)


def partition_by_scope(docs: Sequence[Document], chunks: Sequence[Chunk]) -> list[ScopePart]:
    acl = {d.doc_id: d.metadata.acl for d in docs}
    navigation = _navigation(docs)
    groups: dict[str, list[int]] = {}
    for row, chunk in enumerate(chunks):
        groups.setdefault(scope_of(acl[chunk.doc_id]), []).append(row)
    ordered = sorted(groups, key=lambda s: (s != PUBLIC, s))
    return [
        ScopePart(
            tag=f"s{i}",
            scope=scope,
            chunks=[chunks[r] for r in groups[scope]],
            rows=np.asarray(groups[scope], dtype=np.int64),
            navigation={
                doc: navigation[doc] for doc in dict.fromkeys(chunks[r].doc_id for r in groups[scope]) if doc in navigation
            },
        )
        for i, scope in enumerate(ordered)
    ]


@dataclass(frozen=True)
class Scopes:
    """What stage ``scopes`` made: the chunks of each access scope and their records."""

    parts: list[ScopePart]
    records: list[ScopeRecord]


def structure_settings(config: Config, embedding: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """What a scope's tree and graph depend on besides its chunks (hashed into its
    fingerprints): the tree's and the graph's settings."""
    # the local model's decoding settings decide its replies as its name does
    llm: Any = config.llm.model
    if config.llm.is_local:
        llm = {"model": llm, "local": config.llm.local.model_dump(mode="json")}
    tree = {"tree": config.tree.model_dump(mode="json"), "embedding": embedding, "llm": llm, "version": __version__}
    graph = {"graph": config.graph.model_dump(mode="json"), "llm": llm, "version": __version__}
    # only when set: at their defaults (all indexes built before they could be set) the
    # extractors leave the fingerprints as they were, so those indexes are reused
    if config.graph_extract != GraphExtractConfig():
        graph["extract"] = config.graph_extract.model_dump(mode="json")
    return tree, graph


def scope_records(
    docs: Sequence[Document], chunks: Sequence[Chunk], config: Config, embedding: str | None
) -> Scopes:
    """The chunks split by access scope, with each scope's record for the manifest."""
    parts = partition_by_scope(docs, chunks)
    tree_settings, graph_settings = structure_settings(config, embedding)
    records = [
        ScopeRecord(
            tag=p.tag, scope=p.scope, chunks=len(p.chunks),
            tree_fingerprint=fingerprint(p.chunks, _with_navigation(tree_settings, p), p.scope) if config.build_tree else None,
            # None when not built: a later build must not take this generation's missing
            # tree (or graph) for one made with the same settings
            tree_settings=fingerprint([], tree_settings, p.scope) if config.build_tree else None,
            graph_fingerprint=fingerprint(p.chunks, graph_settings, p.scope) if config.build_graph else None,
            graph_settings=fingerprint([], graph_settings, p.scope) if config.build_graph else None,
        )
        for p in parts
    ]
    return Scopes(parts=parts, records=records)


def _navigation(docs: Sequence[Document]) -> dict[str, PageNavigation]:
    """Each document's navigation (pages above, page after) that names documents read
    from the same input folder as itself. Two input folders may each hold an
    ``index.html``; the build keeps one, and the other manual's chapters must not then
    sit under the first manual's index page."""
    # a document not read from a file under an input folder (its path does not end
    # with its doc_id) has no folder to share: its navigation is left out
    root = {
        d.doc_id: d.path[: len(d.path) - len(d.doc_id)] if d.path.replace("\\", "/").endswith(d.doc_id) else None
        for d in docs
    }

    def same_root(doc: Document, target: str | None) -> bool:
        return target is not None and root[doc.doc_id] is not None and root.get(target) == root[doc.doc_id]

    out: dict[str, PageNavigation] = {}
    for d in docs:
        up = tuple(t for t in d.nav_up if same_root(d, t))
        following = d.nav_next if same_root(d, d.nav_next) else None
        if up or following:
            out[d.doc_id] = (up, following)
    return out


def _with_navigation(settings: dict[str, Any], part: ScopePart) -> dict[str, Any]:
    """A tree depends on its pages' navigation too (it nests pages by it); a scope
    without any keeps the fingerprint it had before navigation was read."""
    if not part.navigation:
        return settings
    return {**settings, "navigation": sorted((doc, list(up), nxt) for doc, (up, nxt) in part.navigation.items())}


@dataclass
class Reuse:
    """What a rebuild may take from the live index, scope by scope (never anything when
    there is no live index)."""

    previous: PreviousIndex | None
    scopes: Scopes
    config: Config

    def _pair(self, part: ScopePart) -> tuple[ScopeRecord | None, ScopeRecord]:
        new = next(r for r in self.scopes.records if r.tag == part.tag)
        old = self.previous.manifest.scope(part.tag) if self.previous is not None else None
        return old, new

    def reusable(self, kind: str, writer: GenerationWriter) -> Callable[[ScopePart], bool]:
        """Whether a scope's ``kind`` (tree, graph) is unchanged: then its files are linked
        over from the live generation (and the check says so)."""
        key = f"{kind}_fingerprint"

        def check(part: ScopePart) -> bool:
            if self.previous is None:
                return False
            old, new = self._pair(part)
            if old is None or getattr(old, key) is None or getattr(old, key) != getattr(new, key):
                return False
            taken = writer.reuse(self.previous.generation, scope_file_prefixes(kind, part.tag)) > 0
            if taken and kind == "graph" and old.communities is not None:
                # the linked graph keeps communities adopted from GDS: the record says so still
                new.communities = old.communities
            return taken

        return check

    def _same_settings(self, part: ScopePart, key: str) -> bool:
        """Whether the live index has this scope, built with the same ``key`` settings."""
        if self.previous is None:
            return False
        old, new = self._pair(part)
        return old is not None and getattr(old, key) == getattr(new, key)

    def previous_tree(self, part: ScopePart) -> Any:
        """The previous tree of this scope when only its chunks changed, else None."""
        if self.previous is None or not self.config.build_tree or not self._same_settings(part, "tree_settings"):
            return None
        return load_scope_tree(self.previous.generation, part.tag)

    def previous_graph(self, part: ScopePart) -> Any:
        """The previous graph state of this scope when only its chunks changed, else None."""
        if self.previous is None or not self.config.build_graph or not self._same_settings(part, "graph_settings"):
            return None
        return load_graph_state(self.previous.generation, part.tag)
