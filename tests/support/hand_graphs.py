"""Small knowledge graphs made by hand over real chunks, so that a naming or report
rule's answer is known: entities mentioned in given chunks, and pages of chunks under
given heading paths."""

from __future__ import annotations

from collections.abc import Sequence

from graphrag.graph import KnowledgeGraph
from graphrag.model import Community, CommunityReport, Entity, Mention, Relation
from ingest.models import Chunk


def entity(eid: str, name: str, chunks: Sequence[str], description: str = "",
           description_chunk: str | None = None) -> Entity:
    """A term mentioned once in each of ``chunks``."""
    return Entity(id=eid, name=name, type="term", mentions=[Mention(c, 0, len(name)) for c in chunks],
                  description=description, description_chunk=description_chunk)


def graph(entities: list[Entity], relations: list[Relation], communities: list[Community]) -> KnowledgeGraph:
    return KnowledgeGraph({e.id: e for e in entities}, {r.id: r for r in relations}, {c.id: c for c in communities})


def page_chunks(pages: dict[str, list[tuple[list[str], str]]]) -> list[Chunk]:
    """One chunk per (heading path, text) of each page, ids ``page#n``, in page order."""
    out = []
    for doc, sections in pages.items():
        for i, (path, text) in enumerate(sections):
            out.append(Chunk(chunk_id=f"{doc}#{i}", doc_id=doc, text=text, heading_path=path, ordinal=i, start=0,
                             end=len(text), n_tokens=len(text.split())))
    return out


def extractive_reports(kg: KnowledgeGraph, chunks: Sequence[Chunk]) -> list[CommunityReport]:
    """The reports the no-LLM writer gives ``kg``'s communities, with the chunks' headings,
    section leads and texts, as an index build gives them."""
    from graphrag.build import section_leads
    from graphrag.reports import ExtractiveReportWriter, write_reports

    return write_reports(kg, ExtractiveReportWriter(), headings={c.chunk_id: list(c.heading_path) for c in chunks},
                         leads=section_leads(chunks), texts={c.chunk_id: c.text for c in chunks})
