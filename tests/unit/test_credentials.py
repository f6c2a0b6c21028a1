"""Credentials never reach a message: :func:`redact_credentials`, and the Bolt
connection's errors on a loopback port where nothing listens."""

from __future__ import annotations

import socket

import pytest

from arborgraph.core.credentials import redact_credentials
from arborgraph.core.errors import ExportError


def test_uri_user_information_loses_its_password() -> None:
    text = "cannot open 'bolt://neo4j:s3cret@db.example:7687' (given URI: bolt://neo4j:s3cret@db.example:7687)."
    assert redact_credentials(text) == (
        "cannot open 'bolt://neo4j:***@db.example:7687' (given URI: bolt://neo4j:***@db.example:7687)."
    )
    # a password with an '@' of its own, a bare token, and URIs without credentials
    assert redact_credentials("neo4j+s://u:p@ss@h:1/db") == "neo4j+s://u:***@h:1/db"
    assert redact_credentials("bolt://T0KEN@h") == "bolt://***@h"
    assert redact_credentials("bolt://h:7687 and mail@example.com") == "bolt://h:7687 and mail@example.com"


def test_known_secrets_are_masked_as_given_and_percent_encoded() -> None:
    text = "auth failed for pa:ss@w0rd (bolt://h?pw=pa%3Ass%40w0rd)"
    assert redact_credentials(text, ["pa:ss@w0rd", None, ""]) == "auth failed for *** (bolt://h?pw=***)"
    # the longest first: a secret inside another leaves nothing of the longer
    assert redact_credentials("abcdef", ["abc", "abcdef"]) == "***"


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("uri", ["bolt://neo4j:Secret-Pw9@127.0.0.1:{port}", "neo4j://neo4j:Secret-Pw9@127.0.0.1:{port}",
                                 "http://neo4j:Secret-Pw9@127.0.0.1:{port}", "bolt://127.0.0.1:{port}"])
def test_connection_errors_never_carry_the_password(uri: str) -> None:
    pytest.importorskip("neo4j")
    from arborgraph.neo4j import connect

    with pytest.raises(ExportError) as caught:
        connect(uri.format(port=_dead_port()), "neo4j", "Secret-Pw9", timeout=1)
    assert "Secret-Pw9" not in str(caught.value) and "Pw9" not in str(caught.value)
