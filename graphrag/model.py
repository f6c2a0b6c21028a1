"""Records of the knowledge graph: extraction output, entities, relations, communities.

Offsets in :class:`Mention` and :class:`Evidence` index into the chunk text
(``Chunk.text``); add ``Chunk.start`` to get an offset in the document.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Relation types the LLM extractor is offered. The rule extractor's types are the
# verbs of the sentences themselves (see graphrag.extract.relations); two entities
# only named together are a weighted co-occurrence.
RELATION_TYPES = (
    "is_a",
    "part_of",
    "uses",
    "configures",
    "limits",
    "requires",
    "see_also",
    "defined_in",
)
CO_OCCURS = "co_occurs"


@dataclass(slots=True)
class ExtractedEntity:
    """One entity as one chunk mentions it.

    ``spans`` are (start, end) offsets of its mentions in the chunk text;
    ``aliases`` are other names the chunk itself gives it (e.g. an acronym's expansion).
    """

    name: str
    type: str
    spans: list[tuple[int, int]] = field(default_factory=list)
    description: str = ""
    aliases: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ExtractedRelation:
    """A relation stated (or implied by co-occurrence) in one chunk.

    ``source`` and ``target`` are names of entities in the same :class:`ChunkExtraction`;
    ``span`` is the sentence or list item that states it, offsets in the chunk text.
    """

    source: str
    target: str
    type: str
    weight: float = 1.0
    description: str = ""
    span: tuple[int, int] | None = None


@dataclass(slots=True)
class ChunkExtraction:
    """Everything an extractor found in one chunk."""

    chunk_id: str
    entities: list[ExtractedEntity] = field(default_factory=list)
    relations: list[ExtractedRelation] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Mention:
    """Where an entity occurs in one chunk: first mention offsets and mention count."""

    chunk_id: str
    start: int
    end: int
    count: int = 1


@dataclass(frozen=True, slots=True)
class Evidence:
    """A sentence (or list item) of a chunk that states a relation."""

    chunk_id: str
    start: int
    end: int


@dataclass(slots=True)
class Entity:
    """A resolved entity: one node of the graph."""

    id: str
    name: str
    type: str
    aliases: list[str] = field(default_factory=list)
    description: str = ""
    mentions: list[Mention] = field(default_factory=list)
    description_chunk: str | None = None  # the chunk whose text the description quotes

    @property
    def chunk_ids(self) -> list[str]:
        return [m.chunk_id for m in self.mentions]

    def _repr_html_(self) -> str:
        from arborgraph.core.cards import card, short_list

        return card(self.name, f"entity · {self.type} · {self.id}", [
            ("aliases", short_list(self.aliases)),
            ("mentioned in", short_list(sorted(set(self.chunk_ids)))),
        ], self.description)


@dataclass(slots=True)
class Relation:
    """A resolved relation between two entities (by id); co-occurrences are undirected
    and stored with ``source < target``."""

    id: str
    source: str
    target: str
    type: str
    weight: float
    description: str = ""
    chunk_ids: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)

    @property
    def directed(self) -> bool:
        return self.type != CO_OCCURS


@dataclass(slots=True)
class Community:
    """A community at one level of the hierarchy; ``parent`` is None at the top."""

    id: int
    level: int
    members: list[str]
    parent: int | None = None
    children: list[int] = field(default_factory=list)

    def _repr_html_(self) -> str:
        from arborgraph.core.cards import community_card

        # the record knows its members by id only; GraphView.community(id) names them
        return community_card(self, self.members, None, members_label="member ids")


@dataclass(slots=True)
class Finding:
    """One key finding of a community report and the chunks whose text grounds it."""

    text: str
    chunk_ids: list[str] = field(default_factory=list)


@dataclass(slots=True)
class CommunityReport:
    """What a community is about; ``rank`` orders reports by importance (0-10).

    ``name`` is the community's name (the title of an extractive report) and ``pages``
    the ids of the documents to read about it, most relevant first, as the report's
    writer was given them."""

    community_id: int
    level: int
    title: str
    summary: str
    findings: list[Finding] = field(default_factory=list)
    rank: float = 0.0
    name: str = ""
    pages: list[str] = field(default_factory=list)

    @property
    def chunk_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for f in self.findings:
            for c in f.chunk_ids:
                seen.setdefault(c, None)
        return list(seen)

    def _repr_html_(self) -> str:
        from arborgraph.core.cards import card, short_list

        return card(self.title, f"community {self.community_id} · level {self.level} · rank {self.rank:.1f}", [
            ("grounded in", short_list(self.chunk_ids)),
        ], self.text())

    def text(self) -> str:
        """The report as readable text: title, summary, then one line per finding."""
        lines = [f"# {self.title}", self.summary]
        lines += [f"- {f.text}" for f in self.findings]
        return "\n".join(lines)
