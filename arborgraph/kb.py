"""The knowledge base a user opens and queries: one pipeline for every route."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np

from arborgraph import schema as S
from arborgraph.chunk_store import ChunkStore
from arborgraph.config import Config
from arborgraph.dense import DenseIndex
from arborgraph.embedding import load_embedder
from arborgraph.embedding_base import Embedder, EmbedderUnavailable
from arborgraph.lexical import LexicalIndex
from arborgraph.lookup import LookupIndex, LookupMode, lookup_search
from arborgraph.results import BuildMode, Context, QueryResult, Route, RoutingDecision
from arborgraph.safety import INJECTION_FLAG, looks_like_injection
from arborgraph.store import Generation, open_generation

ROUTES: tuple[Route, ...] = ("lookup", "tree", "graph", "global")
DEFAULT_TOP_K = 20
DEFAULT_BUDGET_TOKENS = 2000


class QueryError(ValueError):
    """A query the index cannot answer as asked (e.g. a route it has not built)."""


class KnowledgeBase:
    """An opened index. Use :func:`arborgraph.open` or :func:`arborgraph.build`."""

    def __init__(self, generation: Generation, index_dir: Path) -> None:
        self.index_dir = index_dir
        self.generation = generation
        self.manifest: dict[str, Any] = generation.manifest
        self.config = Config.model_validate(self.manifest["config"])
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
        self._embedder: Embedder | None = None
        self._embedder_error: str | None = None

    @classmethod
    def open(cls, index_dir: str | Path) -> "KnowledgeBase":
        index_dir = Path(index_dir)
        return cls(open_generation(index_dir), index_dir)

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
                self._embedder = load_embedder(self.config.embedding)
            except EmbedderUnavailable as exc:
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
    ) -> QueryResult:
        """Answer ``question`` with cited contexts from the best route (or the forced one).

        ``principal`` restricts results to documents it may read (None: public only).
        ``as_of`` keeps documents current on that date (default today, None: no date
        check); superseded versions are left out too. ``include_stale=True`` lets stale
        content through, each such context flagged with why it is stale.
        """
        if not isinstance(question, str) or not question.strip():
            raise QueryError("the question is empty")
        if route != "auto" and route not in ROUTES:
            raise QueryError(f"unknown route '{route}' (choose auto, {', '.join(ROUTES)})")
        if route != "auto" and route not in self.routes:
            raise QueryError(
                f"this index has no '{route}' route (built: {', '.join(self.routes)}); "
                "rebuild it with that structure enabled"
            )
        if top_k < 1 or budget_tokens < 1:
            raise QueryError("top_k and budget_tokens must be positive")
        when = dt.date.today() if as_of == "today" else as_of
        mask = self.chunk_mask(principal, when, include_stale)
        query_vector = self.embed_query(question)
        if route == "auto":
            decision = self.route_question(question)
        else:
            decision = RoutingDecision(route=route, forced=True, reason="route forced by caller")
        notes: list[str] = []
        if (note := self._fallback_note()) is not None:
            notes.append(note)
        contexts, retrieved = self._retrieve(
            decision.route, question, query_vector, mask=mask, top_k=top_k, notes=notes
        )
        if query_vector is None:
            for ctx in contexts:
                ctx.flags.append("lexical_fallback")
        if include_stale:
            self._flag_stale(contexts, when)
        kept, cut = self._assemble(contexts, budget_tokens)
        return QueryResult(
            question=question,
            route=decision.route,
            routing=decision,
            contexts=kept,
            mode=self.mode,
            notes=notes,
            retrieved=retrieved,
            budget_cut=cut,
        )

    def route_question(self, question: str) -> RoutingDecision:
        """Pick a route for ``question`` among the routes this index has built."""
        from arborgraph.router import route_question

        return route_question(question, available=self.routes)

    def _retrieve(
        self,
        route: Route,
        question: str,
        query_vector: np.ndarray | None,
        *,
        mask: np.ndarray,
        top_k: int,
        notes: list[str],
    ) -> tuple[list[Context], dict[str, list[str]]]:
        hits = lookup_search(
            self.lookup_index,
            question,
            query_vector,
            mask=mask,
            top_k=top_k,
            config=self.config.retrieval,
        )
        return hits.contexts, hits.rankings

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

    def _assemble(
        self, contexts: list[Context], budget_tokens: int
    ) -> tuple[list[Context], list[str]]:
        """Drop repeats, then keep contexts in order while they fit the token budget."""
        kept: list[Context] = []
        cut: list[str] = []
        seen: set[tuple[str, str]] = set()
        used = 0
        for ctx in contexts:
            key = (ctx.kind, ctx.node_id)
            if key in seen:
                continue
            seen.add(key)
            cost = self.count_tokens(ctx.text)
            if used + cost > budget_tokens and kept:
                cut.append(ctx.node_id)
                continue
            if INJECTION_FLAG not in ctx.flags and looks_like_injection(ctx.text):
                ctx.flags.append(INJECTION_FLAG)
            kept.append(ctx)
            used += cost
        return kept, cut

    # -- inspection -------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        """What the index holds: manifest essentials, counts and on-disk sizes."""
        files = self.manifest.get("files", {})
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
        }
