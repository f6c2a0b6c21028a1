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
from arborgraph.index.manifest import Manifest, ScopeRecord, manifest_text
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


def _kept(old: object, new: object) -> object:
    """``new`` restricted to the keys ``old`` has, at every depth."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {k: _kept(v, new[k]) if k in new else _MISSING for k, v in old.items()}
    return new


_MISSING = object()


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
    for data in (new, old):  # what differs by machine and by run
        for key in ("built_at", "timings_s", "files", "generation"):
            data.pop(key)
        data["report"].pop("index_dir")
        data["report"].pop("generation")
        data["report"]["skipped"] = [s["reason"] for s in data["report"]["skipped"]]
        # digests of the structures' settings change whenever a setting is gained
        for scope in data["scopes"]:
            for key in ("tree_settings", "graph_settings"):
                scope[key] = None if scope[key] is None else len(scope[key])
    old_config, new_config = old.pop("config"), new.pop("config")
    # the config may gain sections and settings (made reachable later); none is lost or changed
    assert _kept(old_config, new_config) == old_config
    assert new == old
    assert _shape(json.loads((gen.path / layout.MANIFEST).read_text())["files"]) == _shape(
        json.loads((OLD / "lookup-only.json").read_text())["files"]
    )
