"""Entity resolution: merge surface variants of one entity, keep apart different ones.

Variants meet under :func:`graphrag.text.entity_key` (case, plural, ``_`` vs space,
backticks, ``()``), are joined through the aliases extractors report ("write-ahead
log (WAL)") and, optionally, through acronyms whose letters spell a term they share a
chunk with. Within one such group, a strong type (function, parameter...) that has
its own substantial support becomes its own entity: the evidence separates them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from graphrag.config import GraphConfig
from graphrag.model import CO_OCCURS, ChunkExtraction, Entity, Evidence, Mention, Relation
from graphrag.text import entity_key, slug
from graphrag.vocab import STRONG_TYPES

# Types guessed from the words around an UPPER_CASE name: one family, never split.
_FAMILIES = {"error_code": "constant", "option": "constant", "constant": "constant"}

# Weak types yield to strong ones; among weak types, the first listed wins ties.
_WEAK_ORDER = ("acronym", "keyword", "constant", "component", "identifier", "term")


@dataclass(slots=True)
class _Occ:
    """All mentions of one (key, type) in one chunk."""

    chunk: int  # position of the chunk in the input
    chunk_id: str
    name: str
    type: str
    spans: list[tuple[int, int]]
    description: str
    aliases: list[str] = field(default_factory=list)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        p = self.parent.setdefault(x, x)
        while p != self.parent[p]:
            self.parent[p] = self.parent[self.parent[p]]
            p = self.parent[p]
        self.parent[x] = p
        return p

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            # the smaller key becomes the root so the result does not depend on order
            lo, hi = sorted((ra, rb))
            self.parent[hi] = lo


def resolve(
    extractions: Sequence[ChunkExtraction], config: GraphConfig | None = None
) -> tuple[dict[str, Entity], dict[str, Relation]]:
    """Merge per-chunk extractions into entities and relations, keyed by id.

    ``extractions`` must be in a fixed (document) order: descriptions and names come
    from the earliest chunk on ties, so the same input gives the same output.
    """
    cfg = config or GraphConfig()
    occs: list[_Occ] = []
    uf = _UnionFind()
    for ci, ex in enumerate(extractions):
        for e in ex.entities:
            key = entity_key(e.name)
            if len(key) < 2:
                continue
            occs.append(_Occ(ci, ex.chunk_id, e.name, e.type, list(e.spans), e.description, list(e.aliases)))
            uf.find(key)
            for a in e.aliases:
                akey = entity_key(a)
                if len(akey) >= 2:
                    uf.union(key, akey)
    if cfg.infer_acronyms:
        _join_acronyms(occs, uf, cfg.min_inferred_acronym_len)

    groups: dict[str, list[_Occ]] = defaultdict(list)
    for o in occs:
        groups[uf.find(entity_key(o.name))].append(o)

    entities: dict[str, Entity] = {}
    # (chunk position, local name) -> entity id, to map relations
    local: dict[tuple[int, str], str] = {}
    for root in sorted(groups):
        for ent, members in _split_group(root, groups[root], cfg):
            if ent.id in entities:  # two roots with the same slug: keep both, distinctly
                n = 2
                while f"{ent.id}~{n}" in entities:
                    n += 1
                ent.id = f"{ent.id}~{n}"
            entities[ent.id] = ent
            for o in members:
                local[(o.chunk, o.name)] = ent.id

    relations = _merge_relations(extractions, local, cfg)
    return entities, relations


def _join_acronyms(occs: list[_Occ], uf: _UnionFind, min_len: int) -> None:
    """Union an acronym with a multi-word name spelling it, if they share a chunk."""
    by_chunk: dict[int, set[str]] = defaultdict(set)
    acronyms: set[str] = set()
    for o in occs:
        key = entity_key(o.name)
        by_chunk[o.chunk].add(key)
        if o.type == "acronym" and o.name.isupper() and o.name.isalpha() and len(o.name) >= min_len:
            acronyms.add(key)
    pairs: set[tuple[str, str]] = set()
    for keys in by_chunk.values():
        present = keys & acronyms
        if not present:
            continue
        for k in keys:
            words = k.split()
            if len(words) < 2:
                continue
            initials = "".join(w[0] for w in words)
            if initials in present:
                pairs.add((initials, k))
    for a, k in sorted(pairs):
        uf.union(a, k)


def _doc(chunk_id: str) -> str:
    return chunk_id.rsplit("#", 1)[0]


def _pick(counter: Counter[str]) -> str:
    """Most frequent; ties to the shorter, then alphabetically first."""
    return min(counter, key=lambda n: (-counter[n], len(n), n))


def _split_group(root: str, members: list[_Occ], cfg: GraphConfig) -> list[tuple[Entity, list[_Occ]]]:
    chunks_by_type: dict[str, set[int]] = defaultdict(set)
    for o in members:
        chunks_by_type[o.type].add(o.chunk)
    all_chunks = {o.chunk for o in members}
    strong = sorted(
        (t for t in chunks_by_type if t in STRONG_TYPES),
        key=lambda t: (-len(chunks_by_type[t]), t),
    )
    if strong:
        dominant = strong[0]
        kept = [dominant]
        for t in strong[1:]:
            n = len(chunks_by_type[t])
            if any(_FAMILIES.get(t, t) == _FAMILIES.get(k, k) for k in kept):
                continue
            if n >= cfg.split_min_chunks and n >= cfg.split_min_share * len(all_chunks):
                kept.append(t)
    else:
        weak = sorted(
            chunks_by_type,
            key=lambda t: (-len(chunks_by_type[t]), _WEAK_ORDER.index(t) if t in _WEAK_ORDER else 99, t),
        )
        dominant, kept = weak[0], [weak[0]]
    assign: dict[str, list[_Occ]] = {t: [] for t in kept}
    docs_of: dict[str, set[str]] = {t: set() for t in kept}
    for o in members:
        if o.type in assign:
            docs_of[o.type].add(_doc(o.chunk_id))
    for o in members:
        if o.type in assign:
            assign[o.type].append(o)
        else:
            # a weak mention joins the kept type used in the same document, if any
            home = [t for t in kept if _doc(o.chunk_id) in docs_of[t]]
            assign[home[0] if home else dominant].append(o)
    out = []
    for t in kept:
        ent = _make_entity(root, t, assign[t], split=len(kept) > 1)
        out.append((ent, assign[t]))
    return out


def _make_entity(root: str, etype: str, occs: list[_Occ], *, split: bool) -> Entity:
    names: Counter[str] = Counter()
    for o in occs:
        names[o.name] += len(o.spans) or 1
    # a name of the entity's own type is preferred over names of merged weak mentions
    own_names = {o.name for o in occs if o.type == etype}
    own = Counter({n: c for n, c in names.items() if n in own_names})
    name = _pick(own or names)
    aliases: dict[str, None] = {}
    for o in sorted(occs, key=lambda o: o.chunk):
        for n in [o.name, *o.aliases]:
            if n != name:
                aliases.setdefault(n, None)
    by_chunk: dict[str, list[tuple[int, int]]] = {}
    order: list[str] = []
    description = topic_description = ""
    description_chunk = topic_chunk = None
    for o in sorted(occs, key=lambda o: o.chunk):
        if o.chunk_id not in by_chunk:
            by_chunk[o.chunk_id] = []
            order.append(o.chunk_id)
        by_chunk[o.chunk_id].extend(o.spans)
        if o.description:
            # a sentence from the entity's own section beats a definition elsewhere
            if not topic_description and (0, 0) in o.spans:
                topic_description, topic_chunk = o.description, o.chunk_id
            if not description:
                description, description_chunk = o.description, o.chunk_id
    if topic_description:
        description, description_chunk = topic_description, topic_chunk
    mentions = []
    for cid in order:
        spans = sorted(by_chunk[cid]) or [(0, 0)]
        mentions.append(Mention(cid, spans[0][0], spans[0][1], max(1, len(spans))))
    eid = slug(entity_key(name) or root)
    if split:
        eid = f"{eid}@{etype}"
    return Entity(
        id=eid,
        name=name,
        type=etype,
        aliases=list(aliases),
        description=description,
        mentions=mentions,
        description_chunk=description_chunk,
    )


def _merge_relations(
    extractions: Sequence[ChunkExtraction], local: dict[tuple[int, str], str], cfg: GraphConfig
) -> dict[str, Relation]:
    acc: dict[tuple[str, str, str], Relation] = {}
    # the different sentences naming each co-occurring pair: overlapping chunks repeat one
    together: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    primary: dict[tuple[str, str, str], list[Evidence]] = {}
    secondary: dict[tuple[str, str, str], list[Evidence]] = {}
    for ci, ex in enumerate(extractions):
        per_chunk: dict[tuple[str, str, str], float] = defaultdict(float)
        for r in ex.relations:
            s, t = local.get((ci, r.source)), local.get((ci, r.target))
            if s is None or t is None or s == t:
                continue
            if r.type == CO_OCCURS and t < s:
                s, t = t, s
            k = (s, t, r.type)
            if r.type == CO_OCCURS and len(together[k]) < cfg.min_cooccurrence_sentences:
                together[k].add(" ".join(r.description.split()))
            room = cfg.max_weight_per_chunk - per_chunk[k]
            if room <= 0:
                continue
            w = min(r.weight, room)
            per_chunk[k] += w
            rel = acc.get(k)
            if rel is None:
                rel = acc[k] = Relation(id=f"{s}|{r.type}|{t}", source=s, target=t, type=r.type, weight=0.0)
            rel.weight += w
            if not rel.chunk_ids or rel.chunk_ids[-1] != ex.chunk_id:  # chunks come in order
                rel.chunk_ids.append(ex.chunk_id)
            if r.span:
                ev = Evidence(ex.chunk_id, r.span[0], r.span[1])
                # a sentence stating the relation goes before one that only sits
                # under the same heading (no description)
                pool = primary if r.description else secondary
                bucket = pool.setdefault(k, [])
                if len(bucket) < cfg.max_evidence and ev not in bucket:
                    bucket.append(ev)
            if not rel.description and r.description:
                rel.description = r.description
    for k, rel in acc.items():
        rel.evidence = (primary.get(k, []) + secondary.get(k, []))[: cfg.max_evidence]
    # co-occurrence is the fallback: only where no sentence types the pair's relation,
    # and only for a pair named together often enough to be more than chance
    typed = {frozenset((s, t)) for s, t, rtype in acc if rtype != CO_OCCURS}
    kept = [
        rel for (s, t, rtype), rel in acc.items()
        if rtype != CO_OCCURS
        or (len(together[(s, t, rtype)]) >= cfg.min_cooccurrence_sentences and frozenset((s, t)) not in typed)
    ]
    return {rel.id: rel for rel in sorted(kept, key=lambda r: r.id)}
