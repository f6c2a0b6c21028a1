"""Unit tests of the build's parts: the stage list, the index layout, chunk rows, and the
extractor settings reachable from the root config (no build runs here)."""

from __future__ import annotations

import pytest

from arborgraph.index import layout
from arborgraph.index.chunk_rows import chunks_from_table, chunks_table, decode_chunks, encode_chunks
from arborgraph.config import load_config
from arborgraph.core.errors import ConfigError
from arborgraph.pipeline import STAGES
from arborgraph.pipeline.scopes import structure_settings
from graphrag.extract import LLMExtractorConfig, RuleExtractorConfig
from ingest.models import Chunk, Document


def test_the_timed_stages_are_the_timings_a_build_reports() -> None:
    # BuildReport.timings_s keys (and the CLI's list) are these, in this order, plus "total"
    assert [s.name for s in STAGES if s.timed] == [
        "load", "chunk", "contradictions", "contextual_prefixes", "embed", "lexical", "tree", "graph",
    ]
    assert len({s.name for s in STAGES}) == len(STAGES)
    optional = {s.name for s in STAGES if not s.when(load_config(environ={}))}
    assert optional == {"contextual_prefixes"}
    lookup_only = load_config(environ={}, overrides={"build_tree": False, "build_graph": False})
    assert {s.name for s in STAGES if not s.when(lookup_only)} == optional | {"tree", "graph"}


def test_the_driver_runs_every_stage_once_in_the_listed_order() -> None:
    # build_stages names each stage where it calls it (ctx.stage("name", ...)); STAGES
    # (the timings, the docs' diagram) must list the same names in the same order
    import ast
    import inspect

    from arborgraph.pipeline.stages import build_stages

    calls = sorted(
        (node.lineno, node.col_offset, node.args[0].value)
        for node in ast.walk(ast.parse(inspect.getsource(build_stages)))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "stage"
    )
    assert [name for *_, name in calls] == [s.name for s in STAGES]


def test_layout_names_the_files_builds_have_always_written() -> None:
    assert layout.generation_name(7) == "gen-000007" and layout.generation_number("gen-000007") == 7
    assert layout.generation_number("gen-7") is None and layout.generation_number(".pruned-gen-000001") is None
    assert layout.table_file("chunks") == "tables/chunks.parquet"
    assert layout.vectors_file(layout.scoped(layout.TREE, "s1")) == "vectors/tree.s1.npy"
    assert layout.CHUNKS_BM25 == "bm25/chunks" and layout.tree_bm25_dir("s0") == "bm25/tree.s0"
    assert layout.scope_file_prefixes("tree", "s0") == ("tables/raptor_nodes.s0.", "vectors/tree.s0.", "bm25/tree.s0/")
    assert "tables/entities.s2." in layout.scope_file_prefixes("graph", "s2")
    assert str(layout.llm_cache_file("/x")) == "/x/cache/llm.sqlite"


def _doc_and_chunks() -> tuple[Document, list[Chunk]]:
    text = "Alpha beta gamma. Delta epsilon."
    doc = Document(doc_id="d.md", path="d.md", title="D", format="markdown", text=text, blocks=[], content_hash="h")
    chunks = [
        Chunk(chunk_id="d.md#0", doc_id="d.md", ordinal=0, text=text[:17], heading_path=["D"], start=0, end=17, n_tokens=4),
        # a chunk whose text is not the document's span (a split table row, say) keeps its own
        Chunk(chunk_id="d.md#1", doc_id="d.md", ordinal=1, text="Delta!", heading_path=["D", "E"], start=18, end=32, n_tokens=2),
    ]
    return doc, chunks


def test_chunks_survive_the_table_and_the_pool_rows() -> None:
    doc, chunks = _doc_and_chunks()
    table = chunks_table(chunks, prefixes=["p0", "p1"])
    assert table.column_names[-1] == "context_prefix"
    assert chunks_from_table(table) == chunks
    rows = encode_chunks(doc, chunks)
    assert rows[0][2] is None and rows[1][2] == "Delta!"  # the document's own text is not sent back
    assert decode_chunks(doc, rows) == chunks


def test_the_extractors_are_set_from_the_root_config_with_todays_defaults() -> None:
    default = load_config(environ={})
    assert default.graph_extract.rules == RuleExtractorConfig()
    assert default.graph_extract.llm == LLMExtractorConfig()
    tuned = load_config(
        environ={"ARBORGRAPH_GRAPH_EXTRACT__LLM__GLEANING": "false"},
        overrides={"graph_extract": {"rules": {"min_term_df": 2}}},
    )
    assert tuned.graph_extract.rules.min_term_df == 2 and tuned.graph_extract.llm.gleaning is False
    with pytest.raises(ConfigError, match="graph_extract.rules.no_such_setting"):
        load_config(environ={}, overrides={"graph_extract": {"rules": {"no_such_setting": 1}}})
    # at their defaults the extractors leave a scope's graph fingerprint as it was;
    # set, they change it, so a rebuild re-extracts instead of reusing the old graph
    assert "extract" not in structure_settings(default, None)[1]
    assert structure_settings(tuned, None)[1]["extract"]["rules"]["min_term_df"] == 2
    assert structure_settings(tuned, None)[0] == structure_settings(default, None)[0]
