"""What each endpoint and MCP tool returns, computed from a knowledge base and the
caller's principal. HTTP routes and MCP tools both call these functions, so a caller
sees the same passages through either, filtered by the same in-process code path."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from arborgraph.core.errors import QueryError
from arborgraph.kb import KnowledgeBase
from arborgraph.service.swap import generation_name

RouteName = Literal["auto", "lookup", "tree", "graph", "global"]

# config keys whose values are credentials (the manifest already drops llm.api_key)
_SECRET_KEY = re.compile(r"(api_key|password|secret|token)$", re.IGNORECASE)


class NotFound(LookupError):
    """Nothing of that name that this caller may read (unknown and forbidden look alike)."""


@dataclass(frozen=True)
class QueryOptions:
    """The options of one question, as the HTTP body and the MCP tools give them."""

    route: RouteName = "auto"
    top_k: int = 20
    budget_tokens: int = 2000
    as_of: dt.date | None = None  # None: today
    include_stale: bool = False
    explain: bool = False
    answer: bool = False


def query(
    kb: KnowledgeBase,
    principal: str | None,
    question: str,
    options: QueryOptions,
    qid: Any = None,
    *,
    llm_model: str | None = None,
) -> dict[str, Any]:
    """The object ``arborgraph query --json`` prints, plus the generation that answered.
    ``llm_model`` names the chat model for ``answer`` (default: the index's config)."""
    llm = kb.engine.chat_model(llm_model) if options.answer else None
    res = kb.query(
        question,
        route=options.route,
        top_k=options.top_k,
        budget_tokens=options.budget_tokens,
        principal=principal,
        as_of=options.as_of or "today",
        include_stale=options.include_stale,
        answer=options.answer,
        llm=llm,
    )
    # the contract's "id" (first key) is the caller's, not the library's null
    out: dict[str, Any] = {**res.to_dict(), "generation": generation_name(kb)} | {"id": qid}
    out = {"id": qid} | {k: v for k, v in out.items() if k != "id"}
    if options.explain:
        out["explain"] = res.explain()
    return out


def check_route(kb: KnowledgeBase, route: str) -> None:
    """QueryError now for a route the index has not built (before any output is sent)."""
    if route != "auto" and route not in kb.index.routes:
        raise QueryError(
            f"this index has no '{route}' route (built: {', '.join(kb.index.routes)})"
        )


def routing(kb: KnowledgeBase, principal: str | None, question: str) -> dict[str, Any]:
    """Where an auto-routed question goes and why: the router's decision alone, as
    ``query`` makes it for this caller (from the caller's flat hits, by the LLM router
    when the settings ask for it, with the route it is fused with when unsure). No
    route's retrieval runs: a routing question costs a lookup, not a whole query."""
    decision = kb.engine.decide(question, principal=principal)
    return {
        "question": question,
        "route": decision.route,
        "routing": decision.model_dump(mode="json"),
        "generation": generation_name(kb),
    }


def _without_secrets(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_secrets(v) for k, v in value.items() if not _SECRET_KEY.search(str(k))}
    if isinstance(value, list):
        return [_without_secrets(v) for v in value]
    return value


def index_info(kb: KnowledgeBase, principal: str | None) -> dict[str, Any]:
    """``inspect --json`` minus what this caller may not know: documents and scopes it
    cannot read, the build's file-level messages (they name files), credentials and
    the server's paths."""
    info = kb.info(principal)
    info["index_dir"] = Path(info["index_dir"]).name
    info["skipped"] = len(info["skipped"])
    info["warnings"] = len(info["warnings"])
    info["config"] = _without_secrets(info["config"])
    info["generation"] = generation_name(kb)
    return info


# -- the tree -------------------------------------------------------------------------

def _node(node: Any) -> dict[str, Any]:
    return {
        "node_id": node.node_id,
        "level": node.level,
        "title": node.title,
        "text": node.text,
        "children": list(node.children),
        "parents": list(node.parents),
        "doc_ids": list(node.doc_ids),
        "chunk_ids": list(node.chunk_ids),
        "heading_path": list(node.heading_path),
        "summariser": node.summariser,
        "origin": node.origin,
        "label": node.label,
        "coverage": node.coverage,
    }


def _tree(kb: KnowledgeBase, principal: str | None, scope: str | None) -> Any:
    return kb.explorer.tree_view(principal, scope=scope)


def _tree_node(view: Any, node_id: str) -> Any:
    try:
        return view.node(node_id)
    except KeyError:
        raise NotFound(f"no tree node {node_id!r} in the tree readable by this caller") from None


def tree_outline(kb: KnowledgeBase, principal: str | None, scope: str | None = None, depth: int = 2) -> dict[str, Any]:
    view = _tree(kb, principal, scope)
    return {
        "scope": scope or kb.explorer.readable_scopes(principal)[0],
        "root": view.tree.root_id,
        "outline": view.outline(depth=depth),
        "stats": view.stats(),
        "generation": generation_name(kb),
    }


def tree_node(kb: KnowledgeBase, principal: str | None, node_id: str, scope: str | None = None) -> dict[str, Any]:
    view = _tree(kb, principal, scope)
    return {**_node(_tree_node(view, node_id)), "generation": generation_name(kb)}


def tree_children(kb: KnowledgeBase, principal: str | None, node_id: str, scope: str | None = None) -> dict[str, Any]:
    view = _tree(kb, principal, scope)
    node = _tree_node(view, node_id)
    return {
        "node_id": node_id,
        "children": [_node(view.node(c)) for c in node.children],
        "generation": generation_name(kb),
    }


def tree_path(kb: KnowledgeBase, principal: str | None, node_id: str, scope: str | None = None) -> dict[str, Any]:
    view = _tree(kb, principal, scope)
    _tree_node(view, node_id)
    path = view.path_to_root(node_id)
    return {
        "node_id": node_id,
        "path": [{"node_id": n, "level": view.node(n).level, "title": view.node(n).title} for n in path],
        "generation": generation_name(kb),
    }


# -- the graph ------------------------------------------------------------------------

def _graph(kb: KnowledgeBase, principal: str | None, scope: str | None) -> Any:
    return kb.explorer.graph_view(principal, scope=scope)


def _entity(view: Any, name: str) -> Any:
    try:
        return view.entity(name)
    except KeyError:
        raise NotFound(f"no entity named {name!r} in the graph readable by this caller") from None


def entity(kb: KnowledgeBase, principal: str | None, name: str, scope: str | None = None) -> dict[str, Any]:
    view = _graph(kb, principal, scope)
    ent = _entity(view, name)
    ids = view.kg.membership.get(ent.id, [])
    return {
        "id": ent.id,
        "name": ent.name,
        "type": ent.type,
        "aliases": list(ent.aliases),
        "description": ent.description,
        "chunk_ids": ent.chunk_ids,
        "degree": view.kg.degree(ent.id),
        "communities": list(ids),
        "generation": generation_name(kb),
    }


def entity_neighbours(
    kb: KnowledgeBase, principal: str | None, name: str, scope: str | None = None, limit: int = 20
) -> dict[str, Any]:
    view = _graph(kb, principal, scope)
    ent = _entity(view, name)
    return {
        "id": ent.id,
        "name": ent.name,
        "neighbours": view.neighbours(ent.id, limit=limit),
        "generation": generation_name(kb),
    }


def community(kb: KnowledgeBase, principal: str | None, community_id: int, scope: str | None = None) -> dict[str, Any]:
    view = _graph(kb, principal, scope)
    try:
        detail = view.community(community_id)
    except KeyError:
        raise NotFound(f"no community {community_id} in the graph readable by this caller") from None
    report = detail.report
    return {
        "id": detail.id,
        "level": detail.level,
        "parent": detail.parent,
        "children": detail.children,
        "members": detail.members,
        "report": None
        if report is None
        else {
            "title": report.title,
            "summary": report.summary,
            "rank": report.rank,
            "findings": [{"text": f.text, "chunk_ids": list(f.chunk_ids)} for f in report.findings],
        },
        "generation": generation_name(kb),
    }


# -- documents ------------------------------------------------------------------------

def documents(
    kb: KnowledgeBase, principal: str | None, contains: str | None = None, offset: int = 0, limit: int = 100,
) -> dict[str, Any]:
    """The documents the caller may read (any date), by doc id, optionally only those
    whose id or title contains ``contains`` (any case), ``limit`` from ``offset``; with
    the access scopes the caller may browse, most specific first."""
    store = kb.index.store
    needle = (contains or "").casefold()
    rows = []
    for doc_id in sorted(store.allowed_docs(principal, None, include_stale=True)):
        info = store.docs[doc_id]
        if needle in doc_id.casefold() or needle in (info.title or "").casefold():
            rows.append({"doc_id": doc_id, "title": info.title, "version": info.version})
    page = rows[offset : offset + limit]
    return {
        "documents": page,
        "total": len(rows),
        "next_offset": offset + len(page) if offset + len(page) < len(rows) else None,
        "scopes": kb.explorer.readable_scopes(principal),
        "generation": generation_name(kb),
    }


def document(
    kb: KnowledgeBase,
    principal: str | None,
    doc_id: str,
    *,
    chunk_id: str | None = None,
    as_of: dt.date | None = None,
    include_stale: bool = False,
) -> dict[str, Any]:
    """A document's passages in page order (``chunk_id`` marks the cited one), if the
    caller may see the document on ``as_of`` (default today)."""
    store = kb.index.store
    allowed = store.allowed_docs(principal, as_of or dt.date.today(), include_stale)
    if doc_id not in allowed:
        raise NotFound(f"no document {doc_id!r} readable by this caller")
    rows = [i for i, d in enumerate(store.doc_ids) if d == doc_id]
    rows.sort(key=lambda i: (store.starts[i], i))
    chunk_ids = [store.chunk_ids[i] for i in rows]
    if chunk_id is not None and chunk_id not in chunk_ids:
        raise NotFound(f"no passage {chunk_id!r} in document {doc_id!r}")
    info = store.docs[doc_id]
    stale = store.stale_docs(as_of or dt.date.today()).get(doc_id)
    return {
        "doc_id": doc_id,
        "title": info.title,
        "source": info.source,
        "version": info.version,
        "stale": stale,
        "cited": chunk_id,
        "passages": [
            {
                "chunk_id": store.chunk_ids[i],
                "heading_path": list(store.heading_paths[i]),
                "start": store.starts[i],
                "end": store.ends[i],
                "text": store.texts[i],
            }
            for i in rows
        ],
        "generation": generation_name(kb),
    }
