"""The typed manifest (arborgraph.index.manifest) reads what earlier builds wrote, writes the
same text back, and a fresh build writes manifests of the same shape.

``tests/data/manifests/`` holds manifest.json files written by builds on main before
the manifest had its own module (an index with two access scopes, a lexical
lookup-only one with skipped files and a warning, an LLM-mode one with ``llm_*``
usage): indexes built then must keep opening, and their manifests must round-trip."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from arborgraph.index import layout
from arborgraph.config import load_config
from arborgraph.index.manifest import Manifest, ScopeRecord, index_manifest, manifest_text
from arborgraph.index.schema import SCHEMA_VERSION
from arborgraph.pipeline import build_index
from arborgraph.index.store import open_generation

OLD = Path(__file__).resolve().parents[1] / "data" / "manifests"
NAMES = sorted(p.name for p in OLD.glob("*.json"))


def test_the_old_manifests_are_there() -> None:
    assert NAMES == ["llm.json", "lookup-only.json", "scoped.json"]


@pytest.mark.parametrize("name", NAMES)
def test_a_manifest_written_before_validates_and_round_trips(name: str) -> None:
    text = (OLD / name).read_text()
    data = json.loads(text)
    manifest = Manifest.model_validate(data)
    assert manifest.to_json() == data
    assert manifest_text(manifest.to_json()) == text  # the very bytes of the file
    # and the typed fields hold what the dict did
    assert [s.tag for s in manifest.scopes] == [s["tag"] for s in data["scopes"]]
    assert manifest.mode.embedding == data["mode"]["embedding"]
    assert manifest.report.stages == data["report"]["stages"]
    assert manifest.documents == data["documents"]


def test_typed_readers_see_what_the_old_manifests_hold() -> None:
    scoped = Manifest.model_validate_json((OLD / "scoped.json").read_text())
    assert [(s.tag, s.scope) for s in scoped.scopes] == [("s0", "public"), ("s1", "acl:team-a")]
    assert scoped.scope("s1") == scoped.scopes[1] and scoped.scope("s9") is None
    assert scoped.llm_usage() == {}
    llm = Manifest.model_validate_json((OLD / "llm.json").read_text())
    usage = llm.llm_usage()
    assert list(usage) == sorted(usage) and usage["llm_calls"] > 0 and "llm_by_stage" in usage
    lexical = Manifest.model_validate_json((OLD / "lookup-only.json").read_text())
    assert lexical.mode.lexical_fallback and lexical.mode.lexical_fallback_reason == "no model here"
    assert [s.reason for s in lexical.report.skipped] == ["unreadable PDF: Stream has ended unexpectedly", "empty file"]
    assert lexical.routes == ["lookup"] and lexical.scopes[0].tree_fingerprint is None


def test_a_scope_record_rejects_a_bad_tag() -> None:
    with pytest.raises(ValueError):
        ScopeRecord(tag="../s0", scope="public", chunks=1)


def _shape(value: Any) -> Any:
    """The keys of ``value`` at every depth (values left out); lists by their first item."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return type(value).__name__


def _kept(old: object, new: object) -> bool:
    """Whether ``new`` holds every key of ``old`` with the same value, recursively."""
    if isinstance(old, dict):
        return isinstance(new, dict) and all(k in new and _kept(v, new[k]) for k, v in old.items())
    return old == new


def test_a_fresh_build_writes_the_shape_main_wrote(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    manual = Path(__file__).resolve().parents[2] / "examples" / "sqlite"
    for page in ("wal.md", "c3ref_busy_timeout.md", "autoinc.md"):
        shutil.copy(manual / page, docs / page)
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 not really a pdf\x00\x01")
    (docs / "empty.md").write_text("")
    config = load_config(environ={}, overrides={"build_tree": False, "build_graph": False})
    build_index([docs], tmp_path / "idx", config, embedder_factory=lambda c: (None, "no model here"),
                metadata={"nomatch*": {"version": "2"}})
    gen = open_generation(tmp_path / "idx", shape=Manifest)
    new = json.loads((gen.path / layout.MANIFEST).read_text())
    old = json.loads((OLD / "lookup-only.json").read_text())
    # the schema moved on since (2: the tree's outline columns); the shape did not
    assert new["schema_version"] == SCHEMA_VERSION and old["schema_version"] == 1
    for data in (new, old):  # what differs by machine and by run
        for key in ("built_at", "timings_s", "files", "generation", "schema_version"):
            data.pop(key)
        # times of the last full build (added since main wrote these): by machine and run too
        data.pop("full_build_timings_s", None)
        # the loaders' fingerprint (added since): a hash of this checkout's ingest code
        data.pop("loader", None)
        data["report"].pop("index_dir")
        data["report"].pop("generation")
        data["report"]["skipped"] = [s["reason"] for s in data["report"]["skipped"]]
        for scope in data.get("scopes", []):
            # hashes of the structures' settings: a setting added with its default changes them
            scope.pop("tree_settings", None)
            scope.pop("graph_settings", None)
    old_config, new_config = old.pop("config"), new.pop("config")
    # the config may gain sections and settings (made reachable later); none is lost or changed
    assert _kept(old_config, new_config)
    assert new == old
    assert _shape(json.loads((gen.path / layout.MANIFEST).read_text())["files"]) == _shape(
        json.loads((OLD / "lookup-only.json").read_text())["files"]
    )


def test_an_update_carries_the_last_full_builds_timings(tmp_path: Path) -> None:
    """The Index page shows the build's timings: an update reusing documents keeps those
    of the last full build beside its own."""
    manual = Path(__file__).resolve().parents[2] / "examples" / "sqlite"
    docs = tmp_path / "docs"
    docs.mkdir()
    for page in ("wal.md", "autoinc.md"):
        shutil.copy(manual / page, docs / page)
    config = load_config(environ={}, overrides={"build_tree": False, "build_graph": False})
    no_model = lambda c: (None, "no model here")  # noqa: E731
    first = build_index([docs], tmp_path / "idx", config, embedder_factory=no_model)
    shutil.copy(manual / "c3ref_busy_timeout.md", docs / "c3ref_busy_timeout.md")
    update = build_index([docs], tmp_path / "idx", config, embedder_factory=no_model)
    assert update.stages["documents"]["unchanged"] == 2
    manifest = index_manifest(open_generation(tmp_path / "idx", shape=Manifest))
    assert manifest.timings_s == update.timings_s != first.timings_s
    assert manifest.full_build_timings_s == first.timings_s
    (docs / "wal.md").unlink()
    (docs / "autoinc.md").unlink()
    (docs / "c3ref_busy_timeout.md").write_text("# Busy\n\nA new text reuses nothing.\n")
    rebuilt = build_index([docs], tmp_path / "idx", config, embedder_factory=no_model)
    assert rebuilt.stages["documents"]["unchanged"] == 0
    assert index_manifest(open_generation(tmp_path / "idx", shape=Manifest)).full_build_timings_s == rebuilt.timings_s
