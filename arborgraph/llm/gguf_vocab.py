"""The special tokens a GGUF model file's vocabulary declares.

llama.cpp reads a token its vocabulary marks control, user-defined or unknown as that
one token wherever its text appears in a prompt, so these are the texts a prompt for
the local model must not carry as they are (:mod:`arborgraph.llm.control_tokens`).
The runtime exposes no vocabulary, so this reads the file's metadata itself: the
GGUF header (format versions 2 and 3, little-endian), up to the two arrays
``tokenizer.ggml.tokens`` and ``tokenizer.ggml.token_type``, never the weights.
"""

from __future__ import annotations

import functools
import struct
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["GGUFError", "special_tokens"]

TOKENS = "tokenizer.ggml.tokens"
TOKEN_TYPES = "tokenizer.ggml.token_type"
# llama.cpp's token types (llama_token_type): these three are matched as whole tokens
UNKNOWN, CONTROL, USER_DEFINED = 2, 3, 4
_SPECIAL = {UNKNOWN, CONTROL, USER_DEFINED}

_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9
_MAX_STRING = 1 << 24  # a key or token longer than this is a damaged file, not a vocabulary
_MAX_ITEMS = 1 << 26


class GGUFError(ValueError):
    """The file is not a GGUF file this reader understands."""


@functools.lru_cache(maxsize=8)
def special_tokens(path: Path) -> frozenset[str]:
    """The texts of the tokens ``path``'s vocabulary declares control, user-defined or
    unknown. Raises :class:`GGUFError` for a file that is not GGUF (v2/v3) or has no
    vocabulary."""
    with path.open("rb") as f:
        if f.read(4) != b"GGUF":
            raise GGUFError(f"{path.name} is not a GGUF file")
        (version,) = _read(f, "I")
        if version not in (2, 3):
            raise GGUFError(f"{path.name}: GGUF version {version} is not read (2 and 3 are)")
        _tensors, entries = _read(f, "QQ")
        found: dict[str, Any] = {}
        for _ in range(entries):
            key = _string(f)
            (kind,) = _read(f, "I")
            if key in (TOKENS, TOKEN_TYPES):
                found[key] = _value(f, kind)
                if len(found) == 2:
                    break
            else:
                _skip(f, kind)
    if len(found) != 2 or len(found[TOKENS]) != len(found[TOKEN_TYPES]):
        raise GGUFError(f"{path.name} declares no vocabulary with token types")
    return frozenset(t for t, kind in zip(found[TOKENS], found[TOKEN_TYPES]) if kind in _SPECIAL)


def _read(f: BinaryIO, fmt: str) -> tuple[Any, ...]:
    size = struct.calcsize("<" + fmt)
    data = f.read(size)
    if len(data) != size:
        raise GGUFError("the GGUF header ends early")
    return struct.unpack("<" + fmt, data)


def _string(f: BinaryIO) -> str:
    (length,) = _read(f, "Q")
    if length > _MAX_STRING:
        raise GGUFError(f"a GGUF string of {length} bytes")
    data = f.read(length)
    if len(data) != length:
        raise GGUFError("the GGUF header ends early")
    return data.decode("utf-8", errors="replace")


def _value(f: BinaryIO, kind: int) -> Any:
    if kind == _STRING:
        return _string(f)
    if kind == _ARRAY:
        item_kind, count = _read(f, "IQ")
        if count > _MAX_ITEMS:
            raise GGUFError(f"a GGUF array of {count} items")
        if item_kind in _SCALARS:
            return list(_read(f, f"{count}{_SCALARS[item_kind]}"))
        return [_value(f, item_kind) for _ in range(count)]
    if kind in _SCALARS:
        return _read(f, _SCALARS[kind])[0]
    raise GGUFError(f"unknown GGUF value type {kind}")


def _skip(f: BinaryIO, kind: int) -> None:
    if kind == _ARRAY:
        item_kind, count = _read(f, "IQ")
        if count > _MAX_ITEMS:
            raise GGUFError(f"a GGUF array of {count} items")
        if item_kind in _SCALARS:
            f.seek(count * struct.calcsize("<" + _SCALARS[item_kind]), 1)
        else:
            for _ in range(count):
                _skip(f, item_kind)
    elif kind == _STRING:
        (length,) = _read(f, "Q")
        f.seek(length, 1)
    elif kind in _SCALARS:
        f.seek(struct.calcsize("<" + _SCALARS[kind]), 1)
    else:
        raise GGUFError(f"unknown GGUF value type {kind}")
