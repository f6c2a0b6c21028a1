"""What a query returns, from what its route found: composition and the final assembly.

Pure functions over :class:`~arborgraph.core.retrieval.Retrieval` values:

* :func:`compose` turns a route's own result into the candidates the final assembly
  takes from: lookup's flat hits, or a structure's own context (overview, relation
  chain, report) then chunks, arranged with the flat hits as the route's settings say
  (:func:`arrange`) or in the order the ranking stage gave them; a structure that
  found nothing falls back to lookup, and says so.
* :func:`assemble` keeps, in order, up to ``top_k`` distinct contexts that fit the
  token budget (always with one of the manual's own chunks), flagging injected text.
* :func:`relevance_scores` gives the scores to show for what is kept.
* :func:`flag_stale` marks contexts drawn on stale documents.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from arborgraph.config import RetrievalConfig, TreeSearchConfig
from arborgraph.core.retrieval import Ranked, Retrieval
from arborgraph.query.fusion import fuse_contexts
from arborgraph.core.results import MANUALS_WORDS, Context
from arborgraph.query.safety import INJECTION_FLAG, context_looks_injected


def compose(
    found: Retrieval,
    hits: Retrieval,
    *,
    top_k: int,
    pool: int,
    retrieval: RetrievalConfig,
    tree_search: TreeSearchConfig,
    ranked: Ranked | None = None,
) -> Retrieval:
    """The route's candidates, best first: ``top_k`` flat hits for lookup, ``pool``
    contexts for a structured route, with the rankings that produced them.

    ``found`` is what the route's retriever returned (for lookup: ``hits``, the flat
    ranking); ``ranked`` the ranking stage's order of the route's chunk candidates,
    when it ran (its contexts are the first of that order; the whole order is kept
    in the rankings). A structured route keeps its own context first (overview, chain,
    report, at most ``retrieval.structure_header`` of them) and the ranker orders the
    chunks it reached together with lookup's candidates.
    """
    if found.route == "lookup":
        if ranked is not None:
            return Retrieval("lookup", ranked.contexts[:top_k], hits.rankings | {"ranker": list(ranked.order)})
        return Retrieval("lookup", hits.contexts[:top_k], dict(hits.rankings))
    if not found.contexts:
        note = f"{found.route} route found nothing ({found.why_empty}); fell back to lookup"
        return Retrieval(found.route, hits.contexts[:top_k], dict(hits.rankings), notes=[note])
    rankings = {f"lookup/{k}": v for k, v in hits.rankings.items()} | found.rankings
    if ranked is not None:
        header = found.leading(retrieval.structure_header)
        rankings["ranker"] = list(ranked.order)
        return Retrieval(found.route, (header + ranked.contexts)[:pool], rankings)
    return Retrieval(found.route, arrange(found, hits.contexts, retrieval, tree_search)[:pool], rankings)


def compose_both(
    found: Sequence[Retrieval], hits: Retrieval, ranked: Ranked, *, top_k: int, pool: int, note: str,
) -> Retrieval:
    """Two routes' candidates ranked together (the router was unsure between them):
    the ranking stage's order of all their chunks and lookup's, ``pool`` of them
    (``top_k`` when both are lookup). Named after the first route; its rankings as they
    are, the second's under ``"<route>:"``; ``note`` says why both ran.

    Neither route's own context (overview, relation chain, report) is kept: neither
    route is trusted to lead. Leading with them moved the first evidence down on
    SQLite's questions (MRR 0.44 -> 0.38), and the fusion of the two routes' lists this
    replaces ranked them below every chunk both routes ranked high, out of the window."""
    rankings = {f"lookup/{k}": v for k, v in hits.rankings.items()}
    for i, f in enumerate(found):
        if f.route != "lookup":
            rankings |= f.rankings if i == 0 else {f"{f.route}:{k}": v for k, v in f.rankings.items()}
    rankings["ranker"] = list(ranked.order)
    empty = [f"{f.route} route found nothing ({f.why_empty})" for f in found if f.route != "lookup" and not f.contexts]
    size = top_k if all(f.route == "lookup" for f in found) else pool
    return Retrieval(found[0].route, ranked.contexts[:size], rankings, notes=[*empty, note])


def arrange(
    found: Retrieval, lookup_hits: list[Context], retrieval: RetrievalConfig, tree_search: TreeSearchConfig
) -> list[Context]:
    """The structure's own context first (overview, relation chain, report), then
    chunks: the lookup ranking fused with the chunks the structure reached.

    Measured on the SQLite question set (no LLM), the structures' own chunk rankings
    lose evidence the flat ranking finds, even fused at weight 0.25; so by default
    (``structure_weight=0``) the flat ranking leads and chunks only the structure
    reached follow it. The tree focuses on its best documents (:func:`focus_tree`);
    graph and global search already lead with the flat hits (:func:`flat_first`).
    """
    route = found.route
    how = retrieval.compose.get(route, "flat-first")
    if route == "tree" and tree_search.focus_leaves > 0:
        return focus_tree(found, lookup_hits, tree_search)
    if route in ("graph", "global") and how == "flat-first":
        return flat_first(found, lookup_hits, retrieval.structure_header)
    if how == "structure":
        return list(found.contexts)
    header = found.leading(retrieval.structure_header)
    body = fuse_contexts(
        {"lookup": lookup_hits, route: found.chunks}, {"lookup": 1.0, route: retrieval.structure_weight}
    )
    return header + body


def flat_first(found: Retrieval, lookup_hits: list[Context], structure_header: int) -> list[Context]:
    """The relation chain (or community report), then the search's chunks in its
    own order, then the lookup hits it did not keep.

    Graph and global search were given the lookup hits and already lead with them
    (see :func:`graphrag.search.graph_search` and
    :func:`graphrag.search_global.global_search`); they only insert the
    second-hop sections or page leads they are confident of, in place of the
    weakest flat chunks of the window. Fusing with the lookup ranking again would
    undo exactly those insertions.
    """
    header = found.leading(structure_header)
    chunks = found.chunks
    seen = {c.node_id for c in chunks}
    return header + chunks + [c for c in lookup_hits if c.node_id not in seen]


def focus_tree(found: Retrieval, lookup_hits: list[Context], settings: TreeSearchConfig) -> list[Context]:
    """The tree's overview, then its leaves fused by RRF with the lookup hits that
    lie in the documents of its best leaves.

    Drill-down evidence sits in a few sections of one page: the walk finds the page,
    but ranks its sections by closeness to the whole question, so details answering
    one part of it fall out of the window. Lookup hits from the same documents bring
    those back; hits from other documents are left out, so the walk's choice of
    page stands (SQLite questions, same tree: drill-down recall 0.62 -> 0.69,
    full-hit 0.44 -> 0.56).
    """
    leaves = found.chunks
    docs = {c.source for c in leaves[: settings.focus_leaves]}
    inside = [c for c in lookup_hits if c.source in docs]
    weights = {"tree": 1.0, "lookup": settings.focus_lookup_weight}
    return found.header + fuse_contexts({"tree": leaves, "lookup": inside}, weights)


def assemble(
    contexts: Sequence[Context], budget_tokens: int, top_k: int, tokens: Callable[[Context], int]
) -> tuple[list[Context], list[str]]:
    """Drop repeats, then keep up to ``top_k`` contexts, in order, that fit the token
    budget (``tokens`` counts a context's); ``cut`` are those the budget left out
    before the ``top_k`` were found. Kept contexts that look like injected
    instructions are flagged."""
    kept: list[Context] = []
    cut: list[str] = []
    seen: set[tuple[str, str]] = set()
    used = 0
    for ctx in contexts:
        if len(kept) == top_k:
            break
        key = (ctx.kind, ctx.node_id)
        if key in seen:
            continue
        seen.add(key)
        cost = tokens(ctx)
        if used + cost > budget_tokens and kept:
            cut.append(ctx.node_id)
            continue
        kept.append(ctx)
        used += cost
    first_chunk = next((c for c in contexts if c.kind in MANUALS_WORDS), None)
    if first_chunk is not None and not any(c.kind in MANUALS_WORDS for c in kept):
        # never answer with derived text alone: make room for the manual's own words
        cost = tokens(first_chunk)
        while kept and (used + cost > budget_tokens or len(kept) >= top_k):
            dropped = kept.pop()
            used -= tokens(dropped)
            cut.append(dropped.node_id)
        kept.append(first_chunk)
        cut = [c for c in cut if c != first_chunk.node_id]
    # over what is finally kept, whichever way it got in
    for ctx in kept:
        if INJECTION_FLAG not in ctx.flags and context_looks_injected(ctx):
            ctx.flags.append(INJECTION_FLAG)
    return kept, cut


def relevance_scores(contexts: list[Context]) -> list[float] | None:
    """The scores to show: each passage's calibrated relevance (the probability that it
    holds the evidence, from the ranking stage), a structure's own context (overview,
    chain, report) that of the best passage, never increasing down the list; None (the
    reciprocal rank) when no context was scored by a calibrated ranking stage."""
    given = [c.extra.get("relevance") for c in contexts]
    known = [r for r in given if r is not None]
    if not known:
        return None
    best = max(known)
    out: list[float] = []
    for value in given:
        value = best if value is None else value
        out.append(min(value, out[-1]) if out else value)
    return out


def flag_stale(
    contexts: Sequence[Context], stale: Mapping[str, str], doc_of_chunk: Callable[[str], str | None]
) -> None:
    """Flag, in place, each context whose source or grounding chunks (``doc_of_chunk``:
    chunk id -> document, None when unknown) are in a ``stale`` document (doc id ->
    why), once per such document."""
    if not stale:
        return
    for ctx in contexts:
        docs = {d for c in ctx.provenance if (d := doc_of_chunk(c)) is not None}
        docs.add(ctx.source)
        for doc_id in sorted(docs & stale.keys()):
            ctx.flags.append(f"stale: {doc_id} {stale[doc_id]}")


def flag_lexical_fallback(contexts: Sequence[Context]) -> None:
    """Flag, in place, contexts retrieved without the query's vector."""
    for ctx in contexts:
        ctx.flags.append("lexical_fallback")
