"""One question as the engine answers it: the question, the caller's access, the settings."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from arborgraph.index.access import Access
from arborgraph.query.settings import QuerySettings

if TYPE_CHECKING:
    import numpy as np

    from arborgraph.core.protocols import ChatModel

# the route a caller asks for: one of the index's, or the router's pick
RouteChoice = Literal["auto", "lookup", "tree", "graph", "global"]
# the date documents must be current on: "today" (the default), a date, or None (no date check)
AsOf = dt.date | None | Literal["today"]


def day_of(as_of: AsOf) -> dt.date | None:
    """The date ``as_of`` stands for."""
    return dt.date.today() if as_of == "today" else as_of


@dataclass(frozen=True)
class QueryRequest:
    """Everything one answer depends on, made by
    :meth:`~arborgraph.query.engine.QueryEngine.request` and answered by
    :meth:`~arborgraph.query.engine.QueryEngine.run`.

    ``access`` is what the caller may read (its chunk mask, readable scopes and the
    stale documents, worked out once); ``settings`` every setting the answer reads,
    the resources they name (ranking model, chat model, graph server) included;
    ``answer`` asks for a written answer from ``llm`` (default: the settings' chat
    model), ``llm_router`` for the LLM to route (None: as the settings say);
    ``query_vector`` is the question's embedding when the caller already made it with
    the engine's model (None: the engine embeds the question); ``first_stage`` marks the
    chunk rows the flat first stage may return (None: every row ``access`` lets
    through), as when a store's own searches found them.
    """

    question: str
    route: RouteChoice
    access: Access
    settings: QuerySettings
    answer: bool = False
    llm: "ChatModel | None" = None
    llm_router: bool | None = None
    query_vector: "np.ndarray | None" = None
    first_stage: "np.ndarray | None" = None
