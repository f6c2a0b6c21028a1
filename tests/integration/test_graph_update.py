"""Updating the entity graph in place (graphrag.update) instead of rebuilding it.

Real pages of the bundled manual, the real rule extractor, resolution, Leiden and
report writers. Extractor and report-writer calls are counted by thin subclasses or
wrappers around the real ones; the LLM report test talks to the loopback OpenAI
stand-in (tests/support/llm_server.py) through the real provider.
"""

from __future__ import annotations

import dataclasses

import json
import re
from pathlib import Path
from typing import Any

import pytest

import arborgraph
from arborgraph.config import Config, load_config
from arborgraph.pipeline import build_index
from graphrag import ExtractiveReportWriter, GraphConfig, RuleExtractor, build_graph, graph_to_tables
from graphrag.build import graph_from_chunks
from graphrag.model import ChunkExtraction
from graphrag.reports import CommunityContext
from graphrag.update import GraphState, build_graph_state, chunk_hash, state_from_tables, state_to_tables, update_graph
from ingest import chunk_document, iter_collection, load_token_counter
from ingest.models import Chunk, Document
from conftest import copy_pages

PAGES = ["wal.md", "lockingv3.md", "lang_transaction.md", "c3ref_busy_timeout.md", "autoinc.md", "lang_vacuum.md"]
NEW_TEXT = (
    "\n\n## Quasar checkpoints\n\nThe quasar checkpoint mode of `sqlite3_quasar_checkpoint()` copies every "
    "WAL frame into the database twice and then verifies the copy with the FNV-1a checksum.\n"
)


class CountingExtractor(RuleExtractor):
    """The real rule extractor, recording which chunks it extracts."""

    def __init__(self) -> None:
        super().__init__()
        self.extracted: list[str] = []

    def extract(self, chunk: Chunk) -> ChunkExtraction:
        self.extracted.append(chunk.chunk_id)
        return super().extract(chunk)


class CountingReports(ExtractiveReportWriter):
    """The real extractive report writer, recording which communities it writes."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[int] = []

    def write(self, context: CommunityContext) -> Any:
        self.written.append(context.community.id)
        return super().write(context)


@pytest.fixture()
def docs(tmp_path: Path, sample_slice: Path) -> Path:
    return copy_pages(sample_slice, tmp_path / "docs", PAGES)


def chunks_of(docs: Path) -> list[Chunk]:
    cfg, count = Config(), load_token_counter()
    out: list[Chunk] = []
    for item in iter_collection([docs]):
        if isinstance(item, Document):
            out.extend(chunk_document(item, cfg.chunking, count))
    return out


def built(chunks: list[Chunk]) -> GraphState:
    state, _ = build_graph_state(chunks, extractor=RuleExtractor())
    # what the index stores is what an update starts from
    return state_from_tables(state_to_tables(state))


def mentioned_in(state: GraphState, doc_id: str) -> set[str]:
    return {eid for eid, ent in state.graph.entities.items() if any(c.startswith(f"{doc_id}#") for c in ent.chunk_ids)}


def test_changing_one_page_extracts_its_chunks_and_keeps_untouched_communities(docs: Path) -> None:
    before = chunks_of(docs)
    old = built(before)
    with (docs / "wal.md").open("a", encoding="utf-8") as handle:
        handle.write(NEW_TEXT)
    after = chunks_of(docs)
    extractor, reports = CountingExtractor(), CountingReports()
    new, update = update_graph(old, after, extractor=extractor, report_writer=reports)

    old_hash = old.hashes
    redo = [c.chunk_id for c in after if old_hash.get(c.chunk_id) != chunk_hash(c)]
    assert redo and all(cid.startswith("wal.md#") for cid in redo)
    assert extractor.extracted == redo  # only the new and changed chunks, once each
    assert (update.chunks_extracted, update.chunks_reused) == (len(redo), len(after) - len(redo))
    assert not update.full_refit and update.refit_reason is None
    assert "sqlite3_quasar_checkpoint()" in {e.name for e in new.graph.entities.values()}
    # changed chunks are extracted with the statistics fitted on the previous collection
    previous_fit = RuleExtractor().fit(before)
    by_id = {ex.chunk_id: ex for ex in new.extractions}
    assert all(by_id[c.chunk_id] == previous_fit.extract(c) for c in after if c.chunk_id in redo)

    # communities with no member the edited page mentions (before or after) keep id,
    # members and report: the writer is not called for them
    touched = mentioned_in(old, "wal.md") | mentioned_in(new, "wal.md")
    untouched = [c for c in old.graph.communities.values() if not set(c.members) & touched]
    assert untouched
    kept = [c for c in untouched if c.id in new.graph.communities]
    assert len(kept) >= 0.8 * len(untouched)
    for com in kept:
        assert new.graph.communities[com.id].members == com.members
        if com.id in old.graph.reports:
            assert com.id not in reports.written
            a, b = old.graph.reports[com.id], new.graph.reports[com.id]
            # rank is the weight relative to the level's heaviest community: refreshed
            assert (a.title, a.summary, a.findings, a.level) == (b.title, b.summary, b.findings, b.level)
    assert sorted(reports.written) == sorted(update.redone_report_ids)
    assert update.reports_redone == len(reports.written) < len(new.graph.reports)
    assert update.reports_reused == len(new.graph.reports) - len(reports.written)
    assert update.communities_kept == len([c for c in new.graph.communities if c in old.graph.communities])
    # fresh ids never collide with ids used before
    assert all(cid > max(old.graph.communities) for cid in update.new_ids)


def test_deleted_page_vanishes_from_provenance_relations_and_reports(docs: Path) -> None:
    old = built(chunks_of(docs))
    assert mentioned_in(old, "autoinc.md")
    (docs / "autoinc.md").unlink()
    extractor = CountingExtractor()
    new, update = update_graph(old, chunks_of(docs), extractor=extractor, refit_threshold=0.5)

    assert extractor.extracted == [] and update.chunks_removed > 0 and not update.full_refit
    gone = "autoinc.md#"
    kg = new.graph
    assert not any(c.startswith(gone) for e in kg.entities.values() for c in e.chunk_ids)
    assert not any(e.description_chunk and e.description_chunk.startswith(gone) for e in kg.entities.values())
    for rel in kg.relations.values():
        assert not any(c.startswith(gone) for c in rel.chunk_ids)
        assert not any(ev.chunk_id.startswith(gone) for ev in rel.evidence)
    assert not any(c.startswith(gone) for r in kg.reports.values() for c in r.chunk_ids)
    assert not any(ex.chunk_id.startswith(gone) for ex in new.extractions)
    assert gone not in repr({n: t.to_pylist() for n, t in state_to_tables(new).items()})


def test_large_change_refits_the_extractor_and_says_why(docs: Path) -> None:
    old = built(chunks_of(docs))
    for page in ("lockingv3.md", "autoinc.md", "lang_vacuum.md"):
        (docs / page).unlink()
    after = chunks_of(docs)
    extractor = CountingExtractor()
    new, update = update_graph(old, after, extractor=extractor, refit_threshold=0.25)
    assert update.full_refit and "refit threshold" in (update.refit_reason or "")
    assert update.drift > 0.25 and extractor.extracted == [c.chunk_id for c in after]
    # the refitted vocabulary is what an unchanged collection would learn
    fitted = RuleExtractor().fit(after).fitted_state()
    assert new.extractor_state == {kind: items for kind, items in fitted.items() if items}


def test_small_updates_add_up_to_a_refit(docs: Path) -> None:
    state = built(chunks_of(docs))
    n = len(state.hashes)
    (docs / "autoinc.md").unlink()  # 9 of 96 chunks
    state, first = update_graph(state, chunks_of(docs), extractor=RuleExtractor(), refit_threshold=0.15)
    assert not first.full_refit and first.drift == pytest.approx(first.chunks_removed / n, abs=1e-6)
    (docs / "lang_vacuum.md").unlink()  # 8 more: together past 15 % of the fitted chunks
    state, second = update_graph(state_from_tables(state_to_tables(state)), chunks_of(docs),
                                 extractor=RuleExtractor(), refit_threshold=0.15)
    assert second.full_refit and "since the last fit" in (second.refit_reason or "")
    assert second.drift == pytest.approx((first.chunks_removed + second.chunks_removed) / n, abs=1e-6)
    _, third = update_graph(state, chunks_of(docs), extractor=RuleExtractor(), refit_threshold=0.15)
    assert not third.full_refit and third.drift == 0.0 and third.chunks_extracted == 0


def test_full_build_keeps_what_an_update_needs_and_equals_build_graph(docs: Path) -> None:
    chunks = chunks_of(docs)
    state, update = build_graph_state(chunks, extractor=RuleExtractor())
    tables = state_to_tables(state)
    for name, table in graph_to_tables(build_graph(chunks, extractor=RuleExtractor())).items():
        assert tables[name].equals(table, check_metadata=True), name
    assert update.full_refit and update.chunks_extracted == len(chunks)
    back = state_from_tables(tables)
    assert back.extractions == state.extractions and back.hashes == state.hashes
    fitted = {kind: items for kind, items in RuleExtractor().fit(chunks).fitted_state().items() if items}
    assert back.extractor_state == state.extractor_state == fitted
    assert back.extractor_state["terms"] and back.extractor == RuleExtractor.name


def test_graph_from_chunks_builds_without_a_previous_graph_and_updates_with_one(docs: Path) -> None:
    chunks = chunks_of(docs)
    config = GraphConfig()
    state, update = graph_from_chunks(chunks, extractor=RuleExtractor(), config=config)
    full, _ = build_graph_state(chunks, extractor=RuleExtractor(), config=config)
    assert update.full_refit and state_to_tables(state).keys() == state_to_tables(full).keys()
    for name, table in state_to_tables(full).items():
        assert state_to_tables(state)[name].equals(table), name
    previous = state_from_tables(state_to_tables(state))
    extractor = CountingExtractor()
    again, update = graph_from_chunks(chunks[1:], extractor=extractor, config=config, previous=previous)
    assert not update.full_refit and extractor.extracted == []  # a removal extracts nothing
    assert update.chunks_removed == 1 and update.chunks_reused == len(chunks) - 1
    assert chunks[0].chunk_id not in again.hashes


def test_update_is_deterministic(docs: Path) -> None:
    old = built(chunks_of(docs))
    with (docs / "wal.md").open("a", encoding="utf-8") as handle:
        handle.write(NEW_TEXT)
    (docs / "autoinc.md").unlink()
    after = chunks_of(docs)
    first = state_to_tables(update_graph(old, after, extractor=RuleExtractor(), refit_threshold=0.5)[0])
    second = state_to_tables(update_graph(old, after, extractor=RuleExtractor(), refit_threshold=0.5)[0])
    assert first.keys() == second.keys()
    for name in first:
        assert first[name].equals(second[name], check_metadata=True), name


def test_index_update_answers_graph_queries_about_the_new_text(tmp_path: Path, docs: Path) -> None:
    index = tmp_path / "idx"
    config = load_config(overrides={"build_tree": False})
    first = build_index([docs], index, config)
    with (docs / "wal.md").open("a", encoding="utf-8") as handle:
        handle.write(NEW_TEXT)
    second = build_index([docs], index, config)

    graph = second.stages["graph"]
    assert graph["updated"] == 1 and graph["refits"] == []
    assert 0 < graph["chunks_extracted"] <= 3 and graph["chunks_reused"] == first.chunks
    assert graph["reports_reused"] > graph["reports_redone"] > 0
    assert graph["communities_kept"] > 0
    res = arborgraph.open(index).query(
        "What does sqlite3_quasar_checkpoint() do?", route="graph", top_k=30, budget_tokens=4000
    )
    assert any("quasar checkpoint mode" in c.text for c in res.contexts)

    # with nothing changed no generation is written; a forced one reuses the graph and
    # its update tables as is
    assert build_index([docs], index, config).unchanged
    third = build_index([docs], index, config, force=True)
    assert third.stages["graph"]["reused"] == 1
    fourth_docs = docs / "lang_vacuum.md"
    fourth_docs.write_text(fourth_docs.read_text(encoding="utf-8") + NEW_TEXT.replace("Quasar", "Pulsar"))
    assert build_index([docs], index, config).stages["graph"]["updated"] == 1


def _report_reply(body: dict[str, Any]) -> str:
    """A valid community report citing the first chunk id the prompt offers."""
    prompt = body["messages"][-1]["content"]
    cited = re.findall(r"\[([^\[\]\s]+#\d+)\]", prompt)[:1]
    first = re.search(r"^- (.+?) \(", prompt, re.MULTILINE)
    title = first.group(1) if first else "community"
    return json.dumps({
        "title": title, "summary": f"About {title}.",
        "findings": [{"text": f"{title} is described here.", "chunk_ids": cited}], "rating": 5,
    })


def test_llm_reports_are_written_only_for_changed_communities(tmp_path: Path, docs: Path, llm_server) -> None:  # type: ignore[no-untyped-def]
    from arborgraph.llm import LLMCache, LLMConfig, LLMUsage
    from arborgraph.llm.provider import OpenAIChatModel
    from graphrag import LLMReportWriter

    llm_server.set_reply(_report_reply)
    config = LLMConfig(model="stand-in-model", base_url=llm_server.base_url, api_key="k")

    def writer(cache: str) -> LLMReportWriter:
        # a cache of its own per build: every report the update writes reaches the server
        return LLMReportWriter(OpenAIChatModel(config, LLMCache(tmp_path / cache), LLMUsage(), environ={}))

    chat = "/v1/chat/completions"
    old, _ = build_graph_state(chunks_of(docs), extractor=RuleExtractor(), report_writer=writer("a.sqlite"))
    # the model writes the reports of communities of three members or more (min_report_size)
    modelled = lambda g: {c for c, r in g.reports.items() if len(g.communities[c].members) >= 3}  # noqa: E731
    assert llm_server.count(chat) == len(modelled(old.graph)) > 0
    old = state_from_tables(state_to_tables(old))
    with (docs / "wal.md").open("a", encoding="utf-8") as handle:
        handle.write(NEW_TEXT)
    before = llm_server.count(chat)
    new, update = update_graph(old, chunks_of(docs), extractor=RuleExtractor(), report_writer=writer("b.sqlite"))
    assert llm_server.count(chat) - before == update.reports_redone
    assert 0 < update.reports_redone < len(modelled(new.graph))
    for cid, report in new.graph.reports.items():
        if cid not in update.redone_report_ids and cid in modelled(new.graph):
            before_report = old.graph.reports[cid]
            # the model's text and rating are kept; the community's name and pages to
            # read, which it was not shown, follow the new graph
            assert dataclasses.replace(report, name=before_report.name, pages=before_report.pages) == before_report


def test_editing_the_sentence_that_opens_a_section_rewrites_the_reports_quoting_it(docs: Path) -> None:
    from graphrag.build import section_leads

    before = chunks_of(docs)
    old = built(before)
    leads = section_leads(before)
    # a report that opens with a section's lead sentence (issue #35: reports open with
    # the lead sentences of the sections their members live in)
    quoting = {
        cid: chunk for cid, report in old.graph.reports.items() for chunk, lead in leads.items()
        if report.summary.split("\n")[0].endswith(lead)
    }
    assert quoting
    cid, chunk_id = sorted(quoting.items())[0]
    lead = leads[chunk_id]
    replacement = "The quasar mode copies every page twice and then checks the copy again."
    after = []
    for c in before:
        if c.chunk_id == chunk_id:
            pattern = r"\s+".join(map(re.escape, lead.split()))
            text, n = re.subn(pattern, replacement, c.text, count=1)
            assert n == 1
            c = c.model_copy(update={"text": text})
        after.append(c)
    reports = CountingReports()
    new, update = update_graph(old, after, extractor=RuleExtractor(), report_writer=reports)
    assert section_leads(after)[chunk_id] == replacement
    # every report that now opens with the new sentence was written again, none kept
    # with the old one
    opening = [i for i, r in new.graph.reports.items() if replacement in r.summary]
    assert opening and set(opening) <= set(reports.written)
    assert not any(lead in r.summary for r in new.graph.reports.values())
    assert sorted(reports.written) == sorted(update.redone_report_ids)
    assert update.reports_reused > 0
