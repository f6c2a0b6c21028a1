"""The graph build end to end on a real slice of the bundled SQLite manual:
communities, reports, tables, graph and global search, the exploration API."""

from __future__ import annotations

import json
import re
from pathlib import Path

import igraph as ig
import pyarrow.parquet as pq
import pytest

from graphrag import (
    GraphConfig,
    GraphView,
    KnowledgeGraph,
    RuleExtractor,
    build_graph,
    global_search,
    graph_from_tables,
    graph_search,
    graph_to_tables,
)
from graphrag import schema as S
from arborgraph.index.structure_check import is_comma_list
from graphrag.build import chunk_headings, detect_communities, extract_all
from graphrag.communities import HierarchicalLeiden
from graphrag.model import Community
from graphrag.namesakes import with_namesakes_merged
from graphrag.resolution import resolve
from ingest.models import Chunk
from manual_chunks import manual_chunks

PAGES = [
    "wal.md", "lockingv3.md", "lang_transaction.md", "isolation.md", "tempfiles.md",
    "c3ref_busy_timeout.md", "c3ref_busy_handler.md", "c3ref_wal_autocheckpoint.md",
    "c3ref_wal_checkpoint_v2.md", "foreignkeys.md", "autoinc.md", "lang_vacuum.md",
    "pgszchng2016.md", "limits.md", "datatype3.md", "withoutrowid.md", "stricttables.md",
    "lang_createtable.md", "rowidtable.md", "pragma.md",
]


@pytest.fixture(scope="module")
def chunks() -> list[Chunk]:
    return manual_chunks(PAGES)


@pytest.fixture(scope="module")
def by_id(chunks: list[Chunk]) -> dict[str, Chunk]:
    return {c.chunk_id: c for c in chunks}


@pytest.fixture(scope="module")
def config() -> GraphConfig:
    return GraphConfig(seed=7, max_cluster_size=12)


@pytest.fixture(scope="module")
def kg(chunks: list[Chunk], config: GraphConfig) -> KnowledgeGraph:
    seen: list[tuple[str, int, int | None]] = []
    g = build_graph(chunks, extractor=RuleExtractor(), config=config, progress=lambda s, d, t: seen.append((s, d, t)))
    stages = {s for s, _, _ in seen}
    assert {"graphrag.extract", "graphrag.resolve", "graphrag.communities", "graphrag.reports"} <= stages
    return g


def test_graph_has_manual_entities_with_provenance(kg: KnowledgeGraph, by_id: dict[str, Chunk]) -> None:
    wal = kg.find("WAL")[0]
    assert "write-ahead log" in [a.lower() for a in wal.aliases]
    jm = kg.find("journal_mode")[0]
    assert jm.type == "parameter" and "PRAGMA journal_mode" in jm.aliases
    # every mention points at a real chunk and at the entity's text in it
    for ent in (wal, jm):
        for m in ent.mentions:
            assert m.chunk_id in by_id
            if m.end > m.start:
                surface = by_id[m.chunk_id].text[m.start : m.end]
                assert surface in [ent.name, *ent.aliases]
    # relation evidence offsets cut out the sentence that is the relation's description
    rel = next(r for r in kg.relations.values() if r.evidence and r.type != "co_occurs")
    ev = rel.evidence[0]
    assert by_id[ev.chunk_id].text[ev.start : ev.end] == rel.description


def test_communities_are_hierarchical_and_bounded(kg: KnowledgeGraph, config: GraphConfig) -> None:
    coms = kg.communities
    assert len(kg.levels) >= 2
    for c in coms.values():
        if c.parent is not None:
            parent = coms[c.parent]
            assert c.id in parent.children and c.level == parent.level + 1
            assert set(c.members) <= set(parent.members)
        # a community is only left larger than the maximum at the deepest level allowed,
        # or when Leiden cannot split it (a star around one entity, say)
        if len(c.members) > config.max_cluster_size and not c.children and c.level < config.max_levels - 1:
            assert len([g for g in _split(kg, c, config) if len(g) >= config.min_community_size]) < 2
    # the level-0 communities do not overlap
    top = [m for c in coms.values() if c.level == 0 for m in c.members]
    assert len(top) == len(set(top))


def _split(kg: KnowledgeGraph, com: Community, config: GraphConfig) -> list[list[int]]:
    """What hierarchical Leiden makes of ``com`` when it tries to split it."""
    from graphrag.build import leiden_edges

    leiden = HierarchicalLeiden(
        max_cluster_size=config.max_cluster_size, resolution=config.resolution,
        n_iterations=config.leiden_iterations, seed=config.seed,
    )
    names = sorted(kg.entities)
    index = {n: i for i, n in enumerate(names)}
    edges = [(index[a], index[b], w) for a, b, w in leiden_edges(kg.relations, config)]
    graph = ig.Graph(n=len(names), edges=[(a, b) for a, b, _ in edges])
    graph.es["weight"] = [w for _, _, w in edges]
    return leiden._partition(graph, sorted(index[m] for m in com.members), split_required=True)


def test_leiden_is_deterministic_for_a_seed(kg: KnowledgeGraph, config: GraphConfig, chunks: list[Chunk]) -> None:
    headings = chunk_headings(chunks)

    def partition(entities: dict, relations: dict) -> dict[int, Community]:
        # as the build partitions: Leiden, then namesake siblings merged (graphrag.namesakes)
        detected = detect_communities(entities, relations, config)
        return with_namesakes_merged(KnowledgeGraph(entities, relations, detected), headings).communities

    again = partition(kg.entities, kg.relations)
    assert [(c.level, c.members, c.children) for c in again.values()] == [
        (c.level, c.members, c.children) for c in kg.communities.values()
    ]
    # the input order of entities and relations must not matter either
    shuffled_e = dict(sorted(kg.entities.items(), reverse=True))
    shuffled_r = dict(sorted(kg.relations.items(), reverse=True))
    again = partition(shuffled_e, shuffled_r)
    assert [c.members for c in again.values()] == [c.members for c in kg.communities.values()]


def test_reports_are_grounded_in_chunks(kg: KnowledgeGraph, by_id: dict[str, Chunk]) -> None:
    assert kg.reports
    norm = lambda t: re.sub(r"\s+", " ", t)  # noqa: E731
    for rep in kg.reports.values():
        assert rep.title and rep.summary and rep.findings
        assert 0 <= rep.rank <= 10
        for f in rep.findings:
            assert f.chunk_ids and all(c in by_id for c in f.chunk_ids)
            # the quoted part of a finding is the manual's own sentence from its first chunk
            quote = f.text.split(": ", 1)[1]
            assert norm(quote)[:80] in norm(by_id[f.chunk_ids[0]].text)


def test_every_community_has_a_distinct_title_and_a_report_in_the_manuals_words(
    kg: KnowledgeGraph, by_id: dict[str, Chunk]
) -> None:
    docs = {c.doc_id for c in by_id.values()}
    norm = lambda t: " ".join(t.split())  # noqa: E731
    texts = [norm(c.text) for c in by_id.values()]
    assert set(kg.reports) == set(kg.communities)  # every size, every level
    by_level: dict[int, list[str]] = {}
    for rep in kg.reports.values():
        members = {kg.entities[m].name.lower() for m in kg.communities[rep.community_id].members}
        assert rep.title == rep.name and rep.title.strip() and not is_comma_list(rep.title, members)
        by_level.setdefault(rep.level, []).append(rep.title.lower())
        assert rep.pages and set(rep.pages) <= docs
        # no counts: what a community holds is said in the manual's sentences
        assert not re.search(r"\d+ (?:\w+ )?entities|Its \d+", rep.summary), rep.summary
        quotes = re.findall(r': "(.+?[.!])"(?= |$)', rep.summary)
        assert all(any(q in t for t in texts) for q in quotes), rep.summary
    for titles in by_level.values():
        assert len(titles) == len(set(titles))


def test_tables_round_trip_through_parquet(kg: KnowledgeGraph, tmp_path: Path) -> None:
    tables = graph_to_tables(kg)
    assert set(tables) == set(S.TABLE_NAMES)
    assert tables[S.ENTITIES].num_rows == len(kg.entities)
    assert {S.ID, S.NAME, S.TYPE, S.ALIASES, S.DESCRIPTION, S.DEGREE, S.CHUNK_IDS} <= set(tables[S.ENTITIES].column_names)
    for name, table in tables.items():
        pq.write_table(table, tmp_path / f"{name}.parquet")
    back = graph_from_tables({n: pq.read_table(tmp_path / f"{n}.parquet") for n in S.TABLE_NAMES})
    assert back.entities == kg.entities
    assert back.relations == kg.relations
    assert back.communities == kg.communities
    assert back.reports == kg.reports
    assert back.meta == kg.meta and json.loads(back.meta["config"])["seed"] == 7


def test_tables_refuse_another_schema_version(kg: KnowledgeGraph) -> None:
    tables = graph_to_tables(kg)
    meta = dict(tables[S.ENTITIES].schema.metadata)
    meta[S.META_SCHEMA_VERSION] = b"999"
    tables[S.ENTITIES] = tables[S.ENTITIES].replace_schema_metadata(meta)
    with pytest.raises(ValueError, match="schema version"):
        graph_from_tables(tables)


def test_graph_search_returns_chain_then_supporting_chunks(kg: KnowledgeGraph, by_id: dict[str, Chunk]) -> None:
    q = "What does sqlite3_busy_timeout install, and can the application still get SQLITE_BUSY?"
    found = graph_search(kg, q, chunk_text=by_id)
    assert found.why_empty is None and found.route == "graph"
    linked = found.notes[0]
    assert linked.startswith("linked: ") and "sqlite3_busy_timeout() (" in linked and "SQLITE_BUSY (" in linked
    res = found.contexts
    kinds = [c.kind for c in res]
    assert "relation" in kinds and "chunk" in kinds
    assert kinds.index("chunk") > max(i for i, k in enumerate(kinds) if k == "relation")
    chain = [c for c in res if c.kind == "relation"]
    assert all(c.extra["chain"] == chain[0].extra["chain"] for c in chain)
    assert all(c.provenance and all(p in by_id for p in c.provenance) for c in chain)
    docs = [c.source for c in res if c.kind == "chunk"]
    # both pages that answer it: the routine's own page and the busy-handler page
    assert "c3ref_busy_timeout.md" in docs and "c3ref_busy_handler.md" in docs
    words = sum(len(c.text.split()) for c in res[:-1])
    assert words < 1500


def test_graph_search_hides_chunks_the_caller_may_not_see(kg: KnowledgeGraph, by_id: dict[str, Chunk]) -> None:
    hidden = "c3ref_busy_handler.md"
    visible = {cid: c for cid, c in by_id.items() if c.doc_id != hidden}
    res = graph_search(kg, "What does sqlite3_busy_timeout install?", chunk_text=visible.get).contexts
    assert res
    for c in res:
        assert c.source != hidden
        assert all(not p.startswith(hidden) for p in c.provenance)


def test_graph_search_without_linked_entity_says_why(kg: KnowledgeGraph, by_id: dict[str, Chunk]) -> None:
    res = graph_search(kg, "how tall is the eiffel tower", chunk_text=by_id)
    assert res.contexts == [] and res.why_empty


def test_global_search_returns_reports_and_grounding_chunks(kg: KnowledgeGraph, by_id: dict[str, Chunk]) -> None:
    res = global_search(kg, "How do locking, transactions and the write-ahead log work together?", chunk_text=by_id).contexts
    reports = [c for c in res if c.kind == "community_report"]
    assert reports and reports[0].level is not None
    assert [c.kind for c in res][: len(reports)] == ["community_report"] * len(reports)
    chunk_docs = {c.source for c in res if c.kind == "chunk"}
    assert len(chunk_docs) >= 3  # evidence from several parts of the manual
    for r in reports:
        assert r.provenance and all(p in by_id for p in r.provenance)
    fixed = global_search(kg, "write-ahead log", chunk_text=by_id, level=0).contexts
    assert all(c.level == 0 for c in fixed if c.kind == "community_report")


def test_graph_view_api(kg: KnowledgeGraph, by_id: dict[str, Chunk], tmp_path: Path) -> None:
    view = GraphView(kg, chunk_text=by_id)
    table = view.entities(limit=10)
    assert table.num_rows == 10 and table.column("degree").to_pylist() == sorted(table.column("degree").to_pylist(), reverse=True)
    assert view.entity("write-ahead log").name == "WAL"
    nb = view.neighbours("WAL", limit=5)
    assert len(nb) == 5 and all(n["chunk_ids"] for n in nb)
    hops = view.path("sqlite3_busy_timeout", "sqlite3_busy_handler")
    assert hops and hops[0]["from"] == "sqlite3_busy_timeout()" and hops[-1]["to"] == "sqlite3_busy_handler()"
    # "sqlite3_busy_handler() is used to implement sqlite3_busy_timeout()", walked backwards
    assert [h["relation"] for h in hops] == ["is implemented by"]
    # a relation reads as the manual's sentence says it: "busy_timeout sets busy handler"
    typed = [n for n in view.neighbours("busy_timeout", limit=40) if n["relation"] == "set"]
    assert typed and typed[0]["phrase"] == "sets" and typed[0]["direction"] == "out"
    assert "sets the busy handler" in typed[0]["sentence"]
    com = view.community_of("WAL")
    assert com is not None and kg.entities[view.entity("WAL").id].id in com.members
    info = view.community(com.id)
    assert "WAL" in info.members and info.id == com.id and info.report is kg.reports.get(com.id)
    assert view.communities(0).num_rows == len(kg.community_cut(0))
    assert view.text(nb[0]["chunk_ids"][0]) == by_id[nb[0]["chunk_ids"][0]].text
    assert "<table>" in view._repr_html_()
    g = view.to_networkx()
    assert g.number_of_nodes() == len(kg.entities) and g.number_of_edges() == len(kg.relations)


def test_graphml_has_scalar_attributes_only(kg: KnowledgeGraph, tmp_path: Path) -> None:
    import networkx as nx

    path = GraphView(kg).to_graphml(tmp_path / "g.graphml")
    g = nx.read_graphml(path)
    assert g.number_of_nodes() == len(kg.entities)
    for _, data in list(g.nodes(data=True))[:50]:
        assert all(isinstance(v, (str, int, float, bool)) for v in data.values())


def test_community_plot_is_self_contained_html(kg: KnowledgeGraph, tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    big = max(kg.communities.values(), key=lambda c: len(c.members))
    page = GraphView(kg).plot_community(big.id, tmp_path / "c.html")
    assert (tmp_path / "c.html").read_text(encoding="utf-8") == page
    assert "<script" in page and not re.search(r"<script[^>]*\bsrc=", page)  # JS inlined: works offline
    assert len(page) > 1_000_000


def test_stages_match_build_graph(chunks: list[Chunk], kg: KnowledgeGraph, config: GraphConfig) -> None:
    ents, rels = resolve(extract_all(chunks, RuleExtractor()), config)
    assert ents == kg.entities and rels == kg.relations


def test_graph_search_puts_a_second_hop_section_in_place_of_the_weakest_flat_chunk(
    kg: KnowledgeGraph, by_id: dict[str, Chunk]
) -> None:
    from arborgraph.core.lexical import LexicalIndex
    from graphrag.chunks import ChunkFetcher, n_words
    from graphrag.search import GraphSearchConfig, heading_homes

    ids = list(by_id)
    q = "Which pragma enables foreign key constraints, and why can enabling it inside a transaction fail?"
    scores = LexicalIndex.build([by_id[c].context_text() for c in ids]).scores(q)
    flat = [ids[i] for i in scores.argsort()[::-1][:30]]
    cfg = GraphSearchConfig()
    chunks = [c for c in graph_search(kg, q, chunk_text=by_id, candidate_chunks=flat, config=cfg).contexts if c.kind == "chunk"]
    added = [i for i, c in enumerate(chunks) if any(t.startswith("bridge=") for t in c.trace)]
    assert added and added == list(range(added[0], added[0] + len(added)))
    at = added[0]
    window, words = [], 0
    for c in flat:
        if words >= cfg.budget_words:
            break
        window.append(c)
        words += n_words(by_id[c].text)
    # the flat ranking leads; the additions push out only the window's last chunks
    assert cfg.first_hop <= at and at + len(added) <= len(window)
    assert [c.node_id for c in chunks[:at]] == flat[:at]
    after = [c.node_id for c in chunks[at + len(added) :]]
    assert after == [c for c in flat[at:] if c not in {chunks[i].node_id for i in added}][: len(after)]
    bridge = chunks[at].node_id
    assert bridge not in window
    # it is a section whose heading names an entity of the question's neighbourhood
    assert any(bridge in heading_homes(kg, e, ChunkFetcher(by_id)) for e in kg.chunk_entities[bridge])


def test_linking_reads_names_through_articles_and_capitalised_keywords(kg: KnowledgeGraph) -> None:
    from graphrag.linking import link_entities

    names = {le.name for le in link_entities(kg, "Can AUTOINCREMENT be used on a table declared without a rowid?")}
    assert {"AUTOINCREMENT", "WITHOUT ROWID"} <= names
    like = [e.name for e in kg.find("LIKE")]
    assert like and set(like) <= {le.name for le in link_entities(kg, "Which index does a LIKE filter use?")}
    # in lower case the stopword stays prose
    assert not set(like) & {le.name for le in link_entities(kg, "Which index would you like to use?")}


def test_global_search_with_a_flat_ranking_keeps_it_first(kg: KnowledgeGraph, by_id: dict[str, Chunk]) -> None:
    flat = [c for c in by_id if c.startswith("isolation.md")][:5]
    res = global_search(kg, "How does SQLite isolate concurrent transactions?", chunk_text=by_id, candidate_chunks=flat).contexts
    assert [c.node_id for c in res[:4]] == flat[:4]
    assert any(c.kind == "community_report" for c in res)
    assert len({c.node_id for c in res}) == len(res)


def test_mention_index_scores_chunks_as_their_mentions_do(kg: KnowledgeGraph, by_id: dict[str, Chunk]) -> None:
    from collections import defaultdict

    from graphrag.linking import link_entities
    from graphrag.search import GraphSearchConfig, expand
    from graphrag.search_index import mention_index

    index = mention_index(kg)
    assert mention_index(kg) is index  # built once per graph
    scores = expand(kg, link_entities(kg, "How does WAL mode interact with checkpoints?"), GraphSearchConfig())
    top = dict(list(scores.items())[:30])
    naive: dict[str, float] = defaultdict(float)
    for eid, s in top.items():
        for m in kg.entities[eid].mentions:
            naive[m.chunk_id] += s * (1.0 + 0.25 * min(m.count - 1, 4))
    fast = index.chunk_scores(top)
    assert {index.chunk_ids[i]: pytest.approx(v) for i, v in enumerate(fast) if v > 0} == dict(naive)
    wal = kg.find("WAL")[0]
    members = [wal.id, kg.find("journal_mode")[0].id]
    counts = index.mention_counts(members)
    for cid in by_id:
        expected = sum(m.chunk_id == cid for e in members for m in kg.entities[e].mentions)
        assert counts[index.chunk_col[cid]] == expected if cid in index.chunk_col else expected == 0
    on_page = index.on_pages(wal.id, {"wal.md", "tempfiles.md"}, 50)
    assert on_page and all(c.split("#")[0] in {"wal.md", "tempfiles.md"} for c in on_page)
    assert set(on_page) == {m.chunk_id for m in wal.mentions if m.chunk_id.split("#")[0] in {"wal.md", "tempfiles.md"}}


def test_scores_read_at_a_few_columns_equal_the_products_over_every_mention(kg: KnowledgeGraph) -> None:
    """The ranking stage reads the linked entities' rows and the candidates' columns
    only; the values must be those of the full products, bit for bit, or a query's order
    would depend on which columns it happened to read."""
    import numpy as np

    from graphrag.linking import link_entities
    from graphrag.search_index import mention_index

    index = mention_index(kg)
    everywhere = np.arange(len(index.chunk_ids))
    questions = ["How does WAL mode interact with checkpoints?", "What does VACUUM do to the freelist?"]
    for question in questions:
        linked = {le.entity_id: le.score for le in link_entities(kg, question)}
        assert linked
        vec = np.zeros(len(index.entity_row))
        for eid, s in linked.items():
            vec[index.entity_row[eid]] += s
        direct = np.asarray(index.weighted.T @ vec).ravel()
        assert np.array_equal(index.chunk_scores(linked), direct)
        reached = direct / direct.max()
        per_entity = np.asarray(index.present @ reached).ravel() / np.maximum(index.chunks_per_entity(), 1.0)
        spread = np.asarray(index.present.T @ per_entity).ravel()
        assert np.array_equal(index.spread_scores(reached, everywhere), spread)
        few = everywhere[::7][::-1]  # any columns, in any order
        assert np.array_equal(index.spread_scores(reached, few), spread[few])


def test_global_search_hides_reports_citing_chunks_the_caller_may_not_see(
    kg: KnowledgeGraph, by_id: dict[str, Chunk]
) -> None:
    q = "How do locking, transactions and the write-ahead log work together?"
    everything = global_search(kg, q, chunk_text=by_id).contexts
    shown = [c for c in everything if c.kind == "community_report"]
    hidden = shown[0].provenance[0].split("#")[0]  # a page the best report quotes
    visible = {cid: c for cid, c in by_id.items() if c.doc_id != hidden}
    res = global_search(kg, q, chunk_text=visible.get).contexts
    assert res
    for c in res:
        assert c.source != hidden and all(not p.startswith(hidden) for p in c.provenance)
    # the reports are checked lazily, but only hidden ones drop out
    kept = [c for c in res if c.kind == "community_report"]
    assert kept and shown[0].node_id not in {c.node_id for c in kept}


def test_searches_use_the_given_question_vector_and_lexical_scores(
    kg: KnowledgeGraph, by_id: dict[str, Chunk]
) -> None:
    import numpy as np

    from arborgraph.core.lexical import LexicalIndex

    ids = sorted(by_id)
    lexical = LexicalIndex.build([by_id[c].text for c in ids])
    row = {c: i for i, c in enumerate(ids)}
    q = "What does sqlite3_busy_timeout install, and can the application still get SQLITE_BUSY?"
    full = lexical.scores(q)
    asked: list[int] = []

    def chunk_lexical(chunk_ids):  # type: ignore[no-untyped-def]
        asked.append(len(chunk_ids))
        return full[[row[c] for c in chunk_ids]]

    # a question vector that only likes one page: dense scores must come from it
    # (there is no embedder to make another one)
    target = "c3ref_busy_handler.md"
    vectors = {c: np.array([1.0, 0.0] if c.startswith(target) else [0.0, 1.0], dtype=np.float32) for c in ids}
    res = graph_search(
        kg, q, chunk_text=by_id, chunk_vectors=vectors, query_vector=np.array([1.0, 0.0], dtype=np.float32),
        chunk_lexical=chunk_lexical,
    ).contexts
    assert asked  # the full-text scores were used for the candidates
    chunks = [c for c in res if c.kind == "chunk"]
    assert chunks[0].source == target
    dense = [float(t.split("=")[1]) for c in chunks for t in c.trace if t.startswith("dense=")]
    assert max(dense) == 1.0
    glob = global_search(
        kg, q, chunk_text=by_id, chunk_vectors=vectors, query_vector=np.array([1.0, 0.0], dtype=np.float32),
        chunk_lexical=chunk_lexical,
    ).contexts
    assert any(c.kind == "chunk" for c in glob)


def test_report_context_shows_the_findings_that_match_the_question(kg: KnowledgeGraph) -> None:
    from graphrag.search_global import _report_context

    report = next(r for r in kg.reports.values() if len(r.findings) >= 3)
    last = report.findings[-1]
    ctx = _report_context(report, 1.0, 1, last.text)
    assert last.text in ctx.text and report.findings[0].text not in ctx.text
    assert ctx.provenance == list(dict.fromkeys(last.chunk_ids))
    two = _report_context(report, 1.0, 2, last.text)
    shown = [f for f in report.findings if f.text in two.text]
    assert len(shown) == 2 and shown[-1] is last  # in the report's own order


def _window_ids(contexts: list, budget_words: int) -> list[str]:  # type: ignore[type-arg]
    out, used = [], 0
    for c in contexts:
        if used >= budget_words:
            break
        out.append(c.node_id)
        used += len(c.text.split())
    return out


def test_global_search_puts_leads_of_pages_its_flat_window_misses_into_the_window(
    kg: KnowledgeGraph, by_id: dict[str, Chunk]
) -> None:
    from graphrag.search_global import GlobalSearchConfig

    q = "How do the write-ahead log, file locking and transaction isolation work together?"
    flat = [c for c in by_id if c.startswith("pragma.md#")]  # one page fills the window
    cfg = GlobalSearchConfig()
    res = global_search(kg, q, chunk_text=by_id, candidate_chunks=flat, config=cfg).contexts
    leads = [c for c in res if "page lead" in c.trace]
    assert 0 < len(leads) <= cfg.lead_chunks
    # each is the first chunk of a page the flat window does not quote
    assert all(c.node_id.endswith("#0") and c.source != "pragma.md" for c in leads)
    assert {c.source for c in leads} & {"wal.md", "lockingv3.md", "isolation.md"}
    window = _window_ids(list(res), cfg.budget_words)
    assert {c.node_id for c in leads} <= set(window)
    # the flat ranking still leads, and only the window's last flat chunks were pushed back
    chunks = [c.node_id for c in res if c.kind == "chunk"]
    assert chunks[: cfg.first_hop] == flat[: cfg.first_hop]
    assert [c for c in chunks if c in flat] == flat[: len([c for c in chunks if c in flat])]
    plain = global_search(kg, q, chunk_text=by_id, candidate_chunks=flat, config=GlobalSearchConfig(lead_chunks=0)).contexts
    assert not any("page lead" in c.trace for c in plain)


def test_global_search_leaves_out_page_leads_that_match_worse_than_the_window(
    kg: KnowledgeGraph, by_id: dict[str, Chunk]
) -> None:
    import numpy as np

    q = "How do the write-ahead log, file locking and transaction isolation work together?"
    flat = [c for c in by_id if c.startswith("pragma.md#")]
    # a question vector that only likes the flat page: every lead matches worse
    vectors = {c: np.array([1.0, 0.0] if c.startswith("pragma.md#") else [0.0, 1.0], dtype=np.float32) for c in by_id}
    qvec = np.array([1.0, 0.0], dtype=np.float32)
    res = global_search(kg, q, chunk_text=by_id, candidate_chunks=flat, chunk_vectors=vectors, query_vector=qvec).contexts
    assert not any("page lead" in c.trace for c in res)
    # one that likes another page: its lead goes in
    res = global_search(kg, q, chunk_text=by_id, candidate_chunks=flat, chunk_vectors=vectors, query_vector=np.array([0.0, 1.0], dtype=np.float32)).contexts
    assert any("page lead" in c.trace for c in res)


def test_no_path_between_unconnected_entities_is_said_quietly_on_any_thread(
    kg: KnowledgeGraph, by_id: dict[str, Chunk], capfd: pytest.CaptureFixture[str]
) -> None:
    import threading

    from graphrag.search_index import path_index

    g = kg.undirected
    membership = g.connected_components().membership
    a = g.vs[0]["name"]
    b = next(v["name"] for v in g.vs if membership[v.index] != membership[0])
    found: list[object] = []

    def ask() -> None:  # a service answers on worker threads, where igraph prints its warnings itself
        found.append(path_index(kg).shortest(a, b, max_len=4))
        found.append(GraphView(kg, chunk_text=by_id).path(kg.entities[a].name, kg.entities[b].name))

    worker = threading.Thread(target=ask)
    worker.start()
    worker.join(60)
    assert found == [[], []]
    assert "Couldn't reach" not in capfd.readouterr().err


def test_an_update_partitions_as_the_build_does(kg: KnowledgeGraph, config: GraphConfig, chunks: list[Chunk]) -> None:
    from graphrag.update import build_graph_state

    # this graph has sibling communities that only a member's name would tell apart: both
    # paths merge them (graphrag.namesakes), so both give the same communities
    detected = detect_communities(kg.entities, kg.relations, config)
    assert len(detected) > len(kg.communities)
    state, _ = build_graph_state(chunks, extractor=RuleExtractor(), config=config)
    assert [(c.id, c.level, c.members, c.children) for c in state.graph.communities.values()] == [
        (c.id, c.level, c.members, c.children) for c in kg.communities.values()
    ]
