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


def native_isa() -> set[str]:
    """The instruction-set features numpy found on this CPU ("AVX512F", "FMA3", ...): which
    older CPU an emulated run should pretend to be."""
    from numpy._core._multiarray_umath import __cpu_features__ as features

    return {name for name, present in features.items() if present}
