"""The explorer: an index's trees, graphs and contents as a caller may see them.

Notebooks, the web explorer and ``arborgraph inspect`` read an index through an
:class:`Explorer`: the tree and graph of one access scope (:class:`raptor.TreeView`,
:class:`graphrag.GraphView`), what the index holds (:meth:`Explorer.info`) and how
readable its structures are (:meth:`Explorer.structure`). Each answers for one
principal and shows nothing of a scope or document that principal may not read.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal


from arborgraph.core.errors import QueryError
from arborgraph.index import layout
from arborgraph.index import schema as S
from arborgraph.index.opened import Index
from arborgraph.index.access import Access
from arborgraph.index.scoped import Scope, scope_readable
from arborgraph.query.retrievers import chunk_refs

if TYPE_CHECKING:
    from arborgraph.index.structure_check import StructureReport

AccessOf = Callable[[str | None, dt.date | None], Access]


class Explorer:
    """Views of ``index`` for a principal; ``access_of(principal, as_of)`` says what that
    principal may read on that date (the query engine's :meth:`~arborgraph.query.engine.QueryEngine.access`,
    shared, so a view and a query see the same)."""

    def __init__(self, index: Index, access_of: AccessOf) -> None:
        self.index = index
        self.access_of = access_of

    def readable_scopes(self, principal: str | None = None) -> list[str]:
        """The access scopes ``principal`` may read: 'public' and 'acl:a,b' keys, each
        with its own tree and graph; the most specific (fewest principals) first."""
        return [s.scope for s in self._scopes_for(principal)]

    def _scopes_for(self, principal: str | None) -> list[Scope]:
        return self.access_of(principal, None).most_specific_first

    def _pick_scope(self, principal: str | None, scope: str | None, what: str) -> Scope:
        scopes = self._scopes_for(principal)
        if not scopes:
            raise QueryError(f"no {what} readable by this principal")
        if scope is None:
            return scopes[0]
        for candidate in scopes:
            if candidate.scope == scope:
                return candidate
        raise QueryError(
            f"no {what} of scope {scope!r} readable by this principal "
            f"(readable: {', '.join(s.scope for s in scopes)})"
        )

    def tree_view(self, principal: str | None = None, *, scope: str | None = None) -> Any:
        """A :class:`raptor.TreeView` of one tree ``principal`` may read: ``scope`` (one
        of :meth:`readable_scopes`), by default the most specific one (the public tree
        when there is no principal)."""
        if "tree" not in self.index.routes:
            raise QueryError("this index has no tree (built with --no-tree)")
        from raptor import TreeView

        return TreeView(self._pick_scope(principal, scope, "tree").tree)

    def graph_view(
        self,
        principal: str | None = None,
        *,
        scope: str | None = None,
        as_of: dt.date | None | Literal["today"] = "today",
    ) -> Any:
        """A :class:`graphrag.GraphView` of one graph ``principal`` may read: ``scope``
        (one of :meth:`readable_scopes`), by default the most specific one (the public
        graph when there is no principal). Its passages are those current on ``as_of``
        (default today; None: no date check), as in queries."""
        if "graph" not in self.index.routes:
            raise QueryError("this index has no graph (built with --no-graph)")
        chosen = self._pick_scope(principal, scope, "graph")
        from graphrag import GraphView

        when = dt.date.today() if as_of == "today" else as_of
        return GraphView(chosen.graph, chunk_text=chunk_refs(self.index.store, self.access_of(principal, when).mask))

    def structure(self, principal: str | None = None) -> "StructureReport":
        """How readable the trees, graphs and communities ``principal`` may read are: name
        lengths, strung titles, sibling repeats, grounding, co-occurrence share, headings
        among the best-connected entities, community-title shape
        (:mod:`arborgraph.index.structure_check`)."""
        from arborgraph.index.structure_check import structure_report

        scopes = [(s.tag, s.scope) for s in self._scopes_for(principal)]
        return structure_report(str(self.index.index_dir), self.index.on_disk, scopes)

    def info(self, principal: str | None = None) -> dict[str, Any]:
        """What the index holds: the manifest (config, per-document content hashes with
        format and title, the build's skipped files and warnings, access scopes), counts
        and on-disk sizes.

        Everything is what ``principal`` may read (None: public documents only), as for
        queries: ``documents``, ``scopes`` and the scoped tables list only readable ones,
        ``counts`` count readable documents and chunks, and build warnings naming a
        hidden document are left out. A caller who may not read every document sees no
        byte sizes of the tables shared by all scopes (they would tell how much is
        hidden), and those tables' row counts are its readable counts.
        """
        index = self.index
        manifest = index.manifest
        files, report = manifest.files, manifest.report
        readable_docs = index.store.readable_docs(principal)
        hidden = [d for d in index.store.docs if d not in readable_docs]
        scopes = [s for s in manifest.scopes if scope_readable(s.scope, principal)]
        tags = {s.tag for s in scopes}
        counts = {
            **manifest.counts,
            "documents": len(readable_docs),
            "chunks": int(index.store.chunk_mask(readable_docs).sum()),
        }
        tables: dict[str, dict[str, Any]] = {}
        for name, record in sorted(files.items()):
            if "rows" not in record.model_fields_set:
                continue
            tag = layout.scope_tag_of(name)
            if tag is not None:
                if tag in tags:
                    tables[name] = {"rows": record.rows, "bytes": record.bytes}
            elif not hidden:
                tables[name] = {"rows": record.rows, "bytes": record.bytes}
            elif (shared := Path(name).name.split(".")[0]) in ("documents", "chunks"):  # the readable ones
                tables[name] = {"rows": counts[shared], "bytes": None}
        mode = index.mode
        return {
            "index_dir": str(index.index_dir),
            "generation": manifest.generation,
            "schema_version": manifest.schema_version,
            "arborgraph_version": manifest.arborgraph_version,
            "built_at": manifest.built_at,
            "mode": {**mode.model_dump(), "label": mode.label},
            "routes": index.routes,
            "counts": counts,
            "timings_s": manifest.timings_s,
            "full_build_timings_s": manifest.full_build_timings_s or manifest.timings_s,
            "bytes_total": None if hidden else sum(f.bytes for f in files.values()),
            "tables": tables,
            **manifest.llm_usage(),
            "config": manifest.config,
            "documents": self._document_info(readable_docs),
            "skipped": [s.model_dump(mode="json") for s in report.skipped],
            # a warning naming a document the caller may not read is left out with it
            "warnings": [w for w in report.warnings if not any(d in w for d in hidden)],
            "scopes": [
                dict(sorted(s.model_dump(mode="json", exclude_unset=True).items()))  # keys as on disk
                for s in scopes
            ],
        }

    def _document_info(self, readable_docs: set[str]) -> dict[str, dict[str, Any]]:
        """doc id -> content hash, format, title and version (the hash from the manifest,
        the rest from the documents table), for the ``readable_docs`` only."""
        hashes = self.index.manifest.documents
        rows = self.index.on_disk.table(S.DOCUMENTS, columns=[S.DOC_ID, S.DOC_FORMAT, S.DOC_TITLE, S.DOC_VERSION]).to_pylist()
        described = {
            r[S.DOC_ID]: {"format": r[S.DOC_FORMAT], "title": r[S.DOC_TITLE], "version": r[S.DOC_VERSION]} for r in rows
        }
        return {
            doc_id: {"content_hash": hashes.get(doc_id), **described.get(doc_id, {})}
            for doc_id in sorted((set(hashes) | set(described)) & readable_docs)
        }

    def summary_html(self) -> str:
        """A small HTML table of the index (what a notebook shows for a knowledge base)."""
        import html

        info = self.info()
        counts = ", ".join(f"{k}: {v}" for k, v in info["counts"].items())
        stages = self.index.manifest.report.stages
        size = "" if info["bytes_total"] is None else f"{info['bytes_total'] / 2**20:.1f} MiB"
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
            for k, v in [
                ("index", info["index_dir"]),
                ("built", f"{info['built_at']} ({info['generation']})"),
                ("mode", info["mode"]["label"]),
                ("routes", ", ".join(info["routes"])),
                ("counts", counts),
                *[(name, ", ".join(f"{a}={b}" for a, b in st.items() if not isinstance(b, dict))) for name, st in stages.items()],
                ("size", size),
            ]
        )
        return f"<div><b>Arborgraph knowledge base</b><table>{rows}</table></div>"
