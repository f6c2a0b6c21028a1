"""The one result type every retriever returns, and the query result around it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

ContextKind = Literal["chunk", "digest", "summary", "entity", "relation", "community_report"]
Route = Literal["lookup", "tree", "graph", "global"]
# the kinds of context that hold the manual's own words: a chunk, or sentences of one
MANUALS_WORDS: tuple[ContextKind, ...] = ("chunk", "digest")


class Context(BaseModel):
    """One retrieved passage, whatever structure it came from.

    ``trace`` records how it was found (retriever, ranks, path taken) so that
    ``explain()`` and notebooks can show it; ``provenance`` lists the chunk ids
    whose text grounds it (a chunk grounds itself).

    In a :class:`QueryResult`, ``score`` is the score of the final ordering (see
    :func:`final_scores`): comparable across the result's contexts whatever their kind,
    never increasing down the list. What the retriever scored it, on that retriever's
    own scale, is kept in ``extra["retriever_score"]`` (and shown by ``explain()``).
    """

    text: str
    source: str  # document id (for derived content: the main source document)
    heading_path: list[str] = Field(default_factory=list)
    kind: ContextKind = "chunk"
    score: float = 0.0
    node_id: str  # chunk id, tree node id, entity id, relation id or community id
    start: int | None = None
    end: int | None = None
    level: int | None = None  # tree level or community level
    provenance: list[str] = Field(default_factory=list)
    trace: list[str] = Field(default_factory=list)
    flags: list[str] = Field(default_factory=list)  # e.g. "possible_injection"
    extra: dict[str, Any] = Field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def final_scores(contexts: list[Context], scores: list[float] | None = None) -> None:
    """Set each context's ``score`` to the final ordering's score, in place.

    Retrievers score on their own scales (RRF values near 0.03, cosine similarities,
    BM25 sums, relation weights), which cannot be compared across the kinds of context
    one result mixes. ``scores`` is what a ranking stage gave the list, in its order
    (it must not increase down the list); without one the score is the reciprocal rank,
    1/rank, so the first context scores 1.0. Each context's own retriever score moves
    to ``extra["retriever_score"]``, which :meth:`QueryResult.explain` shows.
    """
    if scores is not None:
        if len(scores) != len(contexts):
            raise ValueError("one score per context")
        if any(later > earlier for earlier, later in zip(scores, scores[1:])):
            raise ValueError("final scores must not increase down the ranking")
    for rank, ctx in enumerate(contexts, start=1):
        raw = ctx.score
        # extra may be shared with the retriever's copy of the context: replace, never edit
        ctx.extra = {**ctx.extra, "retriever_score": raw}
        ctx.score = round(scores[rank - 1] if scores is not None else 1.0 / rank, 6)


class Highlight(BaseModel):
    """A sentence of a result's contexts likely to answer the question: the extractive
    answer. ``context`` is the 1-based number of the context it is from, ``node_id`` the
    chunk it is in, ``score`` the sentence model's probability that it holds evidence."""

    text: str
    context: int
    source: str
    node_id: str
    heading_path: list[str] = Field(default_factory=list)
    score: float = 0.0


class RoutingDecision(BaseModel):
    """Why a question went where it went."""

    route: Route
    confidence: float = 1.0
    reason: str = ""
    forced: bool = False
    fused_with: Route | None = None  # second route run and fused when not confident
    scores: dict[str, float] = Field(default_factory=dict)


class BuildMode(BaseModel):
    """How the index that answered was built: results always say so."""

    llm_model: str | None = None  # None = built without an LLM
    embedding: str | None = None  # None = lexical-only (model unavailable)
    lexical_fallback: bool = False
    # where the communities came from when not the build's own Leiden ("gds-leiden": adopted
    # from a Neo4j database, in at least one scope); None = the build's own
    communities: str | None = None

    @property
    def label(self) -> str:
        llm = f"LLM mode ({self.llm_model})" if self.llm_model else "no-llm"
        emb = self.embedding or "lexical-only"
        adopted = f", communities from {self.communities}" if self.communities else ""
        return f"{llm}, {emb}{adopted}"


class QueryResult(BaseModel):
    """What ``KnowledgeBase.query`` returns: the route, the cited contexts, the trace.

    ``id`` is the caller's name for the question (a batch line's id), None otherwise.
    """

    id: Any = None
    question: str
    route: Route
    routing: RoutingDecision
    contexts: list[Context]
    mode: BuildMode
    answer: str | None = None
    notes: list[str] = Field(default_factory=list)  # fallbacks and cuts, in plain words
    retrieved: dict[str, list[str]] = Field(default_factory=dict)  # retriever -> node ids
    budget_cut: list[str] = Field(default_factory=list)  # node ids dropped by the budget
    highlights: list[Highlight] = Field(default_factory=list)  # the extractive answer, best first

    def to_dict(self, *, explain: bool = False) -> dict[str, Any]:
        """The JSON contract, as ``arborgraph/data/result.schema.json`` describes it:
        ``id``, ``question``, ``route``, ``routing``, ``mode``, ``answer``, ``notes``,
        ``contexts``; with ``explain=True`` also ``explain``, the text of :meth:`explain`."""
        data = {
            "id": self.id,
            "question": self.question,
            "route": self.route,
            "routing": self.routing.model_dump(mode="json"),
            "mode": {**self.mode.model_dump(mode="json"), "label": self.mode.label},
            "answer": self.answer,
            "highlights": [h.model_dump(mode="json") for h in self.highlights],
            "notes": list(self.notes),
            "contexts": [c.to_dict() for c in self.contexts],
        }
        if explain:
            data["explain"] = self.explain()
        return data

    def _repr_html_(self) -> str:
        import html

        head = (
            f"<div><b>{html.escape(self.question)}</b><br>"
            f"route <b>{self.route}</b> ({'forced' if self.routing.forced else f'auto, {self.routing.confidence:.2f}'})"
            f" — {html.escape(self.routing.reason)}<br><small>index: {html.escape(self.mode.label)}</small>"
        )
        notes = "".join(f"<br><small>⚠ {html.escape(n)}</small>" for n in self.notes)
        if self.answer:
            answer = f"<p>{html.escape(self.answer)}</p>"
        elif self.highlights:
            answer = "<ul>" + "".join(
                f"<li>{html.escape(h.text)} <small>[{h.context}]</small></li>" for h in self.highlights
            ) + "</ul>"
        else:
            answer = ""
        cards = []
        for i, ctx in enumerate(self.contexts, start=1):
            where = html.escape(" > ".join(ctx.heading_path) or ctx.source)
            flags = f" <small style='color:#b00'>{html.escape(', '.join(ctx.flags))}</small>" if ctx.flags else ""
            text = html.escape(ctx.text if len(ctx.text) < 600 else ctx.text[:600] + " …")
            cards.append(
                f"<details {'open' if i <= 3 else ''}><summary>[{i}] <code>{ctx.kind}</code> {where} "
                f"<small>({html.escape(ctx.source)}, score {ctx.score:.3f})</small>{flags}</summary>"
                f"<div style='white-space:pre-wrap;margin-left:1em'>{text}</div></details>"
            )
        return head + notes + answer + "".join(cards) + "</div>"

    def explain(self) -> str:
        """A plain-text account: the route and why, what each retriever returned, what was cut."""
        lines = [
            f"question: {self.question}",
            f"route: {self.route} ({'forced' if self.routing.forced else 'auto'}, "
            f"confidence {self.routing.confidence:.2f}) — {self.routing.reason}",
        ]
        if self.routing.fused_with:
            lines.append(f"not confident: fused with the {self.routing.fused_with} route (RRF)")
        lines.append(f"index built: {self.mode.label}")
        for note in self.notes:
            lines.append(f"note: {note}")
        for h in self.highlights:
            lines.append(f"highlight [{h.context}] p={h.score:.2f}: {h.text}")
        for name, ids in self.retrieved.items():
            shown = ", ".join(ids[:8]) + (" …" if len(ids) > 8 else "")
            lines.append(f"{name}: {len(ids)} hits: {shown}")
        lines.append(f"contexts kept: {len(self.contexts)}")
        for i, ctx in enumerate(self.contexts, start=1):
            where = " > ".join(ctx.heading_path) or ctx.source
            raw = ctx.extra.get("retriever_score")
            raw_note = f" (retriever {raw:.4f})" if isinstance(raw, (int, float)) else ""
            lines.append(f"  [{i}] {ctx.kind} {ctx.node_id} score={ctx.score:.4f}{raw_note} — {where}")
            for flag in ctx.flags:
                lines.append(f"      ⚠ {flag}")
            for step in ctx.trace:
                lines.append(f"      {step}")
        if self.budget_cut:
            lines.append(f"cut by the token budget: {len(self.budget_cut)}: {', '.join(self.budget_cut[:10])}")
        return "\n".join(lines)
