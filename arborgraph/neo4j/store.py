"""Neo4j as the store of a question's flat candidates: chunk search by the database's
own vector index and full-text index (Lucene's BM25), the caller's access checked
inside the Cypher, so a chunk the caller may not read never leaves the database.

:func:`export_search` gives the exported ``Chunk`` nodes their embeddings (only those
without one: an export that rewrote a chunk dropped its embedding with its old
content) and creates the two indexes. :class:`Neo4jStore` searches both for the chunks
a caller may read; :meth:`arborgraph.kb.KnowledgeBase.query_store` ranks a question's
flat hits among them, and every route runs from there as in process.

What a caller may read: a chunk's ``scope`` is ``public`` or ``acl:`` followed by the
principals of its document's access list (see :func:`arborgraph.index.scoped.scope_of`);
a chunk without a scope, an empty list, or an anonymous caller on a restricted chunk
reads as not allowed. Document versions and validity dates are the index's own (see
:meth:`arborgraph.kb.KnowledgeBase.query_store`). The trees, graphs and community
reports the routes read are the index's in memory, not the database's.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arborgraph.core.errors import ExportError
from arborgraph.neo4j.connection import export_errors, neo4j_driver, verify
from arborgraph.neo4j.records import CHUNK, MARK, UID, chunk_uid

if TYPE_CHECKING:
    from neo4j import Driver

VECTOR_INDEX = "arborgraph_chunk_embedding"
TEXT_INDEX = "arborgraph_chunk_text"
EMBEDDING = "embedding"
EMBEDDING_BATCH = 500
# the node saying which index generation the search indexes were last exported from
# (outside the export's own label, whose diff would delete it)
SEARCH_INFO = "ArborgraphSearch"
# how long a store trusts the generation it last read from the database
GENERATION_SECONDS = 5.0

# the access check, inside every search: only what ``$principal`` may read is returned
def readable(node: str = "node") -> str:
    """The Cypher condition that ``$principal`` may read the chunk ``node``."""
    return (
        f"({node}.scope = 'public' OR ($principal IS NOT NULL AND $principal <> '' AND {node}.scope STARTS WITH 'acl:' "
        f"AND $principal IN split(substring({node}.scope, 4), ',')))"
    )


READABLE = readable()


def vector_index_cypher(dimensions: int) -> str:
    return (
        f"CREATE VECTOR INDEX {VECTOR_INDEX} IF NOT EXISTS FOR (n:{CHUNK}) ON (n.{EMBEDDING}) "
        f"OPTIONS {{indexConfig: {{`vector.dimensions`: {int(dimensions)}, `vector.similarity_function`: 'cosine'}}}}"
    )


def text_index_cypher() -> str:
    return f"CREATE FULLTEXT INDEX {TEXT_INDEX} IF NOT EXISTS FOR (n:{CHUNK}) ON EACH [n.text]"


# Both procedures yield their nodes best first: without an ORDER BY the LIMIT stops
# reading once it has ``$k`` readable ones (with one, every match of a common word was
# read and sorted: 20-30 ms a question on a 5,000-chunk manual); one record of two lists
# comes back faster than a record per chunk.
def dense_search_cypher() -> str:
    """The ``$k`` nearest readable chunks of the ``$depth`` the vector index returns, and
    how many it returned (fewer than ``$depth``: there are no more)."""
    return (
        f"CALL db.index.vector.queryNodes('{VECTOR_INDEX}', $depth, $vector) YIELD node, score "
        "WITH collect([node, score]) AS hits "
        f"WITH size(hits) AS yielded, [h IN hits WHERE h[0]:{MARK} AND {readable('h[0]')}][..$k] AS kept "
        "RETURN yielded, [h IN kept | h[0].id] AS ids, [h IN kept | h[1]] AS scores"
    )


def text_search_cypher() -> str:
    """The ``$k`` best readable chunks by the full-text index's score (BM25)."""
    return (
        f"CALL db.index.fulltext.queryNodes('{TEXT_INDEX}', $query) YIELD node, score "
        f"WHERE node:{MARK} AND {READABLE} "
        "WITH node, score LIMIT $k RETURN collect(node.id) AS ids, collect(score) AS scores"
    )


_WORD = re.compile(r"\w+", re.UNICODE)


def lucene_query(question: str) -> str:
    """The question's words as a Lucene query (any word may match, BM25 weighs them):
    words only, lower-cased, so that no operator or special character reaches Lucene,
    without the stop words the index's own BM25 leaves out (a "what" or "how" matches
    most chunks and ranks none); all of them for a question of stop words only."""
    from arborgraph.core.text import BM25_STOPWORDS

    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(question)))
    return " ".join([w for w in words if w not in BM25_STOPWORDS] or words)


@dataclass
class SearchExport:
    """What :func:`export_search` wrote."""

    embeddings: int
    dimensions: int

    def as_dict(self) -> dict[str, Any]:
        return {"embeddings": self.embeddings, "dimensions": self.dimensions}


def export_search(index_dir: str | Path, driver: "Driver", *, database: str | None = None) -> SearchExport:
    """Embeddings on the exported chunks that lack one, and the vector and full-text
    indexes (run after :func:`~arborgraph.neo4j.export.export_index` of the same index).
    Exported before from an index embedded with another model (or of other dimensions):
    every chunk's embedding is written again and the vector index made anew, so that no
    question is compared with the other model's vectors."""
    from arborgraph.index import schema as S
    from arborgraph.index.manifest import index_manifest
    from arborgraph.index.store import open_generation

    generation = open_generation(Path(index_dir))
    if not generation.has_vectors(S.CHUNK_VECTORS):
        raise ExportError(f"{index_dir} has no chunk vectors (built without an embedding model)")
    vectors = generation.vectors(S.CHUNK_VECTORS)
    model = index_manifest(generation).mode.embedding
    chunk_ids = generation.table(S.CHUNKS).column(S.CHUNK_ID).to_pylist()
    row_of = {uid: row for row, uid in enumerate(chunk_uid(c) for c in chunk_ids)}
    verify(driver)
    written = 0
    with export_errors(), driver.session(database=database) as session:
        before = session.run(f"MATCH (m:{SEARCH_INFO} {{id: 'search'}}) RETURN m.model AS model").single()
        if before is not None and before["model"] != model:
            # another model's vectors (or none recorded): none of them is comparable
            session.run(f"DROP INDEX {VECTOR_INDEX} IF EXISTS").consume()
            session.run(
                f"MATCH (n:{MARK}:{CHUNK}) CALL {{ WITH n REMOVE n.{EMBEDDING} }} IN TRANSACTIONS OF {EMBEDDING_BATCH * 20} ROWS"
            ).consume()
        missing = [
            r["uid"] for r in session.run(f"MATCH (n:{MARK}:{CHUNK}) WHERE n.{EMBEDDING} IS NULL RETURN n.{UID} AS uid")
        ]
        wanted = [uid for uid in missing if uid in row_of]
        for start in range(0, len(wanted), EMBEDDING_BATCH):
            rows = [{"uid": uid, "v": vectors[row_of[uid]].astype(float).tolist()} for uid in wanted[start : start + EMBEDDING_BATCH]]
            session.execute_write(
                lambda tx, rows=rows: tx.run(
                    f"UNWIND $rows AS row MATCH (n:{MARK}:{CHUNK} {{{UID}: row.uid}}) "
                    f"CALL db.create.setNodeVectorProperty(n, '{EMBEDDING}', row.v)",
                    rows=rows,
                ).consume()
            )
            written += len(rows)
        session.run(vector_index_cypher(vectors.shape[1])).consume()
        session.run(text_index_cypher()).consume()
        session.run("CALL db.awaitIndexes(300)").consume()
        session.run(
            f"MERGE (m:{SEARCH_INFO} {{id: 'search'}}) SET m.generation = $generation, m.chunks = $chunks, m.model = $model",
            generation=generation.name, chunks=len(chunk_ids), model=model,
        ).consume()
    return SearchExport(written, int(vectors.shape[1]))


def open_store(uri: str, user: str | None, password: str | None, *, database: str | None = None) -> "Neo4jStore":
    """A :class:`Neo4jStore` on ``uri``, connected and checked to have both search
    indexes; ExportError in one line otherwise (the driver then closed)."""
    from arborgraph.neo4j.connection import connect

    store = Neo4jStore(connect(uri, user, password), database=database)
    try:
        store.check_search_indexes()
    except BaseException:
        store.driver.close()
        raise
    return store


class Neo4jStore:
    """Chunk searches on the database an index was exported to (with
    :func:`export_search`), for :meth:`arborgraph.kb.KnowledgeBase.query_store`.
    ``driver`` stays the caller's."""

    def __init__(self, driver: "Driver", *, database: str | None = None) -> None:
        self.driver = driver
        self.database = database
        self._generation: tuple[float, str | None] | None = None  # (read at, name)

    def generation(self) -> str | None:
        """The index generation ("gen-000007") the search indexes were last exported
        from (None: exported before this was recorded), read again after
        :data:`GENERATION_SECONDS`."""
        kept = self._generation
        if kept is not None and time.monotonic() - kept[0] < GENERATION_SECONDS:
            return kept[1]
        with export_errors(), self.driver.session(database=self.database) as session:
            found = session.run(f"MATCH (m:{SEARCH_INFO} {{id: 'search'}}) RETURN m.generation AS g").single()
        name = found["g"] if found is not None else None
        self._generation = (time.monotonic(), name)
        return name

    def search(
        self, question: str, vector: Sequence[float] | None, *, principal: str | None = None, depth: int = 100
    ) -> dict[str, list[str]]:
        """Chunk ids, best first, that ``principal`` may read: ``bm25`` from the
        full-text index (``question``'s words), ``dense`` from the vector index (its
        embedding ``vector``, if any); ``depth`` of each at most."""
        from arborgraph.core.cancel import time_left

        neo4j = neo4j_driver()
        # the request's time limit, read here: the searches' threads do not inherit it
        left = time_left()
        timeout = None if left is None else max(left, 0.001)
        params = {"principal": principal, "k": depth}
        searches: dict[str, tuple[str, dict[str, Any]]] = {}
        query = lucene_query(question)
        if query:
            searches["bm25"] = (text_search_cypher(), {**params, "query": query})
        if vector is not None:
            searches["dense"] = (dense_search_cypher(), {**params, "depth": depth + depth // 4, "vector": [float(x) for x in vector]})

        def ranked(cypher: str, values: dict[str, Any]) -> list[str]:
            with self.driver.session(database=self.database) as session:
                found = session.run(neo4j.Query(cypher, timeout=timeout), values).single(strict=True)
                if "depth" in values and len(found["ids"]) < depth and found["yielded"] >= values["depth"]:
                    # the vector index returns its nearest before the access check: a
                    # caller who may read few of them asks again, four times as deep
                    deeper = {**values, "depth": depth * 4}
                    found = session.run(neo4j.Query(cypher, timeout=timeout), deeper).single(strict=True)
            rows = zip(found["ids"], found["scores"])
            return [cid for cid, _ in sorted(rows, key=lambda row: -row[1])]  # stable: the index's order on ties

        with export_errors(), self._search_indexes():
            if len(searches) < 2:
                return {name: ranked(*search) for name, search in searches.items()}
            # the two searches at once, each on its own connection: the database answers
            # them in parallel while this process waits on both
            with ThreadPoolExecutor(max_workers=len(searches)) as pool:
                futures = {name: pool.submit(ranked, *search) for name, search in searches.items()}
                return {name: future.result() for name, future in futures.items()}

    def check_search_indexes(self) -> None:
        """ExportError (one line saying what to run) unless both search indexes are
        there and online."""
        with export_errors(), self.driver.session(database=self.database) as session:
            states = {r["name"]: r["state"] for r in session.run("SHOW INDEXES YIELD name, state")}
        missing = [name for name in (TEXT_INDEX, VECTOR_INDEX) if states.get(name) != "ONLINE"]
        if missing:
            raise ExportError(self._no_indexes())

    def _no_indexes(self) -> str:
        database = f"database '{self.database}'" if self.database else "the database"
        return (
            f"{database} has no search indexes ({TEXT_INDEX}, {VECTOR_INDEX}): export them with "
            "`arborgraph export-neo4j --index DIR --search` to the same server, then ask again"
        )

    @contextmanager
    def _search_indexes(self) -> Iterator[None]:
        """A search on a database exported without its search indexes fails with the
        procedure's Java exception: say in one line what to run instead."""
        neo4j = neo4j_driver()
        try:
            yield
        except neo4j.exceptions.ClientError as exc:
            if "TransactionTimedOut" in (exc.code or ""):
                raise TimeoutError("the Neo4j store's search took longer than the time left") from None
            text = str(exc.message or exc)
            if "no such" not in text.lower() or not (TEXT_INDEX in text or VECTOR_INDEX in text):
                raise
            raise ExportError(self._no_indexes()) from None
