"""The query engine: a question in, cited contexts out, on the route that suits it.

A :class:`QueryEngine` answers over one opened :class:`~arborgraph.index.opened.Index`
with one :class:`~arborgraph.query.settings.QuerySettings`. :meth:`QueryEngine.request`
makes a question one :class:`~arborgraph.query.request.QueryRequest` and
:meth:`QueryEngine.run` answers it, in the steps ARCHITECTURE.md's "A query" lists:
access, embedding and scores, flat hits, route, retriever, ranking or composition,
fusion, digest, budget, final scores and the answer.

The engine owns what it opens for queries (the query embedder, the chat model, the
graph server's connections) and closes it in :meth:`close`; :meth:`warm` loads what
every route needs, so that no caller's first question pays for it.
"""

from __future__ import annotations

import datetime as dt
import functools
import threading
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from arborgraph.config import Config
from arborgraph.core.cancel import checkpoint
from arborgraph.core.math_threads import on_one_math_thread
from arborgraph.core.errors import EmbedderMismatch, EmbedderUnavailable, QueryError
from arborgraph.core.protocols import Embedder
from arborgraph.core.questions import question_problem
from arborgraph.core.results import Context, QueryResult, Route, RoutingDecision, final_scores
from arborgraph.core.retrieval import Retrieval, RetrievalQuery, Retriever
from arborgraph.index.access import Access, AccessCache
from arborgraph.index.opened import Index
from arborgraph.query.compose import assemble, compose, compose_both, flag_lexical_fallback, flag_stale, relevance_scores
from arborgraph.query.fusion import fuse_routes, second_route
from arborgraph.query.lookup import LookupMode
from arborgraph.query.scores import cosines_of, score_question
from arborgraph.query.retrievers import GlobalRetriever, GraphRetriever, GraphServers, LookupRetriever, TreeRetriever, keep_page_leads, stored_tokens
from arborgraph.query.settings import QuerySettings
from arborgraph.query.request import AsOf, QueryRequest, RouteChoice, day_of

if TYPE_CHECKING:
    from arborgraph.config import GraphBackendConfig
    from arborgraph.core.protocols import ChatModel
    from arborgraph.llm.config import LLMConfig
    from arborgraph.query.ranking import AnyRanker
    from arborgraph.query.rerank import RankingIndex

ROUTES: tuple[Route, ...] = ("lookup", "tree", "graph", "global")
# structured routes fuse their chunks with this many flat hits
LOOKUP_DEPTH = 50
# callers' access kept: one per (principal, date, include_stale) seen lately
ACCESS_KEPT = 64
# token counts of texts kept (tree summaries, reports): a few MB at most
TOKEN_COUNTS_KEPT = 50_000


class _Default:
    """The ranker the settings name (``retrieval.ranker`` / ``ranker_model``)."""


FROM_SETTINGS: Any = _Default()


class QueryEngine:
    """Answers questions over ``index`` with ``settings``; see the module docstring.

    ``config`` is the config the index was built with (its embedding model is the one
    questions must be embedded with). ``embedder`` replaces the query embedder (its
    ``name`` must equal the index's, else queries are refused with
    :class:`EmbedderMismatch`: rebuilding the index embeds it again). ``ranker`` replaces the settings' ranking model (None: no ranking stage).
    ``graph_servers`` is where the graph route expands when not in memory; the engine
    closes it in :meth:`close`. ``open_graph_servers`` opens the graph server another
    question's settings name (``graph_backend``), kept until :meth:`close`.
    """

    def __init__(
        self,
        index: Index,
        config: Config,
        settings: QuerySettings,
        *,
        embedder: Embedder | None = None,
        ranker: "AnyRanker | None" = FROM_SETTINGS,
        graph_servers: GraphServers | None = None,
        open_graph_servers: "Callable[[GraphBackendConfig], GraphServers | None] | None" = None,
    ) -> None:
        self.index = index
        self.config = config
        self.settings = settings
        self.graph_servers = graph_servers
        self._open_graph_servers = open_graph_servers
        self._given_embedder = embedder
        self._embedder: Embedder | None = None
        self._embedder_error: str | None = None
        self._embedder_lock = threading.Lock()
        self._chat: Any = None
        self._chat_key: str | None = None  # the LLM settings self._chat was opened with
        self._chat_lock = threading.Lock()
        self._access = AccessCache(index.store, index.scopes, ACCESS_KEPT)
        # graph servers a question's own settings name (the engine's are graph_servers)
        self._other_servers: dict[str, GraphServers | None] = {}
        self._servers_lock = threading.Lock()
        self._ranker_given = ranker is not FROM_SETTINGS
        if ranker is FROM_SETTINGS:
            from arborgraph.query.ranking import load_model

            retrieval = settings.retrieval
            ranker = load_model(retrieval.ranker_model) if retrieval.ranker else None
        self.ranker: AnyRanker | None = ranker

    # -- resources ----------------------------------------------------------------

    def warm(self) -> None:
        """Load now what questions would otherwise load on first use: the query
        embedder, every scope's tree and graph and their search indexes and arrays, the
        ranking stage's page layout and graph rows, the router's model and the token
        counter."""
        from arborgraph.query.router import default_model

        self.index.warm()
        embedding = self.index.mode.embedding
        if embedding is not None and self._embedder is None and self._embedder_error is None:
            with self._embedder_lock:
                if self._embedder is None and self._embedder_error is None:
                    self._load_embedder(embedding)
        default_model()
        count = self.count_tokens
        graphs = bool({"graph", "global"} & set(self.index.routes))
        pooled_walk = self.index.dense is not None and self.index.dense.approximate
        if "tree" in self.index.routes:
            leaf_tokens = stored_tokens(self.index.store, count)
            for scope in self.index.scopes:
                scope.tree.arrays()  # the walk's arrays
                scope.leaf_tokens(leaf_tokens)
                if pooled_walk:
                    scope.leaf_sample  # noqa: B018 - the pooled walk's rank sample, read once
                for node in scope.tree.summaries()[:TOKEN_COUNTS_KEPT]:
                    count(node.text)  # every walk's budget counts the summaries it passes
        if graphs:
            from graphrag import lexicon
            from graphrag.search_global import first_chunks
            from graphrag.search_index import mention_index, report_index

            lexicon.load()  # relation chains are phrased with it

            for scope in self.index.scopes:
                kg = scope.graph
                kg.adjacency, kg.chunk_entities, kg.name_index, kg.word_keys, kg.membership  # noqa: B018
                mention_index(kg)
                report_index(kg)
                keep_page_leads(self.index, first_chunks(kg))
        if self.ranker is not None:
            ranking = self._ranking_index
            ranking.layout()
            for scope in self.index.scopes:
                if "tree" in self.index.routes:
                    ranking.parent_rows(scope)
                if graphs:
                    ranking.graph_rows(scope)

    def close(self) -> None:
        """Close the graph server's connections (the index is its owner's to close)."""
        if self.graph_servers is not None:
            self.graph_servers.close()
        with self._servers_lock:
            others, self._other_servers = list(self._other_servers.values()), {}
        for servers in others:
            if servers is not None:
                servers.close()

    @cached_property
    def count_tokens(self) -> Callable[[str], int]:
        """The embedding model's token count of a text; counts of texts seen before (the
        trees' summaries, asked about by every walk) are kept."""
        from ingest import load_token_counter

        return functools.lru_cache(maxsize=TOKEN_COUNTS_KEPT)(load_token_counter())

    # -- the question's vector ------------------------------------------------------

    def embed_query(self, text: str) -> np.ndarray | None:
        """The query vector, or None when the index (or this machine) has no model.

        Raises :class:`EmbedderMismatch` when the model that loads is not the one the
        index was embedded with: its vectors would not be comparable with the index's.
        """
        embedding = self.index.mode.embedding
        if embedding is None or self._embedder_error is not None:
            return None
        if self._embedder is None:
            with self._embedder_lock:
                if self._embedder is None and self._embedder_error is None:
                    self._load_embedder(embedding)
            if self._embedder is None:
                return None
        if self._embedder.name != embedding:
            index_dir = self.index.index_dir
            raise EmbedderMismatch(
                f"{index_dir}: the index was embedded with {embedding}, but this Arborgraph embeds "
                f"questions with {self._embedder.name}; rebuild the index "
                f"(arborgraph build DOCUMENTS --index {index_dir}) to embed it again"
            )
        return self._embedder.encode([text])[0]

    def _load_embedder(self, embedding: str) -> None:
        try:
            self._embedder = self._given_embedder or self._query_embedder(embedding)
        except (EmbedderUnavailable, ImportError, ValueError) as exc:
            self._embedder_error = str(exc)

    def _query_embedder(self, embedding: str) -> Embedder:
        """The index's own embedder: local, or the OpenAI-compatible endpoint's."""
        if embedding.startswith("openai/"):
            from arborgraph.llm.factory import open_provider

            return open_provider(self.settings.llm, self.index.index_dir, chat=False, embeddings=True).embedder
        from arborgraph.models.embedding import load_embedder

        return load_embedder(self.config.embedding)

    @property
    def embedder(self) -> Embedder | None:
        """The query embedder once loaded (None before, or when none could be)."""
        return self._embedder

    def fallback_note(self) -> str | None:
        """Why queries are lexical only, when they are."""
        if self.index.mode.embedding is None:
            return "lexical fallback: the index was built without the embedding model"
        if self._embedder_error is not None:
            return f"lexical fallback: {self._embedder_error}"
        return None

    # -- who sees what ------------------------------------------------------------

    def access(self, principal: str | None, as_of: dt.date | None, include_stale: bool = False) -> Access:
        """What ``principal`` may read on ``as_of`` (see :class:`~arborgraph.index.access.Access`):
        worked out once per caller and date, and kept for the next questions."""
        return self._access.get(principal, as_of, include_stale)

    # -- the query pipeline -----------------------------------------------------------

    def request(
        self,
        question: str,
        route: RouteChoice = "auto",
        *,
        principal: str | None = None,
        as_of: AsOf = "today",
        include_stale: bool = False,
        answer: bool = False,
        llm: "ChatModel | None" = None,
        llm_router: bool | None = None,
        settings: QuerySettings | None = None,
    ) -> QueryRequest:
        """One question as :meth:`run` takes it (see :meth:`arborgraph.kb.KnowledgeBase.query`
        for the arguments): checked, with the caller's
        :class:`~arborgraph.index.access.Access` worked out and the settings it runs
        with (``settings``, else the engine's); QueryError for a question or route
        this engine cannot take."""
        self._check_query(question, route)
        return QueryRequest(
            question=question, route=route, access=self.access(principal, day_of(as_of), include_stale),
            settings=settings or self.settings, answer=answer, llm=llm, llm_router=llm_router,
        )

    @on_one_math_thread
    def run(self, request: QueryRequest) -> QueryResult:
        """Answer one :class:`~arborgraph.query.request.QueryRequest`: every part of it
        (the caller's access, the settings, the chat model) is the request's own."""
        s, access, question, llm = request.settings, request.access, request.question, request.llm
        q = self._retrieval_query(
            question, access, s.top_k, 3 * s.top_k if s.candidates is None else s.candidates, s, request.query_vector,
            request.first_stage,
        )
        fallback = self.fallback_note()
        checkpoint()
        use_llm_router = s.router.llm if request.llm_router is None else request.llm_router
        decision = self._decide(request.route, q, llm, use_llm_router, s)
        checkpoint()
        if decision.fused_with is None:
            found = self._run(decision.route, q, s)
        else:
            found = self._run_both(decision, q, s)
        checkpoint()
        mode = self.index.mode
        if q.query_vector is None:
            flag_lexical_fallback(found.contexts)
            # also when the index has vectors but the model failed to load for this query
            mode = mode.model_copy(update={"lexical_fallback": True})
        if access.include_stale:
            flag_stale(found.contexts, access.stale, self.doc_of_chunk)
        contexts = self._digested(question, decision.route, found.contexts, s)
        kept, cut = assemble(contexts, s.budget_tokens, s.top_k, self.tokens)
        final_scores(kept, relevance_scores(kept))
        from arborgraph.query.digest import highlights, load_model

        picked = highlights(question, kept, load_model(s.retrieval.digest_model).scorer)
        text = None
        checks: list[str] = []  # answer sentences with figures their sources lack
        if request.answer:
            from arborgraph.query.answer import figure_notes, generate_answer

            checkpoint()
            text = generate_answer(llm or self.chat_model(settings=s.llm), question, kept)
            checks = figure_notes(text, kept, question) if kept else []
        return QueryResult(
            question=question,
            route=decision.route,
            routing=decision,
            contexts=kept,
            mode=mode,
            answer=text,
            notes=([fallback] if fallback else []) + found.notes + checks,
            retrieved=found.rankings,
            budget_cut=cut,
            highlights=picked,
        )

    def _digested(self, question: str, route: str, contexts: list[Context], s: QuerySettings) -> list[Context]:
        """The route's candidates as a digest when the digest model has a plan for the
        route (see :mod:`arborgraph.query.digest`), else as they are."""
        if not s.retrieval.digest or not contexts:
            return contexts
        from arborgraph.query.digest import digest, load_model

        model = load_model(s.retrieval.digest_model)
        plan = model.plans.get(route)
        if plan is None:
            return contexts
        return digest(
            question, contexts, plan, scorer=model.scorer, budget_tokens=s.budget_tokens,
            count_tokens=self.count_tokens, max_contexts=s.top_k,
        )

    def chat_model(self, model: str | None = None, *, settings: "LLMConfig | None" = None) -> "ChatModel":
        """The chat model of ``settings`` (a question's own; default the engine's LLM
        settings), ``model`` overriding its name, cached in the index's LLM cache; raises
        QueryError when none is configured. The model opened last is kept for the next
        question with the same settings."""
        from arborgraph.llm.factory import ProviderMissing, open_provider

        base = settings if settings is not None else self.settings.llm
        name = model or base.model
        if not name:
            raise QueryError(
                "--answer and --llm-router need an LLM: pass --llm-model NAME (or set llm.model / ARBORGRAPH_LLM__MODEL)"
            )
        llm = base.model_copy(update={"model": name})
        key = llm.model_dump_json()
        # one at a time: two answers starting together would each open the model (a
        # local one loaded twice) and its cache
        with self._chat_lock:
            if self._chat is None or self._chat_key != key:
                try:  # checked before the cache is opened: a missing key is the user's to fix
                    self._chat = open_provider(llm, self.index.index_dir).chat
                except (ProviderMissing, ValueError) as exc:
                    raise QueryError(str(exc)) from None
                self._chat_key = key
            return self._chat

    def _check_query(self, question: object, route: str) -> None:
        """Raise QueryError for a question or route :meth:`run` cannot take."""
        if (problem := question_problem(question)) is not None:
            raise QueryError(problem)
        if route != "auto" and route not in ROUTES:
            raise QueryError(f"unknown route '{route}' (choose auto, {', '.join(ROUTES)})")
        if route != "auto" and route not in self.index.routes:
            raise QueryError(
                f"this index has no '{route}' route (built: {', '.join(self.index.routes)}); "
                "rebuild it with that structure enabled"
            )

    def _retrieval_query(
        self, question: str, access: Access, top_k: int, pool: int, s: QuerySettings,
        query_vector: np.ndarray | None = None, first_stage: np.ndarray | None = None,
    ) -> RetrievalQuery:
        """The query every route and the ranking stage see: the question embedded (unless
        ``query_vector`` is its embedding already), and its flat hits under the caller's
        mask (every route starts from them: structures fuse with them, the router reads
        their spread), ranked once; only among the rows of ``first_stage`` when given."""
        if query_vector is None:
            query_vector = self.embed_query(question)
        depth = max(top_k, LOOKUP_DEPTH)
        scores = score_question(
            self.index, question, query_vector, mask=access.mask,
            depth=max(depth, s.retrieval.candidates), expansion=s.retrieval.ann_expansion,
        )
        flat = access.mask if first_stage is None else access.mask & first_stage
        if first_stage is not None:
            # an approximate dense index scored only its own nearest: the store's
            # candidates it missed get their exact cosines, or they would rank last
            cosines_of(scores, self.index, query_vector, np.flatnonzero(flat))
        hits = self._lookup(s).search(scores, flat, depth)
        return RetrievalQuery(question, query_vector, access.mask, list(access.scopes), top_k, pool, hits, scores)

    def decide(
        self,
        question: str,
        *,
        principal: str | None = None,
        as_of: AsOf = "today",
        settings: QuerySettings | None = None,
    ) -> RoutingDecision:
        """The route :meth:`run` would give ``question`` asked on ``auto`` by
        ``principal``, and the route it would fuse with when unsure, without running
        either: the router reads the caller's flat hits, as in a query."""
        s = settings or self.settings
        self._check_query(question, "auto")
        q = self._retrieval_query(question, self.access(principal, day_of(as_of)), s.top_k, s.top_k, s)
        return self._decide("auto", q, None, s.router.llm, s)

    def _decide(
        self, route: str, q: RetrievalQuery, llm: "ChatModel | None", use_llm: bool, s: QuerySettings
    ) -> RoutingDecision:
        """The forced route, or the router's, with the runner-up it is fused with when
        the router is unsure."""
        if route != "auto":
            return RoutingDecision(route=route, forced=True, reason="route forced by caller")  # type: ignore[arg-type]
        decision = self.route_question(
            q.question, q.hits.contexts, llm=(llm or self.chat_model(settings=s.llm)) if use_llm else None
        )
        second = second_route(decision, self.index.routes, s.router.min_confidence)
        return decision if second is None else decision.model_copy(update={"fused_with": second})

    def _lookup(self, s: QuerySettings) -> LookupRetriever:
        return LookupRetriever(self.index, s.retrieval)

    def _retriever(self, route: str, s: QuerySettings) -> Retriever:
        """The route's retriever, built from the index's parts and the settings."""
        if route == "lookup":
            return self._lookup(s)
        if route == "tree":
            return TreeRetriever(self.index, s.tree_search, self.count_tokens)
        if route == "graph":
            return GraphRetriever(self.index, self._embedder, settings=s.graph_search, servers=self.graph_servers_for(s))
        return GlobalRetriever(self.index, self._embedder, settings=s.global_search)

    def _run(self, route: str, q: RetrievalQuery, s: QuerySettings) -> Retrieval:
        """One route's candidates for the final assembly: what its retriever found,
        ordered by the ranking stage when there is one, else composed with the flat hits."""
        found = self._retriever(route, s).retrieve(q)
        checkpoint()
        ranked = None
        # a structure that found nothing falls back to the flat hits as they are
        ranker = self.ranker_for(s)
        if ranker is not None and (route == "lookup" or found.contexts):
            from arborgraph.query.rerank import rerank

            ranked = rerank(self._ranking_index, ranker, q, [found], s.retrieval)
        return compose(
            found, q.hits, top_k=q.top_k, pool=q.pool,
            retrieval=s.retrieval, tree_search=s.tree_search, ranked=ranked,
        )

    def _run_both(self, decision: RoutingDecision, q: RetrievalQuery, s: QuerySettings) -> Retrieval:
        """The router's route and its runner-up (``decision.fused_with``), when it is
        unsure between them: both retrievers' candidates ranked together by the ranking
        stage (one ranking, not one per route; see :func:`compose_both`); without a
        ranking stage, each route composed as alone and the two fused by RRF."""
        assert decision.fused_with is not None
        routes = (decision.route, decision.fused_with)
        ranker = self.ranker_for(s)
        if ranker is None:
            first = self._run(routes[0], q, s)
            checkpoint()
            return fuse_routes(first, self._run(routes[1], q, s), decision.confidence, s.router.min_confidence)
        found = []
        for route in routes:
            found.append(self._retriever(route, s).retrieve(q))
            checkpoint()
        from arborgraph.query.rerank import rerank

        # a structure that found nothing gives no candidates (compose says so)
        reached = [f for f in found if f.route == "lookup" or f.contexts]
        ranked = rerank(self._ranking_index, ranker, q, reached, s.retrieval)
        note = (
            f"router not confident ({decision.confidence:.2f} < {s.router.min_confidence:.2f}): "
            f"{routes[0]}'s and {routes[1]}'s candidates ranked together"
        )
        return compose_both(found, q.hits, ranked, top_k=q.top_k, pool=q.pool, note=note)

    def ranker_for(self, s: QuerySettings) -> "AnyRanker | None":
        """The ranking model a question's settings ask for: none when they turn the stage
        off; the engine's own (the one it was given, or its settings') when they name the
        same model file; else the model they name, read once per process."""
        retrieval = s.retrieval
        if not retrieval.ranker:
            return None
        same_file = retrieval.ranker_model == self.settings.retrieval.ranker_model
        if same_file and (self._ranker_given or self.settings.retrieval.ranker):
            return self.ranker
        from arborgraph.query.ranking import load_model

        try:
            return load_model(retrieval.ranker_model)
        except (OSError, ValueError) as exc:
            raise QueryError(f"retrieval.ranker_model: {exc}") from None

    def graph_servers_for(self, s: QuerySettings) -> GraphServers | None:
        """Where a question with settings ``s`` walks the graph: the engine's graph
        server for its own ``graph_backend``, else the one ``s`` names (opened on first
        use, kept until :meth:`close`; None: in memory)."""
        if s.graph_backend == self.settings.graph_backend:
            return self.graph_servers
        key = s.graph_backend.model_dump_json()
        with self._servers_lock:
            if key not in self._other_servers:
                if self._open_graph_servers is None:
                    raise QueryError("graph_backend: this engine opens no other graph server than its own")
                self._other_servers[key] = self._open_graph_servers(s.graph_backend)
            return self._other_servers[key]

    @cached_property
    def _ranking_index(self) -> "RankingIndex":
        """What the ranking stage reads of this index (its page layout computed once)."""
        from arborgraph.query.rerank import RankingIndex

        return RankingIndex(self.index, self.index.routes)

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
        from arborgraph.query.router import default_model, route_question

        if hits is None and default_model().spread_stage is not None:
            hits = self.lookup(question, top_k=20)
        decision = route_question(
            question,
            available=self.index.routes,
            hits=None if hits is None else [(c.source, c.heading_path) for c in hits[:20]],
        )
        if llm is None:
            return decision
        from arborgraph.query.router_llm import with_llm_route

        return with_llm_route(decision, llm, question, self.index.routes)

    @on_one_math_thread
    def ranking_candidates(
        self, question: str, route: Route, *, principal: str | None = None, top_k: int | None = None,
    ) -> tuple[list[str], np.ndarray]:
        """The chunk ids the ranking stage orders for ``question`` on ``route``, and their
        feature matrix (columns: :data:`arborgraph.query.ranking.FEATURES`), computed exactly
        as :meth:`run` computes them; for training and inspecting the ranker."""
        from arborgraph.query.rerank import candidates

        s = self.settings
        k = top_k or s.top_k
        q = self._retrieval_query(question, self.access(principal, dt.date.today()), k, 3 * k, s)
        found = self._retriever(route, s).retrieve(q)
        rows, matrix = candidates(self._ranking_index, q, [found], s.retrieval)
        return [self.index.store.chunk_ids[r] for r in rows], matrix

    @on_one_math_thread
    def lookup(
        self,
        question: str,
        *,
        mode: LookupMode = "hybrid",
        top_k: int | None = None,
        principal: str | None = None,
        as_of: AsOf = "today",
    ) -> list[Context]:
        """Flat retrieval only (BM25, dense or hybrid): the baselines the eval compares to."""
        vector = None if mode == "bm25" else self.embed_query(question)
        k = top_k or self.settings.top_k
        mask = self.access(principal, day_of(as_of)).mask
        retrieval = self.settings.retrieval
        scores = score_question(
            self.index, question, vector, mask=mask, depth=max(k, retrieval.candidates), expansion=retrieval.ann_expansion
        )
        return self._lookup(self.settings).search(scores, mask, k, mode=mode).contexts

    def tokens(self, ctx: Context) -> int:
        """Tokens of a context; a whole chunk's count was stored when it was indexed
        (tokenising every candidate again was most of a query's time)."""
        store = self.index.store
        row = store.row_of.get(ctx.node_id) if ctx.kind == "chunk" else None
        if row is not None and ctx.text == store.texts[row]:
            return store.n_tokens[row]
        return self.count_tokens(ctx.text)

    def doc_of_chunk(self, chunk_id: str) -> str | None:
        """The document of a chunk of this index (None: not one of its chunks)."""
        store = self.index.store
        row = store.row_of.get(chunk_id)
        return None if row is None else store.doc_ids[row]
