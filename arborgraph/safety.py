"""Marking retrieved text that looks like instructions aimed at a model.

Retrieved passages are data. This module does not remove anything: it flags passages
whose wording addresses an AI model or tries to override its instructions, so that
callers (and the answer prompt) can treat them with suspicion.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from arborgraph.results import Context

INJECTION_FLAG = "possible_injection"


_PATTERNS = [
    r"\b(ignore|disregard|forget|override)\b.{0,40}\b(previous|prior|above|earlier|all|any|your)\b.{0,40}\b(instructions?|prompts?|rules|directions|guidelines)\b",
    r"\b(you are now|from now on,? you|act as|pretend to be|roleplay as)\b",
    r"\b(system prompt|developer message|jailbreak)\b",
    r"\b(do not|don't) (tell|inform|reveal to) the user\b",
    r"\bnew instructions?\s*:",
    r"<\s*/?\s*(system|assistant|instructions?)\s*>",
    r"\b(assistant|ai|language model|llm|chatbot)\b.{0,30}\b(must|should|shall|will)\b.{0,30}\b(say|answer|respond|reply|output|print|execute|run|send|call)\b",
    r"\b(execute|run) (the following|this) (command|code|shell)\b",
]
_INJECTION_RE = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.IGNORECASE | re.DOTALL)


# Every pattern needs one of these words; checking them first keeps the regex (with
# its bounded gaps) off the ~all passages that cannot match — it runs on every result.
_TRIGGERS = (
    "ignore", "disregard", "forget", "override", "you are now", "from now on", "act as",
    "pretend", "roleplay", "system prompt", "developer message", "jailbreak", "the user",
    "instruction", "<", "assistant", " ai ", "language model", "llm", "chatbot", "execute", "run the",
)


def looks_like_injection(text: str) -> bool:
    """True when ``text`` reads like an instruction to an AI model rather than content."""
    lowered = text.lower()
    if not any(trigger in lowered for trigger in _TRIGGERS):
        return False
    return _INJECTION_RE.search(text) is not None


def context_looks_injected(ctx: "Context") -> bool:
    """True when a retrieved context's headings or text read like injected instructions.

    Headings are document text too, and reach the answer prompt beside the passage.
    """
    return looks_like_injection("\n".join([*ctx.heading_path, ctx.text]))
