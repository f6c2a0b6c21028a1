"""What a test needs from the machine: missing, it skips locally and fails on CI (where
scripts/test installs everything, so a skip there would hide an untested part)."""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest


def unavailable(missing: str, purpose: str) -> NoReturn:
    """Skip, saying what is ``missing``; on CI fail instead: CI must ``purpose``."""
    if os.environ.get("CI"):
        pytest.fail(f"{missing}: CI must {purpose}")
    pytest.skip(missing)


def program(name: str, missing: str, purpose: str) -> str:
    """The path of the program ``name``, else :func:`unavailable`."""
    found = shutil.which(name)
    if found is None:
        unavailable(missing, purpose)
    return found
