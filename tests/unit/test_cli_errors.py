"""The CLI reports every command's errors in one place: the command group."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from arborgraph.cli import _Commands, app
from arborgraph.core.errors import IndexNotFound, LLMError, MalformedReply, QueryError
from arborgraph.service.keys import KeyStoreError


def commands_raising(error: BaseException) -> typer.Typer:
    """A command group like ``arborgraph``'s whose ``build``, ``query`` and ``keys add``
    commands raise ``error``."""
    group = typer.Typer(cls=_Commands, pretty_exceptions_enable=False)
    nested = typer.Typer()

    def fails() -> None:
        raise error

    group.command("build")(fails)
    group.command("query")(fails)
    nested.command("add")(fails)
    group.add_typer(nested, name="keys")
    return group


@pytest.mark.parametrize("command", [["build"], ["query"], ["keys", "add"]])
@pytest.mark.parametrize("error", [QueryError("unknown route 'x'"), IndexNotFound("idx: no such directory"), KeyStoreError("no key")])
def test_a_user_error_is_one_line_and_exit_2(command: list[str], error: Exception) -> None:
    result = CliRunner().invoke(commands_raising(error), command)
    assert result.exit_code == 2
    assert result.stderr == f"error: {error}\n"
    assert result.stdout == ""


def test_a_failed_model_call_is_exit_1_and_a_build_says_it_can_resume() -> None:
    failure = LLMError("chunk c1: endpoint refused")
    built = CliRunner().invoke(commands_raising(failure), ["build"])
    assert built.exit_code == 1
    assert built.stderr == (
        "error: LLM call failed, build stopped (the previous index is unchanged; "
        "re-run to resume from the cache): chunk c1: endpoint refused\n"
    )
    asked = CliRunner().invoke(commands_raising(failure), ["query"])
    assert (asked.exit_code, asked.stderr) == (1, "error: LLM call failed: chunk c1: endpoint refused\n")


def test_another_external_failure_is_exit_1() -> None:
    result = CliRunner().invoke(commands_raising(MalformedReply("not JSON")), ["query"])
    assert (result.exit_code, result.stderr) == (1, "error: not JSON\n")


def test_an_interrupted_build_says_the_index_is_unchanged() -> None:
    result = CliRunner().invoke(commands_raising(KeyboardInterrupt()), ["build"])
    assert (result.exit_code, result.stderr) == (130, "error: interrupted; the previous index (if any) is unchanged\n")


def test_a_bug_keeps_its_traceback() -> None:
    result = CliRunner().invoke(commands_raising(ZeroDivisionError("bug")), ["query"])
    assert isinstance(result.exception, ZeroDivisionError)


def test_the_arborgraph_app_and_its_service_commands_use_the_group(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["keys", "revoke", "nope", "--keys", str(tmp_path / "keys.json")])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: no key with id 'nope'") and result.stderr.count("\n") == 1
