"""Chat templates' control tokens, kept out of the text a model is sent.

A chat model's prompt is its template applied to the messages, tokenised with the
template's markers (``<|im_start|>``, ``<|eot_id|>``, ``[INST]``...) read as control
tokens, and the runtimes that do it (llama.cpp, and most servers behind an
OpenAI-compatible endpoint) read those markers wherever they appear, inside a
message's content too. A passage, question or earlier answer holding ``<|im_end|>``
would then end its turn for real and open one of its choosing. :func:`neutralise`
changes the first character of every such marker to a look-alike no tokenizer reads
as markup (``<`` to ``‹``, ``[`` to ``⁅``): the text stays readable, and its tokens are
those of ordinary text.

The markers are those of the common template families, every ``<|...|>`` and
``<｜...｜>`` form, and the control tokens a model's own vocabulary declares (for
the local model, read from its GGUF file: :mod:`arborgraph.llm.gguf_vocab`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence

__all__ = ["TEMPLATE_TOKENS", "neutralise", "neutralise_messages"]

# The named markers of the common families. Every "<|" and "<｜" opening is broken
# whatever follows it (ChatML <|im_start|> <|im_end|> <|endoftext|>; Llama 3
# <|begin_of_text|> <|start_header_id|> <|eot_id|>; Phi <|user|> <|assistant|>
# <|end|>; DeepSeek <｜User｜>; Command R, Granite...), so those need no entry here.
TEMPLATE_TOKENS: tuple[str, ...] = (
    # Llama 2 and Mistral
    "<s>", "</s>", "<unk>", "[INST]", "[/INST]", "<<SYS>>", "<</SYS>>",
    "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_CALLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CONTENT]", "[THINK]", "[/THINK]",
    "[ARGS]", "[CALL_ID]", "[IMG]", "[IMG_BREAK]", "[IMG_END]",
    # Gemma
    "<bos>", "<eos>", "<pad>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>", "<end_of_image>",
    # reasoning and tool-call markers (Qwen, DeepSeek, Hermes templates)
    "<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
    # GLM
    "[gMASK]", "<sop>", "<eop>",
)

# the look-alikes: none is changed by NFKC, which some tokenizers apply before
# matching their added tokens
_LOOK_ALIKE = {"<": "\u2039", "[": "\u2045"}
_JOINER = "\u2060"  # WORD JOINER: breaks a marker that starts with any other character
_OPENING = r"<(?=[|｜])"
_PASSES = 4  # a break never makes a new marker; the passes only guard odd vocabularies


def neutralise(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with every template marker (and each of ``extra``, a vocabulary's own
    control tokens) broken so that no tokenizer reads it as a control token."""
    pattern = _pattern(frozenset(extra))
    for _ in range(_PASSES):
        broken = pattern.sub(_break, text)
        if broken == text:
            break
        text = broken
    return text


def neutralise_messages(messages: Sequence[dict[str, str]], extra: Iterable[str] = ()) -> list[dict[str, str]]:
    """The chat messages with their contents neutralised (roles are ours, kept)."""
    tokens = frozenset(extra)
    return [
        {**m, "content": neutralise(m["content"], tokens)} if isinstance(m.get("content"), str) else dict(m)
        for m in messages
    ]


def _break(match: re.Match[str]) -> str:
    marker = match.group(0)
    first = marker[0]
    if first in _LOOK_ALIKE:
        return _LOOK_ALIKE[first] + marker[1:]
    return first + _JOINER + marker[1:]


@functools.lru_cache(maxsize=16)
def _pattern(extra: frozenset[str]) -> re.Pattern[str]:
    # a one-character marker cannot be broken without changing the text itself
    named = {t for t in (*TEMPLATE_TOKENS, *extra) if len(t) > 1 and t.strip()}
    # in a fixed order (whichever marker matches at a place, its first character is the
    # one changed), the longer first
    alternatives = [re.escape(t) for t in sorted(named, key=lambda t: (-len(t), t))]
    return re.compile("|".join([_OPENING, *alternatives]))
