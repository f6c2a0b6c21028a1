"""How questions are answered: one frozen value, apart from how the index was built.

An index's manifest keeps the whole config it was built with; the query-time sections
of it (retrieval weights and the ranking stage, the tree, graph and global searches,
the router, the graph server, the LLM for answers) are its default
:class:`QuerySettings`. A caller changes them by passing other settings to
:func:`arborgraph.open` or to one ``query`` — never by setting attributes on an opened
knowledge base.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arborgraph.core.errors import QueryError
from arborgraph.config import Config, GraphBackendConfig, RetrievalConfig, RouterConfig, TreeSearchConfig
from arborgraph.llm.config import LLMConfig
from graphrag.config import GlobalSearchConfig, GraphSearchConfig

DEFAULT_TOP_K = 20
DEFAULT_BUDGET_TOKENS = 2000


class QuerySettings(BaseModel):
    """Every setting a query reads. ``candidates`` None means ``3 * top_k`` for the
    tree, graph and global routes (see :meth:`arborgraph.kb.KnowledgeBase.query`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    top_k: int = Field(DEFAULT_TOP_K, ge=1, description="contexts returned")
    budget_tokens: int = Field(DEFAULT_BUDGET_TOKENS, ge=1, description="tokens the returned contexts may hold")
    candidates: int | None = Field(None, ge=1, description="contexts a structured route hands to the final assembly")
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    tree_search: TreeSearchConfig = Field(default_factory=TreeSearchConfig)
    graph_search: GraphSearchConfig = Field(default_factory=GraphSearchConfig)
    global_search: GlobalSearchConfig = Field(default_factory=GlobalSearchConfig)
    router: RouterConfig = Field(default_factory=RouterConfig)
    graph_backend: GraphBackendConfig = Field(default_factory=GraphBackendConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)

    @classmethod
    def from_config(cls, config: Config) -> "QuerySettings":
        """The query-time sections of a build ``config`` (an index's stored one)."""
        return cls(
            retrieval=config.retrieval, tree_search=config.tree_search, graph_search=config.graph_search,
            global_search=config.global_search, router=config.router, graph_backend=config.graph_backend,
            llm=config.llm,
        )

    def updated(self, changes: Mapping[str, Any]) -> "QuerySettings":
        """These settings with ``changes`` applied and checked, sections merged key by
        key: ``settings.updated({"top_k": 5, "retrieval": {"ranker": False}})``."""
        data = self.model_dump()
        for key, value in changes.items():
            if isinstance(value, BaseModel):
                value = value.model_dump()
            if isinstance(value, Mapping) and isinstance(data.get(key), dict):
                data[key] = {**data[key], **value}
            else:
                data[key] = value
        return type(self).model_validate(data)


# settings as a caller gives them: the whole value, changes to the current ones, or none
SettingsLike = QuerySettings | Mapping[str, Any] | None


def resolve_settings(base: QuerySettings, given: SettingsLike) -> QuerySettings:
    """``given`` settings, or ``base`` with ``given``'s changes; QueryError when invalid."""
    if given is None:
        return base
    if isinstance(given, QuerySettings):
        return given
    try:
        return base.updated(given)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise QueryError(f"query setting {where}: {first['msg']}") from None
