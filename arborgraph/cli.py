"""The ``arborgraph`` command line: build, query, inspect, eval.

User mistakes (bad paths, a directory that is not an index, a route the index lacks,
a malformed questions file) end with one line on stderr and a non-zero exit code,
never a traceback.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Arborgraph: build and query RAPTOR-tree + entity-graph indexes over technical manuals.",
    pretty_exceptions_enable=False,
)
err = Console(stderr=True)
out = Console()

EXIT_USER_ERROR = 2


def fail(message: str, code: int = 1) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def _user_errors() -> tuple[type[Exception], ...]:
    from arborgraph.config import ConfigError
    from arborgraph.executor import ExecutorError
    from arborgraph.pipeline import BuildError
    from arborgraph.kb import QueryError
    from arborgraph.store import IndexError_

    return (BuildError, ConfigError, QueryError, IndexError_, ExecutorError)


def _llm_errors() -> tuple[type[Exception], ...]:
    from arborgraph.llm.base import LLMError

    return (LLMError,)


class _ProgressBar:
    """Renders the library's progress callbacks as a rich progress bar."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.progress = Progress(
            TextColumn("{task.description:<10}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            console=err,
            transient=False,
            disable=not enabled,
        )
        self.tasks: dict[str, Any] = {}

    def __enter__(self) -> "_ProgressBar":
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(*exc)

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        if stage not in self.tasks:
            self.tasks[stage] = self.progress.add_task(stage, total=total)
        self.progress.update(self.tasks[stage], completed=done, total=total)


def _open(index: Path):  # type: ignore[no-untyped-def]
    import arborgraph

    return arborgraph.open(index)


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
) -> None:
    """Build or update an index from DOCS."""
    from arborgraph.pipeline import NoUsableDocuments, build_index
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
    if llm_model or embedding_model:
        overrides["llm"] = {
            k: v for k, v in (("model", llm_model), ("embedding_model", embedding_model)) if v
        }
    try:
        cfg = load_config(config, overrides)
        with _ProgressBar(enabled=not quiet and not json_out) as bar:
            report = build_index(docs, index, cfg, progress=bar)
    except NoUsableDocuments as exc:
        raise fail(str(exc), EXIT_USER_ERROR) from None
    except _user_errors() as exc:
        raise fail(str(exc), EXIT_USER_ERROR) from None
    except _llm_errors() as exc:
        raise fail(f"LLM call failed, build stopped (the previous index is unchanged; "
                   f"re-run to resume from the cache): {exc}", 1) from None
    except KeyboardInterrupt:
        raise fail("interrupted; the previous index (if any) is unchanged", 130) from None
    if json_out:
        print(json.dumps(report.model_dump(mode="json"), indent=2))
        return
    _print_build_report(report)


def _print_build_report(report: Any) -> None:
    out.print(
        f"[bold green]built[/] {report.index_dir} ({report.generation}): "
        f"{report.documents} documents, {report.chunks} chunks in {report.timings_s.get('total', 0):.1f}s"
    )
    out.print(
        f"embedding: {report.embedding or 'none — lexical-only'}"
        f" ({report.embeddings_computed} computed, {report.embeddings_cached} from cache)"
    )
    if report.embedding_fallback:
        out.print(f"[yellow]lexical fallback:[/] {escape(report.embedding_fallback)}")
    for name, stats in report.stages.items():
        out.print(f"{name}: " + ", ".join(f"{k}={v}" for k, v in stats.items()))
    timings = ", ".join(f"{k} {v:.1f}s" for k, v in report.timings_s.items() if k != "total")
    out.print(f"timings: {timings}")
    if report.skipped:
        out.print(f"[yellow]skipped {len(report.skipped)} file(s):[/]")
        for item in report.skipped:
            out.print(f"  {item.path}: {item.reason}", highlight=False, markup=False)
    if report.contradictions:
        out.print(
            f"[yellow]{len(report.contradictions)} candidate contradiction(s)[/] "
            "(documents stating different defaults; nothing was overwritten):"
        )
        for c in report.contradictions[:10]:
            versions = " (versions of one source: expected)" if c.between_versions else ""
            out.print(
                f"  {c.key}: '{c.first.value}' in {c.first.doc_id} vs '{c.second.value}' in {c.second.doc_id}{versions}",
                highlight=False, markup=False,
            )
        if len(report.contradictions) > 10:
            out.print(f"  … {len(report.contradictions) - 10} more in the JSON report (--json)")
    if report.warnings:
        out.print(f"[yellow]{len(report.warnings)} warning(s):[/]")
        for warning in report.warnings:
            out.print(f"  {warning}", highlight=False, markup=False)


def _result_json(res: Any, qid: Any = None) -> dict[str, Any]:
    # the contract's shape is fixed: "id" is always there, null when the input's was
    # (or for a single question)
    return {"id": qid, **res.to_dict()}


@app.command()
def query(
    index: Annotated[Path, typer.Option("--index", "-i", help="index directory")],
    question: Annotated[Optional[str], typer.Argument(help="the question")] = None,
    route: Annotated[str, typer.Option(help="auto|lookup|tree|graph|global")] = "auto",
    top_k: Annotated[int, typer.Option("--top-k", min=1)] = 20,
    budget_tokens: Annotated[int, typer.Option("--budget-tokens", min=1)] = 2000,
    batch: Annotated[Optional[Path], typer.Option(help="JSONL file of {id, question}")] = None,
    as_principal: Annotated[Optional[str], typer.Option("--as", help="principal to query as")] = None,
    as_of: Annotated[Optional[str], typer.Option("--as-of", help="date YYYY-MM-DD")] = None,
    explain: Annotated[bool, typer.Option(help="print why the route was chosen and what was cut")] = False,
    answer: Annotated[bool, typer.Option("--answer", help="generate an answer with the LLM")] = False,
    llm_model: Annotated[Optional[str], typer.Option("--llm-model", help="chat model for --answer / --llm-router")] = None,
    llm_router: Annotated[bool, typer.Option("--llm-router", help="let the LLM pick the route of auto questions")] = False,
    include_stale: Annotated[bool, typer.Option("--include-stale", help="include superseded/expired content, flagged")] = False,
    graph_backend: Annotated[Optional[str], typer.Option("--graph-backend", help="graph route expands in 'memory' or on the bolt:// server the index was exported to")] = None,
    graph_user: Annotated[Optional[str], typer.Option("--graph-user", help="user on the graph server")] = None,
    graph_password: Annotated[Optional[str], typer.Option("--graph-password", envvar="NEO4J_PASSWORD", help="password on the graph server")] = None,
    graph_database: Annotated[Optional[str], typer.Option("--graph-database", help="database on the graph server")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """Ask a question (or a batch of them) against an index."""
    if (question is None) == (batch is None):
        raise fail("give either a QUESTION or --batch FILE", EXIT_USER_ERROR)
    try:
        when = dt.date.fromisoformat(as_of) if as_of else "today"
    except ValueError:
        raise fail(f"--as-of must be a date like 2026-01-31, not '{as_of}'", EXIT_USER_ERROR) from None
    kwargs = dict(route=route, top_k=top_k, budget_tokens=budget_tokens, principal=as_principal,
                  as_of=when, include_stale=include_stale, answer=answer)
    kb = None
    try:
        kb = _open(index)
        if graph_backend is not None:
            from arborgraph.neo4j_backend import graph_server

            given = {"uri": graph_backend, "user": graph_user, "database": graph_database}
            settings = kb.config.graph_backend.model_copy(update={k: v for k, v in given.items() if v})
            kb.graph_backend = graph_server(settings, password=graph_password)
        if answer or llm_router:
            kwargs["llm"] = kb.chat_model(llm_model)
        if llm_router:
            kwargs["llm_router"] = True
        if batch is not None:
            items = _read_questions(batch)
            for qid, text in items:
                res = kb.query(text, **kwargs)
                sys.stdout.write(json.dumps(_result_json(res, qid), ensure_ascii=False) + "\n")
            return
        assert question is not None
        res = kb.query(question, **kwargs)
    except _user_errors() as exc:
        raise fail(str(exc), EXIT_USER_ERROR) from None
    except _llm_errors() as exc:
        raise fail(f"LLM call failed: {exc}", 1) from None
    finally:
        if kb is not None and kb.graph_backend is not None:
            kb.graph_backend.close()
    if json_out:
        print(json.dumps(_result_json(res), ensure_ascii=False, indent=2))
        return
    _print_result(res, explain)


def _read_questions(path: Path) -> list[tuple[Any, str]]:
    from arborgraph.kb import QueryError

    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise QueryError(f"cannot read {path}: {exc}") from None
    items = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise QueryError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("question"), str):
            raise QueryError(f'{path}:{number}: expected {{"id": ..., "question": "..."}}')
        # checked here, before any answer is written, so a bad line cannot cut the output short
        if not obj["question"].strip():
            raise QueryError(f"{path}:{number}: the question is empty")
        items.append((obj.get("id", number), obj["question"]))
    if not items:
        raise QueryError(f"{path}: no questions")
    return items


def _print_result(res: Any, explain: bool) -> None:
    out.print(
        f"[bold]route:[/] {res.route} — {res.routing.reason} "
        f"(confidence {res.routing.confidence:.2f}; index: {res.mode.label})",
        highlight=False,
    )
    for note in res.notes:
        out.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    if res.answer:
        out.print(f"\n[bold]answer:[/] {res.answer}\n", highlight=False)
    for i, ctx in enumerate(res.contexts, start=1):
        where = escape(" > ".join(ctx.heading_path) or ctx.source)
        level = f" L{ctx.level}" if ctx.level is not None else ""
        # stale and suspicious passages must not read like current, plain ones
        flags = "".join(f" · [bold yellow]⚠ {escape(flag)}[/]" for flag in ctx.flags)
        out.print(
            f"\n[bold cyan][{i}][/] {ctx.kind}{level} · {where} · {escape(ctx.source)} · score {ctx.score:.4f}{flags}",
            highlight=False,
        )
        text = ctx.text if len(ctx.text) <= 900 else ctx.text[:900] + " …"
        out.print(text, highlight=False, markup=False)
    if explain:
        out.print("\n" + res.explain(), highlight=False, markup=False)


@app.command()
def inspect(
    index: Annotated[Path, typer.Option("--index", "-i", help="index directory")],
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """Show what an index holds: manifest, counts, sizes."""
    try:
        info = _open(index).info()
    except _user_errors() as exc:
        raise fail(str(exc), EXIT_USER_ERROR) from None
    if json_out:
        print(json.dumps(info, indent=2, default=str))
        return
    out.print(f"[bold]{info['index_dir']}[/] generation {info['generation']} (schema {info['schema_version']}, built {info['built_at']})")
    out.print(f"mode: {info['mode']['label']}")
    if "llm_calls" in info:  # built in LLM mode
        out.print(
            f"llm: {info['llm_calls']} calls, {info['llm_cache_hits']} cache hits, "
            f"{info['llm_tokens_in']} tokens in, {info['llm_tokens_out']} tokens out (--json: per stage)"
        )
    out.print(f"routes: {', '.join(info['routes'])}")
    out.print("counts: " + ", ".join(f"{k}={v}" for k, v in info["counts"].items()))
    out.print(
        f"build report: {len(info['skipped'])} file(s) skipped, {len(info['warnings'])} warning(s)"
        " (--json lists them)"
    )
    scopes = ", ".join(f"{s.get('scope')} ({s.get('chunks')} chunks)" for s in info["scopes"])
    out.print(f"scopes: {scopes or 'public'}", highlight=False, markup=False)
    out.print(f"size: {info['bytes_total'] / 2**20:.1f} MiB")
    for name, t in info["tables"].items():
        out.print(f"  {name}: {t['rows']} rows, {t['bytes'] / 1024:.0f} KiB")


@app.command("eval")
def eval_cmd(
    index: Annotated[Path, typer.Option("--index", "-i", help="index directory")],
    questions: Annotated[Path, typer.Argument(help="questions JSONL with evidence")],
    budget_words: Annotated[int, typer.Option("--budget-words", min=1)] = 1500,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="write the full report as JSON")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """Evidence recall, full-hit rate and MRR per question type, vs flat baselines."""
    from arborgraph.evaluation import EvalError, evaluate, format_report, load_questions

    try:
        kb = _open(index)
        qs = load_questions(questions)
        report = evaluate(kb, qs, budget_words=budget_words)
    except (EvalError, *_user_errors()) as exc:
        raise fail(str(exc), EXIT_USER_ERROR) from None
    data = report.model_dump(mode="json")
    if output:
        output.write_text(json.dumps(data, indent=2), encoding="utf-8")
    if json_out:
        print(json.dumps(data, indent=2))
    else:
        print(format_report(report))


@app.command()
def warmup() -> None:
    """Compile UMAP's numba kernels into numba's cache now (25-30 s once per install),
    so the first tree build does not pay for it; e.g. when building a container image."""
    from raptor.warmup import warm_umap_cache

    seconds = warm_umap_cache()
    print(f"UMAP kernels compiled and cached in {seconds:.1f} s")


def _register_exporters() -> None:
    from arborgraph.neo4j_export import export_neo4j_command

    app.command("export-neo4j")(export_neo4j_command)


_register_exporters()


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


if __name__ == "__main__":
    main()
