"""Changing the served documents over HTTP: the real ``arborgraph serve --docs`` on a
loopback port, keys with and without the write permission, uploads and deletes in the
documents folder, and rebuilds through the build pipeline swapped in while it serves.

Writes need a key added with ``--write`` (403 otherwise, anonymous included); a
restricted document, uploaded or indexed, is listed and deletable only by those its acl
names, whatever their write permission."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from documents_api import call, rebuild, served_folder
from service_server import Server, cli, request, running_server

from arborgraph.service.keys import KeyStore

PAGES = ["wal.md", "autoinc.md", "foreignkeys.md", "c3ref_busy_timeout.md"]
KESTREL = """---
acl: [editor]
version: "2.1"
---
# Kestrel operations

The Kestrel queue keeps its pages in WAL mode; its checkpoint runs every KESTREL-5521 frames.
"""


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, sample_slice: Path) -> dict[str, Any]:
    docs, index, store = served_folder(tmp_path_factory, sample_slice, "served", PAGES)
    return {
        "docs": docs, "index": index, "keys": store.path,
        "editor": store.add("editor", write=True)[0],  # writes, and may read Kestrel
        "other-writer": store.add("ops", write=True)[0],  # writes, may not read Kestrel
        "editor-reader": store.add("editor")[0],  # reads Kestrel, may not write
    }


@pytest.fixture(scope="module")
def server(setup: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(
        setup["index"], tmp_path_factory.mktemp("served-logs"), "--keys", str(setup["keys"]),
        "--docs", str(setup["docs"]), "--poll-seconds", "0.2",
    ) as running:
        yield running


_json = call
_rebuild = rebuild


def _listed(server: Server, key: str | None) -> dict[str, str]:
    status, body = _json(server, "GET", "/v1/documents", key)
    assert status == 200
    return {row["doc_id"]: row["status"] for row in body["documents"]}


def _query_text(server: Server, question: str, key: str | None) -> str:
    status, _, body = request("POST", server.url + "/v1/query", {"question": question, "route": "lookup"}, key=key)
    assert status == 200
    return " ".join(c["text"] for c in json.loads(body)["contexts"])


def test_only_keys_with_the_write_permission_may_write(server: Server, setup: dict[str, Any]) -> None:
    for key in (None, setup["editor-reader"]):
        for method, path, raw in [
            ("PUT", "/v1/documents/new.md", b"# New\n\ntext\n"), ("DELETE", "/v1/documents/wal.md", None),
            ("POST", "/v1/rebuild", None), ("GET", "/v1/rebuild", None),
        ]:
            status, body = _json(server, method, path, key, raw=raw)
            assert status == 403 and "write permission" in body["detail"], (key, method, path, status)
    assert not (setup["docs"] / "new.md").exists()
    assert (setup["docs"] / "wal.md").exists()
    status, body = _json(server, "GET", "/v1/documents", setup["editor-reader"])
    assert status == 200 and body["writable"] is False
    assert _json(server, "GET", "/v1/documents", setup["editor"])[1]["writable"] is True
    assert request("PUT", server.url + "/v1/documents/new.md", key="ag_not-a-key", raw=b"x")[0] == 401


def test_bad_uploads_are_refused_in_one_line(server: Server, setup: dict[str, Any]) -> None:
    editor = setup["editor"]
    for name, data, status in [
        ("..%2F..%2Fescape.md", b"# x\n\ny\n", 400), (".hidden.md", b"# x\n\ny\n", 400), ("run.exe", b"MZ", 400),
        ("notes.md.meta.yaml", b"acl: [x]\n", 400), ("empty.md", b"", 400), ("wal.md", b"# replaced\n\ntext\n", 409),
        ("picture.md", b"\x89PNG\r\n\x1a\n" + bytes(200), 422),
    ]:
        got, body = _json(server, "PUT", f"/v1/documents/{name}", editor, raw=data)
        assert got == status, (name, got, body)
        assert "\n" not in body["detail"] and str(setup["docs"]) not in body["detail"]
    assert sorted(p.name for p in setup["docs"].iterdir()) == sorted(PAGES)
    assert "replaced" not in (setup["docs"] / "wal.md").read_text()


def test_upload_rebuild_delete_rebuild(server: Server, setup: dict[str, Any]) -> None:
    editor, other, reader = setup["editor"], setup["other-writer"], setup["editor-reader"]
    status, body = _json(server, "PUT", "/v1/documents/kestrel.md", editor, raw=KESTREL.encode())
    assert status == 201 and body["title"] == "Kestrel operations", body
    # a new restricted file is listed to the writers its acl names, and to no one else
    assert _listed(server, editor)["kestrel.md"] == "new"
    rows = {row["doc_id"]: row for row in _json(server, "GET", "/v1/documents", editor)[1]["documents"]}
    assert rows["kestrel.md"]["version"] == "2.1"  # from its frontmatter, before it is indexed
    for key in (other, reader, None):  # (readers see no files that are not indexed yet)
        assert "kestrel.md" not in _listed(server, key)
    assert _json(server, "DELETE", "/v1/documents/kestrel.md", other)[0] == 404  # as for an unknown name

    done = _rebuild(server, editor)
    assert done["generation"] and not done["unchanged"]
    assert {"load", "embed"} <= done["seen_stages"] | {s["stage"] for s in done["history"]}
    # stage names and a share of the stages, never counts (a writer may not read every document)
    numbers = {k for k, v in done.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    assert numbers == {"stages_done", "stages_total", "seconds"}
    assert _listed(server, editor)["kestrel.md"] == "indexed" == _listed(server, reader)["kestrel.md"]
    for key in (other, None):
        assert "kestrel.md" not in _listed(server, key)
    assert "KESTREL-5521" in _query_text(server, "How often does the Kestrel checkpoint run?", reader)
    assert "KESTREL-5521" not in _query_text(server, "How often does the Kestrel checkpoint run?", other)
    status, page = _json(server, "GET", "/v1/documents/kestrel.md", reader)
    assert status == 200 and page["version"] == "2.1"

    # another writer cannot delete what it cannot read; the editor can
    assert _json(server, "DELETE", "/v1/documents/kestrel.md", other)[0] == 404
    assert (setup["docs"] / "kestrel.md").exists()
    status, body = _json(server, "DELETE", "/v1/documents/kestrel.md", editor)
    assert status == 200 and not (setup["docs"] / "kestrel.md").exists()
    assert _listed(server, editor)["kestrel.md"] == "deleted"  # until the rebuild
    _rebuild(server, editor)
    assert "kestrel.md" not in _listed(server, editor)
    assert "KESTREL-5521" not in _query_text(server, "How often does the Kestrel checkpoint run?", editor)

    # nothing changed: no new generation, said so
    again = _rebuild(server, editor)
    assert again["unchanged"] is True


def test_a_server_without_docs_refuses_writes(setup: dict[str, Any], tmp_path: Path) -> None:
    with running_server(setup["index"], tmp_path / "logs", "--keys", str(setup["keys"])) as plain:
        status, body = _json(plain, "PUT", "/v1/documents/new.md", setup["editor"], raw=b"# New\n\ntext\n")
        assert status == 409 and "--docs" in body["detail"]
        assert _json(plain, "POST", "/v1/rebuild", setup["editor"])[0] == 409
        assert _json(plain, "POST", "/v1/rebuild", setup["editor-reader"])[0] == 403
        assert _json(plain, "GET", "/v1/documents", setup["editor"])[1]["writable"] is False


def test_serve_docs_is_checked_before_anything_loads(setup: dict[str, Any], tmp_path: Path) -> None:
    run = cli("serve", "--index", str(setup["index"]), "--docs", str(tmp_path / "missing"), "--port", "0")
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "no such folder" in run.stderr
    run = cli("serve", "--index", str(setup["index"]), "--docs", str(setup["docs"]), "--workers", "2", "--port", "0")
    assert run.returncode == 2 and "--workers 1" in run.stderr


def test_keys_add_write_and_list(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    run = cli("keys", "add", "--keys", str(path), "--principal", "editor", "--write")
    assert run.returncode == 0 and "(read and write)" in run.stderr
    run = cli("keys", "add", "--keys", str(path), "--principal", "viewer")
    assert run.returncode == 0 and "(read)" in run.stderr
    lines = cli("keys", "list", "--keys", str(path)).stdout.splitlines()
    assert [line.split("\t")[1:2] + line.split("\t")[3:] for line in lines] == [["editor", "write", "active"], ["viewer", "read", "active"]]
    listed = json.loads(cli("keys", "list", "--keys", str(path), "--json").stdout)
    assert [k["write"] for k in listed] == [True, False]


def test_a_keys_file_from_before_the_write_permission_reads_as_read_only(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    key, record = KeyStore(path).add("old")
    data = json.loads(path.read_text())
    for item in data["keys"]:
        del item["write"]
    path.write_text(json.dumps(data))
    path.chmod(0o600)
    resolved = KeyStore(path).resolve(key)
    assert resolved is not None and resolved.write is False and resolved.principal == "old"


def test_document_names_stay_inside_the_folder(tmp_path: Path) -> None:
    from arborgraph.service.documents import DocumentFolder, DocumentRefused

    folder = DocumentFolder(tmp_path)
    assert folder.check_name("sub/notes.md") == tmp_path.resolve() / "sub" / "notes.md"
    for name in ("../x.md", "a/../../x.md", "/etc/x.md", "sub/.git/x.md", "x.md\\..\\y.md", "", "x", quote("../x.md")):
        with pytest.raises(DocumentRefused):
            folder.check_name(name)
