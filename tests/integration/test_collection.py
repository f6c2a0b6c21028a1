"""Walking collections: inputs, doc_ids, order, sidecars and every kind of bad file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

import pytest
from deep_folders import make_deep, remove_deep

import ingest.collection as collection
from ingest import Document, SkippedFile, iter_collection
from ingest.sandbox import LoaderSandbox

DATA = Path(__file__).parents[1] / "data"
REPO = Path(__file__).resolve().parents[2]


def walk(*inputs: str | Path, **kwargs) -> list[Document | SkippedFile]:
    kwargs.setdefault("load_timeout_s", None)  # in-process: most tests are about the walk
    return list(iter_collection(list(inputs), **kwargs))


def by_name(results: list[Document | SkippedFile]) -> dict[str, Document | SkippedFile]:
    return {Path(r.path).name: r for r in results}


def skip_reason(results: list[Document | SkippedFile], name: str) -> str:
    result = by_name(results)[name]
    assert isinstance(result, SkippedFile), f"{name} was loaded"
    return result.reason


@pytest.fixture
def manual(tmp_path: Path) -> Path:
    """A small collection: nested folders, a hidden folder, a sidecar."""
    root = tmp_path / "manual"
    (root / "guide" / "advanced").mkdir(parents=True)
    (root / ".git").mkdir()
    shutil.copy(DATA / "markdown/backup_guide.md", root / "guide/backup.md")
    shutil.copy(DATA / "html/sqlite_lockingv3.html", root / "guide/advanced/locking.html")
    shutil.copy(DATA / "text/apache-2.0.txt", root / "LICENSE")
    (root / "guide/advanced/locking.html.meta.yaml").write_text(
        "source: sqlite.org\nversion: '3.40'\nacl: [dba-team]\nvalid_to: 2030-01-01\nteam: storage\n"
    )
    (root / ".git" / "config").write_text("[core]\n")
    (root / ".hidden.md").write_text("# hidden\n")
    return root


def test_directory_walk_ids_order_and_hidden_files(manual: Path) -> None:
    results = walk(manual)
    assert all(isinstance(r, Document) for r in results)
    assert [r.doc_id for r in results] == ["LICENSE", "guide/advanced/locking.html", "guide/backup.md"]
    assert [r.format for r in results] == ["text", "html", "markdown"]
    assert results[0].path == str(manual / "LICENSE")
    assert walk(manual) == results  # deterministic


def test_sidecar_metadata_is_applied(manual: Path) -> None:
    locking = by_name(walk(manual))["locking.html"]
    assert isinstance(locking, Document)
    assert locking.metadata.source == "sqlite.org"
    assert locking.metadata.version == "3.40"
    assert locking.metadata.acl == ["dba-team"]
    assert (locking.metadata.model_extra or {})["team"] == "storage"


def test_sidecar_overrides_frontmatter_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("---\nacl: [everyone]\nversion: '1'\n---\n# A\n\nBody text.\n")
    (tmp_path / "a.md.meta.yaml").write_text("acl: [admins]\n")
    (doc,) = walk(tmp_path)
    assert isinstance(doc, Document)
    assert doc.metadata.acl == ["admins"] and doc.metadata.version == "1"
    assert doc.warnings == ["sidecar overrides 'acl' from the frontmatter"]


def test_invalid_sidecar_acl_skips_the_file(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Restricted text.\n")
    (tmp_path / "a.txt.meta.yaml").write_text("acl: {not: a list}\n")
    assert walk(tmp_path) == [
        SkippedFile(path=str(tmp_path / "a.txt"), reason="invalid acl in sidecar a.txt.meta.yaml: Input should be a valid list")
    ]


@pytest.mark.parametrize(
    ("meta", "reason"),
    [
        ("ACL: [team-c]", "key 'ACL' is not 'acl' (keys are case-sensitive)"),
        ("Acl: team-a", "key 'Acl' is not 'acl' (keys are case-sensitive)"),
        ("acl:", "the value is empty"),
        ("acl: null", "the value is empty"),
        ("acl: ''", "the value is empty"),
        ("acl: [team-a, '']", "a principal name is empty"),
        ("acl: ['team-a,team-c']", "contains ','"),
    ],
)
def test_acl_that_would_fail_open_skips_the_file(tmp_path: Path, meta: str, reason: str) -> None:
    # as an unknown key (or a null) the document would silently become public
    (tmp_path / "fm.md").write_text(f"---\n{meta}\n---\n# Secret\n\nRestricted text.\n")
    (tmp_path / "side.txt").write_text("Restricted text.\n")
    (tmp_path / "side.txt.meta.yaml").write_text(meta + "\n")
    results = walk(tmp_path)
    assert reason in skip_reason(results, "fm.md") and "invalid acl in frontmatter" in skip_reason(results, "fm.md")
    assert reason in skip_reason(results, "side.txt")


SLIPS = {  # the near misses of "---\nacl: [team-a]\n---" seen in real collections
    "unclosed.md": ("---\nacl: [team-a]\n# Secret\n\nZEBRA-1.\n", "it is never closed"),
    "blank-line-first.md": ("\n---\nacl: [team-a]\n---\n# Secret\n\nZEBRA-2.\n", "is line 2, not the first line"),
    "toml.md": ('+++\nacl = ["team-a"]\n+++\n# Secret\n\nZEBRA-3.\n', "TOML frontmatter ('+++') is not read"),
    "repeated.md": ("---\nacl: [team-a]\ntitle: x\nacl: []\n---\n# Secret\n\nZEBRA-4.\n", "'acl' is given more than once"),
    "text.md": ("---\nacl: team-a\n---\n# Secret\n\nZEBRA-5.\n", "'team-a' is a text, not a list"),
    "no-fences.md": ("acl: [team-a]\ntitle: Secret\n\n# Secret\n\nZEBRA-6.\n", "line 1 sets metadata outside"),
    "yaml-word.md": ("--- yaml\nacl: [team-a]\n---\n# Secret\n\nZEBRA-7.\n", "it opens with '--- yaml', not '---'"),
    "second-block.md": ("---\ntitle: x\n---\n---\nacl: [team-a]\n---\nZEBRA-8.\n", "more metadata (line 5) follows"),
    "nested.md": ("---\nmeta:\n  acl: [team-a]\n---\nZEBRA-9.\n", "'acl' is nested under 'meta'"),
    "invisible.md": ("---\n\u200bacl: [team-a]\n---\nZEBRA-10.\n", "invisible or look-alike characters"),
    "cyrillic.md": ("---\n\u0430cl: [team-a]\n---\nZEBRA-11.\n", "invisible or look-alike characters"),
    "line-separators.md": ("---\u2028acl: [team-a]\u2028---\u2028ZEBRA-12.\n", "not '---'"),
}


def test_frontmatter_near_misses_are_skipped_not_made_public(tmp_path: Path) -> None:
    for name, (text, _) in SLIPS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    # what is unambiguous is read: a trailing space, CRLF line breaks, a BOM
    (tmp_path / "trailing-space.md").write_text("--- \nacl: [team-a]\n---  \n# Secret\n\nZEBRA-0.\n")
    (tmp_path / "crlf-bom.md").write_bytes("\ufeff---\r\nacl: [team-a]\r\n---\r\n# Secret\r\n\r\nZEBRA-0.\r\n".encode())
    results = walk(tmp_path)
    for name, (_, reason) in SLIPS.items():
        assert reason in skip_reason(results, name), name
        assert "\n" not in skip_reason(results, name)
    for name in ("trailing-space.md", "crlf-bom.md"):
        doc = by_name(results)[name]
        assert isinstance(doc, Document) and doc.metadata.acl == ["team-a"] and doc.text == "Secret\n\nZEBRA-0."
    # and what only resembles metadata is text: a thematic break, prose, an example in code
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "divider.md").write_text("---\nA divider, then text.\n---\nMore.\n")
    (tmp_path / "ok" / "prose.md").write_text("# Access\n\nWrite the list like this.\nacl: [team-a] is the key.\n")
    (tmp_path / "ok" / "example.md").write_text("```yaml\n---\nacl: [team-a]\n---\n```\n\nThat is how.\n")
    assert all(isinstance(r, Document) and r.metadata.acl is None for r in walk(tmp_path / "ok"))


def test_empty_acl_list_means_nobody_and_other_case_variants_warn(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("---\nacl: []\nVersion: '2'\n---\n# A\n\nBody text.\n")
    (doc,) = walk(tmp_path)
    assert isinstance(doc, Document) and doc.metadata.acl == [] and doc.metadata.version is None
    assert doc.warnings == ["frontmatter: key 'Version' is not 'version' (keys are case-sensitive); kept as an extra field"]


def test_frontmatter_in_a_non_markdown_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("---\nversion: '2'\n---\nVersioned text.\n")
    (tmp_path / "plain.txt").write_text("---\nA divider, then text.\n---\nMore.\n")
    # an access list there would not be applied: the file would be public
    (tmp_path / "secret.txt").write_text("---\nacl: [team-a]\n---\nRestricted text.\n")
    (tmp_path / "secret.rst").write_text(":acl: team-a\n\nRestricted text.\n")
    (tmp_path / "secret.html").write_text('<html><head><meta name="ACL" content="team-a"></head><body><p>Restricted.</p></body></html>')
    docs = by_name(walk(tmp_path))
    notes, plain = docs["notes.txt"], docs["plain.txt"]
    assert isinstance(notes, Document) and notes.metadata.version is None
    assert any("frontmatter is only read from Markdown" in w and ".meta.yaml" in w for w in notes.warnings)
    assert isinstance(plain, Document) and not plain.warnings
    for name in ("secret.txt", "secret.rst"):
        assert "set 'acl', but metadata is only read from Markdown frontmatter" in skip_reason(list(docs.values()), name)
    assert "<meta name=\"acl\"> tag is not read" in skip_reason(list(docs.values()), "secret.html")


def test_metadata_given_through_the_api(tmp_path: Path) -> None:
    from ingest.metadata import GivenMetadata

    (tmp_path / "tenants").mkdir()
    for name in ("a.txt", "b.txt"):
        (tmp_path / "tenants" / name).write_text("Refunds take five days.\n")  # same bytes
    (tmp_path / "tenants" / "b.txt.meta.yaml").write_text("acl: [sidecar-team]\nsource: kb\n")
    (tmp_path / "bad.txt").write_text("Other text.\n")
    (tmp_path / "text.txt").write_text("More text.\n")
    (tmp_path / "open.txt").write_text("Public text.\n")
    given = GivenMetadata({
        "tenants/*": {"acl": ["team-x"], "version": "2"},
        "tenants/b.txt": {"acl": ["team-b"]},
        "bad.txt": {"acl": {"not": "a list"}},
        "text.txt": {"acl": "team-c"},
    })
    docs = by_name(walk(tmp_path, metadata=given))
    a, b = docs["a.txt"], docs["b.txt"]
    assert isinstance(a, Document) and a.metadata.acl == ["team-x"] and a.metadata.version == "2"
    # later entries override earlier ones, and the API overrides the sidecar (with a warning)
    assert isinstance(b, Document) and b.metadata.acl == ["team-b"] and b.metadata.source == "kb"
    assert b.warnings == ["build metadata overrides 'acl' from the file's own metadata"]
    assert skip_reason(list(docs.values()), "bad.txt") == "invalid acl in metadata for 'bad.txt': Input should be a valid list"
    assert "'team-c' is a text, not a list" in skip_reason(list(docs.values()), "text.txt")
    assert isinstance(docs["open.txt"], Document) and docs["open.txt"].metadata.acl is None
    assert GivenMetadata({"tenant/*": {"acl": ["x"]}}).unmatched(["tenants/a.txt"]) == ["tenant/*"]
    with pytest.raises(TypeError):
        GivenMetadata({"a.txt": ["team-a"]})  # type: ignore[dict-item]


def test_a_misspelt_sidecar_skips_its_file(tmp_path: Path) -> None:
    for name, sidecar in (("a.txt", "a.txt.meta.yml"), ("b.md", "b.meta.yaml"), ("c.txt", "c.txt.yaml")):
        (tmp_path / name).write_text("Restricted text.\n")
        (tmp_path / sidecar).write_text("acl: [team-a]\n")
    # the sidecar of the file "d" is no near miss for "d.txt"
    (tmp_path / "d").write_text("Text of d.\n")
    (tmp_path / "d.txt").write_text("Text of d.txt.\n")
    (tmp_path / "d.meta.yaml").write_text("acl: [team-d]\n")
    results = by_name(walk(tmp_path))
    assert results["a.txt"].reason.startswith("a.txt.meta.yml looks like its metadata sidecar, but a sidecar is named a.txt.meta.yaml")
    assert "b.meta.yaml looks like its metadata sidecar" in results["b.md"].reason
    assert "c.txt.yaml looks like its metadata sidecar" in results["c.txt"].reason
    assert results["d"].metadata.acl == ["team-d"] and results["d.txt"].metadata.acl is None


def test_a_folder_named_as_a_files_stem_does_not_take_its_misspelt_sidecar(tmp_path: Path) -> None:
    """Only a file has a sidecar: a folder a writer makes beside ``notes.txt`` (``notes/``)
    must not turn the misspelt ``notes.meta.yaml`` into its own and so make the file public."""
    (tmp_path / "notes.txt").write_text("Restricted text.\n")
    (tmp_path / "notes.meta.yaml").write_text("acl: [team-a]\n")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "x.md").write_text("# X\n\nText.\n")
    results = walk(tmp_path)
    assert "notes.meta.yaml looks like its metadata sidecar" in skip_reason(results, "notes.txt")
    assert isinstance(by_name(results)["x.md"], Document)


def test_sidecar_outside_the_collection_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text("acl: [x]\n")
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("Text.\n")
    (root / "a.txt.meta.yaml").symlink_to(outside)
    assert "not a regular file inside the collection" in skip_reason(walk(root), "a.txt")


def test_globs_keep_to_the_collection_like_a_walk(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "deeper").mkdir(parents=True)
    (outside / "secret.md").write_text("# Secret\n\nOUTSIDE-1 text.\n")
    (outside / "deeper" / "more.md").write_text("# More\n\nOUTSIDE-2 text.\n")
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "inside.md").write_text("# Inside\n\nInside text.\n")
    (root / "link").symlink_to(outside)
    (root / "sub" / "loop").symlink_to(root)  # glob.glob would go round it
    walked = walk(root)
    for pattern in (f"{root}/**/*.md", f"{root}/**", f"{root}/*", f"{root}/*/*.md", f"{root}/l*/**/*.md"):
        globbed = walk(pattern)
        texts = " ".join(r.text for r in globbed if isinstance(r, Document))
        assert "OUTSIDE" not in texts, pattern
        assert skip_reason(globbed, "link") == "symbolic link to a folder (not followed)", pattern
    # "**" reaches every file the walk does, with the same results in the same order
    assert walk(f"{root}/**") == walked
    assert [r.doc_id for r in walk(f"{root}/**/*.md") if isinstance(r, Document)] == ["sub/inside.md"]


GLOB_TREE = ["top.md", "top.txt", ".hidden.md", "a/x.md", "a/y.txt", "a/b/z.md", "a/b/c/deep.md", "a/.h/secret.md",
             "b/x.md", "b/c/w.md", "ab/q.md", "a/b/z.md.meta.yaml"]
GLOB_PATTERNS = ["*", "*.md", "**", "**/*.md", "a/**", "a/*/*.md", "**/b/*", "a/**/c/*.md", "[ab]/*.md", "?/*",
                 "**/**/*.md", "a*/**/*.md", "**/c", ".h*", "a/.h/*", "a/?/*.md", "*/*/", "a/**/"]


@pytest.mark.parametrize("pattern", GLOB_PATTERNS)
def test_globs_match_what_glob_matches_in_a_tree_without_links(tmp_path: Path, pattern: str) -> None:
    import glob

    for name in GLOB_TREE:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"# {name}\n\nText of {name}.\n")
    parts = pattern.split("/")
    n_fixed = next(i for i, part in enumerate(parts) if set(part) & set("*?["))
    base = tmp_path.joinpath(*parts[:n_fixed])  # doc ids are relative to the pattern's fixed folder
    expected = set()  # glob's matches; a matched folder stands for the walk of it
    for match in glob.glob(f"{tmp_path}/{pattern}", recursive=True):
        found = list(collection._walk_dir(Path(match), base)) if os.path.isdir(match) else [
            collection._Candidate(Path(match), os.path.relpath(match, base), base)]
        expected |= {c.doc_id for c in found if not c.doc_id.endswith(".meta.yaml")}
    got = [c.doc_id for c in collection._expand_glob(f"{tmp_path}/{pattern}") if not isinstance(c, SkippedFile)]
    assert sorted(got) == sorted(expected) and len(got) == len(set(got))


def test_file_input_and_glob_ids(manual: Path) -> None:
    (doc,) = walk(manual / "guide/backup.md")
    assert doc.doc_id == "backup.md"
    results = walk(f"{manual}/guide/**/*.html")
    assert [r.doc_id for r in results] == ["advanced/locking.html"]
    results = walk(f"{manual}/**")
    assert [r.doc_id for r in results] == ["LICENSE", "guide/advanced/locking.html", "guide/backup.md"]


def test_missing_inputs(tmp_path: Path) -> None:
    results = walk(tmp_path / "nope.md", f"{tmp_path}/*.pdf")
    assert results == [
        SkippedFile(path=str(tmp_path / "nope.md"), reason="not found"),
        SkippedFile(path=str(tmp_path / "*.pdf"), reason="no files match the pattern"),
    ]


def test_empty_binary_and_unsupported_files(tmp_path: Path) -> None:
    (tmp_path / "empty.md").write_bytes(b"")
    (tmp_path / "blank.txt").write_bytes(b" \n\t\n")
    (tmp_path / "logo.txt").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    (tmp_path / "data.bin").write_bytes(b"abc\x00\x01\x02 more")
    (tmp_path / "style.css").write_text("body { color: red }")
    shutil.copy(DATA / "pdf/sqlite_datatypes.pdf", tmp_path / "manual.pdf")
    results = walk(tmp_path)
    assert skip_reason(results, "empty.md") == "empty file"
    assert skip_reason(results, "blank.txt") == "empty file (only whitespace)"
    assert skip_reason(results, "logo.txt") == "binary file (PNG image)"
    assert skip_reason(results, "data.bin") == "binary file (binary data (NUL bytes))"
    assert skip_reason(results, "style.css") == "unsupported file type '.css'"
    pdf = by_name(results)["manual.pdf"]
    assert isinstance(pdf, Document) and pdf.format == "pdf"  # binary-looking, but a real PDF


def test_text_that_mentions_the_pdf_magic_is_not_taken_for_a_pdf(tmp_path: Path) -> None:
    (tmp_path / "pdf-notes.md").write_text("# PDF notes\n\nA PDF file starts with %PDF- and a version.\n")
    (tmp_path / "nul.md").write_bytes(b"# Junk\n\n%PDF- \x00\x01\x02 binary after all\n")
    shutil.copy(DATA / "pdf/sqlite_datatypes.pdf", tmp_path / "disguised.md")
    results = by_name(walk(tmp_path))
    notes, disguised = results["pdf-notes.md"], results["disguised.md"]
    assert isinstance(notes, Document) and notes.format == "markdown" and "%PDF- and a version" in notes.text
    assert isinstance(disguised, Document) and disguised.format == "pdf"  # %PDF- at byte 0
    assert results["nul.md"] == SkippedFile(path=str(tmp_path / "nul.md"), reason="binary file (binary data (NUL bytes))")


def test_scanned_pdf_is_skipped(tmp_path: Path) -> None:
    shutil.copy(DATA / "pdf/scanned.pdf", tmp_path / "scan.pdf")
    assert skip_reason(walk(tmp_path), "scan.pdf") == "no text layer (scanned PDF?)"


def test_non_utf8_file_is_loaded_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_bytes("Na\u00efve caf\u00e9 notes.".encode("cp1252"))
    (doc,) = walk(tmp_path)
    assert isinstance(doc, Document)
    assert doc.text == "Na\u00efve caf\u00e9 notes."
    assert doc.warnings == ["not valid UTF-8 (byte 0xef at offset 2); decoded as cp1252 (fallback)"]


def walk_with_peak(path: Path) -> tuple[list[Document | SkippedFile], int]:
    """The walk's results and the most memory Python allocated during it."""
    tracemalloc.start()
    try:
        results = walk(path)
        return results, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_huge_sparse_file_is_skipped_without_being_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "huge.txt"
    subprocess.run(["truncate", "-s", "200M", str(big)], check=True)
    (tmp_path / "small.txt").write_text("Small file.\n")
    reads: list[Path] = []
    real_read = collection.read_bytes
    monkeypatch.setattr(collection, "read_bytes", lambda path, limit: reads.append(path) or real_read(path, limit))
    results, peak = walk_with_peak(tmp_path)
    assert skip_reason(results, "huge.txt") == (
        "file too large (200.0 MB; limit 50.0 MB; raise ingest.max_file_mb to index it)"
    )
    assert reads == [tmp_path / "small.txt"]
    assert peak < 20 * 2**20  # nothing near 200 MB (or 50 MB) was ever allocated


def test_big_binary_file_is_sniffed_not_read(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    subprocess.run(["truncate", "-s", "40M", str(big)], check=True)  # NUL bytes, above part_bytes
    results, peak = walk_with_peak(tmp_path)
    assert skip_reason(results, "big.txt").startswith("binary file")
    assert peak < 20 * 2**20


def test_max_file_bytes_is_configurable(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x" * 2000)
    assert skip_reason(walk(tmp_path, max_file_bytes=1024), "a.txt").startswith("file too large (2.0 KB; limit 1.0 KB;")


def test_fifo_is_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.txt")  # reading it would block forever
    assert skip_reason(walk(tmp_path), "pipe.txt") == "not a regular file (a named pipe)"


def _special_files(root: Path) -> Path:
    """A collection holding a FIFO, a socket and a link to an endless device."""
    import socket

    root.mkdir()
    (root / "real.md").write_text("# Real\n\nA regular file of forty-odd bytes.\n")
    os.mkfifo(root / "f.md")
    (root / "z.md").symlink_to("/dev/zero")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "s.md"))
    sock.close()
    return root


def test_special_files_are_never_opened_nor_measured(tmp_path: Path) -> None:
    # opening the FIFO would block forever and /dev/zero never ends: the file type is
    # checked before anything reads or hashes a file, in the walk and in the size
    # estimate an update build makes first (which hashes files to spot unchanged ones)
    root = _special_files(tmp_path / "docs")
    results = walk(root)
    assert skip_reason(results, "f.md") == "not a regular file (a named pipe)"
    assert skip_reason(results, "s.md") == "not a regular file (a socket)"
    assert skip_reason(results, "z.md") == "symbolic link to a file outside the collection"
    assert isinstance(by_name(results)["real.md"], Document)
    size = (root / "real.md").stat().st_size
    assert collection.input_kilobytes([root], {"0" * 64}) == size // 1000
    assert collection.input_kilobytes([root], {by_name(results)["real.md"].content_hash}) == 0
    assert collection.input_kilobytes([f"{root}/*.md"], {"0" * 64}) == size // 1000


def test_a_file_swapped_for_a_device_after_the_checks_is_not_read() -> None:
    with pytest.raises(OSError, match="not a regular file \\(a device\\)"):
        collection.read_bytes(Path("/dev/zero"), 1 << 30)


def test_duplicates_and_doc_id_clashes(tmp_path: Path) -> None:
    for folder in ("a", "b", "c"):
        (tmp_path / folder).mkdir()
    (tmp_path / "a/guide.md").write_text("# Guide\n\nSame text.\n")
    (tmp_path / "b/copy.md").write_text("# Guide\n\nSame text.\n")
    (tmp_path / "c/guide.md").write_text("# Other\n\nDifferent text.\n")
    results = walk(tmp_path)
    assert skip_reason(results, "copy.md") == "duplicate of a/guide.md"
    # two file inputs with the same name would get the same doc_id
    results = walk(tmp_path / "a/guide.md", tmp_path / "c/guide.md")
    assert isinstance(results[0], Document)
    assert results[1] == SkippedFile(
        path=str(tmp_path / "c/guide.md"), reason=f"doc_id 'guide.md' is already used by {tmp_path / 'a/guide.md'}"
    )


def test_same_bytes_with_different_acl_are_not_duplicates(tmp_path: Path) -> None:
    for tenant in ("tenant-a", "tenant-b"):
        (tmp_path / tenant).mkdir()
        (tmp_path / tenant / "faq.txt").write_text("Refunds take five days.\n")
        (tmp_path / tenant / "faq.txt.meta.yaml").write_text(f"acl: [{tenant}]\n")
    results = walk(tmp_path)
    assert [r.metadata.acl for r in results if isinstance(r, Document)] == [["tenant-a"], ["tenant-b"]]


def test_symlinks_out_of_the_collection_are_skipped(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("Secret.\n")
    root = tmp_path / "root"
    root.mkdir()
    (root / "inside.txt").write_text("Inside.\n")
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "alias.txt").symlink_to(root / "inside.txt")
    (root / "folder").symlink_to(outside)
    results = walk(root)
    assert skip_reason(results, "link.txt") == "symbolic link to a file outside the collection"
    assert skip_reason(results, "folder") == "symbolic link to a folder (not followed)"
    # a link inside the collection is an ordinary file (here: one with the same bytes)
    assert isinstance(by_name(results)["alias.txt"], Document)
    assert skip_reason(results, "inside.txt") == "duplicate of alias.txt"


def test_loader_failure_is_a_skip_not_an_exception(tmp_path: Path) -> None:
    # every line indented one more space: docutils recurses once per level
    (tmp_path / "deep.rst").write_text("".join(" " * i + "x\n\n" for i in range(300)))
    (tmp_path / "after.md").write_text("# After\n\nThe walk goes on.\n")
    results = walk(tmp_path)
    assert skip_reason(results, "deep.rst") == "malformed reStructuredText: nesting too deep to parse"
    assert isinstance(by_name(results)["after.md"], Document)


def test_sandboxed_walk_matches_in_process_walk() -> None:
    inputs = [DATA / "html", DATA / "rst", DATA / "pdf", DATA / "markdown"]
    assert walk(*inputs, load_timeout_s=60) == walk(*inputs, load_timeout_s=None)


def test_side_by_side_loaders_give_the_serial_walk(tmp_path: Path) -> None:
    # skips, sidecars, duplicates (one right behind its twin, so both are in flight
    # together) and a doc_id clash: the same results, in the same order
    root = tmp_path / "docs"
    shutil.copytree(DATA, root / "data")
    (root / "a.md").write_text("# Twin\n\nSame text.\n")
    (root / "b.md").write_text("# Twin\n\nSame text.\n")
    (root / "empty.txt").write_text("")
    (root / "tenant.txt").write_text("Refunds take five days.\n")
    (root / "tenant.txt.meta.yaml").write_text("acl: [tenant-a]\n")
    inputs = [root, root / "data" / "markdown" / "backup_guide.md"]

    serial = walk(*inputs, load_timeout_s=60)
    side_by_side = walk(*inputs, load_timeout_s=60, loaders=3)

    assert side_by_side == serial
    assert skip_reason(serial, "b.md") == "duplicate of a.md"
    assert len([r for r in serial if isinstance(r, Document)]) > 10


def test_slow_parse_is_cut_off_by_the_time_limit(tmp_path: Path) -> None:
    # 2,500 ever deeper list items: markdown-it needs seconds for this (6 MB) file
    (tmp_path / "nested.md").write_text("".join("  " * i + "- x\n" for i in range(2500)))
    (tmp_path / "next.md").write_text("# Next\n\nLoaded after the timeout.\n")
    results = walk(tmp_path, load_timeout_s=0.5)
    assert skip_reason(results, "nested.md") == "loader timed out after 0.5 s (malformed or pathological input?)"
    assert isinstance(by_name(results)["next.md"], Document)  # a fresh worker took over


def test_hung_and_dying_workers() -> None:
    ready = "import sys, time; out = sys.stdout.buffer; out.write(b'\\x00\\x00\\x00\\x05ready'); out.flush(); "
    with LoaderSandbox(0.5, command=[sys.executable, "-c", ready + "time.sleep(600)"]) as sandbox:
        result = sandbox.load(b"x", doc_id="a", path="/a", fmt="text")
        assert result == SkippedFile(path="/a", reason="loader timed out after 0.5 s (malformed or pathological input?)")
        assert sandbox._proc is None  # killed, a new one starts for the next file
    with LoaderSandbox(5, command=[sys.executable, "-c", ready + "sys.stdin.buffer.read(4); sys.exit(3)"]) as sandbox:
        assert sandbox.load(b"x", doc_id="b", path="/b", fmt="text") == SkippedFile(
            path="/b", reason="loader crashed (exit code 3)"
        )


def test_permission_denied(tmp_path: Path) -> None:
    """A mode-000 file. Root reads anything, so as root the walk runs as 'nobody'."""
    base = Path(tempfile.mkdtemp(prefix="ingest-perm-"))
    try:
        os.chmod(base, 0o755)
        (base / "open.txt").write_text("Readable text.\n")
        (base / "locked.txt").write_text("Locked text.\n")
        os.chmod(base / "open.txt", 0o644)
        os.chmod(base / "locked.txt", 0o000)
        if os.geteuid() != 0:
            results = walk(base)
        else:
            if shutil.which("setpriv") is None:
                pytest.skip("running as root without setpriv: cannot drop privileges to see a denial")
            script = (
                "import json, sys; from ingest import iter_collection; "
                "print(json.dumps([r.model_dump(mode='json') for r in iter_collection([sys.argv[1]], load_timeout_s=None)]))"
            )
            proc = subprocess.run(
                ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", script, str(base)],
                capture_output=True, text=True, cwd="/", env={**os.environ, "PYTHONPATH": str(REPO)}, check=False,
            )
            assert proc.returncode == 0, proc.stderr
            results = [
                Document.model_validate(r) if "doc_id" in r else SkippedFile.model_validate(r)
                for r in json.loads(proc.stdout)
            ]
        assert skip_reason(results, "locked.txt") == "unreadable: permission denied"
        assert isinstance(by_name(results)["open.txt"], Document)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_folder_too_deep_is_reported_not_walked(tmp_path: Path) -> None:
    """A walk is a loop, not a recursion (os.walk recurses in Python 3.11): 1,200 nested
    folders cost no stack, and below MAX_FOLDER_DEPTH nothing is walked but one report."""
    root = tmp_path / "docs"
    try:
        (make_deep(root, 1200) / "bottom.md").write_text("# Bottom\n\nDeep text.\n")
        (make_deep(root / "ok", collection.MAX_FOLDER_DEPTH - 1) / "fine.md").write_text("# Fine\n\nText.\n")
        (root / "top.md").write_text("# Top\n\nText.\n")
        fine = "ok/" + "d/" * (collection.MAX_FOLDER_DEPTH - 1) + "fine.md"
        too_deep = f"folder nested more than {collection.MAX_FOLDER_DEPTH} levels deep (not walked)"
        for given in (root, f"{root}/**/*.md", f"{root}/**"):
            results = walk(given)
            skipped = [r for r in results if isinstance(r, SkippedFile)]
            assert [r.reason for r in skipped] == [too_deep], given
            assert Path(skipped[0].path).relative_to(root).parts == ("d",) * (collection.MAX_FOLDER_DEPTH + 1)
            assert {r.doc_id for r in results if isinstance(r, Document)} == {"top.md", fine}
        assert collection.list_files(root) == [fine, "top.md"]
    finally:
        remove_deep(root)


def test_what_a_file_declares_is_what_its_load_gives(tmp_path: Path) -> None:
    """``declared`` (the service's listing: metadata read, the document not parsed)
    gives the access list a load gives, and skips what a load skips for its metadata."""
    files = {
        "front.md": "---\nacl: [team-a]\nversion: '2'\ntitle: Front\n---\n# Heading\n\ntext\n",
        "side.txt": "Plain text.\n", "side.txt.meta.yaml": "acl: [team-b]\ntitle: Side\n",
        "both.md": "---\nacl: [team-a]\n---\n# Both\n\ntext\n", "both.md.meta.yaml": "acl: [team-c]\n",
        "open.md": "# Open\n\ntext\n", "breaks.md": "---\n# not metadata\n---\n\ntext\n",
        "unclosed.md": "---\nacl: [team-a]\n# Title\n\ntext\n", "leading.txt": "acl: [team-a]\n\nText.\n",
        "bad.md": "---\nacl: [team-a\n---\ntext\n", "miss.txt": "Text.\n", "miss.txt.yaml": "acl: [x]\n",
        "empty.md": "",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    for loaded in walk(tmp_path):
        found = collection.declared(Path(loaded.path), tmp_path)
        name = Path(loaded.path).name
        if isinstance(loaded, SkippedFile):
            assert isinstance(found, SkippedFile) and found.reason == loaded.reason, name
        else:
            assert isinstance(found, collection.Declared), name
            assert (found.doc_id, found.format, found.content_hash) == (loaded.doc_id, loaded.format, loaded.content_hash)
            assert found.metadata == loaded.metadata, name
            assert found.title in (None, loaded.title), name
    assert collection.declared(tmp_path / "front.md", tmp_path).title == "Front"
    assert collection.declared(tmp_path / "side.txt", tmp_path).title == "Side"


def test_a_builds_load_progress_counts_to_a_known_total(tmp_path: Path) -> None:
    """The load stage reports "n of total" (a walk of the folders before any file is
    read), and its last report is the total: every file, bad file and missing input."""
    from arborgraph.config import load_config
    from arborgraph.pipeline.load import load_documents
    from ingest import count_files

    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# Alpha\n\nThe alpha page says how the checkpoint works.\n")
    (docs / "sub" / "b.md").write_text("# Beta\n\nThe beta page says how the journal works.\n")
    (docs / "sub" / "copy.md").write_text("# Alpha\n\nThe alpha page says how the checkpoint works.\n")
    (docs / "blob.bin").write_bytes(b"\x00\x01\x02\x03")
    (docs / ".hidden.md").write_text("# Hidden\n\nNever loaded.\n")
    inputs = [docs, tmp_path / "missing.md", str(docs / "sub" / "*.md")]
    reports: list[tuple[int, int | None]] = []
    loaded = load_documents(inputs, load_config(), lambda stage, done, total: reports.append((done, total)) if stage == "load" else None)
    # 4 files under docs (the hidden one is not walked), the missing input, 2 matched by the glob
    assert count_files(inputs) == 7
    assert reports and all(total == 7 for _, total in reports) and reports[-1][0] == 7
    assert len(loaded.docs) + len(loaded.skipped) == 7


def test_a_build_announces_each_stage_in_order(sample_slice: Path, tmp_path: Path) -> None:
    """Progress names every stage as it begins, those that count nothing of their own
    too, so a status (the CLI's bars, the service's rebuild) never sits on a finished one."""
    from arborgraph.pipeline import build_index

    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("wal.md", "autoinc.md", "lang_vacuum.md"):
        shutil.copy(sample_slice / name, docs / name)
    began: list[str] = []
    build_index([docs], tmp_path / "idx", progress=lambda stage, done, total: began.append(stage) if stage not in began else None)
    # the stages themselves (the structures' steps report as "raptor.cluster", "graphrag.extract"...)
    stages = [name for name in began if "." not in name]
    assert stages == ["load", "chunk", "contradictions", "embed", "lexical", "dense_index", "tree", "graph"], began
    assert began.index("tree") < began.index("raptor.cluster") < began.index("graph") < began.index("graphrag.extract")
