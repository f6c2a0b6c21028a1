"""One worker process of ``serve --workers N`` (started by :mod:`.dispatch`, not by hand).

It opens the index, runs uvicorn with no listening socket of its own, and serves the
connections its parent passes over the control socket, telling the parent when it is
ready and each time one of its connections closes.

    python -m arborgraph.service.worker CONTROL_FD    (settings in ARBORGRAPH_SERVE_SETTINGS)
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

from arborgraph.service.dispatch import CLOSED, METRICS_ENV, READY


def _notify(control: socket.socket, message: bytes) -> None:
    try:
        control.send(message)
    except OSError:  # the parent is gone: the control socket's reader ends this process
        pass


def _counted(protocol_class: type[Any], control: socket.socket) -> type[Any]:
    """uvicorn's HTTP protocol, telling the parent when a connection closes."""

    class CountedProtocol(protocol_class):  # type: ignore[misc, valid-type]
        def connection_lost(self, exc: Exception | None) -> None:
            try:
                super().connection_lost(exc)
            finally:
                _notify(control, CLOSED)

    return CountedProtocol


async def _serve(server: Any, control: socket.socket) -> None:
    loop = asyncio.get_running_loop()
    serving = asyncio.create_task(server.serve(sockets=[]))  # no socket: connections come from the parent
    while not server.started:
        if serving.done():
            await serving
            return
        await asyncio.sleep(0.02)
    protocol_class = _counted(server.config.http_protocol_class, control)

    def protocol() -> Any:
        return protocol_class(config=server.config, server_state=server.server_state, app_state=server.lifespan.state)

    def receive() -> None:
        while True:
            try:
                message, fds, _, _ = socket.recv_fds(control, 16, 8)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                message, fds = b"", []
            if not message and not fds:  # the parent has gone: stop as on SIGTERM
                loop.remove_reader(control.fileno())
                server.should_exit = True
                return
            for fd in fds:
                connection = socket.socket(fileno=fd)
                connection.setblocking(False)
                loop.create_task(loop.connect_accepted_socket(protocol, connection))

    control.setblocking(False)
    loop.add_reader(control.fileno(), receive)
    _notify(control, READY)
    try:
        await serving
    finally:
        loop.remove_reader(control.fileno())


def main(argv: list[str]) -> int:
    import typer
    import uvicorn

    from arborgraph.core.math_threads import one_math_thread_from_now
    from arborgraph.service.cli import (
        _UVICORN_LOGGING, SETTINGS_ENV, STORE_PASSWORD_ENV, _service_logging, _settings_from, build_app,
    )

    control = socket.socket(fileno=int(argv[1]))
    _service_logging()
    try:
        settings = _settings_from(json.loads(os.environ[SETTINGS_ENV]))
        if os.environ.get(METRICS_ENV):
            settings = dataclasses.replace(settings, metrics_dir=Path(os.environ[METRICS_ENV]))
        app = build_app(settings, store_password=os.environ.get(STORE_PASSWORD_ENV))
    except typer.Exit as exc:  # the error is already printed
        return exc.exit_code
    one_math_thread_from_now()
    config = uvicorn.Config(
        app, log_level="info", log_config=_UVICORN_LOGGING, timeout_graceful_shutdown=5, access_log=False,
    )
    asyncio.run(_serve(uvicorn.Server(config), control))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
