"""A chunk's extraction as plain tuples, for sending it from a pool worker to the build.

Pickling the slotted dataclasses of an extraction cost about as much as a third of the
extraction itself; plain tuples are cheap. Text the receiver already holds is not sent:
a relation whose description is its sentence travels as the sentence's offsets in the
chunk text, and :func:`decode_extraction` cuts it out of the chunk again.
"""

from __future__ import annotations

from typing import Any

from graphrag.model import ChunkExtraction, ExtractedEntity, ExtractedRelation

# (entities, relations): each entity (name, type, spans, description, aliases); each
# relation (source, target, type, weight, description or None for its span's text, span)
ExtractionRow = tuple[tuple[Any, ...], tuple[Any, ...]]


def encode_extraction(text: str, found: ChunkExtraction) -> ExtractionRow:
    """``found`` (an extraction from a chunk whose text is ``text``) as a row for
    :func:`decode_extraction`."""
    entities = tuple((e.name, e.type, e.spans, e.description, e.aliases) for e in found.entities)
    relations = tuple(
        (
            r.source, r.target, r.type, r.weight,
            None if r.span is not None and r.description == text[r.span[0] : r.span[1]] else r.description,
            r.span,
        )
        for r in found.relations
    )
    return entities, relations


def decode_extraction(chunk: Any, row: ExtractionRow) -> ChunkExtraction:
    """The extraction of ``chunk`` (anything with ``chunk_id`` and ``text``) from the row
    :func:`encode_extraction` made of it."""
    entities, relations = row
    text = chunk.text
    return ChunkExtraction(
        chunk_id=chunk.chunk_id,
        entities=[ExtractedEntity(*e) for e in entities],
        relations=[
            ExtractedRelation(s, t, kind, w, text[span[0] : span[1]] if d is None else d, span)
            for s, t, kind, w, d, span in relations
        ],
    )
