"""What each Bolt server needs: the :class:`ServerDialect` interface and its two
implementations, told apart by :func:`detect_dialect`.

:class:`Neo4jDialect` is plain Neo4j: batched ``UNWIND $rows AS row`` of maps through
``MERGE`` on a uniqueness constraint, values passed as they are, managed write
transactions the driver retries.

:class:`FalkorDBDialect` holds every workaround for FalkorDB's experimental Bolt layer,
and nothing outside this module knows them. It pastes parameters into the query text
unescaped, into a 4 KB buffer: so strings are escaped (:func:`falkor_escape`),
statements stay under a byte budget (:func:`statement_len`), and values too long for one
statement are appended in pieces (the hash is written last, so an interrupted export
is redone next time). What bounds its write rate is the number of statements, one
round trip each over its one safe connection: so its rows are positional lists (no key
repeated per row, :func:`row_fields`), packed to fill each statement (:func:`pack_rows`),
and records the diff found absent are CREATEd, sparing it a uid lookup per record. It
sizes a Bolt message with 16 bits, so state and neighbour replies come a few rows per
record; its transactions are no-ops; its named databases all map to one graph.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from arborgraph.core.errors import ExportError
from arborgraph.neo4j.connection import neo4j_driver, one_line
from arborgraph.neo4j.cypher import (
    DEFAULT_BATCH,
    Statement,
    append_cypher,
    hash_cypher,
    ident,
    neo4j_schema,
    neo4j_schema_state_cypher,
    upsert_cypher,
)
from arborgraph.neo4j.records import HASH, MARK, NODE_LABELS, NODE_PROPERTIES, REL_PROPERTIES, UID, Node, Rel

if TYPE_CHECKING:
    from neo4j import Session

RowProgress = Callable[[int], None]  # gets the rows written since its last call

# FalkorDB renders query + parameters into a 4,096-byte stack buffer, and the Bolt message
# must fit its 4,096-byte read chunk (a probe: 4,100 rendered bytes passed, 4,150 lost the
# connection). statement_len() is that rendering, exactly, and bounds the message's
# Packstream size but for its envelope (database name, flags): this leaves 96 bytes for it
FALKOR_BYTE_BUDGET = 4000
# rows per record when reading FalkorDB's state: its Bolt layer sizes a message with 16
# bits (a record over 64 KB hangs the connection), and a row is two or three uids
FALKOR_STATE_GROUP = 64
TX_ROWS = 10_000  # rows per transaction on Neo4j (FalkorDB's transactions are no-ops)


class ServerDialect(Protocol):
    """What the export and the graph backend ask of one kind of server."""

    @property
    def name(self) -> str:
        """``neo4j`` or ``falkordb``."""

    @property
    def version(self) -> str:
        """The server's version, where it says it."""

    @property
    def max_rows(self) -> int:
        """Rows per statement at most."""

    @property
    def max_sessions(self) -> int | None:
        """Concurrent sessions the server is safe with (None: any number)."""

    @property
    def state_group(self) -> int | None:
        """Rows per record when reading the server's state (None: one per record, streamed)."""

    @property
    def relations_per_record(self) -> int:
        """Relations per record in a neighbour lookup's reply (the driver's cost is per record)."""

    def encode(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` as the server must receive them."""

    def batches(
        self, items: Sequence[Any], cypher: str, param: str, batch_size: int, *, others: Mapping[str, Any] | None = None
    ) -> Iterator[list[Any]]:
        """Consecutive runs of ``items`` that fit one statement ``cypher`` as parameter
        ``param`` (``others``: the statement's other parameters)."""

    def existing_indexes(self, session: "Session") -> set[tuple[str, str, str]]:
        """The (entity type, label, property) indexes :meth:`schema_statements` needs to know."""

    def schema_statements(self, existing: Iterable[tuple[str, str, str]] = ()) -> list[Statement]:
        """The constraint and indexes the export creates (``existing``: those already there)."""

    def upsert_statements(
        self,
        kind: str,
        records: Sequence[Node] | Sequence[Rel],
        batch_size: int = DEFAULT_BATCH,
        new: Container[str] = frozenset(),
    ) -> list[Statement]:
        """Statements writing ``records`` of ``kind`` (a label or relationship type);
        ``new``: the uids the server does not have."""

    def run_statements(self, session: "Session", statements: Sequence[Statement], progress: RowProgress | None = None) -> None:
        """Run ``statements`` in order on ``session``; ``progress`` gets the rows of each."""


# -- Neo4j ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Neo4jDialect:
    """Neo4j 4.4, 5.x and 2025.x: map rows, MERGE, values as they are."""

    version: str = ""
    max_rows: int = DEFAULT_BATCH

    @property
    def name(self) -> Literal["neo4j"]:
        return "neo4j"

    @property
    def max_sessions(self) -> int | None:
        return None

    @property
    def state_group(self) -> int | None:
        return None

    @property
    def relations_per_record(self) -> int:
        return 1000

    def encode(self, params: dict[str, Any]) -> dict[str, Any]:
        return params

    def batches(
        self, items: Sequence[Any], cypher: str, param: str, batch_size: int, *, others: Mapping[str, Any] | None = None
    ) -> Iterator[list[Any]]:
        limit = min(batch_size, self.max_rows)
        for i in range(0, len(items), limit):
            yield list(items[i : i + limit])

    def existing_indexes(self, session: "Session") -> set[tuple[str, str, str]]:
        rows = session.run(neo4j_schema_state_cypher()).data()
        return {(r["kind"], r["label"], r["property"]) for r in rows}

    def schema_statements(self, existing: Iterable[tuple[str, str, str]] = ()) -> list[Statement]:
        """What :func:`neo4j_schema` creates, but for what ``existing`` has (a second
        export sends nothing; the statements say IF NOT EXISTS all the same)."""
        have = set(existing)
        return [Statement(cypher) for key, cypher in neo4j_schema() if key not in have]

    def upsert_statements(
        self,
        kind: str,
        records: Sequence[Node] | Sequence[Rel],
        batch_size: int = DEFAULT_BATCH,
        new: Container[str] = frozenset(),
    ) -> list[Statement]:
        """MERGE of map rows, whatever ``new`` holds: through the uniqueness constraint
        MERGE costs little and is safe with several writers."""
        cypher = upsert_cypher(kind)
        if kind in NODE_LABELS:
            rows: list[Any] = [rec.props for rec in records]
        else:
            rows = [{"s": rec.start, "e": rec.end, "p": rec.props} for rec in records]  # type: ignore[union-attr]
        return [Statement(cypher, {"rows": batch}, len(batch)) for batch in self.batches(rows, cypher, "rows", batch_size)]

    def run_statements(self, session: "Session", statements: Sequence[Statement], progress: RowProgress | None = None) -> None:
        """In managed write transactions of up to ``TX_ROWS`` rows, which the driver
        retries on transient errors (the statements are idempotent MERGEs and deletes)."""

        def work(tx: Any, group: list[Statement]) -> None:
            for st in group:
                tx.run(st.cypher, st.params).consume()

        for group in tx_groups(statements):
            session.execute_write(work, group)
            if progress:
                progress(sum(st.rows for st in group))


def tx_groups(statements: Sequence[Statement]) -> Iterator[list[Statement]]:
    """``statements`` in order, in groups of at most ``TX_ROWS`` rows and 200 statements."""
    group: list[Statement] = []
    rows = 0
    for st in statements:
        if group and (rows + st.rows > TX_ROWS or len(group) >= 200):
            yield group
            group, rows = [], 0
        group.append(st)
        rows += st.rows
    if group:
        yield group


NEO4J = Neo4jDialect()


# -- FalkorDB ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FalkorDBDialect:
    """FalkorDB's Bolt layer. ``byte_budget`` bounds query + parameters as it renders
    them; ``escape_strings`` escapes quotes and backslashes, which it pastes into the
    query text as they come (a later version may not: :func:`detect_dialect` probes)."""

    version: str = ""
    escape_strings: bool = True
    byte_budget: int = FALKOR_BYTE_BUDGET
    max_rows: int = DEFAULT_BATCH

    @property
    def name(self) -> Literal["falkordb"]:
        return "falkordb"

    @property
    def max_sessions(self) -> int | None:
        # under concurrent Bolt connections it has left statements unanswered for good
        # and crashed (SIGSEGV in its Bolt RUN handler with 8 sessions); it runs writes
        # one at a time anyway (two sessions wrote the sample manual's nodes slower)
        return 1

    @property
    def state_group(self) -> int | None:
        return FALKOR_STATE_GROUP

    @property
    def relations_per_record(self) -> int:
        # a record over 64 KB hangs the connection; a relation found in many chunks
        # carries a few KB of chunk ids
        return 8

    def encode(self, params: dict[str, Any]) -> dict[str, Any]:
        return _escape_value(params) if self.escape_strings else params

    def batches(
        self,
        items: Sequence[Any],
        cypher: str,
        param: str,
        batch_size: int,
        *,
        others: Mapping[str, Any] | None = None,
        sizes: Sequence[int] | None = None,
        pack: bool = False,
    ) -> Iterator[list[Any]]:
        """Runs within the byte budget (``sizes``: the items' :func:`wire_len`, when
        already known): consecutive, or with ``pack`` (order does not matter) grouped to
        fill statements (:func:`pack_rows`)."""
        limit = min(batch_size, self.max_rows)
        room = self.byte_budget - statement_len(cypher, {**(others or {}), param: []})
        full = [(sizes[i] if sizes is not None else wire_len(item, self.escape_strings)) + 2 for i, item in enumerate(items)]
        for size in full:
            if size > room:
                raise ExportError(f"a value of {size} bytes does not fit FalkorDB's statement budget")
        if pack:
            for group in pack_rows(full, room, limit):
                yield [items[i] for i in group]
            return
        batch: list[Any] = []
        used = 0
        for item, size in zip(items, full):
            if batch and (used + size > room or len(batch) >= limit):
                yield batch
                batch, used = [], 0
            batch.append(item)
            used += size
        if batch:
            yield batch

    def existing_indexes(self, session: "Session") -> set[tuple[str, str, str]]:
        rows = session.run(
            "CALL db.indexes() YIELD label, properties, entitytype RETURN label, properties, entitytype"
        ).data()
        return {(r["entitytype"], r["label"], p) for r in rows for p in r["properties"]}

    def schema_statements(self, existing: Iterable[tuple[str, str, str]] = ()) -> list[Statement]:
        """Only the uid index, unless ``existing`` has it: it has neither ``IF NOT
        EXISTS`` nor constraints in Cypher, and index upkeep is what its writes spend
        most on."""
        if ("NODE", MARK, UID) in set(existing):
            return []
        return [Statement(f"CREATE INDEX FOR (n:{MARK}) ON (n.{UID})")]

    def upsert_statements(
        self,
        kind: str,
        records: Sequence[Node] | Sequence[Rel],
        batch_size: int = DEFAULT_BATCH,
        new: Container[str] = frozenset(),
    ) -> list[Statement]:
        """CREATE of the records whose uid is in ``new``, MERGE of the others, in
        positional rows packed to fill statements; a record too long for a statement
        goes in cut, its long values follow in append statements, and its hash last.
        CREATE only because the server has no uniqueness constraint and one writer."""
        is_node = kind in NODE_LABELS
        encode = _positional_encoder(kind)
        budget, esc = self.byte_budget, self.escape_strings
        out: list[Statement] = []
        rests: dict[str, list[tuple[dict[str, Any], Any]]] = defaultdict(list)  # property -> (key row, tail)
        hashes: list[dict[str, Any]] = []
        groups = [(True, [r for r in records if r.uid in new]), (False, [r for r in records if r.uid not in new])]
        for create, group in groups:
            if not group:
                continue
            cypher = node_write_cypher(kind, create) if is_node else rel_write_cypher(kind, create)
            room = budget - statement_len(cypher, {"rows": []}) - 4
            # rows are escaped (when the server needs it) and measured in one pass, once each
            rows: list[Any] = []
            sizes: list[int] = []
            for rec in group:
                props = rec.props
                row, size = _encoded_row(encode(rec, props), esc)
                if size > room:
                    key_row = {"uid": rec.uid} if is_node else {"s": rec.start, "uid": rec.uid}  # type: ignore[union-attr]
                    head, tails = _fit(props, room, esc, lambda p, rec=rec: wire_len(encode(rec, p), esc))
                    row, size = _encoded_row(encode(rec, head), esc)
                    hashes.append({**key_row, "h": props[HASH]})
                    for prop, (rest,) in tails.items():
                        rests[prop].append((key_row, rest))
                sizes.append(size)
                rows.append(row)
            out += [
                Statement(cypher, {"rows": batch}, len(batch))
                for batch in self.batches(rows, cypher, "rows", batch_size, sizes=sizes, pack=True)
            ]
        for prop in sorted(rests):
            cypher = append_cypher(kind, prop)
            pieces = [
                (key_row, _pieces(rest, budget - statement_len(cypher, {"rows": [{**key_row, "v": ""}]}) - 4, esc))
                for key_row, rest in rests[prop]
            ]
            for i in range(max(len(p) for _, p in pieces)):
                # piece i of every value: one statement never holds two pieces of one value
                piece_rows = [{**key_row, "v": p[i]} for key_row, p in pieces if i < len(p)]
                out += self._ordered(cypher, piece_rows, batch_size)
        if hashes:
            out += self._ordered(hash_cypher(kind), hashes, batch_size)
        return out

    def _ordered(self, cypher: str, rows: Sequence[dict[str, Any]], batch_size: int) -> list[Statement]:
        return [
            Statement(cypher, self.encode({"rows": batch}), 0, ordered=True)
            for batch in self.batches(rows, cypher, "rows", batch_size)
        ]

    def run_statements(self, session: "Session", statements: Sequence[Statement], progress: RowProgress | None = None) -> None:
        """In one unmanaged transaction (a no-op there, but it keeps the connection)
        that is never retried, because appending a piece of a long value is not
        idempotent. A failure stops the export, and as the value's hash is written only
        after its last piece, the next export writes the record again."""
        if not statements:
            return
        with session.begin_transaction() as tx:
            for st in statements:
                tx.run(st.cypher, st.params).consume()
                if progress:
                    progress(st.rows)
            tx.commit()


def detect_dialect(session: "Session", *, batch_size: int = DEFAULT_BATCH) -> ServerDialect:
    """Tell Neo4j from FalkorDB (both announce themselves as Neo4j).

    FalkorDB lists its own procedures (``db.idx.*``, ``algo.*``) in ``dbms.procedures()``;
    Neo4j 5 no longer has that procedure and answers ``dbms.components()`` instead. The
    FalkorDB probe goes first because a failed statement leaves FalkorDB's Bolt layer
    slow to accept the next connection (its handshake then waits out the driver's
    60 s timeout). For FalkorDB a backslash round trip shows whether string parameters
    are pasted into the query unescaped (its lexer then reads ``\\\\`` as one backslash).
    """
    neo4j = neo4j_driver()
    names: set[str] = set()
    try:
        names = {r["name"] for r in session.run("CALL dbms.procedures() YIELD name RETURN name").data()}
    except neo4j.exceptions.Neo4jError:
        pass
    if any(n.startswith("db.idx.") for n in names) and any(n.startswith("algo.") for n in names):
        probe = "a\\\\b"
        echoed = session.run("RETURN $v AS v", v=probe).single()
        return FalkorDBDialect(escape_strings=echoed is not None and echoed["v"] != probe, max_rows=batch_size)
    try:
        rows = session.run("CALL dbms.components() YIELD name, versions RETURN name, versions").data()
    except neo4j.exceptions.Neo4jError as exc:
        raise ExportError(f"unsupported Bolt server (neither Neo4j nor FalkorDB): {one_line(exc)}") from None
    for row in rows:
        if str(row.get("name", "")).startswith("Neo4j"):
            return Neo4jDialect(version=str((row.get("versions") or [""])[0]), max_rows=batch_size)
    raise ExportError("unsupported Bolt server (neither Neo4j nor FalkorDB)")


# -- FalkorDB's positional rows -----------------------------------------------------------


def row_fields(kind: str) -> tuple[str, ...]:
    """The property order of a positional row of ``kind`` (a label or relationship
    type); a relationship's row starts with its start and end uids."""
    spec = NODE_PROPERTIES[kind] if kind in NODE_LABELS else REL_PROPERTIES[kind]
    return (UID, *(name for name, _ in spec), HASH)


def _positional_map(kind: str, offset: int) -> str:
    return "{" + ", ".join(f"{ident(f)}: r[{i + offset}]" for i, f in enumerate(row_fields(kind))) + "}"


def node_write_cypher(label: str, create: bool) -> str:
    """Upsert of positional node rows: CREATE (records the server lacks) or MERGE on
    uid. A null in a row leaves the property out, as an absent key does."""
    props = _positional_map(label, 0)
    if create:
        return f"UNWIND $rows AS r CREATE (n:{MARK}:{ident(label)} {props})"
    return f"UNWIND $rows AS r MERGE (n:{MARK}:{ident(label)} {{{UID}: r[0]}}) SET n = {props}"


def rel_write_cypher(rel_type: str, create: bool) -> str:
    """Upsert of positional relationship rows ``[start uid, end uid, uid, ...]``."""
    props = _positional_map(rel_type, 2)
    ends = f"UNWIND $rows AS r MATCH (a:{MARK} {{{UID}: r[0]}}) MATCH (b:{MARK} {{{UID}: r[1]}}) "
    if create:
        return ends + f"CREATE (a)-[x:{ident(rel_type)} {props}]->(b)"
    return ends + f"MERGE (a)-[x:{ident(rel_type)} {{{UID}: r[2]}}]->(b) SET x = {props}"


def _positional_encoder(kind: str) -> Callable[["Node | Rel", dict[str, Any]], list[Any]]:
    """How a record (with ``props`` in place of its own) travels: a list in
    :func:`row_fields` order."""
    is_node = kind in NODE_LABELS
    fields = row_fields(kind)
    known = set(fields)

    def positional(rec: "Node | Rel", props: dict[str, Any]) -> list[Any]:
        if not known.issuperset(props):
            raise ExportError(f"{kind} record {rec.uid!r} has undeclared properties {sorted(set(props) - known)}")
        values = [props.get(f) for f in fields]
        return values if is_node else [rec.start, rec.end, *values]  # type: ignore[union-attr]

    return positional


# -- FalkorDB's escaping and sizing ---------------------------------------------------------


def falkor_escape(text: str) -> str:
    """A string as FalkorDB's Bolt layer must receive it: it pastes the value between
    single quotes, and its lexer reads backslash escapes."""
    if "\0" in text:
        raise ExportError("FalkorDB's Bolt layer cannot carry a NUL character in a string")
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _escape_str(value: str) -> str:
    return falkor_escape(value) if ("\\" in value or "'" in value or "\0" in value) else value


def _escape_value(value: Any) -> Any:
    t = type(value)
    if t is str:
        return _escape_str(value)
    if t is list:
        # rows are mostly flat lists of strings: no recursive call for those
        return [_escape_str(v) if type(v) is str else _escape_value(v) for v in value]
    if t is dict:
        return {k: _escape_value(v) for k, v in value.items()}
    return value


def _packstream_int_len(value: int) -> int:
    if -16 <= value <= 127:
        return 1
    if -128 <= value <= 127:
        return 2
    if -32768 <= value <= 32767:
        return 3
    return 5 if -(2**31) <= value < 2**31 else 9


def _str_len(value: str, escape: bool) -> int:
    n = (len(value) if value.isascii() else len(value.encode())) + 2
    if escape and ("\\" in value or "'" in value):
        n += value.count("\\") + value.count("'")
    return n


def wire_len(value: Any, escape: bool = True) -> int:
    """Bytes ``value`` takes where FalkorDB renders parameters as query text, and an
    upper bound of its Packstream size too (the whole message must also fit the
    server's 4 KB read chunk)."""
    t = type(value)
    if t is str:
        return _str_len(value, escape)
    if t is list or t is tuple:
        if not value:
            return 2
        # loops rather than sum() over generators: sizing every row is most of planning
        n = 2 * len(value)
        for v in value:
            n += _str_len(v, escape) if type(v) is str else wire_len(v, escape)
        return n
    if t is dict:
        if not value:
            return 2
        n = 4 * len(value)
        for k, v in value.items():
            n += len(k) + wire_len(v, escape)
        return n
    if value is None:
        return 4
    if t is bool:
        return 5
    if t is int:
        return max(len(str(value)), _packstream_int_len(value))
    if t is float:
        return max(len(f"{value:f}"), 9)
    raise ExportError(f"cannot send a {t.__name__} value")


def statement_len(cypher: str, params: Mapping[str, Any], escape: bool = True) -> int:
    """Bytes of ``CYPHER k=v ... <query>``, the text FalkorDB builds from a RUN message."""
    return len("CYPHER ") + sum(len(k) + 2 + wire_len(v, escape) for k, v in params.items()) + len(cypher.encode())


def _encoded_row(row: list[Any], escape: bool) -> tuple[list[Any], int]:
    """A positional ``row`` as the server must receive it (escaped if ``escape``) and
    its :func:`wire_len`, in one pass."""
    if not escape:
        return row, wire_len(row, False)
    out = []
    n = 2 * len(row) if row else 2
    for v in row:  # mostly strings, escaped and measured in one step
        t = type(v)
        if t is str:
            v = _escape_str(v)
            n += _str_len(v, False)
        elif v is None:
            n += 4
        elif t is int or t is float:
            n += wire_len(v, False)
        else:
            v = _escape_value(v)
            n += wire_len(v, False)
        out.append(v)
    return out, n


# -- FalkorDB's packing and splitting -------------------------------------------------------


def pack_rows(sizes: Sequence[int], room: int, limit: int, window: int = 256, carry: int = 8) -> list[list[int]]:
    """Indices of rows grouped so that each group's sizes sum to at most ``room`` and
    it has at most ``limit`` rows: first fit decreasing within windows of ``window``
    consecutive rows, the ``carry`` emptiest groups of a window staying open for the
    next (bounded work on large exports; consecutive runs leave about half a long
    row's room unused per statement)."""
    groups: list[list[int]] = []
    bins: list[list[int]] = []
    free: list[int] = []
    for start in range(0, len(sizes), window):
        for i in sorted(range(start, min(start + window, len(sizes))), key=lambda i: (-sizes[i], i)):
            for b, left in enumerate(free):
                if sizes[i] <= left and len(bins[b]) < limit:
                    bins[b].append(i)
                    free[b] -= sizes[i]
                    break
            else:
                bins.append([i])
                free.append(room - sizes[i])
        keep = sorted(range(len(bins)), key=lambda b: (-free[b], b))[:carry] if start + window < len(sizes) else []
        groups += [sorted(bins[b]) for b in range(len(bins)) if b not in keep]
        bins, free = [bins[b] for b in keep], [free[b] for b in keep]
    return groups


def _split_value(value: Any, room: int, escape: bool) -> tuple[Any, Any]:
    """A head of ``value`` (a string or list) that renders in ``room`` bytes, and the rest."""
    if isinstance(value, str):
        used, cut = 2, 0
        for ch in value:
            size = len(ch.encode()) + (1 if escape and ch in "\\'" else 0)
            if used + size > room:
                break
            used += size
            cut += 1
        return value[:cut], value[cut:]
    used, cut = 2, 0
    for item in value:
        size = wire_len(item, escape) + 2
        if used + size > room:
            break
        used += size
        cut += 1
    return list(value[:cut]), list(value[cut:])


def _fit(
    props: dict[str, Any], room: int, escape: bool, measure: Callable[[dict[str, Any]], int]
) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """``props`` (too long for ``room`` bytes as ``measure`` renders a row of them) cut
    to fit, without its hash, and per property the tail to append."""
    head = {k: v for k, v in props.items() if k != HASH}
    tails: dict[str, list[Any]] = {}
    splittable = sorted(
        (k for k, v in head.items() if isinstance(v, (str, list)) and k != UID),
        key=lambda k: -wire_len(head[k], escape),
    )
    for key in splittable:
        excess = measure(head) - room
        if excess <= 0:
            break
        keep = max(wire_len(head[key], escape) - excess, 2)
        head[key], rest = _split_value(head[key], keep, escape)
        if rest:
            tails[key] = [rest]
    if measure(head) > room:
        raise ExportError(f"record {props.get(UID)!r} does not fit FalkorDB's statement budget")
    return head, tails


def _pieces(value: Any, room: int, escape: bool) -> list[Any]:
    out = []
    while value:
        head, value = _split_value(value, room, escape)
        if not head:
            raise ExportError("a list element is too long for FalkorDB's statement budget")
        out.append(head)
    return out
