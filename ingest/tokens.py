"""Counting word-piece tokens the way the embedding model (all-MiniLM-L6-v2) does."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

logger = logging.getLogger(__name__)

_WORDISH = re.compile(r"[^\W\d_]+|\d+|[^\w\s]|_", re.UNICODE)
# Average characters per word piece in long words, fitted on English technical
# prose; short words are usually one piece.
_CHARS_PER_PIECE = 4
_ONE_PIECE_CHARS = 6


class TokenCounter:
    """A callable ``str -> int`` with a ``name`` telling how it counts.

    ``exact`` is True when counts come from the model's own tokenizer.
    """

    def __init__(
        self, name: str, count: Callable[[str], int], *, exact: bool,
        starts: Callable[[str], list[int]] | None = None,
    ) -> None:
        self.name = name
        self.exact = exact
        self._starts = starts
        self._count = lru_cache(maxsize=65_536)(count)  # chunking recounts the same pieces

    def __call__(self, text: str) -> int:
        return self._count(text)  # type: ignore[no-any-return]

    def token_starts(self, text: str) -> list[int] | None:
        """Start offsets in ``text`` of its tokens, when the counter can tell (else None)."""
        return self._starts(text) if self._starts is not None else None

    def __repr__(self) -> str:
        return f"TokenCounter({self.name!r}, exact={self.exact})"


def default_model_dir() -> Path | None:
    """The folder of the model shipped with Arborgraph, if its ``tokenizer.json`` checks out.

    A missing or altered tokenizer is logged (one line saying which) and gives None.
    """
    from arborgraph.core.model_files import packaged_tokenizer
    from arborgraph.core.errors import ModelFilesError

    try:
        return packaged_tokenizer().parent
    except ModelFilesError as exc:
        logger.warning("%s", exc)
        return None


def load_token_counter(model_dir: Path | None = None) -> TokenCounter:
    """A token counter using the model's ``tokenizer.json``, without special tokens.

    With ``model_dir=None`` the tokenizer of the shipped all-MiniLM-L6-v2 model is used;
    if it (or the ``tokenizers`` library) is missing, the counter
    falls back to ``estimate_wordpiece_tokens`` and logs a warning. An explicit
    ``model_dir`` without a tokenizer raises ``FileNotFoundError``.
    """
    explicit = model_dir is not None
    folder = Path(model_dir) if model_dir is not None else default_model_dir()
    if folder is None or not (folder / "tokenizer.json").is_file():
        if explicit:
            raise FileNotFoundError(f"no tokenizer.json in {folder}")
        logger.warning("all-MiniLM-L6-v2 tokenizer not found; token counts are estimates")
        return TokenCounter("estimate_wordpiece_tokens", estimate_wordpiece_tokens, exact=False)
    try:
        from tokenizers import Tokenizer
    except ImportError:
        if explicit:
            raise
        logger.warning("the tokenizers library is not installed; token counts are estimates")
        return TokenCounter("estimate_wordpiece_tokens", estimate_wordpiece_tokens, exact=False)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    # The shipped tokenizer.json truncates and pads to 128: counts would be capped.
    tokenizer.no_truncation()
    tokenizer.no_padding()

    def count_wordpiece_tokens(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    def wordpiece_starts(text: str) -> list[int]:
        return [start for start, _ in tokenizer.encode(text, add_special_tokens=False).offsets]

    return TokenCounter(
        f"wordpiece tokenizer ({folder})", count_wordpiece_tokens, exact=True, starts=wordpiece_starts
    )


def estimate_wordpiece_tokens(text: str) -> int:
    """Estimate the BERT word-piece count of ``text`` without a tokenizer.

    Punctuation marks count one each; a word counts one piece up to a few
    characters, then one more per few characters (rare words split into pieces).
    """
    total = 0
    for match in _WORDISH.finditer(text):
        n = match.end() - match.start()
        total += 1 if n <= _ONE_PIECE_CHARS else 1 + -(-(n - _ONE_PIECE_CHARS) // _CHARS_PER_PIECE)
    return total
