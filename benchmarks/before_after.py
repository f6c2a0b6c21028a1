"""Checkouts of two commits side by side, for the before/after benchmarks.

``before`` defaults to where this branch left ``main`` (their merge base), ``after`` to
HEAD; each is a detached ``git worktree`` in a scratch directory, removed afterwards.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout.strip()


def resolve(ref: str) -> str:
    """The full commit hash of ``ref``."""
    return git("rev-parse", "--verify", f"{ref}^{{commit}}")


def default_before() -> str:
    """The commit this branch started from: its merge base with main (HEAD's parent if that is HEAD)."""
    base = git("merge-base", "HEAD", "main")
    return resolve(f"{base}^") if base == resolve("HEAD") else base


@contextlib.contextmanager
def checkout(commit: str, target: Path) -> Iterator[Path]:
    """A detached worktree of ``commit`` at ``target`` for the duration of the block."""
    git("worktree", "add", "--detach", str(target), commit)
    try:
        yield target
    finally:
        git("worktree", "remove", "--force", str(target))
