"""What the command line prints, run through its real entry point: user and document
text shown literally (no Rich markup, control characters escaped), batch lines that
cannot cut the output short, one-line errors, unwrapped piped output, progress lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arborgraph.cli import app

ESC = "\x1b"
HOSTILE_NAME = "\x1b]0;pwned\x07\x1b[2Jtitle.md"


def run(*args: str) -> "subprocess.CompletedProcess[str]":
    """The CLI in a fresh interpreter, as a user runs it (stdout and stderr piped)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("COLUMNS", None)
    return subprocess.run(
        [sys.executable, "-m", "arborgraph.cli", *args],
        capture_output=True, text=True, timeout=600, env=env, errors="surrogateescape",
    )


class Ran:
    """What an in-process run printed, shaped like a subprocess's result."""

    def __init__(self, args: list[str]) -> None:
        result = CliRunner().invoke(app, args)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        self.returncode = result.exit_code
        self.stdout = result.stdout
        self.stderr = result.stderr


def invoke(*args: str) -> Ran:
    """The CLI's entry point in this process (output piped, as to a file)."""
    return Ran(list(args))


@pytest.fixture(scope="module")
def hostile_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lookup-only index over files whose names and titles hold escape sequences
    and markup, and one such file that is skipped (empty)."""
    docs = tmp_path_factory.mktemp("hostile")
    (docs / HOSTILE_NAME).write_text(
        "# \x1b[31mRed [bold]title[/bold]\x1b[0m\n\nThe busy timeout makes a writer wait for the lock.\n",
        encoding="utf-8",
    )
    (docs / "[bold red]markup.md").write_text(
        "# Checkpoints [/]\n\nA checkpoint copies pages from the WAL into the database.\n", encoding="utf-8"
    )
    (docs / "\x1b[2Jempty.md").write_text("", encoding="utf-8")
    index = tmp_path_factory.mktemp("hostile-index") / "idx"
    built = invoke("build", str(docs), "--index", str(index), "--no-tree", "--no-graph", "-q")
    assert built.returncode == 0, built.stderr
    assert ESC not in built.stdout and "\\x1b[2Jempty.md" in built.stdout  # the skipped list
    return index


def test_user_text_is_never_parsed_as_markup(hostile_index: Path, tmp_path: Path) -> None:
    bad_route = invoke("query", "--index", str(hostile_index), "--route", "evil[/]", "x")
    assert bad_route.returncode == 2 and "unknown route 'evil[/]'" in bad_route.stderr
    missing = tmp_path / "[bold red]gone[/]"
    for args in (("query", "--index", str(missing), "x"), ("inspect", "--index", str(missing)),
                 ("build", str(missing / "docs[/]"), "--index", str(tmp_path / "i[/]"), "-q")):
        result = invoke(*args)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr and "[bold red]gone[/]" in result.stderr, result.stderr
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1  # one line, no blank one
    empty = tmp_path / "empty"
    empty.mkdir()
    result = invoke("build", str(empty), "--index", str(tmp_path / "idx"))  # progress on, nothing to show
    assert result.returncode == 2 and result.stderr.startswith("error: no usable document"), result.stderr


def test_control_characters_in_names_and_titles_are_escaped(hostile_index: Path) -> None:
    result = run("query", "--index", str(hostile_index), "--route", "lookup", "busy timeout lock checkpoint")  # a real pipe
    assert result.returncode == 0, result.stderr
    assert ESC not in result.stdout and "\x07" not in result.stdout
    assert "\\x1b]0;pwned\\x07\\x1b[2Jtitle.md" in result.stdout  # the source, visible
    assert "[bold red]markup.md" in result.stdout and "Checkpoints [/]" in result.stdout
    shown = invoke("inspect", "--index", str(hostile_index))
    assert shown.returncode == 0 and ESC not in shown.stdout


def test_batch_lines_that_cannot_be_asked_stop_before_any_answer(hostile_index: Path, tmp_path: Path) -> None:
    cases = {
        "surrogate": '{"id": 1, "question": "busy"}\n{"id": 2, "question": "\\udc80 x"}\n',
        "nan": '{"id": NaN, "question": "busy"}\n',
        "infinity": '{"id": 1, "question": "busy", "x": -Infinity}\n',
        "deep": "[" * 100_000 + "\n",
        "deep_object": '{"id": 1, "question": "busy", "x": ' + "[" * 100_000 + "}\n",
        "id_object": '{"id": {"a": 1}, "question": "busy"}\n',
    }
    for name, content in cases.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_text(content, encoding="utf-8")
        result = invoke("query", "--index", str(hostile_index), "--batch", str(path), "--json")
        assert result.returncode == 2, (name, result.stderr[-500:])
        assert result.stdout == "", name
        assert "Traceback" not in result.stderr and f"{name}.jsonl:" in result.stderr, (name, result.stderr[-500:])
        assert result.stderr.count("\n") == 1, name


def test_a_question_that_is_not_utf8_is_a_one_line_error(hostile_index: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "arborgraph.cli", "query", "--index", str(hostile_index), b"\xff\xfe busy"],
        capture_output=True, timeout=600, env=env,
    )
    assert result.returncode == 2 and result.stdout == b""
    assert b"Traceback" not in result.stderr and b"not valid Unicode" in result.stderr


def test_batch_ids_stay_json(hostile_index: Path, tmp_path: Path) -> None:
    path = tmp_path / "ok.jsonl"
    path.write_text('{"id": 1.5, "question": "busy"}\n{"question": "checkpoint"}\n', encoding="utf-8")
    result = invoke("query", "--index", str(hostile_index), "--batch", str(path), "--json")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["id"] for line in lines] == [1.5, 2]


def test_piped_output_is_not_wrapped(sample_index: Path) -> None:
    result = run("query", "--index", str(sample_index), "--route", "tree", "--top-k", "8",
                 "How does a checkpoint move WAL content?")
    assert result.returncode == 0, result.stderr
    headers = [line for line in result.stdout.splitlines() if line.startswith("[")]
    assert len(headers) >= 2 and any(len(line) > 80 for line in headers)
    assert all(" · score " in line for line in headers)  # each header whole on its line


def test_a_query_without_an_llm_opens_with_the_sentences_most_likely_to_answer(sample_index: Path) -> None:
    result = run("query", "--index", str(sample_index), "--route", "lookup",
                 "How does a checkpoint move WAL content back into the database?")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("answer (the manual's sentences"))
    cited = [line for line in lines[at + 1 : at + 4] if line.startswith("  [")]
    assert cited and "checkpoint" in " ".join(cited).lower()
    assert at < next(i for i, line in enumerate(lines) if line.startswith("[1]"))  # before the contexts


def test_summary_header_names_its_title_and_source_once(sample_index: Path) -> None:
    from arborgraph.cli import _context_header
    from arborgraph.core.results import Context

    def header(ctx: Context) -> str:
        return "".join(p if isinstance(p, str) else p[0] for p in _context_header(1, ctx))

    # a summary over sections with no common heading: its title, then its source
    summary = Context(text="…", source="wal.md", kind="summary", node_id="L1:3", level=1,
                      extra={"title": "Write-Ahead Logging › checkpoint, reader"})
    assert header(summary) == "[1] summary L1 · Write-Ahead Logging › checkpoint, reader · wal.md · score 0.0000"
    untitled = summary.model_copy(update={"extra": {}})
    assert header(untitled) == "[1] summary L1 · wal.md · score 0.0000"  # not "wal.md · wal.md"
    result = invoke("query", "--index", str(sample_index), "--route", "tree", "--top-k", "3",
                    "How does a checkpoint move WAL content?")
    shown = next(line for line in result.stdout.splitlines() if line.startswith("[1] summary"))
    places = shown.split(" · ")[1:-1]
    assert len(places) == len(set(places)) == 2, shown


def test_json_explain_carries_the_explanation(sample_index: Path) -> None:
    result = invoke("query", "--index", str(sample_index), "--route", "graph", "--json", "--explain",
                    "How does the busy timeout relate to locking?")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["explain"].startswith("question: How does the busy timeout")
    assert "contexts kept:" in data["explain"] and "retriever" in data["explain"]
    plain = json.loads(invoke("query", "--index", str(sample_index), "--route", "graph", "--json",
                              "How does the busy timeout relate to locking?").stdout)
    assert "explain" not in plain


def test_top_k_and_candidates_are_documented_in_help() -> None:
    result = CliRunner().invoke(app, ["query", "--help"], env={"COLUMNS": "400"})
    text = " ".join(result.stdout.split())
    assert "at most K contexts, on every route" in text and "--candidates" in text


def test_progress_shows_counts_without_none_and_the_reports_timings(sample_slice: Path, tmp_path: Path) -> None:
    from arborgraph.cli import _ProgressBar
    from rich.console import Console

    import arborgraph.cli as cli

    console = Console(record=True, width=120, force_terminal=False)
    saved, cli.err = cli.err, console
    try:
        bar = _ProgressBar(enabled=True)
        with bar:
            bar("load", 290, None)
            bar("chunk", 10, 20)
            bar("raptor.cluster", 1, None)
            bar("raptor.summarise", 1, 1)
            bar("raptor.cluster", 5, None)  # a stage that reports again after a later one began
            bar("chunk", 20, 20)
            bar.report_timings({"load": 5.5, "chunk": 1.25})
    finally:
        cli.err = saved
    shown = console.export_text()
    assert "None" not in shown
    load = next(line for line in shown.splitlines() if " load " in f" {line} ")
    assert "290" in load and "5.5s" in load
    cluster = next(line for line in shown.splitlines() if "raptor.cluster" in line)
    assert " 5 " in f"{cluster} " and "5/1" not in cluster
    chunk = next(line for line in shown.splitlines() if "chunk" in line)
    assert "20/20" in chunk and "1.2s" in chunk


def test_a_build_whose_output_is_not_a_terminal_shows_progress_lines(sample_slice: Path, tmp_path: Path) -> None:
    """Piped or sent to a file, a build still says where it is: a line per stage as it
    begins and ends, with its count, rate and time left while it runs."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for page in sorted(sample_slice.iterdir())[:6]:
        (docs / page.name).write_bytes(page.read_bytes())
    built = run("build", str(docs), "--index", str(tmp_path / "idx"), "--no-tree", "--no-graph")
    assert built.returncode == 0, built.stderr
    lines = built.stderr.splitlines()
    assert any(line.startswith("load: ") for line in lines), built.stderr
    embed = [line for line in lines if line.startswith("embed: ")]
    assert embed and "/" in embed[-1], built.stderr
    done, total = embed[-1].split()[1].split("/")
    assert done == total and int(total) > 0
    assert not any("━" in line for line in lines)  # no bar drawn into a file


def test_progress_lines_say_rate_and_time_left() -> None:
    from arborgraph.cli import _progress_line

    assert _progress_line("embed", 120, 928, 10.0) == "embed: 120/928 (12.0/s, about 1m07s left)"
    assert _progress_line("embed", 928, 928, 80.0) == "embed: 928/928 (11.6/s, 80s)"
    assert _progress_line("load", 0, None, 0.0) == "load: 0"
    assert _progress_line("graph", 40, None, 4.0) == "graph: 40 (10.0/s, 4s)"
