"""CSV files for ``neo4j-admin database import full``: a bulk load into an empty database."""

from __future__ import annotations

import shlex
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arborgraph.core.errors import ExportError
from arborgraph.neo4j.cypher import neo4j_schema_cypher
from arborgraph.neo4j.records import (
    HASH,
    MARK,
    NODE_LABELS,
    NODE_PROPERTIES,
    REL_PROPERTIES,
    REL_TYPES,
    STR,
    STR_LIST,
    UID,
    GraphRecords,
    Node,
    Rel,
)

_ARRAY_DELIMITERS = (";", "|", "\x1f")


def _csv_field(value: Any, delimiter: str) -> str:
    if value is None:
        return ""  # an empty unquoted field: no property
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        value = delimiter.join(str(v) for v in value)
    text = str(value)
    return '"' + text.replace('"', '""') + '"'


def _pick_delimiter(records: GraphRecords) -> str:
    used: set[str] = set()
    specs = {**NODE_PROPERTIES, **REL_PROPERTIES}
    for rec in [*records.nodes, *records.rels]:
        kind = rec.label if isinstance(rec, Node) else rec.type
        for name, typ in specs[kind]:
            if typ == STR_LIST:
                for item in rec.props.get(name, []):
                    used.update(ch for ch in _ARRAY_DELIMITERS if ch in item)
    for ch in _ARRAY_DELIMITERS:
        if ch not in used:
            return ch
    raise ExportError("every array delimiter candidate occurs in the data")


def _header(name: str, typ: str) -> str:
    return name if typ == STR else f"{name}:{typ}"


@dataclass
class CsvReport:
    directory: Path
    files: list[str]
    nodes: int
    relationships: int
    array_delimiter: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "files": self.files,
            "nodes": self.nodes,
            "relationships": self.relationships,
            "array_delimiter": self.array_delimiter,
        }


def _csv_name(kind: str, is_node: bool) -> str:
    return f"{'nodes' if is_node else 'rels'}_{kind.lower()}.csv"


def write_csv(records: GraphRecords, out_dir: str | Path) -> CsvReport:
    """Node and relationship CSVs for ``neo4j-admin database import full``, plus
    ``import.sh`` (the command) and ``schema.cypher`` (constraint and indexes to run after).

    Headers use ``uid:ID`` (one ID space: uids are unique across labels), ``:LABEL``,
    ``:START_ID``, ``:END_ID``, ``:TYPE`` and typed properties; every string is quoted
    with doubled quotes (RFC 4180), so the import needs ``--multiline-fields=true``.
    """
    out = Path(out_dir)
    ours = {_csv_name(k, True) for k in NODE_LABELS} | {_csv_name(t, False) for t in REL_TYPES}
    ours |= {"import.sh", "schema.cypher"}
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out} exists and is not a directory")
    if out.is_dir():
        strangers = sorted(p.name for p in out.iterdir() if p.name not in ours)
        if strangers:
            raise ExportError(f"{out} holds other files ({strangers[0]}, ...); give an empty or new directory")
    out.mkdir(parents=True, exist_ok=True)
    delim = _pick_delimiter(records)
    by_label: dict[str, list[Node]] = defaultdict(list)
    for n in records.nodes:
        by_label[n.label].append(n)
    by_type: dict[str, list[Rel]] = defaultdict(list)
    for r in records.rels:
        by_type[r.type].append(r)
    files: list[str] = []
    for label in NODE_LABELS:
        spec = NODE_PROPERTIES[label]
        name = _csv_name(label, True)
        with (out / name).open("w", encoding="utf-8", newline="") as fh:
            fh.write(",".join([f"{UID}:ID", ":LABEL", *(_header(n, t) for n, t in spec), HASH]) + "\n")
            labels = _csv_field(f"{MARK}{delim}{label}", delim)
            for node in by_label.get(label, []):
                cells = [_csv_field(node.uid, delim), labels]
                cells += [_csv_field(node.props.get(n), delim) for n, _ in spec]
                cells.append(_csv_field(node.props[HASH], delim))
                fh.write(",".join(cells) + "\n")
        files.append(name)
    for t in REL_TYPES:
        spec = REL_PROPERTIES[t]
        name = _csv_name(t, False)
        with (out / name).open("w", encoding="utf-8", newline="") as fh:
            fh.write(",".join([":START_ID", ":END_ID", ":TYPE", UID, *(_header(n, ty) for n, ty in spec), HASH]) + "\n")
            for rel in by_type.get(t, []):
                cells = [_csv_field(rel.start, delim), _csv_field(rel.end, delim), _csv_field(t, delim)]
                cells.append(_csv_field(rel.uid, delim))
                cells += [_csv_field(rel.props.get(n), delim) for n, _ in spec]
                cells.append(_csv_field(rel.props[HASH], delim))
                fh.write(",".join(cells) + "\n")
        files.append(name)
    # the database name goes first: after the last --relationships it would be read as one more file
    args = ["neo4j-admin", "database", "import", "full"]
    options = ["--multiline-fields=true", f"--array-delimiter={delim}"]
    options += [f"--nodes={_csv_name(k, True)}" for k in NODE_LABELS]
    options += [f"--relationships={_csv_name(t, False)}" for t in REL_TYPES]
    script = (
        "#!/bin/sh\n"
        "# Bulk-load these files into an empty Neo4j database (default name: neo4j), then run\n"
        "# schema.cypher (e.g. cypher-shell -d DATABASE -f schema.cypher) for the constraint and indexes.\n"
        "set -e\n"
        'cd "$(dirname "$0")"\n'
        f'exec {" ".join(shlex.quote(a) for a in args)} "${{1:-neo4j}}" {" ".join(shlex.quote(a) for a in options)}\n'
    )
    (out / "import.sh").write_text(script, encoding="utf-8")
    (out / "schema.cypher").write_text("".join(cypher + ";\n" for cypher in neo4j_schema_cypher()), encoding="utf-8")
    files += ["import.sh", "schema.cypher"]
    return CsvReport(out, files, len(records.nodes), len(records.rels), delim)
