"""Graph retrieval for relational / multi-hop questions.

1. Link the entities the question names (:func:`graphrag.linking.link_entities`).
2. Expand from them with a bounded walk: the 2-hop neighbourhood (strongest edges
   first, at most ``max_expand_nodes`` nodes), scored by personalised PageRank that
   restarts at the linked entities, discounted for ubiquitous entities.
3. Score the chunks that mention high-scoring entities by graph score, by their words'
   match with the question (BM25 over the candidates) and, when given, by dense
   similarity and by a flat retriever's ranking.
4. Return the chain of relations that connects the question's entities (or the first
   entity to its strongest neighbour), in path order, then the supporting chunks.

With a flat ranking (``candidate_chunks``, e.g. hybrid lookup's hits) the chunks are
composed instead: the flat ranking leads (the question's own facts; it measured better
than any mixed score we tried, see benchmarks/results/graphrag.json), and the best
second-hop home section (one whose heading names an entity the first hop leads to,
and which the window does not quote yet, see :func:`second_hop`) takes the place of
the weakest flat chunk of the answer's window; then the graph's own candidates.
"""

from __future__ import annotations

import time
import weakref
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import igraph as ig
import numpy as np

from arborgraph.core.retrieval import Retrieval
from arborgraph.core.protocols import Embedder
from arborgraph.core.results import Context
from arborgraph.core.cancel import checkpoint
from graphrag.chunks import (
    ChunkHeadings,
    ChunkFetcher,
    ChunkRef,
    ChunkSource,
    ChunkVectors,
    bm25,
    chunk_context,
    dense_scores,
    doc_of,
    n_words,
    normalise,
    rank_prior,
)
from graphrag.config import GraphSearchConfig
from graphrag.graph import KnowledgeGraph
from graphrag.linking import LinkedEntity, link_entities, specificity
from graphrag.model import CO_OCCURS, Relation
from graphrag.neighbours import GraphBackend, MemoryGraphBackend
from graphrag.lexicon import inverse_relation_words, relation_words
from graphrag.search_index import mention_index, path_index
from graphrag.text import entity_key, singular

# chunk ids -> their scores for the question (e.g. BM25 from a full-text index), in order
ChunkScores = Callable[[Sequence[str]], np.ndarray]

@dataclass(slots=True)
class _Scored:
    chunk_id: str
    ref: ChunkRef
    score: float
    parts: dict[str, float]


def graph_search(
    kg: KnowledgeGraph,
    question: str,
    *,
    chunk_text: ChunkSource,
    embedder: Embedder | None = None,
    entity_vectors: tuple[Sequence[str], np.ndarray] | Mapping[str, np.ndarray] | None = None,
    chunk_vectors: ChunkVectors | None = None,
    candidate_chunks: Sequence[str] | Mapping[str, float] | None = None,
    config: GraphSearchConfig | None = None,
    backend: GraphBackend | None = None,
    query_vector: np.ndarray | None = None,
    chunk_lexical: ChunkScores | None = None,
    chunk_headings: ChunkHeadings | None = None,
) -> Retrieval:
    """Relation chain and supporting chunks for a relational question.

    ``chunk_text`` maps chunk ids to text (see :mod:`graphrag.chunks`); chunks it
    returns None for are never shown, nor relation sentences quoted from them.
    ``embedder`` with ``entity_vectors`` adds embedding-based linking, with
    ``chunk_vectors`` dense scoring of chunks; ``candidate_chunks`` (a flat
    retriever's ranking, ids best first or id -> score) leads the chunks (see the
    module docstring). Contexts stop once ``budget_words`` is reached. With no linked
    entity the result is empty and its ``why_empty`` says why; its ``notes`` say
    which entities the question linked to and where the walk went. ``backend`` answers the
    walk's neighbour lookups (see :func:`expand`; default: ``kg`` in memory).
    ``query_vector`` (the question embedded by ``embedder``) saves embedding it again;
    ``chunk_lexical`` (chunk ids -> BM25 scores from a full-text index) replaces the
    BM25 computed over the candidates alone; ``chunk_headings`` (any chunk id -> its
    heading path, see :class:`graphrag.chunks.ChunkFetcher`) lets the entities' home
    sections be worked out once for every caller.
    """
    cfg = config or GraphSearchConfig()
    linked = link_entities(
        kg, question, max_entities=cfg.max_linked, embedder=embedder, entity_vectors=entity_vectors
    )
    if not linked:
        return Retrieval(route="graph", why_empty="no entity named in the question is in the graph")
    fetch = ChunkFetcher(chunk_text, chunk_headings)
    # the limit bounds the walk alone: linking (which in a fresh process also loads the
    # entity index) must not eat into it, or a slow start changes what the walk finds
    scores = expand(kg, linked, cfg, deadline=time.perf_counter() + cfg.time_limit_s, backend=backend)
    dense = _DenseScorer(question, embedder, chunk_vectors, query_vector)
    chunks = score_chunks(
        kg, question, scores, fetch, cfg, dense=dense, prior=candidate_chunks, lexical=chunk_lexical
    )
    contexts: list[Context] = list(chain_contexts(kg, linked, scores, fetch, cfg))
    used = sum(n_words(c.text) for c in contexts)
    if candidate_chunks:
        chunks = _with_first_hop(
            kg, question, linked, chunks, fetch, cfg, dense, candidate_chunks, lexical=chunk_lexical, reserved=used
        )
    notes = [
        "linked: " + ", ".join(f"{le.name} ({le.how}, {le.score:.2f})" for le in linked),
        "expanded: " + ", ".join(kg.entities[e].name for e in list(scores)[:8]),
    ]
    for sc in chunks:
        if used >= cfg.budget_words:
            break
        ctx = chunk_context(
            sc.chunk_id,
            sc.ref,
            sc.score,
            ["graph_search", *(f"{k}={v:.3f}" for k, v in sc.parts.items())],
            extra={"entities": _named_entities(kg, sc.chunk_id, scores)},
        )
        contexts.append(ctx)
        used += n_words(ctx.text)
    if not contexts:
        return Retrieval(route="graph", why_empty="linked entities have no visible supporting chunks", notes=notes)
    return Retrieval(route="graph", contexts=contexts, notes=notes)


def expand(
    kg: KnowledgeGraph,
    linked: Sequence[LinkedEntity],
    cfg: GraphSearchConfig,
    *,
    deadline: float | None = None,
    backend: GraphBackend | None = None,
) -> dict[str, float]:
    """Entity id -> score in (0, 1], best first: personalised PageRank on the bounded
    neighbourhood of the linked entities, times the entity's specificity.

    ``backend`` answers the neighbour lookups (default: ``kg``'s in-memory adjacency);
    a graph server holding the same graph gives the same scores
    (:class:`arborgraph.neo4j.backend.Neo4jGraphBackend`)."""
    lookup = backend if backend is not None else MemoryGraphBackend(kg)
    seeds = {le.entity_id: le.score for le in linked}
    nodes: dict[str, None] = dict.fromkeys(seeds)
    frontier = list(seeds)
    # a hop's frontier is looked up in slices: a server is not asked about nodes the
    # walk stops before reaching
    step = 64
    for _hop in range(2):
        nxt: list[str] = []
        stop = False
        for at in range(0, len(frontier), step):
            part = frontier[at : at + step]
            checkpoint()  # a server round trip per slice: stop here if the caller gave up
            adjacency = lookup.neighbours(part, cfg.neighbours_per_node)
            for e in part:
                for rel in adjacency.get(e, []):
                    other = rel.target if rel.source == e else rel.source
                    if other not in nodes:
                        nodes[other] = None
                        nxt.append(other)
                    if len(nodes) >= cfg.max_expand_nodes:
                        break
                if len(nodes) >= cfg.max_expand_nodes or (deadline and time.perf_counter() > deadline):
                    stop = True
                    break
            if stop:
                break
        frontier = nxt
        if len(nodes) >= cfg.max_expand_nodes:
            break
    ids = sorted(nodes)
    index = {e: i for i, e in enumerate(ids)}
    weights: dict[tuple[int, int], float] = defaultdict(float)
    around = lookup.neighbours(ids, cfg.neighbours_per_node * 4)
    for e in ids:
        for rel in around.get(e, []):
            a, b = index.get(rel.source), index.get(rel.target)
            if a is None or b is None or a == b:
                continue
            key = (a, b) if a < b else (b, a)
            # each relation is seen from both ends; typed relations count double
            weights[key] += rel.weight * (1.0 if rel.type == CO_OCCURS else 2.0) / 2
    g = ig.Graph(n=len(ids), edges=list(weights), directed=False)
    reset = [seeds.get(e, 0.0) for e in ids]
    if g.ecount():
        pr = g.personalized_pagerank(
            directed=False, damping=cfg.damping, reset=reset, weights=list(weights.values())
        )
    else:
        pr = reset
    raw = {e: pr[index[e]] * specificity(kg, e) for e in ids}
    top = max(raw.values()) or 1.0
    return dict(sorted(((e, s / top) for e, s in raw.items() if s > 0), key=lambda kv: (-kv[1], kv[0])))


class _DenseScorer:
    """Cosine of the question with chunks, when vectors and an embedder (or the
    question's vector) are given; the question is embedded at most once."""

    def __init__(
        self,
        question: str,
        embedder: Embedder | None,
        vectors: ChunkVectors | None,
        query_vector: np.ndarray | None = None,
    ) -> None:
        self.question, self.embedder, self.vectors = question, embedder, vectors
        self._qvec = None if query_vector is None else np.asarray(query_vector, dtype=np.float32)

    @property
    def available(self) -> bool:
        return self.vectors is not None and (self._qvec is not None or self.embedder is not None)

    def __call__(self, ids: Sequence[str]) -> np.ndarray | None:
        if not self.available or not ids:
            return None
        if self._qvec is None:
            self._qvec = np.asarray(self.embedder.encode([self.question]), dtype=np.float32)[0]  # type: ignore[union-attr]
        return cosines(self._qvec, ids, self.vectors)


def cosines(qvec: np.ndarray | None, ids: Sequence[str], vectors: ChunkVectors | None) -> np.ndarray | None:
    """Cosine of an embedded question with each chunk id's vector; None without either."""
    if qvec is None or vectors is None or not ids:
        return None
    return dense_scores(qvec, ids, vectors, None)


def score_chunks(
    kg: KnowledgeGraph,
    question: str,
    entity_scores: dict[str, float],
    fetch: ChunkFetcher,
    cfg: GraphSearchConfig,
    *,
    dense: _DenseScorer | None = None,
    prior: Sequence[str] | Mapping[str, float] | None = None,
    lexical: ChunkScores | None = None,
) -> list[_Scored]:
    """Chunks of the top entities (and the prior's), scored and sorted, best first:
    graph score + match with the question (``lexical``, else BM25 over the
    candidates) + dense + prior."""
    top = dict(list(entity_scores.items())[: cfg.top_entities])
    index = mention_index(kg)
    # the graph score of every chunk at once: top entities' scores x mention weights
    by_col = index.chunk_scores(top)
    priors = rank_prior(prior)
    priors = dict(list(priors.items())[: cfg.max_prior])
    graph: dict[str, float] = {}
    for cid in priors:
        col = index.chunk_col.get(cid)
        g = float(by_col[col]) if col is not None else 0.0
        # a prior chunk also counts the expanded entities beyond the top ones
        for eid in kg.chunk_entities.get(cid, []):
            if eid in entity_scores and eid not in top:
                g += entity_scores[eid]
        graph[cid] = g
    cand: list[tuple[str, ChunkRef]] = []
    for cid in priors:  # the prior's chunks always compete
        ref = fetch.get(cid)
        if ref is not None:
            cand.append((cid, ref))
    limit = cfg.max_candidates + len(priors)
    cols = np.flatnonzero(by_col > 0)
    # columns are in chunk id order, so a stable sort breaks ties by id
    for col in cols[np.argsort(-by_col[cols], kind="stable")]:
        if len(cand) >= limit:
            break
        cid = index.chunk_ids[col]
        if cid in priors:
            continue
        ref = fetch.get(cid)
        if ref is not None:
            cand.append((cid, ref))
            graph[cid] = float(by_col[col])
    if not cand:
        return []
    ids = [c for c, _ in cand]
    n = len(ids)
    g = normalise(np.array([graph[c] for c in ids]), n)
    lex_raw = lexical(ids) if lexical is not None else bm25(question, [r.text for _, r in cand])
    lex = normalise(lex_raw, n)
    dn = normalise(dense(ids) if dense is not None else None, n)
    pri = normalise(np.array([priors.get(c, 0.0) for c in ids]), n)
    total = cfg.graph_weight * g + cfg.lexical_weight * lex + cfg.dense_weight * dn + cfg.prior_weight * pri
    out = [
        _Scored(
            cid,
            ref,
            float(total[i]),
            {"graph": float(g[i]), "lexical": float(lex[i]), "dense": float(dn[i]), "prior": float(pri[i])},
        )
        for i, (cid, ref) in enumerate(cand)
    ]
    out.sort(key=lambda s: (-s.score, s.chunk_id))
    return out


def _named_entities(kg: KnowledgeGraph, chunk_id: str, entity_scores: dict[str, float], k: int = 8) -> list[str]:
    """Names of the walk's entities a chunk mentions, highest-scoring first."""
    found = dict.fromkeys(e for e in kg.chunk_entities.get(chunk_id, []) if e in entity_scores)
    best = sorted(found, key=lambda e: (-entity_scores[e], e))[:k]
    return [kg.entities[e].name for e in best]


def _with_first_hop(
    kg: KnowledgeGraph,
    question: str,
    linked: Sequence[LinkedEntity],
    chunks: list[_Scored],
    fetch: ChunkFetcher,
    cfg: GraphSearchConfig,
    dense: _DenseScorer,
    prior: Sequence[str] | Mapping[str, float],
    *,
    lexical: ChunkScores | None = None,
    reserved: int = 0,
) -> list[_Scored]:
    """The flat retriever's ranking (it holds the question's own facts, better ordered
    than our mixed score, as measured), with the best second-hop home sections (see
    :func:`second_hop`) in place of the weakest flat chunks of the answer's window
    (``budget_words`` less the ``reserved`` words before it), then the graph's own
    candidates."""
    budget = cfg.budget_words - reserved
    by_id = {s.chunk_id: s for s in chunks}
    ordered = sorted(prior, key=lambda c: -prior[c]) if isinstance(prior, Mapping) else list(prior)
    in_prior = [by_id[c] for c in ordered if c in by_id]
    window: list[_Scored] = []
    used = 0
    for sc in in_prior:
        if used >= budget:
            break
        window.append(sc)
        used += n_words(sc.ref.text)
    additions: list[_Scored] = []
    if len(window) > cfg.first_hop:
        hops = second_hop(kg, question, linked, [s.chunk_id for s in window], fetch, dense, lexical=lexical)
        for cid, score in hops[: cfg.bridge_chunks]:
            if score < cfg.min_bridge_score:
                break
            ref = fetch.get(cid)
            assert ref is not None  # second_hop only offers visible chunks
            base = by_id.get(cid)
            additions.append(_Scored(cid, ref, score, {**(base.parts if base else {}), "bridge": score}))
    # the additions go before the window's weakest chunks, which they push out
    at = max(cfg.first_hop, len(window) - len(additions))
    taken = {s.chunk_id for s in additions}
    head = [s for s in in_prior[:at] if s.chunk_id not in taken]
    rest = [s for s in in_prior[at:] if s.chunk_id not in taken]
    out = head + additions + rest
    seen = {s.chunk_id for s in out}
    return out + [s for s in chunks if s.chunk_id not in seen]


def chain_contexts(
    kg: KnowledgeGraph,
    linked: Sequence[LinkedEntity],
    scores: dict[str, float],
    fetch: ChunkFetcher,
    cfg: GraphSearchConfig,
) -> list[Context]:
    """Relation contexts along the path linking the question's entities, in order."""
    if cfg.max_relations <= 0:
        return []
    path = _best_path(kg, linked, scores, cfg)
    if len(path) < 2:
        return []
    hops: list[tuple[Relation, bool]] = []
    for a, b in zip(path, path[1:]):
        rel = _best_relation(kg, a, b, fetch)
        if rel is None:
            return []
        hops.append((rel, rel.source == a))
    names = [kg.entities[path[0]].name]
    for rel, forward in hops:
        arrow = relation_words(rel.type) if forward else inverse_relation_words(rel.type)
        names += [arrow, kg.entities[rel.target if forward else rel.source].name]
    chain = " → ".join(names)
    out: list[Context] = []
    for i, (rel, _fwd) in enumerate(hops[: cfg.max_relations]):
        quote, cid = _visible_quote(rel, fetch)
        ref = fetch.get(cid) if cid else None
        phrase = f"{kg.entities[rel.source].name} → {relation_words(rel.type)} → {kg.entities[rel.target].name}"
        words = quote.split()
        if len(words) > cfg.max_quote_words:
            quote = " ".join(words[: cfg.max_quote_words]) + " …"
        out.append(
            Context(
                text=f"{phrase}: {quote}" if quote else phrase,
                source=ref.doc_id if ref else "",
                kind="relation",
                score=round(rel.weight, 3),
                node_id=rel.id,
                provenance=[c for c in rel.chunk_ids if fetch.visible(c)][:5],
                trace=["graph_search", f"hop {i + 1} of {len(hops)}"],
                extra={"chain": chain, "hop": i, "type": rel.type, "weight": rel.weight},
            )
        )
    return out


def _best_path(
    kg: KnowledgeGraph, linked: Sequence[LinkedEntity], scores: dict[str, float], cfg: GraphSearchConfig
) -> list[str]:
    """Shortest strong path between two linked entities, or from the best linked
    entity to its best-scoring neighbour. Ubiquitous entities ("SQLite") explain
    nothing, so they may neither end nor carry a chain."""
    ids = [le.entity_id for le in linked if specificity(kg, le.entity_id) >= cfg.min_chain_specificity]
    if not ids:
        return []
    paths = path_index(kg)
    for a_i in range(len(ids)):
        for b in ids[a_i + 1 :]:
            p = paths.shortest(ids[a_i], b, cfg.max_path_len)
            if p and all(specificity(kg, e) >= cfg.min_chain_specificity for e in p[1:-1]):
                return p
    first = ids[0]
    neighbours = {r.target if r.source == first else r.source for r in kg.adjacency.get(first, [])}
    best = [
        e
        for e in scores
        if e in neighbours and e != first and specificity(kg, e) >= cfg.min_chain_specificity
    ]
    return [first, best[0]] if best else []


def _best_relation(kg: KnowledgeGraph, a: str, b: str, fetch: ChunkFetcher) -> Relation | None:
    rels = [
        r
        for r in kg.adjacency.get(a, [])
        if {r.source, r.target} == {a, b} and any(fetch.visible(c) for c in r.chunk_ids)
    ]
    if not rels:
        return None
    # a typed relation explains more than a co-occurrence of similar weight
    return max(rels, key=lambda r: (r.weight * (1.0 if r.type == CO_OCCURS else 2.0), r.id))


def _visible_quote(rel: Relation, fetch: ChunkFetcher) -> tuple[str, str | None]:
    """The relation's sentence, read from a chunk the caller may see."""
    for ev in rel.evidence:
        ref = fetch.get(ev.chunk_id)
        if ref is not None:
            return ref.text[ev.start : ev.end], ev.chunk_id
    for cid in rel.chunk_ids:
        if fetch.visible(cid):
            return "", cid
    return "", None


def _chunk_order(chunk_id: str) -> tuple[str, int, str]:
    """Document, then position: chunk ids are ``doc#n``."""
    doc, _, n = chunk_id.rpartition("#")
    return (doc, int(n), "") if n.isdigit() else (chunk_id, 0, chunk_id)


@lru_cache(maxsize=100_000)  # headings repeat on every chunk of a section
def _name_words(name: str) -> tuple[str, ...]:
    """A name's words as a heading would spell them: lower case, ``_``/``-`` and a
    trailing call ``()`` ignored, every word singular."""
    return tuple(singular(w) for w in entity_key(name).split())


def _names_in(words: Sequence[str], names: Sequence[tuple[str, ...]]) -> bool:
    for name in names:
        n = len(name)
        if n and any(tuple(words[i : i + n]) == name for i in range(len(words) - n + 1)):
            return True
    return False


def heading_homes(
    kg: KnowledgeGraph, entity_id: str, fetch: ChunkFetcher, *, max_mentions: int = 150
) -> dict[str, float]:
    """Chunks whose headings name the entity: 1.0 when the chunk's own section heading
    does (or the graph marked it as the entity's home), 0.5 when only an enclosing
    heading does (the page title: "Clustered Indexes and the WITHOUT ROWID
    Optimization" is about WITHOUT ROWID in every section)."""
    if fetch.headings is not None:
        # the same for every caller: worked out once per entity, then cut to what the
        # caller may see
        known = _homes.setdefault(kg, {})
        key = (entity_id, max_mentions)
        if key not in known:
            known[key] = _heading_homes(kg, entity_id, lambda c: True, fetch.headings, max_mentions)
        return {c: how for c, how in known[key].items() if fetch.visible(c)}

    def visible_headings(chunk_id: str) -> Sequence[str] | None:
        ref = fetch.get(chunk_id)
        return None if ref is None else ref.heading_path

    return _heading_homes(kg, entity_id, fetch.visible, visible_headings, max_mentions)


_homes: "weakref.WeakKeyDictionary[KnowledgeGraph, dict[tuple[str, int], dict[str, float]]]" = weakref.WeakKeyDictionary()


def _heading_homes(
    kg: KnowledgeGraph,
    entity_id: str,
    visible: Callable[[str], bool],
    headings: Callable[[str], Sequence[str] | None],
    max_mentions: int,
) -> dict[str, float]:
    ent = kg.entities[entity_id]
    names = [w for w in {_name_words(n) for n in [ent.name, *ent.aliases]} if w]
    out = {c: 1.0 for c in kg.home_chunks(entity_id) if visible(c)}
    if not names or len(ent.mentions) > max_mentions:
        return out
    for m in ent.mentions:
        if m.chunk_id in out:
            continue
        heading_path = headings(m.chunk_id)
        if not heading_path:
            continue
        *outer, own = heading_path
        if _names_in(_name_words(own), names):
            out[m.chunk_id] = 1.0
        elif any(_names_in(_name_words(h), names) for h in outer):
            out[m.chunk_id] = 0.5
    return out


def second_hop(
    kg: KnowledgeGraph,
    question: str,
    linked: Sequence[LinkedEntity],
    window: Sequence[str],
    fetch: ChunkFetcher,
    dense: _DenseScorer | None = None,
    *,
    lexical: ChunkScores | None = None,
    neighbours: int = 40,
    max_entities: int = 40,
    min_specificity: float = 0.3,
) -> list[tuple[str, float]]:
    """Home sections (see :func:`heading_homes`) the question's answer may continue
    on, best first, leaving out the chunks already in ``window``.

    Candidate entities: the linked ones, those mentioned beside a linked entity in a
    window chunk (the first hop names the bridge: "... foreign key constraints must
    be enabled"), and the linked ones' typed neighbours. A home section scores by its
    entity's weight times how squarely its heading names the entity, times its match
    with the question (dense cosine if available, plus BM25 scaled over the
    candidates); ubiquitous entities (below ``min_specificity``) bridge nowhere.
    """
    weight: dict[str, float] = defaultdict(float)
    seeds = {le.entity_id: le.score for le in linked}
    for eid, s in seeds.items():
        weight[eid] = max(weight[eid], s)
        for rel in kg.adjacency.get(eid, [])[:neighbours]:
            if rel.type == CO_OCCURS:
                continue
            other = rel.target if rel.source == eid else rel.source
            weight[other] += 0.5 * s * specificity(kg, other)
    # an entity beside a linked one in the window: as strong as its best place there,
    # a little more for each further chunk, and only as strong as it is specific
    beside: dict[str, list[float]] = defaultdict(list)
    for rank, cid in enumerate(window):
        present = kg.chunk_entities.get(cid, [])
        if not seeds.keys() & set(present):
            continue
        for eid in present:
            if eid not in seeds:
                beside[eid].append(1.0 / (1.0 + 0.3 * rank))
    for eid, places in beside.items():
        weight[eid] += specificity(kg, eid) * max(places) * min(1.0 + 0.1 * (len(places) - 1), 1.3)
    top = sorted(
        (e for e in weight if e in kg.entities and specificity(kg, e) >= min_specificity),
        key=lambda e: (-weight[e], e),
    )[:max_entities]
    taken = set(window)
    # the flat ranking finds the pages of the entities the question names; a named
    # entity's home counts only on a page the window has not reached
    window_docs = {doc_of(c) for c in window}
    # nor does a section the window already quotes from lead anywhere new
    window_sections = {(r.doc_id, tuple(r.heading_path)) for c in window if (r := fetch.get(c)) is not None}
    structural: dict[str, float] = {}
    for eid in top:
        w = min(weight[eid], 1.0)
        for cid, how in heading_homes(kg, eid, fetch).items():
            ref = fetch.get(cid)
            if ref is None or cid in taken or (ref.doc_id, tuple(ref.heading_path)) in window_sections:
                continue
            if not (eid in seeds and doc_of(cid) in window_docs):
                structural[cid] = max(structural.get(cid, 0.0), w * how)
    if not structural:
        return []
    # a section's first chunk starts with the heading that names the entity: it
    # defines the entity, the later ones go on about it
    first_of: dict[tuple[str, tuple[str, ...]], str] = {}
    for cid in sorted(structural, key=_chunk_order):
        ref = fetch.get(cid)
        assert ref is not None
        first_of.setdefault((ref.doc_id, tuple(ref.heading_path)), cid)
    leads = set(first_of.values())
    structural = {c: v if c in leads else 0.8 * v for c, v in structural.items()}
    ids = sorted(structural)
    lex_raw = lexical(ids) if lexical is not None else bm25(question, [fetch.get(c).text for c in ids])  # type: ignore[union-attr]
    lex = normalise(lex_raw, len(ids))
    sim = dense(ids) if dense is not None and dense.available else None
    match = lex if sim is None else 0.5 * lex + np.maximum(np.asarray(sim, dtype=np.float32), 0.0)
    total = {c: structural[c] * float(match[i]) for i, c in enumerate(ids)}
    return sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))
