"""The knowledge base a user opens and queries: one pipeline for every route."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from arborgraph.core.errors import QueryError  # noqa: F401 (re-exported)
from arborgraph import schema as S
from arborgraph.chunk_store import ChunkStore
from arborgraph.config import Config
from arborgraph.dense import DenseIndex
from arborgraph.embedding import load_embedder
from arborgraph.core.errors import EmbedderUnavailable
from arborgraph.core.protocols import Embedder
from arborgraph.core.lexical import LexicalIndex
from arborgraph.lookup import LookupHits, LookupIndex, LookupMode, lookup_search
from arborgraph.core.results import BuildMode, Context, QueryResult, Route, RoutingDecision, final_scores
from arborgraph.scoped import fuse_contexts, load_scopes, merge_by_rank, readable, tree_node_lexical_scores
from arborgraph.safety import INJECTION_FLAG, context_looks_injected
from arborgraph.schema import IndexManifest
from arborgraph.store import Generation, IndexDamaged, open_generation
from arborgraph.structures import PUBLIC, scope_principals, scope_readable

if TYPE_CHECKING:
    from arborgraph.core.protocols import ChatModel
    from arborgraph.ranking import AnyRanker

ROUTES: tuple[Route, ...] = ("lookup", "tree", "graph", "global")
DEFAULT_TOP_K = 20
DEFAULT_BUDGET_TOKENS = 2000
# structured routes fuse their chunks with this many flat hits
LOOKUP_DEPTH = 50


def question_problem(question: object) -> str | None:
    """Why ``question`` cannot be asked (empty, not text, not valid Unicode), or None.

    Checked by :meth:`KnowledgeBase.query` and, for every line before the first answer,
    by the CLI's batch mode.
    """
    if not isinstance(question, str):
        return "the question must be a string"
    if not question.strip():
        return "the question is empty"
    try:
        question.encode("utf-8")
    except UnicodeEncodeError:
        # a lone surrogate: from a JSON "\udc80" escape or undecodable bytes on the command line
        return "the question is not valid Unicode (it holds a lone surrogate or bytes that are not UTF-8)"
    return None


class KnowledgeBase:
    """An opened index. Use :func:`arborgraph.open` or :func:`arborgraph.build`.

    It reads the generation that was live when it was opened (:attr:`generation`),
    whatever builds follow: it pins that generation, so no build prunes it until
    :meth:`close`. :meth:`refresh` opens the newest one.
    """

    def __init__(
        self, generation: Generation, index_dir: Path, *, embedder: Embedder | None = None
    ) -> None:
        self.index_dir = index_dir
        self.on_disk = generation
        self.generation: str = generation.name  # "gen-000007"
        self.manifest: dict[str, Any] = generation.manifest
        try:
            self.config = Config.model_validate(self.manifest["config"])
        except (KeyError, ValueError) as exc:
            first = str(exc).splitlines()[0]
            raise IndexDamaged(
                f"{index_dir}: the index's configuration is not understood by this version "
                f"of Arborgraph ({first}); rebuild it or upgrade"
            ) from None
        self.store = ChunkStore.from_tables(
            generation.table(S.DOCUMENTS), generation.table(S.CHUNKS)
        )
        dense = (
            DenseIndex(generation.vectors(S.CHUNK_VECTORS))
            if generation.has_vectors(S.CHUNK_VECTORS)
            else None
        )
        self.lookup_index = LookupIndex(
            store=self.store,
            lexical=LexicalIndex.load(generation.subdir("bm25/chunks")),
            dense=dense,
        )
        mode = self.manifest["mode"]
        self.mode = BuildMode(
            llm_model=mode.get("llm_model"),
            embedding=mode.get("embedding"),
            lexical_fallback=bool(mode.get("lexical_fallback")),
        )
        self.routes: list[str] = list(self.manifest.get("routes", ["lookup"]))
        self.scopes = load_scopes(generation)
        from arborgraph.neo4j_backend import GraphServer, graph_server

        # where the graph route expands: None in memory, else the server the index was
        # exported to (connects on first use); the caller may set it
        self.graph_backend: GraphServer | None = graph_server(self.config.graph_backend)
        self._given_embedder = embedder
        self._embedder: Embedder | None = None
        self._embedder_error: str | None = None
        self._chat: Any = None
        from arborgraph.ranking import load_model

        # the learned ranking stage (None: the routes' own orders); settable, e.g. by
        # benchmarks/train_ranker.py to score a fold's model
        self.ranker: AnyRanker | None = (
            load_model(self.config.retrieval.ranker_model) if self.config.retrieval.ranker else None
        )

    @classmethod
    def open(cls, index_dir: str | Path, *, embedder: Embedder | None = None) -> "KnowledgeBase":
        """Open the index at ``index_dir``.

        ``embedder`` embeds queries instead of the model named in the index's config (e.g.
        one the caller plugged into ``build_index(embedder_factory=...)``); its ``name``
        must equal the one the index was built with, else queries fall back to lexical
        retrieval and say why, as with any other model mismatch.
        """
        index_dir = Path(index_dir)
        generation = open_generation(index_dir, pin=True, shape=IndexManifest)
        try:
            return cls(generation, index_dir, embedder=embedder)
        except BaseException:
            generation.close()
            raise

    def refresh(self) -> "KnowledgeBase":
        """A new knowledge base on the newest generation of the same index (the query
        embedder this one loaded is carried over when the new generation was embedded
        with the same model). This one keeps working, on its own generation, until it
        is closed."""
        newer = KnowledgeBase.open(self.index_dir, embedder=self._given_embedder)
        if self._embedder is not None and self._embedder.name == newer.mode.embedding:
            newer._embedder = self._embedder
        return newer

    def close(self) -> None:
        """Release the hold on :attr:`generation`: a later build may then prune it, after
        which structures not loaded yet cannot be. Closing twice is harmless."""
        self.on_disk.close()

    @property
    def closed(self) -> bool:
        return self.on_disk.pin is None or not self.on_disk.pin.held

    def __enter__(self) -> "KnowledgeBase":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- shared machinery -------------------------------------------------------------

    @cached_property
    def count_tokens(self) -> Callable[[str], int]:
        from ingest import load_token_counter

        return load_token_counter()

    def embed_query(self, text: str) -> np.ndarray | None:
        """The query vector, or None when the index (or this machine) has no model."""
        if self.mode.embedding is None or self._embedder_error is not None:
            return None
        if self._embedder is None:
            try:
                self._embedder = self._load_query_embedder()
            except (EmbedderUnavailable, ImportError, ValueError) as exc:
                self._embedder_error = str(exc)
                return None
            if self._embedder.name != self.mode.embedding:
                self._embedder_error = (
                    f"index was embedded with {self.mode.embedding}, this machine loads "
                    f"{self._embedder.name}"
                )
                self._embedder = None
                return None
        return self._embedder.encode([text])[0]

    def _load_query_embedder(self) -> Embedder:
        """The query embedder: the one given to open, else the index's local or OpenAI-compatible one."""
        if self._given_embedder is not None:
            return self._given_embedder
        if self.mode.embedding and self.mode.embedding.startswith("openai/"):
            from arborgraph.llm import LLMCache, LLMUsage
            from arborgraph.llm.provider import OpenAIEmbedder

            cache = LLMCache(self.index_dir / "cache" / "llm.sqlite")
            return OpenAIEmbedder(self.config.llm, cache, LLMUsage())
        return load_embedder(self.config.embedding)

    def _fallback_note(self) -> str | None:
        if self.mode.embedding is None:
            return "lexical fallback: the index was built without the embedding model"
        if self._embedder_error is not None:
            return f"lexical fallback: {self._embedder_error}"
        return None

    def chunk_mask(
        self, principal: str | None, as_of: dt.date | None, include_stale: bool = False
    ) -> np.ndarray:
        return self.store.chunk_mask(self.store.allowed_docs(principal, as_of, include_stale))

    # -- the query pipeline -----------------------------------------------------------

    def query(
        self,
        question: str,
        route: Literal["auto", "lookup", "tree", "graph", "global"] = "auto",
        *,
        top_k: int = DEFAULT_TOP_K,
        budget_tokens: int = DEFAULT_BUDGET_TOKENS,
        principal: str | None = None,
        as_of: dt.date | None | Literal["today"] = "today",
        include_stale: bool = False,
        answer: bool = False,
        llm: "ChatModel | None" = None,
        llm_router: bool | None = None,
        candidates: int | None = None,
    ) -> QueryResult:
        """Answer ``question`` with cited contexts from the best route (or the forced one).

        At most ``top_k`` contexts are returned, on every route, in the order of the
        final ranking; each context's ``score`` is that ordering's score (1.0 for the
        first, never increasing down the list; the retriever's own score is in
        ``extra["retriever_score"]``). ``candidates`` is how many contexts a tree, graph
        or global route hands to the final assembly (default ``3 * top_k``: structure
        overviews and inserted sections compete with the flat hits for the ``top_k``
        places and the token budget); the lookup route hands ``top_k``.

        ``principal`` restricts results to documents it may read (None: public only).
        ``as_of`` keeps documents current on that date (default today, None: no date
        check); superseded versions are left out too. ``include_stale=True`` lets stale
        content through, each such context flagged with why it is stale.
        ``answer=True`` asks the configured LLM (or ``llm``) for an answer citing the
        contexts by number; without it ``answer`` stays None. ``llm_router=True`` (default:
        the ``router.llm`` setting) lets that LLM pick the route of an ``auto`` question.
        """
        if (problem := question_problem(question)) is not None:
            raise QueryError(problem)
        if route != "auto" and route not in ROUTES:
            raise QueryError(f"unknown route '{route}' (choose auto, {', '.join(ROUTES)})")
        if route != "auto" and route not in self.routes:
            raise QueryError(
                f"this index has no '{route}' route (built: {', '.join(self.routes)}); "
                "rebuild it with that structure enabled"
            )
        if top_k < 1 or budget_tokens < 1 or (candidates is not None and candidates < 1):
            raise QueryError("top_k, budget_tokens and candidates must be positive")
        pool = 3 * top_k if candidates is None else candidates
        when = dt.date.today() if as_of == "today" else as_of
        mask = self.chunk_mask(principal, when, include_stale)
        query_vector = self.embed_query(question)
        # every route starts from the flat ranking (structures fuse with it, the router
        # reads its spread): rank once
        hits = lookup_search(
            self.lookup_index, question, query_vector, mask=mask,
            top_k=max(top_k, LOOKUP_DEPTH), config=self.config.retrieval,
        )
        if route == "auto":
            use_llm = self.config.router.llm if llm_router is None else llm_router
            decision = self.route_question(
                question, hits.contexts, llm=(llm or self.chat_model()) if use_llm else None
            )
        else:
            decision = RoutingDecision(route=route, forced=True, reason="route forced by caller")
        notes: list[str] = []
        if (note := self._fallback_note()) is not None:
            notes.append(note)
        contexts, retrieved = self._retrieve(
            decision.route, question, query_vector, hits,
            mask=mask, top_k=top_k, pool=pool, notes=notes, principal=principal,
        )
        second = self._second_route(decision)
        if second is not None:
            other, other_retrieved = self._retrieve(
                second, question, query_vector, hits,
                mask=mask, top_k=top_k, pool=pool, notes=notes, principal=principal,
            )
            decision = decision.model_copy(update={"fused_with": second})
            notes.append(
                f"router not confident ({decision.confidence:.2f} < "
                f"{self.config.router.min_confidence:.2f}): fused {decision.route} with {second} by RRF"
            )
            contexts = merge_by_rank([contexts, other])
            retrieved.update({f"{second}:{k}": v for k, v in other_retrieved.items()})
        mode = self.mode
        if query_vector is None:
            for ctx in contexts:
                ctx.flags.append("lexical_fallback")
            # also when the index has vectors but the model failed to load for this query
            mode = mode.model_copy(update={"lexical_fallback": True})
        if include_stale:
            self._flag_stale(contexts, when)
        kept, cut = self._assemble(contexts, budget_tokens, top_k)
        final_scores(kept)
        text = None
        if answer:
            from arborgraph.answer import generate_answer

            text = generate_answer(llm or self.chat_model(), question, kept)
        return QueryResult(
            question=question,
            route=decision.route,
            routing=decision,
            contexts=kept,
            mode=mode,
            answer=text,
            notes=notes,
            retrieved=retrieved,
            budget_cut=cut,
        )

    def chat_model(self, model: str | None = None) -> "ChatModel":
        """The OpenAI-compatible chat model from the config (``model`` overrides its name),
        cached in the index's LLM cache; raises QueryError when none is configured."""
        from arborgraph.llm import LLMCache, LLMUsage

        name = model or self.config.llm.model
        if not name:
            raise QueryError(
                "--answer and --llm-router need an LLM: pass --llm-model NAME (or set llm.model / ARBORGRAPH_LLM__MODEL)"
            )
        try:
            from arborgraph.llm.provider import OpenAIChatModel
        except ImportError as exc:
            raise QueryError(str(exc)) from None
        if self._chat is None or self._chat.model != name:
            import os

            from arborgraph.llm.config import resolve_endpoint

            llm = self.config.llm.model_copy(update={"model": name})
            try:  # before the cache is opened: a missing key is the user's to fix
                resolve_endpoint(llm, os.environ)
            except ValueError as exc:
                raise QueryError(str(exc)) from None
            cache = LLMCache(self.index_dir / "cache" / "llm.sqlite")
            self._chat = OpenAIChatModel(llm, cache, LLMUsage())
        return self._chat

    def _second_route(self, decision: RoutingDecision) -> Route | None:
        """The runner-up route when the router is not confident, else None."""
        if decision.forced or decision.confidence >= self.config.router.min_confidence:
            return None
        ranked = [r for r in decision.scores if r != decision.route and r in self.routes]
        return ranked[0] if ranked else None  # type: ignore[return-value]

    def route_question(
        self, question: str, hits: list[Context] | None = None, llm: "ChatModel | None" = None
    ) -> RoutingDecision:
        """Pick a route for ``question`` among the routes this index has built.

        ``hits`` are its flat lookup hits when the caller has them (when the router
        model weighs their spread and they are not given, public ones are looked up).
        With ``llm`` the chat model decides; the classifier still orders the other
        routes (the runner-up a low-confidence decision is fused with), and answers
        alone if the LLM call fails (the reason says so).
        """
        from arborgraph.router import default_model, route_question

        if hits is None and default_model().spread_stage is not None:
            hits = self.lookup(question, top_k=20)
        decision = route_question(
            question,
            available=self.routes,
            hits=None if hits is None else [(c.source, c.heading_path) for c in hits[:20]],
        )
        if llm is None:
            return decision
        from arborgraph.core.errors import LLMError
        from arborgraph.router_llm import llm_route

        try:
            chosen = llm_route(llm, question, self.routes)
        except LLMError as exc:
            return decision.model_copy(update={"reason": f"{decision.reason} (LLM router failed: {exc})"})
        rest = {r: p for r, p in decision.scores.items() if r != chosen.route}
        mass = sum(rest.values()) or 1.0
        scores = {chosen.route: chosen.confidence} | {
            r: round((1 - chosen.confidence) * p / mass, 4) for r, p in rest.items()
        }
        return chosen.model_copy(update={"scores": scores})

    def _retrieve(
        self,
        route: Route,
        question: str,
        query_vector: np.ndarray | None,
        hits: LookupHits,
        *,
        mask: np.ndarray,
        top_k: int,
        pool: int,
        notes: list[str],
        principal: str | None,
    ) -> tuple[list[Context], dict[str, list[str]]]:
        """The route's candidates, best first: ``top_k`` flat hits for lookup, ``pool``
        contexts for the structured routes."""
        scopes = readable(self.scopes, principal)
        if route == "lookup":
            if self.ranker is not None:
                ranked = self._rerank(question, query_vector, hits, mask, scopes, route, [])
                return ranked[:top_k], hits.rankings | {"ranker": [c.node_id for c in ranked]}
            return hits.contexts[:top_k], hits.rankings
        retrieved = {f"lookup/{k}": v for k, v in hits.rankings.items()}
        contexts, why_empty = self._structure(route, question, query_vector, hits, mask, scopes, pool)
        if not contexts:
            notes.append(f"{route} route found nothing ({why_empty}); fell back to lookup")
            return hits.contexts[:top_k], hits.rankings
        retrieved[route] = [f"{c.kind}:{c.node_id}" for c in contexts]
        if self.ranker is not None:
            # the structure keeps its own context first (overview, chain, report); the
            # ranker orders the chunks it reached together with lookup's candidates
            header = [c for c in contexts if c.kind != "chunk"][: self.config.retrieval.structure_header]
            chunks = [c for c in contexts if c.kind == "chunk"]
            ranked = self._rerank(question, query_vector, hits, mask, scopes, route, chunks)
            retrieved["ranker"] = [c.node_id for c in ranked]
            return (header + ranked)[:pool], retrieved
        return self._compose(route, contexts, hits.contexts)[:pool], retrieved

    def _structure(
        self, route: Route, question: str, query_vector: np.ndarray | None, hits: LookupHits,
        mask: np.ndarray, scopes: list[Any], pool: int,
    ) -> tuple[list[Context], str]:
        """What the tree, graph or global route itself returns, and why it is empty if so."""
        if route == "tree":
            return self._tree(question, query_vector, mask, scopes, max_leaves=max(100, pool)), "the walk reached no readable node"
        return self._graph(route, question, query_vector, mask, scopes, hits.contexts)

    def ranking_candidates(
        self, question: str, route: Route, *, principal: str | None = None, top_k: int = DEFAULT_TOP_K,
    ) -> tuple[list[str], np.ndarray]:
        """The chunk ids the ranking stage orders for ``question`` on ``route``, and their
        feature matrix (columns: :data:`arborgraph.ranking.FEATURES`), computed exactly
        as :meth:`query` computes them; for training and inspecting the ranker."""
        from arborgraph.rerank import RankingQuery, candidates

        mask = self.chunk_mask(principal, dt.date.today())
        query_vector = self.embed_query(question)
        hits = lookup_search(
            self.lookup_index, question, query_vector, mask=mask,
            top_k=max(top_k, LOOKUP_DEPTH), config=self.config.retrieval,
        )
        scopes = readable(self.scopes, principal)
        chunks: list[Context] = []
        if route != "lookup":
            found, _ = self._structure(route, question, query_vector, hits, mask, scopes, 3 * top_k)
            chunks = [c for c in found if c.kind == "chunk"]
        rows, matrix = candidates(self, RankingQuery(question, query_vector, hits, mask, scopes, route, chunks))
        return [self.store.chunk_ids[r] for r in rows], matrix

    def _rerank(
        self, question: str, query_vector: np.ndarray | None, hits: LookupHits, mask: np.ndarray,
        scopes: list[Any], route: Route, chunks: list[Context],
    ) -> list[Context]:
        from arborgraph.rerank import RankingQuery, rerank

        assert self.ranker is not None
        return rerank(self, self.ranker, RankingQuery(question, query_vector, hits, mask, scopes, route, chunks))

    def _compose(self, route: Route, found: list[Context], lookup_hits: list[Context]) -> list[Context]:
        """The structure's own context first (overview, relation chain, report), then
        chunks: the lookup ranking fused with the chunks the structure reached.

        Measured on the SQLite question set (no LLM), the structures' own chunk rankings
        lose evidence the flat ranking finds, even fused at weight 0.25; so by default
        (``structure_weight=0``) the flat ranking leads and chunks only the structure
        reached follow it.
        """
        cfg = self.config.retrieval
        if route == "tree" and self.config.tree_search.focus_leaves > 0:
            return self._focus_tree(found, lookup_hits)
        if route in ("graph", "global") and cfg.compose.get(route, "flat-first") == "flat-first":
            return self._compose_graph(found, lookup_hits)
        if cfg.compose.get(route, "flat-first") == "structure":
            return found
        header = [c for c in found if c.kind != "chunk"][: cfg.structure_header]
        chunks = [c for c in found if c.kind == "chunk"]
        body = fuse_contexts(
            {"lookup": lookup_hits, route: chunks}, {"lookup": 1.0, route: cfg.structure_weight}
        )
        return header + body

    def _compose_graph(self, found: list[Context], lookup_hits: list[Context]) -> list[Context]:
        """The relation chain (or community report), then the search's chunks in its
        own order, then the lookup hits it did not keep.

        Graph and global search were given the lookup hits and already lead with them
        (see :func:`graphrag.search.graph_search` and
        :func:`graphrag.global_search.global_search`); they only insert the
        second-hop sections or page leads they are confident of, in place of the
        weakest flat chunks of the window. Fusing with the lookup ranking again would
        undo exactly those insertions.
        """
        header = [c for c in found if c.kind != "chunk"][: self.config.retrieval.structure_header]
        chunks = [c for c in found if c.kind == "chunk"]
        seen = {c.node_id for c in chunks}
        return header + chunks + [c for c in lookup_hits if c.node_id not in seen]

    def _focus_tree(self, found: list[Context], lookup_hits: list[Context]) -> list[Context]:
        """The tree's overview, then its leaves fused by RRF with the lookup hits that
        lie in the documents of its best leaves.

        Drill-down evidence sits in a few sections of one page: the walk finds the page,
        but ranks its sections by closeness to the whole question, so details answering
        one part of it fall out of the window. Lookup hits from the same documents bring
        those back; hits from other documents are left out, so the walk's choice of
        page stands (SQLite questions, same tree: drill-down recall 0.62 -> 0.69,
        full-hit 0.44 -> 0.56).
        """
        settings = self.config.tree_search
        header = [c for c in found if c.kind != "chunk"]
        leaves = [c for c in found if c.kind == "chunk"]
        docs = {c.source for c in leaves[: settings.focus_leaves]}
        inside = [c for c in lookup_hits if c.source in docs]
        weights = {"tree": 1.0, "lookup": settings.focus_lookup_weight}
        return header + fuse_contexts({"tree": leaves, "lookup": inside}, weights)

    def _visible(self, mask: np.ndarray) -> Callable[[str], bool]:
        row_of = self.store.row_of
        return lambda chunk_id: chunk_id in row_of and bool(mask[row_of[chunk_id]])

    def _tree(
        self,
        question: str,
        query_vector: np.ndarray | None,
        mask: np.ndarray,
        scopes: list[Any],
        *,
        max_leaves: int | None = None,
    ) -> list[Context]:
        from raptor import collapsed_search, traverse

        visible = self._visible(mask)
        chunk_bm25 = self.lookup_index.lexical.scores(question)
        budget = 10 * DEFAULT_BUDGET_TOKENS  # the query's own budget is applied later
        lists = []
        for scope in scopes:
            lexical = tree_node_lexical_scores(scope, question, chunk_bm25, self.store.row_of)
            if query_vector is not None:
                beam = {"beam": self.config.tree_search.beam} if self.config.tree_search.beam else {}
                found = traverse(
                    scope.tree, query_vector, scope.tree.vectors, lexical_scores=lexical,
                    budget_tokens=budget, count_tokens=self.count_tokens, max_leaves=max_leaves, **beam,
                )
            else:
                found = collapsed_search(scope.tree, lexical, budget, self.count_tokens)
            # stale (or otherwise hidden) sources: derived nodes drawing on them go too
            lists.append([c for c in found if all(visible(cid) for cid in c.provenance)])
        return merge_by_rank(lists)

    def _chunk_ref(self, mask: np.ndarray) -> Callable[[str], Any]:
        from graphrag import ChunkRef

        store = self.store
        visible = self._visible(mask)

        def fetch(chunk_id: str) -> Any:
            if not visible(chunk_id):
                return None
            row = store.row_of[chunk_id]
            return ChunkRef(
                text=store.texts[row], doc_id=store.doc_ids[row],
                heading_path=list(store.heading_paths[row]), start=store.starts[row], end=store.ends[row],
            )

        return fetch

    def _chunk_vectors(self, chunk_ids: Any) -> np.ndarray:
        dense = self.lookup_index.dense
        assert dense is not None
        rows = [self.store.row_of[c] for c in chunk_ids]
        return dense.vectors[rows]

    def _graph(
        self,
        route: Route,
        question: str,
        query_vector: np.ndarray | None,
        mask: np.ndarray,
        scopes: list[Any],
        lookup_hits: list[Context],
    ) -> tuple[list[Context], str]:
        from graphrag import global_search, graph_search

        fetch = self._chunk_ref(mask)
        candidates = {c.node_id: c.score for c in lookup_hits}
        dense = self.lookup_index.dense is not None and query_vector is not None
        chunk_vectors = self._chunk_vectors if dense else None
        row_of = self.store.row_of
        bm25_of_rows: list[np.ndarray] = []

        def chunk_lexical(chunk_ids: Any) -> np.ndarray:
            # the index's own BM25 (idf over the whole collection), scored once per question
            if not bm25_of_rows:
                bm25_of_rows.append(self.lookup_index.lexical.scores(question))
            return bm25_of_rows[0][[row_of[c] for c in chunk_ids]]

        lists, reasons = [], []
        for scope in scopes:
            search = graph_search if route == "graph" else global_search
            server = self.graph_backend if route == "graph" else None
            found = search(
                scope.graph, question, chunk_text=fetch, embedder=self._embedder,
                chunk_vectors=chunk_vectors, candidate_chunks=candidates,
                query_vector=query_vector if dense else None, chunk_lexical=chunk_lexical,
                **({"backend": server.backend(scope.scope, scope.graph)} if server else {}),
            )
            if found.reason:
                reasons.append(found.reason)
            lists.append(list(found))
        return merge_by_rank(lists), "; ".join(reasons) or "no readable graph"

    def _flag_stale(self, contexts: list[Context], when: dt.date | None) -> None:
        stale = self.store.stale_docs(when)
        if not stale:
            return
        for ctx in contexts:
            docs = {self.store.doc_ids[self.store.row_of[c]] for c in ctx.provenance if c in self.store.row_of}
            docs.add(ctx.source)
            for doc_id in sorted(docs & stale.keys()):
                ctx.flags.append(f"stale: {doc_id} {stale[doc_id]}")

    def lookup(
        self,
        question: str,
        *,
        mode: LookupMode = "hybrid",
        top_k: int = DEFAULT_TOP_K,
        principal: str | None = None,
        as_of: dt.date | None | Literal["today"] = "today",
    ) -> list[Context]:
        """Flat retrieval only (BM25, dense or hybrid): the baselines the eval compares to."""
        when = dt.date.today() if as_of == "today" else as_of
        vector = None if mode == "bm25" else self.embed_query(question)
        hits = lookup_search(
            self.lookup_index,
            question,
            vector,
            mask=self.chunk_mask(principal, when),
            top_k=top_k,
            config=self.config.retrieval,
            mode=mode,
        )
        return hits.contexts

    def _tokens(self, ctx: Context) -> int:
        """Tokens of a context; a whole chunk's count was stored when it was indexed
        (tokenising every candidate again was most of a query's time)."""
        row = self.store.row_of.get(ctx.node_id) if ctx.kind == "chunk" else None
        if row is not None and ctx.text == self.store.texts[row]:
            return self.store.n_tokens[row]
        return self.count_tokens(ctx.text)

    def _assemble(
        self, contexts: list[Context], budget_tokens: int, top_k: int
    ) -> tuple[list[Context], list[str]]:
        """Drop repeats, then keep up to ``top_k`` contexts, in order, that fit the token
        budget (``cut``: those the budget left out before the ``top_k`` were found)."""
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
            cost = self._tokens(ctx)
            if used + cost > budget_tokens and kept:
                cut.append(ctx.node_id)
                continue
            kept.append(ctx)
            used += cost
        first_chunk = next((c for c in contexts if c.kind == "chunk"), None)
        if first_chunk is not None and not any(c.kind == "chunk" for c in kept):
            # never answer with derived text alone: make room for the manual's own words
            cost = self._tokens(first_chunk)
            while kept and (used + cost > budget_tokens or len(kept) >= top_k):
                dropped = kept.pop()
                used -= self._tokens(dropped)
                cut.append(dropped.node_id)
            kept.append(first_chunk)
            cut = [c for c in cut if c != first_chunk.node_id]
        # over what is finally kept, whichever way it got in
        for ctx in kept:
            if INJECTION_FLAG not in ctx.flags and context_looks_injected(ctx):
                ctx.flags.append(INJECTION_FLAG)
        return kept, cut

    # -- exploration ------------------------------------------------------------------

    def readable_scopes(self, principal: str | None = None) -> list[str]:
        """The access scopes ``principal`` may read: 'public' and 'acl:a,b' keys, each
        with its own tree and graph; the most specific (fewest principals) first."""
        return [s.scope for s in self._scopes_for(principal)]

    def _scopes_for(self, principal: str | None) -> list[Any]:
        return sorted(
            readable(self.scopes, principal),
            key=lambda s: (s.scope == PUBLIC, len(scope_principals(s.scope)), s.scope),
        )

    def _pick_scope(self, principal: str | None, scope: str | None, what: str) -> Any:
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
        if "tree" not in self.routes:
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
        (default today; None: no date check), as in :meth:`query`."""
        if "graph" not in self.routes:
            raise QueryError("this index has no graph (built with --no-graph)")
        chosen = self._pick_scope(principal, scope, "graph")
        from graphrag import GraphView

        when = dt.date.today() if as_of == "today" else as_of
        return GraphView(chosen.graph, chunk_text=self._chunk_ref(self.chunk_mask(principal, when)))

    @cached_property
    def tree(self) -> Any:
        """The public tree: levels, nodes, outline, plots (see :class:`raptor.TreeView`)."""
        return self.tree_view()

    @cached_property
    def graph(self) -> Any:
        """The public graph: entities, communities, paths (see :class:`graphrag.GraphView`)."""
        return self.graph_view()

    def _repr_html_(self) -> str:
        import html

        info = self.info()
        counts = ", ".join(f"{k}: {v}" for k, v in info["counts"].items())
        stages = self.manifest.get("report", {}).get("stages", {})
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
            for k, v in [
                ("index", info["index_dir"]),
                ("built", f"{info['built_at']} ({info['generation']})"),
                ("mode", info["mode"]["label"]),
                ("routes", ", ".join(info["routes"])),
                ("counts", counts),
                *[(name, ", ".join(f"{a}={b}" for a, b in st.items() if not isinstance(b, dict))) for name, st in stages.items()],
                ("size", f"{info['bytes_total'] / 2**20:.1f} MiB"),
            ]
        )
        return f"<div><b>Arborgraph knowledge base</b><table>{rows}</table></div>"

    # -- inspection -------------------------------------------------------------------

    def info(self, principal: str | None = None) -> dict[str, Any]:
        """What the index holds: the manifest (config, per-document content hashes with
        format and title, the build's skipped files and warnings, access scopes), counts
        and on-disk sizes.

        ``documents`` and ``scopes`` list only what ``principal`` may read (None: public
        documents only), as queries do: a restricted document's id and title are shown
        to no one else, nor are build warnings that name it. Counts and sizes are the
        whole index's.
        """
        files = self.manifest.get("files", {})
        report = self.manifest.get("report", {})
        readable = self.store.readable_docs(principal)
        hidden = [d for d in self.store.docs if d not in readable]
        return {
            "index_dir": str(self.index_dir),
            "generation": self.manifest.get("generation"),
            "schema_version": self.manifest.get("schema_version"),
            "arborgraph_version": self.manifest.get("arborgraph_version"),
            "built_at": self.manifest.get("built_at"),
            "mode": {**self.mode.model_dump(), "label": self.mode.label},
            "routes": self.routes,
            "counts": self.manifest.get("counts", {}),
            "timings_s": self.manifest.get("timings_s", {}),
            "bytes_total": sum(int(f["bytes"]) for f in files.values()),
            "tables": {
                name: {"rows": info.get("rows"), "bytes": info["bytes"]}
                for name, info in sorted(files.items())
                if "rows" in info
            },
            **{k: v for k, v in self.manifest.items() if k.startswith("llm")},
            "config": self.manifest.get("config", {}),
            "documents": self._document_info(readable),
            "skipped": report.get("skipped", []),
            # a warning naming a document the caller may not read is left out with it
            "warnings": [w for w in report.get("warnings", []) if not any(d in str(w) for d in hidden)],
            "scopes": [
                s for s in self.manifest.get("scopes", [])
                if isinstance(s, dict) and scope_readable(str(s.get("scope")), principal)
            ],
        }

    def _document_info(self, readable: set[str]) -> dict[str, dict[str, Any]]:
        """doc id -> content hash, format and title (the hash from the manifest, the
        rest from the documents table), for the ``readable`` documents only."""
        hashes: dict[str, str] = self.manifest.get("documents", {})
        rows = self.on_disk.table(S.DOCUMENTS, columns=[S.DOC_ID, S.DOC_FORMAT, S.DOC_TITLE]).to_pylist()
        described = {r[S.DOC_ID]: {"format": r[S.DOC_FORMAT], "title": r[S.DOC_TITLE]} for r in rows}
        return {
            doc_id: {"content_hash": hashes.get(doc_id), **described.get(doc_id, {})}
            for doc_id in sorted((set(hashes) | set(described)) & readable)
        }
