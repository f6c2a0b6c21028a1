"""The ``arborgraph`` command line: build, query, inspect, eval.

User mistakes (bad paths, a directory that is not an index, a route the index lacks,
a malformed questions file) end with one line on stderr and a non-zero exit code,
never a traceback: every command's :class:`~arborgraph.core.errors.UserError` is
reported in one place (the command group, :class:`_Commands`), with exit status 2; a
service that failed (:class:`~arborgraph.core.errors.ExternalError`: an LLM endpoint
after its retries...) with status 1.

Text from users and documents (paths, routes, file names, titles, headings, passages)
is printed literally: never parsed as Rich markup, with control characters shown as
escapes (:func:`arborgraph.display.printable`). Output that is not a terminal is not
wrapped.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import sys
import time
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Optional

import click
import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, SpinnerColumn, Task, TextColumn
from rich.text import Text

from typer.core import TyperGroup

from arborgraph.core.errors import ExternalError, LLMError, UserError
from arborgraph.display import printable

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


class _Commands(TyperGroup):
    """The ``arborgraph`` command group: it reports every command's errors, once.

    A :class:`UserError` is one line and exit status 2; an :class:`ExternalError`
    (a model call that failed after its retries, say) one line and status 1; anything
    else is a bug and keeps its traceback.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            _check_environment()
            return super().invoke(ctx)
        except UserError as exc:
            raise fail(str(exc), EXIT_USER_ERROR) from None
        except LLMError as exc:
            raise fail(_llm_failure(ctx.invoked_subcommand, exc), 1) from None
        except ExternalError as exc:
            raise fail(str(exc), 1) from None
        except KeyboardInterrupt:
            if ctx.invoked_subcommand != "build":
                raise
            raise fail("interrupted; the previous index (if any) is unchanged", EXIT_INTERRUPTED) from None


def _check_environment() -> None:
    """Every command refuses a mistyped ``ARBORGRAPH_*`` variable (ConfigError: one line)."""
    if any(name.startswith("ARBORGRAPH_") for name in os.environ):  # config loads only then
        from arborgraph.config import check_environment

        check_environment()


def _environment_settings() -> dict[str, Any]:
    """The query settings the ``ARBORGRAPH_*`` variables set (``ARBORGRAPH_RETRIEVAL__RANKER``...)."""
    if not any(name.startswith("ARBORGRAPH_") for name in os.environ):
        return {}
    from arborgraph.config import check_environment
    from arborgraph.query.settings import QuerySettings

    return {k: v for k, v in check_environment().items() if k in QuerySettings.model_fields}


def _llm_failure(command: str | None, exc: LLMError) -> str:
    if command == "build":
        return (f"LLM call failed, build stopped (the previous index is unchanged; "
                f"re-run to resume from the cache): {exc}")
    return f"LLM call failed: {exc}"


app = typer.Typer(
    cls=_Commands,
    add_completion=False,
    no_args_is_help=True,
    help="Arborgraph: build and query RAPTOR-tree + entity-graph indexes over technical manuals.",
    pretty_exceptions_enable=False,
)
err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


def say(console: Console, *parts: str | tuple[str, str]) -> None:
    """Print one line made of plain ``parts`` (shown literally, control characters
    escaped) and ``(text, style)`` pairs whose text is ours; wrapped only on a terminal."""
    line = Text()
    for part in parts:
        if isinstance(part, tuple):
            line.append(part[0], style=part[1])
        else:
            line.append(printable(part, multiline=True))
    console.print(line, soft_wrap=not console.is_terminal)


def fail(message: str, code: int = 1) -> typer.Exit:
    say(err, ("error: ", "bold red"), message)
    return typer.Exit(code)


class _CountColumn(ProgressColumn):
    """``done/total`` when the stage knows its total, the count alone when it does not."""

    def render(self, task: Task) -> Text:
        if task.total is None or task.fields.get("count_only"):
            return Text(f"{task.completed:.0f}")
        return Text(f"{task.completed:.0f}/{task.total:.0f}")


class _StageTimeColumn(ProgressColumn):
    """A stage's time: the build report's once the build is done, else the time from
    its first to its latest progress report (not the time since it began: a stage that
    reported last long ago is not still running)."""

    def render(self, task: Task) -> Text:
        seconds = task.fields.get("seconds")
        if seconds is None:
            seconds = task.fields.get("last", 0.0) - task.fields.get("first", 0.0)
        return Text(f"{seconds:.1f}s", style="progress.elapsed")


class _ProgressBar:
    """Renders the library's progress callbacks: a bar when a stage's total is known,
    a spinner with a count when it is not."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.progress = Progress(
            SpinnerColumn(finished_text="[green]✓"),
            TextColumn("{task.description:<10}"),
            BarColumn(),
            _CountColumn(),
            _StageTimeColumn(),
            console=err,
            transient=False,
            disable=not enabled,
        )
        self.tasks: dict[str, Any] = {}
        self.closed: set[str] = set()  # stages without a total, shown as done

    def __enter__(self) -> "_ProgressBar":
        return self

    def __exit__(self, *exc: object) -> None:
        # started on the first report: a build that fails before any (a bad path)
        # leaves no empty progress line before its error
        if self.tasks:
            self._finish_open_stages()
            self.progress.__exit__(*exc)

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        now = time.monotonic()
        if not self.tasks:
            self.progress.__enter__()
        if stage not in self.tasks:
            self._finish_open_stages()
            self.tasks[stage] = self.progress.add_task(stage, total=total, first=now)
        elif total is None and stage in self.closed:
            # it reports again after a later stage began: open again (update() cannot
            # set a total back to None)
            self.closed.discard(stage)
            task = self._task(stage)
            task.total, task.finished_time = None, None
        self.progress.update(self.tasks[stage], completed=done, total=total, last=now, count_only=total is None)

    def _task(self, stage: str) -> Task:
        task_id = self.tasks[stage]
        return next(t for t in self.progress.tasks if t.id == task_id)

    def _finish_open_stages(self) -> None:
        # a stage with no known total ends when the next stage begins
        for stage, task_id in self.tasks.items():
            task = self._task(stage)
            if task.total is None:
                self.closed.add(stage)
                self.progress.update(task_id, total=task.completed)

    def report_timings(self, timings_s: dict[str, float]) -> None:
        """Show the build report's time for the stages it times, so the two agree."""
        self._finish_open_stages()
        for stage, task_id in self.tasks.items():
            if stage in timings_s:
                self.progress.update(task_id, seconds=timings_s[stage])


class _ProgressLines:
    """Progress as plain lines, for output that is not a terminal (a file, a pipe, CI),
    where a live bar shows nothing until the build ends: a line when a stage begins, at
    most every ``every_s`` seconds while it runs (count, rate, time left) and when it
    completes."""

    def __init__(self, enabled: bool, every_s: float = 20.0) -> None:
        self.enabled = enabled
        self.every_s = every_s
        self._first: dict[str, float] = {}
        self._said: dict[str, float] = {}
        self._ended: set[str] = set()

    def __enter__(self) -> "_ProgressLines":
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        first = self._first.setdefault(stage, now)
        complete = total is not None and done >= total
        if stage in self._ended and complete:
            return
        if stage in self._said and not complete and now - self._said[stage] < self.every_s:
            return
        self._said[stage] = now
        if complete:
            self._ended.add(stage)
        say(err, _progress_line(stage, done, total, now - first))

    def report_timings(self, timings_s: dict[str, float]) -> None:
        pass  # the report's own timings line follows the build


def _progress_line(stage: str, done: int, total: int | None, elapsed_s: float) -> str:
    """``embed: 120/928 (13.2/s, about 1m01s left)``: what a progress line says."""
    count = f"{done}/{total}" if total is not None else f"{done}"
    if elapsed_s < 1 or done <= 0:
        return f"{stage}: {count}"
    rate = done / elapsed_s
    if total is None or done >= total:
        return f"{stage}: {count} ({rate:.1f}/s, {elapsed_s:.0f}s)"
    left = (total - done) / rate
    return f"{stage}: {count} ({rate:.1f}/s, about {int(left // 60)}m{int(left % 60):02d}s left)"


def _build_progress(enabled: bool) -> "_ProgressBar | _ProgressLines":
    """A live bar on a terminal, plain lines elsewhere."""
    return _ProgressBar(enabled) if err.is_terminal else _ProgressLines(enabled)


def _open(index: Path, settings: Any = None, *, graph_password: str | None = None, store: Any = None):  # type: ignore[no-untyped-def]
    """The index, opened for one command: each part loads when the command first needs it
    (with ``store``, its questions' candidates from that Neo4j store)."""
    from arborgraph.index.index_dir import live_generation

    live_generation(index)  # a mistaken path fails before the query engine loads (seconds)
    import arborgraph

    from_env = _environment_settings()
    if from_env:
        settings = {**from_env, **(settings or {})} if not hasattr(settings, "model_dump") else settings
    return arborgraph.open(index, settings, graph_password=graph_password, warm=False, store=store)


@app.command()
def build(
    docs: Annotated[list[str], typer.Argument(help="files, directories or glob patterns")],
    index: Annotated[Path, typer.Option("--index", "-i", help="index directory")],
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="TOML/YAML/JSON config")] = None,
    no_tree: Annotated[bool, typer.Option("--no-tree", help="skip the RAPTOR tree")] = False,
    no_graph: Annotated[bool, typer.Option("--no-graph", help="skip the entity graph")] = False,
    llm_model: Annotated[Optional[str], typer.Option("--llm-model", help="chat model: turns LLM mode on")] = None,
    embedding_model: Annotated[Optional[str], typer.Option("--embedding-model", help="embeddings from the OpenAI-compatible endpoint")] = None,
    contextual: Annotated[bool, typer.Option("--contextual-prefixes", help="LLM: situate each chunk in its document before indexing")] = False,
    executor: Annotated[Optional[str], typer.Option("--executor", help="serial | process | auto | dask | tcp://host:port")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="print the build report as JSON")] = False,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="when another build is writing this index: wait for it, or (default) fail at once")] = False,
    allow_empty: Annotated[bool, typer.Option("--allow-empty", help="build even when the documents hold no text to index")] = False,
    force: Annotated[bool, typer.Option("--force", help="write a new generation even when nothing changed")] = False,
    no_shared_cache: Annotated[bool, typer.Option("--no-shared-cache", help="neither read nor fill the user-level embedding cache index folders share")] = False,
) -> None:
    """Build or update an index from DOCS."""
    from arborgraph.index.index_dir import check_build_target

    check_build_target(index)  # as the build does, but before the pipeline loads (seconds)
    from arborgraph.pipeline import LOCK_WAIT_STAGE, build_index
    from arborgraph.config import load_config

    overrides: dict[str, Any] = {}
    if no_tree:
        overrides["build_tree"] = False
    if no_graph:
        overrides["build_graph"] = False
    if executor:
        overrides["executor"] = executor
    if contextual:
        overrides["contextual_prefixes"] = True
    if allow_empty:
        overrides["allow_empty"] = True
    if no_shared_cache:
        overrides["embedding"] = {"shared_cache": False}
    if llm_model or embedding_model:
        overrides["llm"] = {
            k: v for k, v in (("model", llm_model), ("embedding_model", embedding_model)) if v
        }
    cfg = load_config(config, overrides)
    with _build_progress(enabled=not quiet and not json_out) as bar:

        def progress(stage: str, done: int, total: int | None) -> None:
            if stage == LOCK_WAIT_STAGE:  # said even with --quiet: the build seems stuck otherwise
                err.print(f"{LOCK_WAIT_STAGE} on this index to finish…", markup=False, highlight=False)
            else:
                bar(stage, done, total)

        report = build_index(docs, index, cfg, progress=progress, wait_for_lock=wait, force=force)
        bar.report_timings(report.timings_s)
    if json_out:
        print(json.dumps(report.model_dump(mode="json"), indent=2))
        return
    _print_build_report(report)


def _print_build_report(report: Any) -> None:
    if report.unchanged:
        say(
            out, ("unchanged", "bold green"),
            f" {report.index_dir} ({report.generation}): {report.documents} documents and the settings are as "
            f"when it was built; no new generation ({report.timings_s.get('total', 0):.1f}s)",
        )
        for item in report.skipped:
            say(out, f"  skipped {printable(item.path)}: {item.reason}")
        return
    say(
        out, ("built", "bold green"),
        f" {report.index_dir} ({report.generation}): {report.documents} documents, "
        f"{report.chunks} chunks in {report.timings_s.get('total', 0):.1f}s",
    )
    shared = report.embeddings_from_shared_cache
    say(
        out,
        f"embedding: {report.embedding or 'none — lexical-only'}"
        f" ({report.embeddings_computed} computed, {report.embeddings_cached} from cache"
        + (f", {shared} of them from the shared cache)" if shared else ")"),
    )
    if report.embedding_fallback:
        say(out, ("lexical fallback: ", "yellow"), report.embedding_fallback)
    if report.embedding_replaced:
        say(
            out, ("re-embedded: ", "yellow"),
            f"the index was embedded with {report.embedding_replaced}; every chunk was embedded again",
        )
    for name, stats in report.stages.items():
        say(out, f"{name}: " + ", ".join(f"{k}={v}" for k, v in stats.items()))
    timings = ", ".join(f"{k} {v:.1f}s" for k, v in report.timings_s.items() if k != "total")
    say(out, f"timings: {timings}")
    if report.skipped:
        say(out, (f"skipped {len(report.skipped)} file(s):", "yellow"))
        for item in report.skipped:
            say(out, f"  {printable(item.path)}: {item.reason}")
    if report.contradictions:
        say(
            out, (f"{len(report.contradictions)} candidate contradiction(s)", "yellow"),
            " (documents stating different defaults; nothing was overwritten):",
        )
        for c in report.contradictions[:10]:
            versions = " (versions of one source: expected)" if c.between_versions else ""
            say(out, f"  {c.key}: '{c.first.value}' in {c.first.doc_id} vs '{c.second.value}' in {c.second.doc_id}{versions}")
        if len(report.contradictions) > 10:
            say(out, f"  … {len(report.contradictions) - 10} more in the JSON report (--json)")
    if report.warnings:
        say(out, (f"{len(report.warnings)} warning(s):", "yellow"))
        for warning in report.warnings:
            say(out, f"  {warning}")


def _result_json(res: Any, qid: Any = None, explain: bool = False) -> dict[str, Any]:
    # the contract's shape is fixed: "id" is always there, null when the input's was
    # (or for a single question); see arborgraph/data/result.schema.json
    return res.model_copy(update={"id": qid}).to_dict(explain=explain)


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities (which are not JSON) as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _json_line(data: Any, indent: int | None = None) -> str:
    return json.dumps(_finite(data), ensure_ascii=False, indent=indent, allow_nan=False)


@app.command()
def query(
    index: Annotated[Path, typer.Option("--index", "-i", help="index directory")],
    question: Annotated[Optional[str], typer.Argument(help="the question")] = None,
    route: Annotated[str, typer.Option(help="auto|lookup|tree|graph|global")] = "auto",
    top_k: Annotated[int, typer.Option("--top-k", min=1, help="return at most K contexts, on every route")] = 20,
    candidates: Annotated[Optional[int], typer.Option(
        "--candidates", min=1,
        help="contexts a tree/graph/global route hands to the final top-k and budget cut (default 3 × top-k)",
    )] = None,
    budget_tokens: Annotated[int, typer.Option("--budget-tokens", min=1, help="token budget of the returned contexts")] = 2000,
    batch: Annotated[Optional[Path], typer.Option(help="JSONL file of {id, question}")] = None,
    as_principal: Annotated[Optional[str], typer.Option("--as", help="principal to query as")] = None,
    as_of: Annotated[Optional[str], typer.Option("--as-of", help="date YYYY-MM-DD")] = None,
    explain: Annotated[bool, typer.Option(help="print why the route was chosen and what was cut (with --json: an \"explain\" field)")] = False,
    answer: Annotated[bool, typer.Option("--answer", help="generate an answer with the LLM")] = False,
    llm_model: Annotated[Optional[str], typer.Option("--llm-model", help="chat model for --answer / --llm-router")] = None,
    llm_router: Annotated[bool, typer.Option("--llm-router", help="let the LLM pick the route of auto questions")] = False,
    include_stale: Annotated[bool, typer.Option("--include-stale", help="include superseded/expired content, flagged")] = False,
    graph_backend: Annotated[Optional[str], typer.Option("--graph-backend", help="graph route expands in 'memory' or on the bolt:// server the index was exported to")] = None,
    graph_user: Annotated[Optional[str], typer.Option("--graph-user", help="user on the graph server")] = None,
    graph_password: Annotated[Optional[str], typer.Option("--graph-password", envvar="NEO4J_PASSWORD", help="password on the graph server")] = None,
    graph_database: Annotated[Optional[str], typer.Option("--graph-database", help="database on the graph server")] = None,
    store: Annotated[Optional[str], typer.Option("--store", help="answer over the chunks the bolt:// Neo4j the index was exported to with --search lets the caller read (every route; credentials: --graph-user/--graph-password/--graph-database)")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """Ask a question (or a batch of them) against an index.

    Each context's score is the final ranking's (1.0 for the first, never increasing
    down the list); --explain shows what each retriever scored it.
    """
    from arborgraph.core.questions import question_problem

    if (question is None) == (batch is None):
        raise fail("give either a QUESTION or --batch FILE", EXIT_USER_ERROR)
    if question is not None and (problem := question_problem(question)) is not None:
        raise fail(problem, EXIT_USER_ERROR)
    try:
        when = dt.date.fromisoformat(as_of) if as_of else "today"
    except ValueError:
        raise fail(f"--as-of must be a date like 2026-01-31, not '{as_of}'", EXIT_USER_ERROR) from None
    kwargs = dict(route=route, top_k=top_k, budget_tokens=budget_tokens, principal=as_principal,
                  as_of=when, include_stale=include_stale, answer=answer, candidates=candidates)
    kb = None
    driver = None
    try:
        # the batch file is checked whole before the index is even opened
        items = _read_questions(batch) if batch is not None else []
        server = {"uri": graph_backend, "user": graph_user, "database": graph_database}
        settings = {"graph_backend": {k: v for k, v in server.items() if v}} if graph_backend is not None else None
        kb = _open(index, settings, graph_password=graph_password)
        if answer or llm_router:
            kwargs["llm"] = kb.engine.chat_model(llm_model)
        if llm_router:
            kwargs["llm_router"] = True
        ask = partial(kb.query, **kwargs)
        if store is not None:
            from arborgraph.neo4j import open_store

            on_store = open_store(store, graph_user, graph_password, database=graph_database)
            driver = on_store.driver
            ask = partial(kb.query_store, store=on_store, **kwargs)
        if batch is not None:
            for qid, text in items:
                res = ask(text)
                sys.stdout.write(_json_line(_result_json(res, qid, explain)) + "\n")
                sys.stdout.flush()
            return
        assert question is not None
        res = ask(question)
    finally:
        if driver is not None:
            driver.close()
        if kb is not None:
            kb.close()
    if json_out:
        print(_json_line(_result_json(res, explain=explain), indent=2))
        return
    _print_result(res, explain)


def _not_json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _read_questions(path: Path) -> list[tuple[Any, str]]:
    """Every line of a batch file, checked before the first question is asked, so a bad
    line stops the batch with FILE:LINE and nothing on stdout (never half the answers)."""
    from arborgraph.core.errors import QueryError
    from arborgraph.core.questions import question_problem

    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise QueryError(f"cannot read {path}: {exc}") from None
    items = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line, parse_constant=_not_json_constant)
        except json.JSONDecodeError as exc:
            raise QueryError(f"{path}:{number}: not JSON ({exc.msg})") from None
        except ValueError as exc:  # NaN, Infinity
            raise QueryError(f"{path}:{number}: not JSON ({exc})") from None
        except RecursionError:
            raise QueryError(f"{path}:{number}: not JSON we read (nested too deeply)") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("question"), str):
            raise QueryError(f'{path}:{number}: expected {{"id": ..., "question": "..."}}')
        qid = obj.get("id", number)
        if not isinstance(qid, (str, int, float, type(None))) or isinstance(qid, bool):
            raise QueryError(f"{path}:{number}: the id must be a string, a number or null")
        if (problem := question_problem(obj["question"])) is not None:
            raise QueryError(f"{path}:{number}: {problem}")
        if isinstance(qid, str) and question_problem(qid or "x") is not None:
            raise QueryError(f"{path}:{number}: the id is not valid Unicode")
        items.append((qid, obj["question"]))
    if not items:
        raise QueryError(f"{path}: no questions")
    return items


def _context_header(i: int, ctx: Any) -> list[str | tuple[str, str]]:
    """``[i] kind L1 · where · source · score``: where is the heading path, or a
    summary's or report's title; nothing is said twice."""
    where = " > ".join(ctx.heading_path) or str(ctx.extra.get("title") or "")
    level = f" L{ctx.level}" if ctx.level is not None else ""
    places = [printable(p) for p in dict.fromkeys([where, ctx.source]) if p]
    parts: list[str | tuple[str, str]] = [
        (f"[{i}]", "bold cyan"), f" {ctx.kind}{level} · " + " · ".join(places) + f" · score {ctx.score:.4f}",
    ]
    # stale and suspicious passages must not read like current, plain ones
    for flag in ctx.flags:
        parts += [" · ", (f"⚠ {printable(flag)}", "bold yellow")]
    return parts


def _print_result(res: Any, explain: bool) -> None:
    say(
        out, ("route:", "bold"),
        f" {res.route} — {res.routing.reason} (confidence {res.routing.confidence:.2f}; index: {res.mode.label})",
    )
    for note in res.notes:
        say(out, ("note:", "yellow"), f" {note}")
    if res.answer:
        out.print()
        say(out, ("answer:", "bold"), f" {res.answer}")
    elif res.highlights:
        out.print()
        say(out, ("answer (the manual's sentences most likely to answer):", "bold"))
        for h in res.highlights:
            say(out, "  ", (f"[{h.context}]", "bold cyan"), f" {printable(h.text)}")
    for i, ctx in enumerate(res.contexts, start=1):
        out.print()
        say(out, *_context_header(i, ctx))
        say(out, ctx.text if len(ctx.text) <= 900 else ctx.text[:900] + " …")
    if explain:
        out.print()
        say(out, res.explain())


@app.command()
def inspect(
    index: Annotated[Path, typer.Option("--index", "-i", help="index directory")],
    as_principal: Annotated[Optional[str], typer.Option("--as", help="list the documents this principal may read (default: public ones)")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
    structure: Annotated[
        bool, typer.Option("--structure", help="how readable the tree's names, the relations and the community titles are")
    ] = False,
) -> None:
    """Show what an index holds: manifest, counts, sizes (or, with --structure, how readable its structures are)."""
    if structure:
        report = _open(index).explorer.structure(principal=as_principal)
        if json_out:
            print(report.model_dump_json(indent=2))
        else:
            _print_structure(report)
        return
    info = _open(index).info(principal=as_principal)
    if json_out:
        print(json.dumps(info, indent=2, default=str))
        return
    say(out, (str(info["index_dir"]), "bold"), f" generation {info['generation']} (schema {info['schema_version']}, built {info['built_at']})")
    say(out, f"mode: {info['mode']['label']}")
    if "llm_calls" in info:  # built in LLM mode
        say(
            out,
            f"llm: {info['llm_calls']} calls, {info['llm_cache_hits']} cache hits, "
            f"{info['llm_tokens_in']} tokens in, {info['llm_tokens_out']} tokens out"
            + (f", {info['llm_fallbacks']} items fell back to no-LLM" if info.get("llm_fallbacks") else "")
            + " (--json: per stage)",
        )
    say(out, f"routes: {', '.join(info['routes'])}")
    say(out, "counts: " + ", ".join(f"{k}={v}" for k, v in info["counts"].items()))
    say(
        out,
        f"documents: {len(info['documents'])} readable"
        + (f" by {as_principal}" if as_principal else " without a principal (--as P: those P may read)"),
    )
    say(
        out,
        f"build report: {len(info['skipped'])} file(s) skipped, {len(info['warnings'])} warning(s)"
        " (--json lists them)",
    )
    scopes = ", ".join(f"{s['scope']} ({s['chunks']} chunks)" for s in info["scopes"])
    say(out, f"scopes: {scopes or 'public'}")
    if info["bytes_total"] is not None:
        say(out, f"size: {info['bytes_total'] / 2**20:.1f} MiB")
    for name, t in info["tables"].items():
        size = "" if t["bytes"] is None else f", {t['bytes'] / 1024:.0f} KiB"
        say(out, f"  {name}: {t['rows']} rows{size}")


def _print_structure(report: Any) -> None:
    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.1f} %"

    def _clip(text: str, limit: int) -> str:
        return text if len(text) <= limit else text[: limit - 1] + "…"

    say(out, (str(report.index_dir), "bold"), f" generation {report.generation}")
    for scope in report.scopes:
        say(out, (f"scope {scope.scope}", "bold"))
        if (t := scope.tree) is not None:
            say(out, f"  tree: {t.summary_nodes} summary nodes; name words median {t.name_words_median} (max {t.name_words_max}), "
                f"over 6 words {pct(t.names_longer_than_6_words)}")
            say(out, f"    strung page titles {pct(t.strung_titles)}, repeated among siblings {pct(t.sibling_repeats)}, "
                f"words found in the node's chunks {pct(t.grounding)}")
            say(out, f"    the manual's outline: {pct(t.outline_nodes)} of summary nodes; levels 1-3 named by its own "
                f"titles {pct(t.manual_titles)}, covering {pct(t.title_coverage)} of their nodes")
            for name in t.examples:
                say(out, f"    {printable(_clip(name, 120))}")
        if (g := scope.graph) is not None:
            types = ", ".join(f"{k} {v}" for k, v in g.relation_types.items())
            say(out, f"  graph: {g.entities} entities, {g.relations} relations; co-occurrence {pct(g.co_occurrence)}")
            say(out, f"    relation types: {printable(_clip(types, 200))}")
            say(out, f"    page-structure headings among the 50 best connected: "
                f"{len(g.boilerplate_in_top)} ({printable(_clip(', '.join(g.boilerplate_in_top), 120)) or 'none'})")
            say(out, f"    best connected: {printable(_clip(', '.join(g.top_entities[:12]), 200))}")
        if (c := scope.communities) is not None:
            say(out, f"  communities: {c.communities} reports; title words median {c.title_words_median}, "
                f"comma lists of members {pct(c.comma_lists)}, repeated within a level {pct(c.repeated_titles)}")
            say(out, f"    untitled {pct(c.untitled)}, the manual's own titles {pct(c.manual_titles)}, summaries with a template sentence {pct(c.template_summaries)}")
            for title in c.examples:
                say(out, f"    {printable(_clip(title, 120))}")


@app.command()
def rollback(
    index: Annotated[Path, typer.Option("--index", "-i", help="index directory")],
    to: Annotated[Optional[str], typer.Option("--to", help="the generation to make live (default: the newest intact one before the live one)")] = None,
) -> None:
    """Make an older, intact generation live again (after the live one was damaged on disk)."""
    from arborgraph.index.store import rollback as roll_back

    was, now = roll_back(index, to)
    say(err, f"{index}: {now} is live now (every file checked)" + (f", was {was}" if was else ""))


@app.command("eval")
def eval_cmd(
    index: Annotated[Path, typer.Option("--index", "-i", help="index directory")],
    questions: Annotated[Path, typer.Argument(help="questions JSONL with evidence")],
    budget_words: Annotated[int, typer.Option("--budget-words", min=1)] = 1500,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="write the full report as JSON")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
    store: Annotated[Optional[str], typer.Option("--store", help="auto and the routes take their candidates from the bolt:// Neo4j the index was exported to with --search (the baselines stay in process)")] = None,
    graph_user: Annotated[Optional[str], typer.Option("--graph-user", help="user on the --store server")] = None,
    graph_password: Annotated[Optional[str], typer.Option("--graph-password", envvar="NEO4J_PASSWORD", help="password on the --store server")] = None,
    graph_database: Annotated[Optional[str], typer.Option("--graph-database", help="database on the --store server")] = None,
) -> None:
    """Evidence recall, full-hit rate and MRR per question type, vs flat baselines."""
    from arborgraph.query.evaluation import evaluate, format_report, load_questions

    qs = load_questions(questions)
    driver = None
    try:
        on_store = None
        if store is not None:
            from arborgraph.neo4j import open_store

            on_store = open_store(store, graph_user, graph_password, database=graph_database)
            driver = on_store.driver
        kb = _open(index, store=on_store)
        report = evaluate(kb, qs, budget_words=budget_words)
        kb.close()
    finally:
        if driver is not None:
            driver.close()
    if store is not None:
        report.mode += " · auto and routes over the Neo4j store's candidates (baselines in process)"
    data = report.model_dump(mode="json")
    if output:
        output.write_text(json.dumps(data, indent=2), encoding="utf-8")
    if json_out:
        print(json.dumps(data, indent=2))
    else:
        print(printable(format_report(report), multiline=True))  # question ids come from the user


@app.command()
def warmup() -> None:
    """Compile UMAP's numba kernels into numba's cache now (25-30 s once per install),
    so the first tree build does not pay for it; e.g. when building a container image."""
    from raptor.warmup import warm_umap_cache

    seconds = warm_umap_cache()
    print(f"UMAP kernels compiled and cached in {seconds:.1f} s")


# the exporters' defaults (arborgraph.neo4j's CONNECT_TIMEOUT, DEFAULT_BATCH, DEFAULT_WORKERS;
# tests/unit/test_cli_startup.py checks they agree), not imported: importing arborgraph.neo4j
# here cost every command, --help included, 20 ms
CONNECT_TIMEOUT, DEFAULT_BATCH, DEFAULT_WORKERS = 15.0, 1000, 1


@app.command("export-neo4j")
def export_neo4j(
    index: Annotated[Path, typer.Option("--index", "-i", help="index directory")],
    uri: Annotated[Optional[str], typer.Option("--uri", help="Bolt URI of the server, e.g. bolt://localhost:7687")] = None,
    user: Annotated[str, typer.Option("--user", envvar="NEO4J_USER", help="user name")] = "neo4j",
    password: Annotated[Optional[str], typer.Option("--password", envvar="NEO4J_PASSWORD", help="password (none: no authentication)")] = None,
    database: Annotated[Optional[str], typer.Option("--database", "-d", help="database (default: the server's default)")] = None,
    csv: Annotated[Optional[Path], typer.Option("--csv", help="write neo4j-admin import files to this directory instead")] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="rows per statement")] = DEFAULT_BATCH,
    workers: Annotated[int, typer.Option("--workers", min=1, max=16, help="parallel sessions (Neo4j; FalkorDB gets one)")] = DEFAULT_WORKERS,
    timeout: Annotated[float, typer.Option("--timeout", min=0.1, help="seconds to wait for a connection")] = CONNECT_TIMEOUT,
    json_out: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
    search: Annotated[bool, typer.Option("--search", help="then give the chunks their embeddings and create the vector and full-text indexes that query --store searches")] = False,
    gds_leiden: Annotated[bool, typer.Option("--gds-leiden", help="then run GDS's hierarchical Leiden on the exported entity graph, write the community ids on the entities, and compare its modularity with the index's")] = False,
    adopt: Annotated[bool, typer.Option("--adopt", help="with --gds-leiden: make GDS's communities the index's own (a new generation, reports rebuilt; a scope GDS skipped keeps its communities), then export them")] = False,
) -> None:
    """Export the index to Neo4j over Bolt (incremental), or as CSV files for neo4j-admin import."""
    from arborgraph.neo4j import (
        AdoptOutcome, CsvReport, ExportReport, GdsLeidenOutcome, SearchExport, adopt_gds_communities, connect,
        export_records, export_search, gds_leiden_index, index_records, write_csv,
    )
    from arborgraph.index.store import open_generation

    if adopt and not gds_leiden:
        raise fail("--adopt takes the communities --gds-leiden writes: give --gds-leiden too", EXIT_USER_ERROR)
    if (uri is None) == (csv is None):
        raise fail("give exactly one of --uri (export over Bolt) or --csv DIR (files for neo4j-admin)", EXIT_USER_ERROR)
    if (gds_leiden or search) and uri is None:
        raise fail("--gds-leiden and --search run on the server: give --uri", EXIT_USER_ERROR)
    records = index_records(open_generation(index))
    communities = GdsLeidenOutcome([], [])
    searchable: SearchExport | None = None
    adopted: AdoptOutcome | None = None
    followed: ExportReport | None = None
    if csv is not None:
        report: CsvReport | ExportReport = write_csv(records, csv)
    else:
        assert uri is not None
        driver = connect(uri, user, password, timeout=timeout)
        try:
            report = export_records(records, driver, database=database, batch_size=batch_size, workers=workers)
            if search:
                searchable = export_search(index, driver, database=database)
            if gds_leiden:
                communities = gds_leiden_index(index, driver, database=database)
            if adopt:
                adopted = adopt_gds_communities(index, driver, database=database)
                # the database's Community nodes follow the adopted generation (entities unchanged)
                followed = export_records(index_records(open_generation(index)), driver, database=database,
                                          batch_size=batch_size, workers=workers)
        finally:
            driver.close()
    if json_out:
        payload = report.as_dict()
        if searchable is not None:
            payload["search"] = searchable.as_dict()
        if gds_leiden:
            payload["gds_leiden"] = [c.as_dict() for c in communities.reports]
            payload["gds_leiden_skipped"] = [s.as_dict() for s in communities.skipped]
        if adopted is not None:
            payload["adopted"] = adopted.as_dict()
        if followed is not None:
            payload["adopted_export"] = followed.as_dict()
        print(json.dumps(payload, indent=2))
        return
    if isinstance(report, CsvReport):
        say(out, f"wrote {report.nodes} nodes and {report.relationships} relationships to {report.directory} (run import.sh)")
    else:
        n, r = report.nodes, report.relationships
        say(
            out,
            f"{report.server}: nodes {n.created} created, {n.updated} updated, {n.deleted} deleted, "
            f"{n.unchanged} unchanged; relationships {r.created} created, {r.updated} updated, "
            f"{r.deleted} deleted, {r.unchanged} unchanged ({report.seconds:.1f} s)",
        )
    if searchable is not None:
        say(out, f"search indexes: {searchable.embeddings} chunk embeddings written ({searchable.dimensions} dimensions)")
    for skipped in communities.skipped:
        say(out, f"GDS Leiden, scope {skipped.scope}: skipped ({skipped.reason})")
    for c in communities.reports:
        say(
            out,
            f"GDS Leiden, scope {c.scope}: {c.gds_communities} communities in {c.gds_levels} levels, modularity "
            f"{c.gds_modularity:.4f} (the index's {c.index_communities} top-level communities: {c.index_modularity:.4f}), "
            f"{c.gds_seconds:.1f} s",
        )
    if adopted is not None:
        for a in adopted.adopted:
            say(
                out,
                f"adopted GDS's communities, scope {a.scope}: {'/'.join(map(str, a.communities_by_level))} per level "
                f"(were {'/'.join(map(str, a.previous_by_level))}), {a.reports} reports",
            )
        for skipped in adopted.skipped:
            say(out, f"scope {skipped.scope} keeps its own communities (GDS skipped it: {skipped.reason})")
        say(out, f"index {index}: {adopted.generation} is live (was {adopted.previous_generation}), {adopted.seconds:.1f} s")
    if followed is not None:
        n, r = followed.nodes, followed.relationships
        say(
            out,
            f"the database's communities follow it: nodes {n.created} created, {n.updated} updated, {n.deleted} "
            f"deleted; relationships {r.created} created, {r.deleted} deleted ({followed.seconds:.1f} s)",
        )


def _quiet_libraries() -> None:
    """Keep third-party log chatter (ONNX quantiser, bm25s, transformers) off the terminal."""
    import logging
    import warnings

    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.setLevel(logging.ERROR)  # libraries that lower their own logger's level
    for name in ("bm25s", "onnxruntime", "transformers", "sentence_transformers", "numba", "root"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)


def main() -> None:
    _quiet_libraries()
    app()


def _register_service() -> None:
    from arborgraph.service.cli import register

    register(app)


_register_service()


if __name__ == "__main__":
    main()
