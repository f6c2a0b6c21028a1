"""The README's Python code, exactly as written, saved as a script and run by a fresh
interpreter, as a new user would (no ``if __name__ == "__main__":`` guard)."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLE_MANUAL

README = ROOT / "README.md"
# a few pages, so the build takes seconds; the README's question is among them
PAGES = ["c3ref_busy_timeout.md", "c3ref_busy_handler.md", "lockingv3.md", "wal.md"]

# Makes the build use a process pool on this small slice, as it does on the whole
# manual (from 2 MB of input on two or more cores): the pool is what broke unguarded
# scripts. Only the pool's threshold changes; the snippet runs as written.
FORCE_POOL = """
import arborgraph.pipeline.executor as executor
executor.AUTO_POOL_MIN_KB = 0
executor.available_cores = lambda: 2
"""


def python_snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)


def run_script(
    code: str, cwd: Path, timeout: float = 600, extra_env: dict[str, str] | None = None,
) -> "subprocess.CompletedProcess[str]":
    script = cwd / "snippet.py"
    script.write_text(code, encoding="utf-8")
    site = cwd / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(FORCE_POOL, encoding="utf-8")
    env = {
        **os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), **(extra_env or {}),
    }
    return subprocess.run(
        [sys.executable, str(script)], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env,
    )


def test_readme_python_api_example_runs_as_an_unguarded_script(tmp_path: Path) -> None:
    snippets = python_snippets()
    assert snippets, "the README has no Python example"
    example = next(s for s in snippets if "arborgraph.build(" in s)
    assert "__main__" not in example  # as a new user saves it
    manual = tmp_path / "examples" / "sqlite"
    manual.mkdir(parents=True)
    for page in PAGES:
        shutil.copy(SAMPLE_MANUAL / page, manual / page)
    before = sorted(p.name for p in ROOT.iterdir())
    result = run_script(example, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "bootstrapping phase" not in result.stderr and "Traceback" not in result.stderr
    out = result.stdout
    assert "embed: " in out and "raptor." in out  # the progress it shows while it builds
    ranked = re.findall(r"^(\d\.\d\d)  (\S+)  ", out, flags=re.M)
    assert len(ranked) == 5 and {"c3ref_busy_timeout.md", "c3ref_busy_handler.md"} & {src for _, src in ranked[:3]}
    assert [float(s) for s, _ in ranked] == sorted((float(s) for s, _ in ranked), reverse=True)
    import arborgraph

    kb = arborgraph.open(tmp_path / ".demo-index")
    assert kb.index.manifest.report.stages["executor"]["name"] == "process"  # the pool did run
    generation = kb.generation
    again = run_script(example, tmp_path)  # as after the demo: nothing to redo
    assert again.returncode == 0 and re.findall(r"^(\d\.\d\d)  (\S+)  ", again.stdout, flags=re.M) == ranked
    assert arborgraph.current_generation(tmp_path / ".demo-index") == generation
    assert sorted(p.name for p in ROOT.iterdir()) == before  # nothing written into the repo


def test_tree_pool_helpers_do_not_rerun_an_unguarded_script(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import operator
        from raptor.pool import TreePool

        print("script body ran")
        with TreePool(2) as pool:
            assert pool.wait_ready(120)
            print("sum", pool.submit(operator.add, 2, 3).result())
        """
    )
    result = run_script(code, tmp_path, timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split("\n").count("script body ran") == 1 and "sum 5" in result.stdout


def docs_snippets() -> list[tuple[str, str]]:
    return [
        (page.name, code)
        for page in sorted((ROOT / "docs").glob("*.md"))
        for code in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    ]


ROUTES = ("lookup", "tree", "graph", "global")


def _shows_a_query(out: list[str], kb) -> None:  # type: ignore[no-untyped-def]
    """python-api.md's tour: the route and why, three contexts (kind, page, headings,
    score), the explanation, and the JSON contract's keys, as the API gives them."""
    route, _, reason = out[0].partition(" ")
    assert route in ROUTES and reason, out[0]
    contexts = out[1:4]
    assert len(contexts) == 3 and all(re.fullmatch(r"\w+ \S+\.md .* (0\.\d\d?|1\.0)", c) for c in contexts), contexts
    scores = [float(c.rsplit(" ", 1)[1]) for c in contexts]
    assert scores == sorted(scores, reverse=True)
    assert out[4].startswith("question: ") and out[5].startswith(f"route: {route} ")  # res.explain()
    question = out[4].removeprefix("question: ")
    assert out[-1] == str(sorted(kb.query(question).to_dict()))


def _shows_settings(out: list[str], kb) -> None:  # type: ignore[no-untyped-def]
    """python-api.md's settings: top_k 5 from open, the ranker off in the sibling."""
    assert len(out) == 1 and re.fullmatch(r"[1-5] False 5", out[0]), out


def _shows_llm_usage(out: list[str], kb) -> None:  # type: ignore[no-untyped-def]
    """llm.md's provider example: two chat calls (the reply and the prefix), nothing cached."""
    usage = ast.literal_eval(out[-1])
    assert usage["llm_calls"] == 2 and usage["llm_cache_hits"] == 0, usage
    assert set(usage["llm_by_stage"]) == {"summary", "contextual_prefix"}, usage


# what each docs snippet must print, found by a line of its code: a new snippet without
# an entry fails, so that every one is checked for what it shows, not only for running
SNIPPET_OUTPUT = {
    "print(res.explain())": _shows_a_query,
    "plain = kb.with_settings(": _shows_settings,
    "print(usage.to_dict())": _shows_llm_usage,
}


@pytest.mark.parametrize("page, snippet", docs_snippets())
def test_docs_snippets_run_against_the_demo_index(
    page: str, snippet: str, sample_index: Path, sample_kb, llm_server, tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    """A snippet about an index runs, as written, against a copy of the session's index
    named as the demo names its own; one that needs an LLM endpoint runs against the
    loopback stand-in (``OPENAI_BASE_URL``, as the docs say it is read). Each prints
    what its page says it does."""
    checks = [check for marker, check in SNIPPET_OUTPUT.items() if marker in snippet]
    assert len(checks) == 1, f"{page}: no SNIPPET_OUTPUT entry says what this snippet prints"
    if ".demo-index" in snippet:
        shutil.copytree(sample_index, tmp_path / ".demo-index")
        result = run_script(snippet, tmp_path, timeout=1200)
    else:
        assert "OpenAIChatModel" in snippet or "LLMConfig" in snippet, f"{page}: a snippet that neither runs nor needs an LLM"
        llm_server.set_reply(lambda body: "A summary.")
        result = run_script(snippet, tmp_path, timeout=1200, extra_env={"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "k"})
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    checks[0](result.stdout.splitlines(), sample_kb)


def test_readme_question_is_answered_and_the_old_miss_is_recorded(sample_kb) -> None:  # type: ignore[no-untyped-def]
    """The README asks what the system answers (its page first among the contexts);
    the question it used to ask, which never reached PRAGMA busy_timeout on the whole
    manual, is kept as a known miss for the ranking work."""
    from arborgraph.query.evaluation import load_questions

    example = next(s for s in python_snippets() if "arborgraph.build(" in s)
    question = re.search(r'kb\.query\("([^"]+)"\)', example).group(1)  # type: ignore[union-attr]
    res = sample_kb.query(question)
    assert {c.source for c in res.contexts[:3]} & {"c3ref_busy_timeout.md", "c3ref_busy_handler.md"}, [
        c.source for c in res.contexts[:3]
    ]
    misses = load_questions(ROOT / "benchmarks" / "questions" / "known_misses.jsonl")
    assert "Which pragma limits how long a writer waits for a lock?" in {q.question for q in misses}
    assert question not in {q.question for q in misses}
