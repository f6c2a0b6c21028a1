"""The knowledge base a user opens and queries: one pipeline for every route."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from arborgraph.core.errors import QueryError  # noqa: F401 (re-exported)
from arborgraph.core.questions import question_problem  # noqa: F401 (re-exported)
from arborgraph.index import layout
from arborgraph.index import schema as S
from arborgraph.index.chunk_store import ChunkStore
from arborgraph.config import Config
from arborgraph.query.dense import DenseIndex
from arborgraph.models.embedding import load_embedder
from arborgraph.core.errors import EmbedderMismatch, EmbedderUnavailable
from arborgraph.core.protocols import Embedder
from arborgraph.core.lexical import LexicalIndex
from arborgraph.query.compose import assemble, compose, flag_lexical_fallback, flag_stale
from arborgraph.core.retrieval import Retrieval, RetrievalQuery, Retriever
from arborgraph.query.fusion import fuse_routes, second_route
from arborgraph.query.lookup import LookupIndex, LookupMode
from arborgraph.core.results import BuildMode, Context, QueryResult, Route, RoutingDecision, final_scores
from arborgraph.query.retrievers import GlobalRetriever, GraphRetriever, LookupRetriever, TreeRetriever, chunk_refs
from arborgraph.index.scoped import load_scopes, readable
from arborgraph.index.manifest import Manifest, index_manifest
from arborgraph.index.store import Generation, IndexDamaged, open_generation
from arborgraph.index.scoped import PUBLIC, scope_principals, scope_readable

if TYPE_CHECKING:
    from arborgraph.core.protocols import ChatModel
    from arborgraph.query.ranking import AnyRanker
    from arborgraph.query.rerank import RankingIndex

ROUTES: tuple[Route, ...] = ("lookup", "tree", "graph", "global")
DEFAULT_TOP_K = 20
DEFAULT_BUDGET_TOKENS = 2000
# structured routes fuse their chunks with this many flat hits
LOOKUP_DEPTH = 50


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
        # as read from disk (kept for callers that index it); the code reads the typed one
        self.manifest: dict[str, Any] = generation.manifest
        self.index_manifest: Manifest = index_manifest(generation)
        try:
            self.config = Config.model_validate(self.index_manifest.config)
        except ValueError as exc:
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
            lexical=LexicalIndex.load(generation.subdir(layout.CHUNKS_BM25)),
            dense=dense,
        )
        mode = self.index_manifest.mode
        self.mode = BuildMode(
            llm_model=mode.llm_model, embedding=mode.embedding, lexical_fallback=mode.lexical_fallback
        )
        self.routes: list[str] = list(self.index_manifest.routes)
        self.scopes = load_scopes(generation)
        if TYPE_CHECKING:
            from arborgraph.neo4j import GraphServer

        # where the graph route expands: None in memory, else the server the index was
        # exported to (connects on first use); the caller may set it. The Neo4j code and
        # its driver load only for a server.
        self.graph_backend: GraphServer | None = None
        if self.config.graph_backend.uri != "memory":
            from arborgraph.neo4j import graph_server

            self.graph_backend = graph_server(self.config.graph_backend)
        self._given_embedder = embedder
        self._embedder: Embedder | None = None
        self._embedder_error: str | None = None
        self._chat: Any = None
        from arborgraph.query.ranking import load_model

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
        must equal the one the index was built with, else queries are refused
        (:class:`EmbedderMismatch`), as with any other embedder that differs from the
        index's: rebuilding the index embeds it again.
        """
        index_dir = Path(index_dir)
        generation = open_generation(index_dir, pin=True, shape=Manifest)
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
        """The query vector, or None when the index (or this machine) has no model.

        Raises :class:`EmbedderMismatch` when the model that loads is not the one the
        index was embedded with: its vectors would not be comparable with the index's.
        """
        if self.mode.embedding is None or self._embedder_error is not None:
            return None
        if self._embedder is None:
            try:
                self._embedder = self._load_query_embedder()
            except (EmbedderUnavailable, ImportError, ValueError) as exc:
                self._embedder_error = str(exc)
                return None
        if self._embedder.name != self.mode.embedding:
            raise EmbedderMismatch(
                f"{self.index_dir}: the index was embedded with {self.mode.embedding}, but this "
                f"Arborgraph embeds questions with {self._embedder.name}; rebuild the index "
                f"(arborgraph build DOCUMENTS --index {self.index_dir}) to embed it again"
            )
        return self._embedder.encode([text])[0]

    def _load_query_embedder(self) -> Embedder:
        """The query embedder: the one given to open, else the index's local or OpenAI-compatible one."""
        if self._given_embedder is not None:
            return self._given_embedder
        if self.mode.embedding and self.mode.embedding.startswith("openai/"):
            from arborgraph.llm.factory import open_provider

            return open_provider(self.config.llm, self.index_dir, chat=False, embeddings=True).embedder
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
        self._check_query(question, route, top_k, budget_tokens, candidates)
        when = dt.date.today() if as_of == "today" else as_of
        q = self._retrieval_query(
            question, principal, self.chunk_mask(principal, when, include_stale), top_k,
            3 * top_k if candidates is None else candidates,
        )
        fallback = self._fallback_note()
        decision = self._decide(route, q, llm, llm_router)
        found = self._run(decision.route, q)
        second = second_route(decision, self.routes, self.config.router.min_confidence)
        if second is not None:
            decision = decision.model_copy(update={"fused_with": second})
            found = fuse_routes(found, self._run(second, q), decision.confidence, self.config.router.min_confidence)
        mode = self.mode
        if q.query_vector is None:
            flag_lexical_fallback(found.contexts)
            # also when the index has vectors but the model failed to load for this query
            mode = mode.model_copy(update={"lexical_fallback": True})
        if include_stale:
            flag_stale(found.contexts, self.store.stale_docs(when), self._doc_of_chunk)
        kept, cut = assemble(found.contexts, budget_tokens, top_k, self._tokens)
        final_scores(kept)
        text = None
        if answer:
            from arborgraph.query.answer import generate_answer

            text = generate_answer(llm or self.chat_model(), question, kept)
        return QueryResult(
            question=question,
            route=decision.route,
            routing=decision,
            contexts=kept,
            mode=mode,
            answer=text,
            notes=([fallback] if fallback else []) + found.notes,
            retrieved=found.rankings,
            budget_cut=cut,
        )

    def chat_model(self, model: str | None = None) -> "ChatModel":
        """The OpenAI-compatible chat model from the config (``model`` overrides its name),
        cached in the index's LLM cache; raises QueryError when none is configured."""
        from arborgraph.llm.factory import ProviderMissing, open_provider

        name = model or self.config.llm.model
        if not name:
            raise QueryError(
                "--answer and --llm-router need an LLM: pass --llm-model NAME (or set llm.model / ARBORGRAPH_LLM__MODEL)"
            )
        if self._chat is None or self._chat.model != name:
            llm = self.config.llm.model_copy(update={"model": name})
            try:  # checked before the cache is opened: a missing key is the user's to fix
                self._chat = open_provider(llm, self.index_dir).chat
            except (ProviderMissing, ValueError) as exc:
                raise QueryError(str(exc)) from None
        return self._chat

    def _check_query(
        self, question: object, route: str, top_k: int, budget_tokens: int, candidates: int | None
    ) -> None:
        """Raise QueryError for a question or option :meth:`query` cannot take."""
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

    def _retrieval_query(
        self, question: str, principal: str | None, mask: np.ndarray, top_k: int, pool: int
    ) -> RetrievalQuery:
        """The query every route and the ranking stage see: the question embedded, and
        its flat hits under ``mask`` (every route starts from them: structures fuse with
        them, the router reads their spread), ranked once."""
        query_vector = self.embed_query(question)
        hits = self._lookup().search(question, query_vector, mask, max(top_k, LOOKUP_DEPTH))
        return RetrievalQuery(question, query_vector, mask, readable(self.scopes, principal), top_k, pool, hits)

    def _decide(
        self, route: str, q: RetrievalQuery, llm: "ChatModel | None", llm_router: bool | None
    ) -> RoutingDecision:
        if route != "auto":
            return RoutingDecision(route=route, forced=True, reason="route forced by caller")  # type: ignore[arg-type]
        use_llm = self.config.router.llm if llm_router is None else llm_router
        return self.route_question(q.question, q.hits.contexts, llm=(llm or self.chat_model()) if use_llm else None)

    def _lookup(self) -> LookupRetriever:
        return LookupRetriever(self.lookup_index, self.config.retrieval)

    def _retriever(self, route: str) -> Retriever:
        """The route's retriever, built from the index's parts as they are now (the
        query embedder loads on first use; settings and the graph server may be set)."""
        if route == "lookup":
            return self._lookup()
        if route == "tree":
            return TreeRetriever(self.lookup_index, self.config.tree_search, self.count_tokens)
        if route == "graph":
            return GraphRetriever(
                self.lookup_index, self._embedder, settings=self.config.graph_search, servers=self.graph_backend
            )
        return GlobalRetriever(self.lookup_index, self._embedder, settings=self.config.global_search)

    def _run(self, route: str, q: RetrievalQuery) -> Retrieval:
        """One route's candidates for the final assembly: what its retriever found,
        ordered by the ranking stage when there is one, else composed with the flat hits."""
        found = self._retriever(route).retrieve(q)
        ranked = None
        # a structure that found nothing falls back to the flat hits as they are
        if self.ranker is not None and (route == "lookup" or found.contexts):
            from arborgraph.query.rerank import rerank

            ranked = rerank(self._ranking_index, self.ranker, q, found, self.config.retrieval)
        return compose(
            found, q.hits, top_k=q.top_k, pool=q.pool,
            retrieval=self.config.retrieval, tree_search=self.config.tree_search, ranked=ranked,
        )

    @cached_property
    def _ranking_index(self) -> "RankingIndex":
        """What the ranking stage reads of this index (its page layout computed once)."""
        from arborgraph.query.rerank import RankingIndex

        return RankingIndex(self.lookup_index, self.routes)

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
        from arborgraph.query.router import default_model, route_question, with_llm_choice

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
        from arborgraph.query.router_llm import llm_route

        try:
            chosen = llm_route(llm, question, self.routes)
        except LLMError as exc:
            return decision.model_copy(update={"reason": f"{decision.reason} (LLM router failed: {exc})"})
        return with_llm_choice(decision, chosen)

    def ranking_candidates(
        self, question: str, route: Route, *, principal: str | None = None, top_k: int = DEFAULT_TOP_K,
    ) -> tuple[list[str], np.ndarray]:
        """The chunk ids the ranking stage orders for ``question`` on ``route``, and their
        feature matrix (columns: :data:`arborgraph.query.ranking.FEATURES`), computed exactly
        as :meth:`query` computes them; for training and inspecting the ranker."""
        from arborgraph.query.rerank import candidates

        q = self._retrieval_query(question, principal, self.chunk_mask(principal, dt.date.today()), top_k, 3 * top_k)
        found = self._retriever(route).retrieve(q)
        rows, matrix = candidates(self._ranking_index, q, found, self.config.retrieval)
        return [self.store.chunk_ids[r] for r in rows], matrix

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
        return self._lookup().search(question, vector, self.chunk_mask(principal, when), top_k, mode=mode).contexts

    def _tokens(self, ctx: Context) -> int:
        """Tokens of a context; a whole chunk's count was stored when it was indexed
        (tokenising every candidate again was most of a query's time)."""
        row = self.store.row_of.get(ctx.node_id) if ctx.kind == "chunk" else None
        if row is not None and ctx.text == self.store.texts[row]:
            return self.store.n_tokens[row]
        return self.count_tokens(ctx.text)

    def _doc_of_chunk(self, chunk_id: str) -> str | None:
        row = self.store.row_of.get(chunk_id)
        return None if row is None else self.store.doc_ids[row]

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
        return GraphView(chosen.graph, chunk_text=chunk_refs(self.store, self.chunk_mask(principal, when)))

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
        stages = self.index_manifest.report.stages
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
        manifest = self.index_manifest
        files, report = manifest.files, manifest.report
        readable = self.store.readable_docs(principal)
        hidden = [d for d in self.store.docs if d not in readable]
        return {
            "index_dir": str(self.index_dir),
            "generation": manifest.generation,
            "schema_version": manifest.schema_version,
            "arborgraph_version": manifest.arborgraph_version,
            "built_at": manifest.built_at,
            "mode": {**self.mode.model_dump(), "label": self.mode.label},
            "routes": self.routes,
            "counts": manifest.counts,
            "timings_s": manifest.timings_s,
            "bytes_total": sum(f.bytes for f in files.values()),
            "tables": {
                name: {"rows": info.rows, "bytes": info.bytes}
                for name, info in sorted(files.items())
                if "rows" in info.model_fields_set
            },
            **manifest.llm_usage(),
            "config": manifest.config,
            "documents": self._document_info(readable),
            "skipped": [s.model_dump(mode="json") for s in report.skipped],
            # a warning naming a document the caller may not read is left out with it
            "warnings": [w for w in report.warnings if not any(d in w for d in hidden)],
            "scopes": [
                dict(sorted(s.model_dump(mode="json", exclude_unset=True).items()))  # keys as on disk
                for s in manifest.scopes if scope_readable(s.scope, principal)
            ],
        }

    def _document_info(self, readable: set[str]) -> dict[str, dict[str, Any]]:
        """doc id -> content hash, format and title (the hash from the manifest, the
        rest from the documents table), for the ``readable`` documents only."""
        hashes = self.index_manifest.documents
        rows = self.on_disk.table(S.DOCUMENTS, columns=[S.DOC_ID, S.DOC_FORMAT, S.DOC_TITLE]).to_pylist()
        described = {r[S.DOC_ID]: {"format": r[S.DOC_FORMAT], "title": r[S.DOC_TITLE]} for r in rows}
        return {
            doc_id: {"content_hash": hashes.get(doc_id), **described.get(doc_id, {})}
            for doc_id in sorted((set(hashes) | set(described)) & readable)
        }
