"""The Bolt connection: the driver (imported on first use), connecting and verifying.

The ``neo4j`` driver is an optional dependency (the ``neo4j`` extra): nothing here
imports it until a connection is asked for.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from arborgraph.core.credentials import redact_credentials
from arborgraph.core.errors import ExportError, install_hint

if TYPE_CHECKING:
    from neo4j import Driver

CONNECT_TIMEOUT = 15.0
BOLT_SCHEMES = ("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")


def neo4j_driver() -> Any:
    """The ``neo4j`` driver package, or :class:`ExportError` saying how to install it."""
    try:
        import neo4j
    except ImportError:
        raise ExportError(f"the Neo4j export needs the neo4j driver: {install_hint('neo4j')}") from None
    return neo4j


def one_line(exc: BaseException) -> str:
    """A driver error's message on one line, at most 300 characters."""
    text = str(getattr(exc, "message", None) or exc)
    return " ".join(text.split())[:300]


def connect(uri: str, user: str | None = None, password: str | None = None, *, timeout: float = CONNECT_TIMEOUT) -> "Driver":
    """A driver for ``uri`` whose connectivity is verified (see :func:`verify`).

    ``timeout`` bounds opening a connection, handshake included: after a client closes
    N connections, FalkorDB's Bolt layer leaves the handshakes of the next N new
    connections unanswered, and the driver would wait 60 s on each before retrying.

    Its errors never carry a password: the URI's user information and ``password``
    are masked (the driver's own message repeats the URI it was given)."""
    try:
        return _connect(uri, user, password, timeout)
    except ExportError as exc:
        raise ExportError(redact_credentials(str(exc), [password])) from None


def _connect(uri: str, user: str | None, password: str | None, timeout: float) -> "Driver":
    neo4j = neo4j_driver()
    auth = (user or "neo4j", password) if password is not None else None
    shown = redact_credentials(uri)
    if not uri.startswith(BOLT_SCHEMES):
        raise ExportError(f"bad Bolt URI {shown!r}: expected bolt:// or neo4j:// (with +s / +ssc for TLS)")
    try:
        # no server notifications: our own queries' hints ("the property `ag_hash` does not
        # exist" on a first export) would reach a notebook as multi-line driver warnings
        driver = neo4j.GraphDatabase.driver(
            uri, auth=auth, connection_timeout=timeout, connection_acquisition_timeout=timeout,
            notifications_min_severity="OFF",
        )
    except (ValueError, neo4j.exceptions.ConfigurationError) as exc:
        raise ExportError(f"bad Bolt URI {shown!r}: {exc}") from None
    try:
        verify(driver)
    except BaseException:
        driver.close()
        raise
    return driver


def verify(driver: "Driver", attempts: int = 3) -> None:
    """Check the server answers, retrying a connection that failed or timed out (see
    :func:`connect`); raises :class:`ExportError` with one line otherwise."""
    neo4j = neo4j_driver()
    retry = (neo4j.exceptions.ServiceUnavailable, neo4j.exceptions.ConnectionAcquisitionTimeoutError)
    for attempt in range(attempts):
        try:
            driver.verify_connectivity()
            return
        except neo4j.exceptions.AuthError as exc:
            raise ExportError(f"authentication failed: {one_line(exc)}") from None
        except retry as exc:
            if attempt == attempts - 1:
                raise ExportError(f"cannot reach the Bolt server: {one_line(exc)}") from None
            time.sleep(0.05 * (attempt + 1))
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
            raise ExportError(f"the Bolt server refused the connection: {one_line(exc)}") from None


@contextmanager
def export_errors() -> Iterator[None]:
    """The driver's errors while exporting, as :class:`ExportError` with one line."""
    neo4j = neo4j_driver()
    try:
        yield
    except neo4j.exceptions.Neo4jError as exc:
        raise ExportError(f"the server rejected a statement ({exc.code}): {one_line(exc)}") from None
    except neo4j.exceptions.DriverError as exc:
        raise ExportError(f"lost the Bolt server: {one_line(exc)}") from None
