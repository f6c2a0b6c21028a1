"""The graph route's neighbour lookups, run as Cypher against an exported graph.

Graph search (:func:`graphrag.search.expand`) walks from the question's entities: two
hops, following each node's ``neighbours_per_node`` strongest relations (weight
descending, then relation id), stopping at ``max_expand_nodes``. In memory the lookup
is ``kg.adjacency[entity][:k]``. For graphs that outgrow memory the same lookup runs on
the server that :func:`~arborgraph.neo4j.export.export_index` wrote:
:class:`Neo4jGraphBackend` answers it with one Cypher query per hop (batched over the
hop's frontier), and :class:`~graphrag.neighbours.MemoryGraphBackend` answers it from a
:class:`~graphrag.graph.KnowledgeGraph`; :func:`walk` is the shared bounded walk, and
:func:`cypher_expand` the one-call form.

Relations come back with id, ends, type, exact weight (from ``weight_key``) and chunk
ids; description and evidence stay on the server.

The graph route of a :class:`~arborgraph.kb.KnowledgeBase` uses a server when
``kb.engine.graph_servers`` is a :class:`GraphServer` (from the ``graph_backend`` config
section, ``arborgraph query --graph-backend bolt://...``, or set by the caller): it
connects on first use and checks that the server holds the index's graph.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

from arborgraph.core.credentials import redact_credentials
from arborgraph.core.errors import ExportError, GraphBackendError
from arborgraph.neo4j.connection import BOLT_SCHEMES, CONNECT_TIMEOUT, connect, neo4j_driver, one_line, verify
from arborgraph.neo4j.cypher import neighbours_cypher, relation_count_cypher
from arborgraph.neo4j.records import PUBLIC, entity_uid, weight_from_key
from arborgraph.neo4j.servers import ServerDialect, detect_dialect
from graphrag.neighbours import GraphBackend, MemoryGraphBackend

if TYPE_CHECKING:
    from neo4j import Driver

    from arborgraph.config import GraphBackendConfig
    from graphrag.graph import KnowledgeGraph
    from graphrag.model import Relation


class Neo4jGraphBackend:
    """Neighbour lookups on the graph of one access scope in a Neo4j (or FalkorDB)
    database written by :func:`~arborgraph.neo4j.export.export_index`.

    ``driver`` stays the caller's (this class never closes it).
    """

    def __init__(self, driver: Driver, *, scope: str = PUBLIC, database: str | None = None) -> None:
        self.driver = driver
        self.scope = scope
        self.database = database
        self._dialect: ServerDialect | None = None

    @property
    def dialect(self) -> ServerDialect:
        if self._dialect is None:
            with _server_errors():
                verify(self.driver)
                with self.driver.session(database=self.database) as session:
                    self._dialect = detect_dialect(session)
        return self._dialect

    def relation_count(self) -> int:
        """Relations between this scope's entities on the server."""
        params = self.dialect.encode({"scope": self.scope})
        with _server_errors(), self.driver.session(database=self.database) as session:
            record = session.run(relation_count_cypher(), params).single()
        return int(record["n"]) if record is not None else 0

    def neighbours(self, entity_ids: Sequence[str], limit: int | None) -> dict[str, list[Relation]]:
        from graphrag.model import Relation

        ids = list(dict.fromkeys(entity_ids))
        if not ids or limit == 0:
            return {}
        by_uid = {entity_uid(self.scope, e): e for e in ids}
        cypher = neighbours_cypher(limit is not None)
        dialect = self.dialect
        out: dict[str, list[Relation]] = {}
        with _server_errors(), self.driver.session(database=self.database) as session:
            others: dict[str, Any] = {"g": dialect.relations_per_record}
            if limit is not None:
                others["k"] = limit
            for batch in dialect.batches(list(by_uid), cypher, "uids", dialect.max_rows, others=others):
                for uid, top in session.run(cypher, dialect.encode({**others, "uids": batch})):
                    out.setdefault(by_uid[uid], []).extend(
                        Relation(
                            id=rid, source=source, target=target, type=rtype,
                            weight=weight_from_key(key), chunk_ids=list(chunk_ids or []),
                        )
                        for rid, source, target, rtype, key, chunk_ids in top
                    )
        for rels in out.values():
            # the server sorted them already; sorting again costs nothing and does not
            # depend on how a server orders rows coming out of collect()
            rels.sort(key=lambda r: (-r.weight, r.id))
        return out


@contextmanager
def _server_errors() -> Iterator[None]:
    """Driver and export errors as :class:`GraphBackendError`."""
    try:
        yield
    except GraphBackendError:
        raise
    except ExportError as exc:
        raise GraphBackendError(f"graph backend: {exc}") from None
    except Exception as exc:
        neo4j = neo4j_driver()
        if isinstance(exc, neo4j.exceptions.Neo4jError):
            raise GraphBackendError(f"graph backend: the server rejected a statement: {one_line(exc)}") from None
        if isinstance(exc, neo4j.exceptions.DriverError):
            raise GraphBackendError(f"graph backend: lost the Bolt server: {one_line(exc)}") from None
        raise


class GraphServer:
    """The Bolt server (Neo4j, or FalkorDB standing in) that holds an index's graph,
    written by ``arborgraph export-neo4j``: the graph route's neighbour lookups run
    there. Connects on first use; :meth:`close` closes the connection."""

    def __init__(
        self,
        uri: str,
        *,
        user: str | None = None,
        password: str | None = None,
        database: str | None = None,
        timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        self.uri = uri
        self.user = user
        self.password = password
        self.database = database
        self.timeout = timeout
        self._driver: Driver | None = None
        self._backends: dict[str, Neo4jGraphBackend] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"GraphServer({self.shown_uri!r}, database={self.database!r})"

    @property
    def shown_uri(self) -> str:
        """The URI as messages show it: without a password."""
        return redact_credentials(self.uri, [self.password])

    @property
    def driver(self) -> Driver:
        with self._lock:
            if self._driver is None:
                with _server_errors():
                    self._driver = connect(self.uri, self.user, self.password, timeout=self.timeout)
            return self._driver

    def backend(self, scope: str, kg: KnowledgeGraph | None = None) -> Neo4jGraphBackend:
        """The lookups on the graph of access scope ``scope``. With ``kg`` (the index's
        graph of that scope) the first call checks that the server holds as many of its
        relations, so that a missing or stale export is an error, not other results."""
        found = self._backends.get(scope)
        if found is not None:
            return found
        backend = Neo4jGraphBackend(self.driver, scope=scope, database=self.database)
        if kg is not None:
            held = backend.relation_count()
            if held != len(kg.relations):
                raise GraphBackendError(
                    f"graph backend {self.shown_uri} holds {held} relations of scope {scope!r}, the index "
                    f"{len(kg.relations)}: export the index to it (arborgraph export-neo4j)"
                )
        self._backends[scope] = backend
        return backend

    def close(self) -> None:
        with self._lock:
            if self._driver is not None:
                self._driver.close()
                self._driver = None
            self._backends.clear()


def graph_server(
    config: GraphBackendConfig, *, password: str | None = None, environ: Mapping[str, str] | None = None
) -> GraphServer | None:
    """The server ``config`` names, not yet connected; None for ``memory``. The password
    is ``password``, else the environment variable ``config.password_env`` (read now;
    unset: no authentication)."""
    if config.uri == "memory":
        return None
    if not config.uri.startswith(BOLT_SCHEMES):
        raise GraphBackendError(f"graph backend {redact_credentials(config.uri, [password])!r}: give 'memory' or a bolt:// or neo4j:// URI")
    if password is None and config.password_env:
        password = (os.environ if environ is None else environ).get(config.password_env)
    return GraphServer(
        config.uri, user=config.user, password=password, database=config.database, timeout=config.timeout_s
    )


class ExpandedEdge(NamedTuple):
    """One relation followed by the walk, seen from the entity it was followed from."""

    entity: str
    neighbour: str
    type: str
    weight: float
    chunk_ids: list[str]


def walk(
    backend: GraphBackend,
    seeds: Iterable[str],
    *,
    hops: int = 2,
    per_node: int | None = 40,
    max_nodes: int | None = None,
) -> tuple[list[str], list[tuple[str, Relation]]]:
    """The bounded walk of graph search: from ``seeds``, ``hops`` times, follow each
    frontier node's ``per_node`` strongest relations, in order, until ``max_nodes``
    nodes are reached. Returns the nodes in discovery order and the relations followed
    (with the node each was followed from). One backend call per hop."""
    nodes: dict[str, None] = dict.fromkeys(seeds)
    followed: list[tuple[str, Relation]] = []
    frontier = list(nodes)

    def full() -> bool:
        return max_nodes is not None and len(nodes) >= max_nodes

    for _hop in range(hops):
        if not frontier:
            break
        adjacency = backend.neighbours(frontier, per_node)
        nxt: list[str] = []
        for e in frontier:
            for rel in adjacency.get(e, []):
                followed.append((e, rel))
                other = rel.target if rel.source == e else rel.source
                if other not in nodes:
                    nodes[other] = None
                    nxt.append(other)
                if full():
                    break
            if full():
                break
        frontier = nxt
        if full():
            break
    return list(nodes), followed


def _expand(
    backend: GraphBackend, entity_ids: Sequence[str], hops: int, limit: int | None, max_nodes: int | None
) -> list[ExpandedEdge]:
    if hops < 1:
        raise ValueError("hops must be at least 1")
    if limit is not None and limit < 0:
        raise ValueError("limit must not be negative")
    _nodes, followed = walk(backend, entity_ids, hops=hops, per_node=limit, max_nodes=max_nodes)
    return [
        ExpandedEdge(e, rel.target if rel.source == e else rel.source, rel.type, rel.weight, list(rel.chunk_ids))
        for e, rel in followed
    ]


def cypher_expand(
    driver: Driver,
    entity_ids: Sequence[str],
    *,
    hops: int = 1,
    limit: int | None = 40,
    max_nodes: int | None = None,
    scope: str = PUBLIC,
    database: str | None = None,
) -> list[ExpandedEdge]:
    """Expand ``entity_ids`` on the server: ``(entity, neighbour, relation type, weight,
    chunk ids)`` for each relation the walk follows — per entity its ``limit`` strongest
    relations, for ``hops`` hops (see :func:`walk`), in walk order."""
    return _expand(Neo4jGraphBackend(driver, scope=scope, database=database), entity_ids, hops, limit, max_nodes)


def memory_expand(
    kg: KnowledgeGraph,
    entity_ids: Sequence[str],
    *,
    hops: int = 1,
    limit: int | None = 40,
    max_nodes: int | None = None,
) -> list[ExpandedEdge]:
    """:func:`cypher_expand` on an in-memory graph (the reference it must match)."""
    return _expand(MemoryGraphBackend(kg), entity_ids, hops, limit, max_nodes)


def relations_among(backend: GraphBackend, entity_ids: Sequence[str]) -> list[Relation]:
    """Every relation with both ends in ``entity_ids``, once each, sorted by id (the
    edges graph search weighs for its personalised PageRank)."""
    members = set(entity_ids)
    seen: dict[str, Relation] = {}
    for rels in backend.neighbours(list(entity_ids), None).values():
        for rel in rels:
            if rel.source in members and rel.target in members:
                seen.setdefault(rel.id, rel)
    return [seen[k] for k in sorted(seen)]


__all__ = [
    "Neo4jGraphBackend", "GraphServer", "graph_server", "ExpandedEdge",
    "walk", "cypher_expand", "memory_expand", "relations_among",
]
