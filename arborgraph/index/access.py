"""What one caller may read, worked out once: the chunk rows, the access scopes, the stale documents.

Every part of a query and of the explorer asks the same three questions of a caller
(which chunks, which scopes' trees and graphs, which documents are not current on the
date asked); an :class:`Access` answers them once per (principal, date, stale or not),
from the index's document metadata, and is handed on as one value: no part of a query
parses a scope's principals again or works out its own mask.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from arborgraph.index.chunk_store import ChunkStore
from arborgraph.index.scoped import PUBLIC, Scope, scope_principals, scope_readable


@dataclass(frozen=True, eq=False)  # an array inside: compared by identity
class Access:
    """What ``principal`` (None: anonymous, public documents only) may read on
    ``as_of`` (None: any date), stale documents included or not.

    ``mask`` marks the chunk rows it may read (read-only); ``scopes`` are the access
    scopes whose trees and graphs it may read, in the index's order; ``stale`` maps
    each document not current on ``as_of`` to why (superseded, expired, not yet
    valid), whether or not it is readable.
    """

    principal: str | None
    as_of: dt.date | None
    include_stale: bool
    mask: np.ndarray
    scopes: tuple[Scope, ...]
    stale: Mapping[str, str]

    @property
    def most_specific_first(self) -> list[Scope]:
        """The readable scopes, the most specific (fewest principals) first: the public
        one last."""
        return sorted(self.scopes, key=lambda s: (s.scope == PUBLIC, len(scope_principals(s.scope)), s.scope))


def access_for(
    store: ChunkStore, scopes: tuple[Scope, ...] | list[Scope], principal: str | None,
    as_of: dt.date | None, include_stale: bool = False,
) -> Access:
    """The :class:`Access` of ``principal`` on ``as_of`` over an index's ``store`` and
    its ``scopes``."""
    stale = store.stale_docs(as_of)
    mask = store.chunk_mask(store.allowed_docs(principal, as_of, include_stale))
    mask.flags.writeable = False
    readable_scopes = tuple(s for s in scopes if scope_readable(s.scope, principal))
    return Access(principal, as_of, include_stale, mask, readable_scopes, MappingProxyType(stale))


class AccessCache:
    """The :class:`Access` of each caller over one index, worked out once per
    (principal, date, include_stale) and kept for the ``size`` latest seen."""

    def __init__(self, store: ChunkStore, scopes: tuple[Scope, ...] | list[Scope], size: int) -> None:
        self._store, self._scopes, self._size = store, scopes, size
        self._kept: OrderedDict[tuple[str | None, dt.date | None, bool], Access] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, principal: str | None, as_of: dt.date | None, include_stale: bool = False) -> Access:
        key = (principal, as_of, include_stale)
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
                return found
        found = access_for(self._store, self._scopes, principal, as_of, include_stale)
        with self._lock:
            self._kept[key] = found
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)
        return found
