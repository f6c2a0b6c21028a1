"""Tool results an agent can afford: the service's answers cut to a size budget.

An agent pays for every character a tool returns. MCP tools therefore answer in compact
JSON (no indentation, one copy), and :func:`compact_search` keeps of a query result what
an agent acts on — each context's text, source, section, score and id, the route and
why — within ``max_chars``: each context at most :data:`CONTEXT_CHARS`, the best ones
first, the rest left out (``more`` says how to get them). Pure functions over the views' dictionaries.
"""

from __future__ import annotations

import json
from typing import Any

SEARCH_CHARS = 8000  # a default search's whole answer, JSON included
DOCUMENT_CHARS = 6000  # a page of read_document
NODE_CHARS = 6000  # a tree node's text
MIN_CONTEXT_CHARS = 160  # a context shorter than this is left out rather than cut
CONTEXT_CHARS = 900  # at most this much of one context: several sources beat one long one
ELLIPSIS = "…"


def compact_json(data: Any) -> str:
    """``data`` as JSON without indentation or escaped non-ASCII letters."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters at a word boundary, marked with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - 1)]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + ELLIPSIS


def compact_search(result: dict[str, Any], max_chars: int = SEARCH_CHARS) -> dict[str, Any]:
    """A query result (:func:`arborgraph.service.views.query`'s) within ``max_chars`` of
    compact JSON: the best contexts whole, then shortened, then left out."""
    routing = result.get("routing") or {}
    contexts = [
        {
            "n": n,
            "source": c["source"],
            "section": " > ".join(c.get("heading_path") or []),
            "kind": c["kind"],
            "id": c["node_id"],
            "score": round(float(c["score"]), 3),
            "text": c["text"],
        }
        for n, c in enumerate(result.get("contexts", []), start=1)
    ]
    out: dict[str, Any] = {
        "question": result.get("question"),
        "route": result.get("route"),
        "reason": routing.get("reason"),
        "contexts": [],
        "generation": result.get("generation"),
    }
    if result.get("answer"):
        out["answer"] = result["answer"]
    elif result.get("highlights"):
        # the sentences most likely to answer, each citing its context's number "n"
        out["highlights"] = [{"n": h["context"], "text": h["text"]} for h in result["highlights"]]
    notes = result.get("notes") or []
    if notes:
        out["notes"] = notes
    left = max_chars - len(compact_json({**out, "contexts": [{**c, "text": ""} for c in contexts], "more": "x" * 160}))
    kept = []
    for i, context in enumerate(contexts):
        waiting = len(contexts) - i - 1
        room = min(CONTEXT_CHARS, left - waiting * MIN_CONTEXT_CHARS)  # keep room for the others' openings
        text = context["text"]
        if len(text) > room:
            text = clip(text, max(room, MIN_CONTEXT_CHARS))
        cost = len(json.dumps(text, ensure_ascii=False))
        if cost > left or len(text) < min(MIN_CONTEXT_CHARS, len(context["text"])):
            break
        kept.append({**context, "text": text})
        left -= cost
    out["contexts"] = kept
    shortened = sum(1 for k in kept if k["text"].endswith(ELLIPSIS))
    if len(kept) < len(contexts) or shortened:
        out["more"] = (
            f"{len(contexts) - len(kept)} more context(s) left out and {shortened} shortened to fit; "
            "read_document(doc_id, chunk_id) gives a passage whole, or ask with detail='full'"
        )
    return out


def document_page(doc: dict[str, Any], offset: int, max_chars: int = DOCUMENT_CHARS) -> dict[str, Any]:
    """Passages of a document (:func:`arborgraph.service.views.document`'s) from the
    ``offset``-th on, as many as fit ``max_chars``; ``next_offset`` continues (None: the
    end). The cited passage's page starts at it when no offset is given."""
    passages = doc["passages"]
    out = {k: v for k, v in doc.items() if k != "passages" and v is not None}
    out["passages_total"] = len(passages)
    out["offset"] = offset
    left = max_chars - len(compact_json(out)) - 60
    page = []
    for passage in passages[offset:]:
        item = {"chunk_id": passage["chunk_id"], "section": " > ".join(passage["heading_path"]), "text": passage["text"]}
        cost = len(compact_json(item))
        if page and cost > left:
            break
        if cost > left:  # a passage longer than a page: shortened, alone
            item["text"] = clip(item["text"], max(MIN_CONTEXT_CHARS, left - 120))
            cost = len(compact_json(item))
        page.append(item)
        left -= cost
    out["passages"] = page
    end = offset + len(page)
    out["next_offset"] = end if end < len(passages) else None
    return out
