"""The bundled SQLite sample manual, its converter and the evaluation questions."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
MANUAL = ROOT / "examples" / "sqlite"
QUESTIONS = ROOT / "benchmarks" / "questions"
SQLITE_DOCS = Path("/usr/share/doc/sqlite3")


def _load(name: str, path: Path) -> ModuleType:
    # Neither examples/ nor benchmarks/ is a package; load the scripts by path.
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


vq = _load("verify_questions", QUESTIONS / "verify_questions.py")
build = _load("build_sample_manual", ROOT / "examples" / "build_sample_manual.py")


def _frontmatter(path: Path) -> dict[str, str]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), path.name
    head = text[4:text.index("\n---\n", 4)]
    fields = {}
    for line in head.splitlines():
        key, _, value = line.partition(": ")
        fields[key] = json.loads(value) if value.startswith('"') else value
    return fields


# --- the manual ---------------------------------------------------------

def test_manual_has_enough_pages_each_with_frontmatter() -> None:
    pages = sorted(MANUAL.glob("*.md"))
    assert len(pages) >= 200
    for page in pages:
        meta = _frontmatter(page)
        assert meta.get("title"), page.name
        assert re.fullmatch(r"https://sqlite\.org/(c3ref/)?[\w.-]+\.html", meta.get("source", "")), page.name
        assert meta.get("version") == "3.40.1", page.name
        assert vq.strip_frontmatter(page.read_text(encoding="utf-8")).strip(), f"{page.name} has no body"


def test_manual_is_the_page_list_of_the_converter() -> None:
    on_disk = {p.name for p in MANUAL.glob("*.md")}
    assert on_disk == {out for _, out in build.selected_pages()}


def test_manual_has_no_site_chrome() -> None:
    # Words from the menus, search box and footer of every sqlite.org page.
    chrome = ("Small. Fast. Reliable.", "Search Documentation", "This page last modified",
              "Table Of Contents", "pikchr", "See also lists of")
    for page in MANUAL.glob("*.md"):
        text = page.read_text(encoding="utf-8")
        for marker in chrome:
            assert marker not in text, f"{marker!r} left in {page.name}"


# --- the converter on a small page of the same shape --------------------

PAGE = """<html><head><title>Demo Page</title></head><body>
<div class=nosearch><div class="menu mainmenu"><ul><li><a href="index.html">Home</a></ul></div>
<div class="fancy_title">Demo Page</div></div>
<script>var x = 1;</script>
<h1 id="a"><span>1. </span>Overview</h1>
<p>Use <a href="pragma.html">PRAGMA journal_mode</a> and <tt>sqlite3_open()</tt>.
<p><b><a href="syntax/select-stmt.html">select-stmt:</a></b><button>hide</button></p>
<div class='imgcontainer'><svg><text>SELECT</text></svg></div>
<h2>1.1 Details</h2>
<blockquote><pre>
SELECT 1;
</pre></blockquote>
<ul><li>first<li>second</ul>
<ol><li value="0">zero<li value="1">one</ol>
<table><tr><th>Name<th>Value</tr><tr><td>a|b<td>2<sup>31</sup></tr></table>
<p align="center"><small><i>This page last modified on 2022-10-26</i></small></p>
</body></html>"""


def test_convert_keeps_structure_and_drops_chrome() -> None:
    title, md = build.convert_html(PAGE)
    assert title == "Demo Page"
    assert md.startswith("# 1. Overview\n")
    assert "\n## 1.1 Details\n" in md
    assert "Use PRAGMA journal_mode and `sqlite3_open()`." in md
    assert "```\nSELECT 1;\n```" in md
    assert "- first\n- second" in md
    assert "0. zero\n1. one" in md
    assert "| Name | Value |\n|---|---|\n| a\\|b | 2^31 |" in md
    for gone in ("Home", "var x", "select-stmt", "hide", "modified", "fancy"):
        assert gone not in md


@pytest.mark.skipif(not (SQLITE_DOCS / "lang_select.html").exists(), reason="sqlite3-doc not installed")
def test_converter_reproduces_the_committed_pages() -> None:
    version = build.docs_version(SQLITE_DOCS)
    for rel, out in [("lang_select.html", "lang_select.md"), ("pragma.html", "pragma.md"),
                     ("c3ref/busy_timeout.html", "c3ref_busy_timeout.md")]:
        title, body = build.convert_html((SQLITE_DOCS / rel).read_text(encoding="utf-8"))
        expected = (MANUAL / out).read_text(encoding="utf-8")
        assert build.frontmatter(title, build.BASE_URL + rel, version) + body == expected, out


# --- the question sets --------------------------------------------------

def test_normalize() -> None:
    assert vq.normalize("The `-wal` File:\n  PRAGMA  journal_mode=WAL;") == "the wal file pragma journal mode wal"
    assert vq.normalize("sqlite3_busy_timeout()") == "sqlite3 busy timeout"


def test_verifier_command_line_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        vq.main([str(tmp_path / "missing.jsonl")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "cannot read" in err and "missing.jsonl" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exit_:
        vq.main(["--help"])
    assert exit_.value.code == 0 and "questions JSONL" in capsys.readouterr().out


def test_evaluation_questions_verify() -> None:
    assert vq.verify(QUESTIONS / "sqlite.jsonl") == []
    records = [json.loads(line) for line in (QUESTIONS / "sqlite.jsonl").read_text().splitlines()]
    assert len(records) == 64
    assert {t: sum(r["type"] == t for r in records) for t in vq.TYPES} == dict.fromkeys(vq.TYPES, 16)


@pytest.mark.parametrize(("name", "per_type"), [("sqlite_router.jsonl", 20),
                                                ("python_router.jsonl", 10),
                                                ("git_router.jsonl", 10)])
def test_router_questions_verify(name: str, per_type: int) -> None:
    path = QUESTIONS / name
    exclude = frozenset(vq.normalize(q) for q in vq.questions(QUESTIONS / "sqlite.jsonl"))
    assert vq.verify_router(path, min_per_type=per_type, exclude=exclude) == []
    types = [json.loads(line)["type"] for line in path.read_text().splitlines()]
    assert len(types) == 4 * per_type


def _write(tmp_path: Path, records: list[dict]) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _valid_set(per_type: int = 2) -> list[dict]:
    # Real, valid records (the first few of each type), so only the deliberate
    # defect differs; a short file keeps each check fast.
    lines = (QUESTIONS / "sqlite.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    return [r for t in vq.TYPES for r in [x for x in records if x["type"] == t][:per_type]]


@pytest.mark.parametrize(("defect", "expected"), [
    (lambda rs: rs[0]["evidence"][0].update(text="this sentence is not in the manual at all"), "not found"),
    (lambda rs: rs[0]["evidence"][0].update(page="examples/sqlite/wal.md"), "not in examples/sqlite/wal.md"),
    (lambda rs: rs[0]["evidence"][0].update(text="the maximum number of bytes in"), "want exactly once"),
    (lambda rs: rs[0].update(question=rs[0]["evidence"][0]["text"]), "repeats evidence words"),
    (lambda rs: rs[1].update(id=rs[0]["id"]), "used 2 times"),
    (lambda rs: rs[0].update(type="trivia"), "is not one of"),
    (lambda rs: rs[0].update(evidence=[]), "1-4 items"),
    (lambda rs: [r["evidence"].__setitem__(slice(1, None), []) for r in rs if r["type"] == "global"],
     "at least 3 different pages"),
])
def test_verifier_reports_defects(tmp_path: Path, defect, expected: str) -> None:
    records = _valid_set()
    defect(records)
    fails = vq.verify(_write(tmp_path, records))
    assert fails and any(expected in f for f in fails), fails


def test_verifier_counts_questions_per_type(tmp_path: Path) -> None:
    records = _valid_set(per_type=vq.MIN_PER_TYPE)
    assert vq.verify(_write(tmp_path, records)) == []
    records = [r for r in records if r["type"] != "drilldown"] + records[vq.MIN_PER_TYPE:][:1]
    fails = vq.verify(_write(tmp_path, records))
    assert any("'drilldown': 1 questions" in f for f in fails), fails


def test_router_check_rejects_duplicates_and_eval_leaks(tmp_path: Path) -> None:
    eval_q = vq.questions(QUESTIONS / "sqlite.jsonl")[0]
    rows = [{"id": f"r{i}", "type": t, "question": f"question {i} about {t}?"}
            for i, t in enumerate(vq.TYPES * 2)]
    rows.append({"id": "dup", "type": "lookup", "question": "Question 0 about LOOKUP"})
    rows.append({"id": "leak", "type": "global", "question": eval_q})
    path = _write(tmp_path, rows)
    fails = vq.verify_router(path, min_per_type=2, exclude=frozenset({vq.normalize(eval_q)}))
    assert any("same question as line 1" in f for f in fails)
    assert any("also in the evaluation set" in f for f in fails)
    assert vq.verify_router(path, min_per_type=3)  # 2-3 per type is too few


def test_verifier_checks_against_an_index(tmp_path: Path, sample_index: Path) -> None:
    # The slice index's documents are the corpus; its doc ids are the page names.
    records = [json.loads(line) for line in (QUESTIONS / "sqlite.jsonl").read_text().splitlines()]
    docs = set(vq.load_index_corpus(sample_index))
    kept = []
    for rec in records:
        for ev in rec["evidence"]:
            ev["page"] = ev["page"].rsplit("/", 1)[-1]
        if all(ev["page"] in docs for ev in rec["evidence"]):
            kept.append(rec)
    assert len({r["type"] for r in kept}) >= 3, kept
    path = _write(tmp_path, kept)
    assert vq.verify(path, index=sample_index, min_per_type=0) == []
    assert vq.main(["--index", str(sample_index), "--min-per-type", "0", str(path)]) == 0
    other = next(d for d in sorted(docs) if d != kept[0]["evidence"][0]["page"])
    kept[0]["evidence"][0]["page"] = other
    kept[1]["evidence"][0]["page"] = "examples/sqlite/wal.md"  # a repo path, not a doc id
    fails = vq.verify(_write(tmp_path, kept), index=sample_index, min_per_type=0)
    assert any(f"not in {other}" in f for f in fails), fails
    assert any("is not in the corpus" in f for f in fails), fails
    too_few = vq.verify(path, index=sample_index)  # the default per-type minimum still applies
    assert any(f"want at least {vq.MIN_PER_TYPE}" in f for f in too_few), too_few
