"""The service's commands: ``serve``, ``keys add|list|revoke`` and ``mcp``.

:func:`register` adds them to the main ``arborgraph`` app, whose command group reports
their errors (a bad keys file or principal, an index that cannot be served) as for
every command; the server's own packages (fastapi, uvicorn, mcp) are imported only
when a command runs.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from arborgraph.core.errors import install_hint
from arborgraph.core.questions import MAX_QUESTION_CHARS
from arborgraph.display import printable

SETTINGS_ENV = "ARBORGRAPH_SERVE_SETTINGS"  # hands the settings to --workers processes
SERVE_EXTRA_HINT = f"the server needs the 'serve' extra: {install_hint('serve')}"

keys_app = typer.Typer(help="API keys that carry principals (the file keeps only their hashes).", no_args_is_help=True)


def _fail(message: str, code: int = 2) -> typer.Exit:
    from arborgraph.cli import fail

    return fail(message, code)


class PrintableFormatter(logging.Formatter):
    """Shows control characters in a log line's message as escapes: a request path or
    a file name holding CR, LF or ESC would otherwise forge log lines or drive the
    terminal. Tracebacks (our own text) keep their newlines."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return printable(super().formatMessage(record))


# uvicorn's own lines go through the same formatter (its error log can quote a request)
_UVICORN_LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"printable": {"()": PrintableFormatter, "fmt": "%(levelname)s:     %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "printable", "stream": "ext://sys.stderr"}},
    "loggers": {"uvicorn": {"handlers": ["stderr"], "level": "INFO", "propagate": False}},
}


def _service_logging() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PrintableFormatter("%(levelname)s:     %(message)s"))
    log = logging.getLogger("arborgraph.service")
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    log.propagate = False


def _served(index: Path, poll_seconds: float, verify_seconds: float = 600.0, store: Any = None) -> Any:
    """The served index, loaded with stdout kept clean (MCP speaks on it); with
    ``store``, its knowledge base (and each generation swapped in) takes every
    question's flat candidates from that Neo4j store.

    Its error is said here, not left to the command group: the ``--workers`` processes
    (:mod:`arborgraph.service.worker`) call it outside any command."""
    from arborgraph.kb import KnowledgeBase
    from arborgraph.service.swap import ServedIndex
    from arborgraph.core.errors import ExportError, IndexUnusable

    opener = None if store is None else lambda index_dir: KnowledgeBase.open(index_dir, store=store)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            return ServedIndex(index, poll_seconds=poll_seconds, verify_seconds=verify_seconds, opener=opener)
    except IndexUnusable as exc:
        raise _fail(str(exc)) from None
    except ExportError as exc:  # the start's check query on every route failed in the store
        raise _fail(f"--store: {exc}") from None


def _settings_from(values: dict[str, Any]) -> Any:
    from arborgraph.service.limits import ServeSettings

    values = dict(values)
    values["index_dir"] = Path(values["index_dir"])
    for name in ("keys_file", "docs_dir"):
        if values.get(name):
            values[name] = Path(values[name])
    values["allowed_hosts"] = tuple(values.get("allowed_hosts") or ())
    return ServeSettings(**values)


def build_app(settings: Any, served: Any = None, store_password: str | None = None) -> Any:
    """The ASGI app for ``settings`` (opening the index unless ``served`` is given);
    with ``settings.store_uri``, connected to that store (``store_password``) and
    checked to have its search indexes before anything is served."""
    from arborgraph.service.app import create_app
    from arborgraph.service.auth import Authenticator
    from arborgraph.service.keys import KeyStore

    keys = KeyStore(settings.keys_file) if settings.keys_file else None
    if keys is not None:
        keys.records()  # a damaged keys file stops the start, not the first request
    store = _store(settings, store_password) if settings.store_uri else None
    served = served or _served(settings.index_dir, settings.poll_seconds, settings.verify_seconds, store)
    return create_app(served, settings, Authenticator(keys, require_key=settings.require_key), store=store)


STORE_PASSWORD_ENV = "NEO4J_PASSWORD"  # how serve --store hands the password to its --workers processes


def _store(settings: Any, password: str | None) -> Any:
    """The Neo4j store ``settings`` name, connected, its search indexes there: a wrong
    address, password or a database exported without ``--search`` stops the start in
    one line."""
    from arborgraph.core.errors import ExportError
    from arborgraph.neo4j import open_store

    try:
        return open_store(settings.store_uri, settings.store_user, password, database=settings.store_database)
    except ExportError as exc:
        raise _fail(f"--store: {exc}") from None


def serve(
    index: Annotated[Path, typer.Option("--index", "-i", help="index directory")],
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="port (0: any free one)")] = 8765,
    keys: Annotated[Optional[Path], typer.Option("--keys", help="keys file (arborgraph keys add)")] = None,
    require_key: Annotated[bool, typer.Option("--require-key", help="401 for requests without a key")] = False,
    workers: Annotated[Optional[int], typer.Option(min=1, max=64, help="worker processes, each holding the index (default: one per core, at most 4; one with --docs)")] = None,
    max_question_chars: Annotated[int, typer.Option(min=1, max=MAX_QUESTION_CHARS, help="a lower question-length limit than everywhere else's")] = MAX_QUESTION_CHARS,
    max_batch: Annotated[int, typer.Option(min=1, help="questions per /v1/query/batch request")] = 64,
    max_body_bytes: Annotated[int, typer.Option(min=256)] = 1 << 20,
    timeout: Annotated[float, typer.Option(min=0.1, help="seconds a request may take")] = 30.0,
    concurrency: Annotated[int, typer.Option(min=1, help="requests worked on at once by each process (more wait their turn)")] = 2,
    poll_seconds: Annotated[float, typer.Option(min=0.1, help="how often to look for a new generation")] = 1.0,
    llm_model: Annotated[Optional[str], typer.Option("--llm-model", help="chat model for answers (default: the index's llm.model)")] = None,
    allow_anonymous: Annotated[bool, typer.Option("--allow-anonymous", help="serve a non-loopback address without --keys (public documents to anyone who can connect)")] = False,
    allowed_host: Annotated[Optional[list[str]], typer.Option("--allowed-host", help="a Host header name to answer besides loopback and the bound address (repeatable)")] = None,
    verify_seconds: Annotated[float, typer.Option(min=0, help="how often to check every checksum of the served generation (0: never)")] = 600.0,
    body_timeout: Annotated[float, typer.Option(min=0.1, help="seconds a request body may take to arrive")] = 10.0,
    docs: Annotated[Optional[Path], typer.Option("--docs", help="the documents folder the index is built from: keys with --write may add, delete and rebuild")] = None,
    store: Annotated[Optional[str], typer.Option("--store", help="find each question's candidates in the bolt:// Neo4j the index was exported to with --search (every route; see docs/neo4j.md)")] = None,
    graph_user: Annotated[Optional[str], typer.Option("--graph-user", help="user on the --store server")] = None,
    graph_password: Annotated[Optional[str], typer.Option("--graph-password", envvar="NEO4J_PASSWORD", help="password on the --store server")] = None,
    graph_database: Annotated[Optional[str], typer.Option("--graph-database", help="database on the --store server")] = None,
) -> None:
    """Serve an index over HTTP (/v1/..., /metrics, MCP at /mcp) until interrupted."""
    from arborgraph.core.math_threads import one_math_thread_from_now
    from arborgraph.service.limits import is_loopback

    try:
        import uvicorn
    except ImportError:
        raise _fail(SERVE_EXTRA_HINT) from None
    if require_key and keys is None:
        raise _fail("--require-key needs --keys FILE")
    if keys is not None and not keys.is_file():
        raise _fail(f"{keys}: no such keys file (create one with: arborgraph keys add --keys {keys} --principal NAME)")
    if keys is None and not is_loopback(host) and not allow_anonymous:
        raise _fail(
            f"--host {host} serves other machines, and without --keys every caller is anonymous: "
            "pass --keys FILE, or --allow-anonymous to serve the public documents to anyone"
        )
    if docs is not None and not docs.is_dir():
        raise _fail(f"--docs {docs}: no such folder (the documents the index is built from)")
    if docs is not None and store is not None:
        raise _fail("--docs with --store: a rebuild would leave the database behind the index; serve one of them, "
                    "and re-export (arborgraph export-neo4j --search) after a rebuild")
    if docs is not None and workers is not None and workers > 1:
        raise _fail("--docs needs --workers 1: one process runs the rebuilds and reports their progress")
    chosen = workers is not None
    if workers is None:
        workers = default_workers(docs is not None)
    _check_port_free(host, port)
    values = dict(
        index_dir=str(index), host=host, port=port, keys_file=str(keys) if keys else None,
        require_key=require_key, max_question_chars=max_question_chars, max_batch=max_batch,
        max_body_bytes=max_body_bytes, request_timeout_s=timeout, poll_seconds=poll_seconds,
        concurrency=concurrency,
        llm_model=llm_model, allowed_hosts=list(allowed_host or []), verify_seconds=verify_seconds,
        body_timeout_s=body_timeout, docs_dir=str(docs) if docs else None, workers=workers,
        store_uri=store, store_user=graph_user, store_database=graph_database,
    )
    settings = _settings_from(values)
    _service_logging()
    # uvicorn's own access log is off: it prints query strings (questions, keys)
    common = dict(
        host=host, port=port, log_level="info", log_config=_UVICORN_LOGGING, timeout_graceful_shutdown=5, access_log=False,
    )
    try:
        if workers > 1:
            from arborgraph.core.errors import IndexUnusable
            from arborgraph.service import dispatch
            from arborgraph.service.swap import live_generation

            try:  # said once here, not by every worker
                live_generation(index)
            except IndexUnusable as exc:
                raise _fail(str(exc)) from None
            if keys is not None:
                from arborgraph.service.keys import KeyStore

                KeyStore(keys).records()  # a damaged keys file stops the start here, not in every worker
            if store is not None:
                _store(settings, graph_password).driver.close()  # said once here, not by every worker
                if graph_password is not None:
                    os.environ[STORE_PASSWORD_ENV] = graph_password  # the workers' own, never in their settings
            code = dispatch.run(values, SETTINGS_ENV, workers, host, port, fit_memory=not chosen)
            if code:
                raise typer.Exit(code)
            return
        app = build_app(settings, store_password=graph_password)
        one_math_thread_from_now()
    except ImportError as exc:
        raise _fail(str(exc)) from None
    served = app.state.served
    logging.getLogger("arborgraph.service").info(
        "serving %s (%s) on http://%s:%d; opened in %.1f s, checked with a query per route in %.1f s",
        index, served.generation, host, port, served.open_seconds, served.check_seconds,
    )
    uvicorn.run(app, **common)


MAX_DEFAULT_WORKERS = 4


def default_workers(rebuilds: bool) -> int:
    """Worker processes when ``--workers`` is not given: one per core this process may
    use, at most :data:`MAX_DEFAULT_WORKERS` (each holds the index in memory; the
    dispatcher starts past the first only as many as the free memory holds), so that
    questions use every core (one process's Python runs on one core at a time); one when
    the server runs rebuilds (``--docs``), which one process must own."""
    from arborgraph.core.processes import available_cores

    return 1 if rebuilds else max(1, min(MAX_DEFAULT_WORKERS, available_cores()))


def _check_port_free(host: str, port: int) -> None:
    """Fail in one line, before anything loads or says "serving", when the address is taken."""
    import socket

    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise _fail(f"port {port} on {host} is already in use (another server?): pick another with --port") from None
            raise _fail(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def mcp(
    index: Annotated[Path, typer.Option("--index", "-i", help="index directory")],
    as_principal: Annotated[Optional[str], typer.Option("--as", help="principal every call is made as (default: anonymous)")] = None,
    poll_seconds: Annotated[float, typer.Option(min=0.1, help="how often to look for a new generation")] = 1.0,
    timeout: Annotated[float, typer.Option(min=0.1, help="seconds a tool call may take")] = 30.0,
    concurrency: Annotated[int, typer.Option(min=1, help="tool calls worked on at once")] = 4,
    store: Annotated[Optional[str], typer.Option("--store", help="find each search's candidates in the bolt:// Neo4j the index was exported to with --search")] = None,
    graph_user: Annotated[Optional[str], typer.Option("--graph-user", help="user on the --store server")] = None,
    graph_password: Annotated[Optional[str], typer.Option("--graph-password", envvar="NEO4J_PASSWORD", help="password on the --store server")] = None,
    graph_database: Annotated[Optional[str], typer.Option("--graph-database", help="database on the --store server")] = None,
) -> None:
    """Speak the Model Context Protocol on stdin/stdout (for agent clients)."""
    try:
        import anyio

        from arborgraph.service.limits import WorkerThreads
        from arborgraph.service.mcp_server import build_mcp, fixed_principal
    except ImportError:
        raise _fail(SERVE_EXTRA_HINT) from None
    from arborgraph.service.keys import check_principal

    if as_principal is not None:
        check_principal(as_principal)
    _service_logging()
    from arborgraph.core.math_threads import one_math_thread_from_now

    from arborgraph.service.limits import ServeSettings

    on_store = None
    if store is not None:
        on_store = _store(ServeSettings(index, store_uri=store, store_user=graph_user, store_database=graph_database), graph_password)
    served = _served(index, poll_seconds, store=on_store)
    one_math_thread_from_now()
    server = build_mcp(served, fixed_principal(as_principal), threads=WorkerThreads(concurrency, timeout, narrow=served.preparing))
    served.start()
    try:
        anyio.run(server.run_stdio_async)
    except KeyboardInterrupt:
        pass
    finally:
        served.stop()
        if on_store is not None:
            on_store.driver.close()


@keys_app.command("add")
def keys_add(
    keys: Annotated[Path, typer.Option("--keys", help="keys file (created if missing)")],
    principal: Annotated[str, typer.Option("--principal", help="who the key acts as (a name in documents' acl)")],
    write: Annotated[bool, typer.Option("--write", help="the key may also upload and delete documents and rebuild (serve --docs)")] = False,
) -> None:
    """Create a random key for PRINCIPAL; prints the key alone on stdout (shown once)."""
    from arborgraph.service.keys import KeyStore

    key, record = KeyStore(keys).add(principal, write=write)
    rights = "read and write" if record.write else "read"
    print(f"added {record.id} ({rights}) for principal {record.principal!r} to {keys}", file=sys.stderr)
    print(key)


@keys_app.command("list")
def keys_list(
    keys: Annotated[Path, typer.Option("--keys", help="keys file")],
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """The keys in the file: id, principal, creation date, read or write, revoked (never the keys)."""
    from arborgraph.service.keys import KeyStore

    records = KeyStore(keys).records()
    if json_out:
        print(json.dumps([{k: v for k, v in asdict(r).items() if k != "sha256"} for r in records], indent=2))
        return
    for r in records:
        print(f"{r.id}\t{r.principal}\t{r.created}\t{'write' if r.write else 'read'}\t{'revoked' if r.revoked else 'active'}")


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="the key's id (keys list shows it)")],
    keys: Annotated[Path, typer.Option("--keys", help="keys file")],
) -> None:
    """Revoke a key by id: a running server refuses it from its next request."""
    from arborgraph.service.keys import KeyStore

    record = KeyStore(keys).revoke(key_id)
    print(f"revoked {record.id} ({record.principal})", file=sys.stderr)


def register(app: typer.Typer) -> None:
    """Add ``serve``, ``keys`` and ``mcp`` to the ``arborgraph`` command."""
    app.command("serve")(serve)
    app.command("mcp")(mcp)
    app.add_typer(keys_app, name="keys")
