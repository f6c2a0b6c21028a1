"""The knowledge base a user opens and queries: an index, its query engine, its explorer.

:class:`KnowledgeBase` is a thin facade: the opened generation is an
:class:`~arborgraph.index.opened.Index`, questions go to a
:class:`~arborgraph.query.engine.QueryEngine` (with one frozen
:class:`~arborgraph.query.settings.QuerySettings`), and the tree and graph views to an
:class:`~arborgraph.query.explorer.Explorer`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from arborgraph.config import Config
from arborgraph.core.errors import IndexDamaged
from arborgraph.core.protocols import Embedder
from arborgraph.core.results import QueryResult
from arborgraph.index.opened import Index
from arborgraph.query.engine import FROM_SETTINGS, QueryEngine
from arborgraph.query.explorer import Explorer
from arborgraph.query.request import AsOf, QueryRequest, RouteChoice
from arborgraph.query.settings import QuerySettings, SettingsLike, resolve_settings

# chunks each of the store's searches returns per retrieval candidate: its full-text index
# (Lucene's analyser, unstemmed) ranks words unlike the index's own BM25, so it is asked
# deeper than the in-process lookup reads
STORE_DEPTH_PER_CANDIDATE = 3

if TYPE_CHECKING:
    from arborgraph.config import GraphBackendConfig
    from arborgraph.core.protocols import ChatModel
    from arborgraph.neo4j.store import Neo4jStore
    from arborgraph.query.ranking import AnyRanker
    from arborgraph.query.retrievers import GraphServers

__all__ = ["KnowledgeBase"]


class KnowledgeBase:
    """An opened index. Use :func:`arborgraph.open` or :func:`arborgraph.build`.

    It reads the generation that was live when it was opened (:attr:`generation`),
    whatever builds follow: it pins that generation, so no build prunes it until
    :meth:`close`. :meth:`refresh` opens the newest one.

    Its own surface is small: opening, settings, refreshing and closing, :meth:`query`,
    :meth:`query_store` and :meth:`info`. The rest lives on its three parts:

    - :attr:`index`, the opened generation (:class:`~arborgraph.index.opened.Index`):
      ``index_dir``, ``manifest`` (typed), ``on_disk`` (the generation's files and
      tables), ``store`` (the chunks), ``mode``, ``routes``, ``scopes``;
    - :attr:`engine`, the :class:`~arborgraph.query.engine.QueryEngine`: ``settings``,
      ``config`` (the one the index was built with), ``ranker``, ``graph_servers``,
      ``count_tokens``, ``lookup()``, ``route_question()``, ``ranking_candidates()``,
      ``embed_query()``, ``chat_model()``, ``access()`` (what a caller may read),
      ``request()`` and ``run()`` (one question as a value, and its answer);
    - :attr:`explorer`, the :class:`~arborgraph.query.explorer.Explorer`:
      ``tree_view()``, ``graph_view()``, ``readable_scopes()``, ``structure()``.
    """

    def __init__(
        self, index: Index, engine: QueryEngine, *, owns_index: bool = True, settings_given: SettingsLike = None
    ) -> None:
        self.index = index
        self.engine = engine
        self.explorer = Explorer(index, engine.access)
        self._owns_index = owns_index
        # what the caller asked for, applied again to the newer generation on refresh()
        self._settings_given = settings_given
        self._graph_password: str | None = None
        # open(..., store=...): the database every query takes its flat candidates from
        self._store: "Neo4jStore | None" = None

    @classmethod
    def open(
        cls,
        index_dir: str | Path,
        settings: SettingsLike = None,
        *,
        embedder: Embedder | None = None,
        graph_password: str | None = None,
        warm: bool = True,
        store: "Neo4jStore | None" = None,
    ) -> "KnowledgeBase":
        """Open the index at ``index_dir``.

        ``settings`` are the query settings (a :class:`QuerySettings`, or changes to the
        index's own as a mapping: ``{"top_k": 5, "retrieval": {"ranker": False}}``).
        ``embedder`` embeds queries instead of the model named in the index's config; its
        ``name`` must equal the one the index was built with, else queries are refused
        (:class:`arborgraph.core.errors.EmbedderMismatch`): rebuilding embeds it again. ``graph_password`` is the graph server's password
        when the settings name one (``graph_backend``). ``warm`` loads now what every
        route needs (the query embedder, trees, graphs), so no question pays for it.
        With ``store``, :meth:`query` takes each question's flat candidates from that
        database (see :meth:`query_store`); the caller keeps its driver.
        """
        index = Index.open(index_dir)
        try:
            config = _stored_config(index)
            resolved = resolve_settings(QuerySettings.from_config(config), settings)
            engine = QueryEngine(
                index, config, resolved, embedder=embedder,
                graph_servers=_graph_servers(resolved.graph_backend, graph_password),
                open_graph_servers=lambda backend: _graph_servers(backend, graph_password),
            )
            kb = cls(index, engine, settings_given=settings)
            kb._graph_password = graph_password
            kb._store = store
            if warm:
                engine.warm()
            return kb
        except BaseException:
            index.close()
            raise

    def with_settings(
        self, settings: SettingsLike = None, *, ranker: "AnyRanker | None" = FROM_SETTINGS,
        graph_password: str | None = None,
    ) -> "KnowledgeBase":
        """A knowledge base on the same opened index with other query settings (or another
        ``ranker`` model, e.g. one being trained). It shares this one's index and query
        embedder; closing it closes only its own graph server connections."""
        resolved = resolve_settings(self.engine.settings, settings)
        engine = QueryEngine(
            self.index, self.engine.config, resolved, embedder=self.engine.embedder or self.engine._given_embedder,
            ranker=ranker, graph_servers=_graph_servers(resolved.graph_backend, graph_password),
            open_graph_servers=lambda backend: _graph_servers(backend, graph_password),
        )
        kb = KnowledgeBase(self.index, engine, owns_index=False, settings_given=resolved)
        kb._store = self._store
        return kb

    def refresh(self) -> "KnowledgeBase":
        """A new knowledge base on the newest generation of the same index, with the same
        settings (the query embedder this one loaded is carried over when the new
        generation was embedded with the same model). This one keeps working, on its own
        generation, until it is closed."""
        loaded = self.engine.embedder
        newer = KnowledgeBase.open(
            self.index.index_dir, self._settings_given, embedder=self.engine._given_embedder,
            graph_password=self._graph_password, warm=False, store=self._store,
        )
        if loaded is not None and loaded.name == newer.index.mode.embedding:
            newer.engine._embedder = loaded
        newer.engine.warm()
        return newer

    def close(self) -> None:
        """Release the hold on :attr:`generation` (a later build may then prune it, after
        which structures not loaded yet cannot be) and close the graph server's
        connections, if any. Closing twice is harmless."""
        self.engine.close()
        if self._owns_index:
            self.index.close()

    @property
    def closed(self) -> bool:
        return self.index.closed

    def __enter__(self) -> "KnowledgeBase":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def generation(self) -> str:
        """The generation served ("gen-000007")."""
        return self.index.generation

    # -- questions ----------------------------------------------------------------------

    def query(
        self,
        question: str,
        route: RouteChoice = "auto",
        *,
        top_k: int | None = None,
        budget_tokens: int | None = None,
        principal: str | None = None,
        as_of: AsOf = "today",
        include_stale: bool = False,
        answer: bool = False,
        llm: "ChatModel | None" = None,
        llm_router: bool | None = None,
        candidates: int | None = None,
        settings: SettingsLike = None,
    ) -> QueryResult:
        """Answer ``question`` with cited contexts from the best route (or the forced one).

        At most ``top_k`` contexts are returned (default: the settings'), on every route,
        in the order of the final ranking; each context's ``score`` is that ordering's
        score (1.0 for the first, never increasing down the list; the retriever's own
        score is in ``extra["retriever_score"]``). ``candidates`` is how many contexts a
        tree, graph or global route hands to the final assembly (default ``3 * top_k``:
        structure overviews and inserted sections compete with the flat hits for the
        ``top_k`` places and the token budget); the lookup route hands ``top_k``.
        ``settings`` (a :class:`QuerySettings` or changes to this knowledge base's) apply
        to this question only; ``top_k``, ``budget_tokens`` and ``candidates`` are short
        for the same.

        ``principal`` restricts results to documents it may read (None: public only).
        ``as_of`` keeps documents current on that date (default today, None: no date
        check); superseded versions are left out too. ``include_stale=True`` lets stale
        content through, each such context flagged with why it is stale.
        ``answer=True`` asks the configured LLM (or ``llm``) for an answer citing the
        contexts by number; without it ``answer`` stays None. ``llm_router=True`` (default:
        the ``router.llm`` setting) lets that LLM pick the route of an ``auto`` question.
        Opened with a ``store``, this is :meth:`query_store` on it.
        """
        request = self._request(
            question, route, top_k=top_k, budget_tokens=budget_tokens, principal=principal, as_of=as_of,
            include_stale=include_stale, answer=answer, llm=llm, llm_router=llm_router, candidates=candidates,
            settings=settings,
        )
        if self._store is not None:
            return self._on_store(request, self._store, None)
        return self.engine.run(request)

    def _request(self, question: str, route: RouteChoice, *, top_k: int | None, budget_tokens: int | None,
                 candidates: int | None, settings: SettingsLike, **asked: Any) -> QueryRequest:
        """The engine's request for :meth:`query`'s arguments (``asked``: the caller,
        dates, answer and router ones)."""
        changes = {k: v for k, v in (("top_k", top_k), ("budget_tokens", budget_tokens), ("candidates", candidates)) if v is not None}
        s = resolve_settings(self.engine.settings, settings)
        if changes:
            s = resolve_settings(s, changes)
        return self.engine.request(question, route, settings=s, **asked)

    def query_store(
        self,
        question: str,
        store: "Neo4jStore",
        route: RouteChoice = "auto",
        *,
        top_k: int | None = None,
        budget_tokens: int | None = None,
        principal: str | None = None,
        as_of: AsOf = "today",
        include_stale: bool = False,
        answer: bool = False,
        llm: "ChatModel | None" = None,
        llm_router: bool | None = None,
        candidates: int | None = None,
        settings: SettingsLike = None,
        depth: int | None = None,
    ) -> QueryResult:
        """:meth:`query` with its flat first stage found by ``store``, the Neo4j database
        this index was exported to with its search indexes (``arborgraph export-neo4j
        --search``): its full-text index (BM25) and its vector index return ``depth``
        chunks each (default: three times the retrieval's ``candidates`` setting) that
        ``principal`` may read, the access check inside the Cypher; the flat hits every
        route starts from are ranked among those only. The router, the tree, graph and
        global routes, the ranking stage, the digests and the answer then run as in
        :meth:`query`, on this index's structures, under the same access and dates (so
        the store can narrow what a caller sees, never widen it). The result's notes say
        how many chunks the store returned. The other arguments are :meth:`query`'s."""
        request = self._request(
            question, route, top_k=top_k, budget_tokens=budget_tokens, principal=principal, as_of=as_of,
            include_stale=include_stale, answer=answer, llm=llm, llm_router=llm_router, candidates=candidates,
            settings=settings,
        )
        return self._on_store(request, store, depth)

    def _on_store(self, request: QueryRequest, store: "Neo4jStore", depth: int | None) -> QueryResult:
        """``request`` answered with its flat first stage found by ``store`` (see
        :meth:`query_store`)."""
        import dataclasses

        import numpy as np

        s, engine = request.settings, self.engine
        wanted = depth if depth is not None else max(s.top_k, STORE_DEPTH_PER_CANDIDATE * s.retrieval.candidates)
        vector = engine.embed_query(request.question)
        found = store.search(request.question, vector, principal=request.access.principal, depth=wanted)
        row_of = self.index.store.row_of
        rows = [row for ids in found.values() for c in ids if (row := row_of.get(c)) is not None]
        first_stage = np.zeros(len(request.access.mask), dtype=bool)
        first_stage[rows] = True
        result = engine.run(dataclasses.replace(request, query_vector=vector, first_stage=first_stage))
        searched = " and ".join(name for name in ("bm25", "dense") if name in found) or "no index"
        readable = int((first_stage & request.access.mask).sum())
        result.notes.append(f"candidates from the Neo4j store: {readable} chunks ({searched}, {wanted} each)")
        exported = store.generation()
        if exported != self.generation:
            # a rebuild since the export: the database finds none of the new passages
            # (those it returns that this generation lacks are dropped above); DIR, not
            # the path: a served answer reaches callers who need not know the server's
            # folders
            result.notes.append(
                f"the Neo4j store was exported from {exported or 'an unknown generation'}, this index is "
                f"{self.generation}: run arborgraph export-neo4j --index DIR --search to bring it up to date"
            )
        return result

    def info(self, principal: str | None = None) -> dict[str, Any]:
        """What the index holds, as far as ``principal`` may know it (see :meth:`Explorer.info`)."""
        return self.explorer.info(principal)

    def _repr_html_(self) -> str:
        return self.explorer.summary_html()


def _stored_config(index: Index) -> Config:
    try:
        return Config.model_validate(index.manifest.config)
    except ValueError as exc:
        first = str(exc).splitlines()[0]
        raise IndexDamaged(
            f"{index.index_dir}: the index's configuration is not understood by this version "
            f"of Arborgraph ({first}); rebuild it or upgrade"
        ) from None


def _graph_servers(config: "GraphBackendConfig", password: str | None) -> "GraphServers | None":
    """The Bolt server the settings name (connecting on first use), or None for memory;
    the Neo4j code and its driver load only for a server."""
    if config.uri == "memory":
        return None
    from arborgraph.neo4j import graph_server

    return graph_server(config, password=password)
