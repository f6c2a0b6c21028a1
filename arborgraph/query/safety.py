"""Marking retrieved text that looks like instructions aimed at a model.

Retrieved passages are data. This module does not remove anything: it flags passages
whose wording addresses an AI model or tries to override its instructions, so that
callers (and the answer prompt) can treat them with suspicion.

Text is normalised before it is matched, so that disguises of the same words match
too: compatibility forms folded (NFKC: full-width letters, ligatures), invisible
characters removed (zero-width spaces and joiners, soft hyphens, bidi controls),
letters of other scripts that look like Latin ones folded to them (Cyrillic ``і``,
Greek ``ο``), accents dropped, case folded and runs of white space made one space.
The phrasings matched are listed in :data:`_PATTERNS` (English, French, German,
Spanish, Italian and Portuguese overrides; role, prompt and chat-template markers).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from arborgraph.core.results import Context

INJECTION_FLAG = "possible_injection"

# Letters of Cyrillic, Greek and other scripts that render like Latin ones (the usual
# homoglyphs of Unicode's confusables list), folded to the Latin letter.
_CONFUSABLES = str.maketrans({
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
    "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "ԁ": "d",
    "һ": "h", "ӏ": "l", "ԛ": "q", "ԝ": "w", "ɡ": "g", "ո": "n", "ս": "u",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C",
    "Т": "T", "У": "Y", "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J",
    # Greek
    "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
    "χ": "x", "η": "n", "ϲ": "c", "ϳ": "j", "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M",
    "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # Latin look-alikes NFKC leaves alone
    "ı": "i", "ȷ": "j", "ℓ": "l",
})


# format characters that split words invisibly (zero-width space, joiners, soft
# hyphen, word joiner, bidi controls, BOM, Mongolian vowel separator) and the
# variation selectors
_INVISIBLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
                        "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]")
_COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
_SPACES = re.compile(r"[^\S\n]+")


def normalise(text: str) -> str:
    """``text`` as the patterns see it: NFKC, invisible characters removed, homoglyphs
    folded to Latin, accents dropped, case folded, runs of spaces made one (line
    breaks kept: turn markers start lines)."""
    if not text.isascii():  # ASCII text has nothing to fold but its case
        text = unicodedata.normalize("NFKC", text)
        text = _INVISIBLE.sub("", text).translate(_CONFUSABLES)
        text = _COMBINING.sub("", unicodedata.normalize("NFKD", text))
    return _SPACES.sub(" ", text.casefold())


_PRIOR = r"(previous|prior|above|earlier|preceding|foregoing|all|any|your)"
# not "commands", "constraints" or "rules" alone: manuals override prior options and
# bypass constraints
_ORDERS = r"(instructions?|prompts?|directions|directives|guidelines|guidance|programming|system message)"

_PATTERNS = [
    # English overrides
    rf"\b(ignore|disregard|forget|override|overrule|bypass|discard)\b.{{0,40}}\b{_PRIOR}\b.{{0,40}}\b{_ORDERS}\b",
    # ... the orders named first: "ignore the instructions above", "disregard the prompt given before"
    rf"\b(ignore|disregard|forget|override|overrule|discard)\b.{{0,20}}\b{_ORDERS}\b.{{0,30}}"
    r"\b(above|before|previously|earlier|so far|until now|up to now)\b",
    r"\b(ignore|disregard|forget|discard)\s+(all\s+|everything\s+|anything\s+)?(of\s+)?(the\s+|that\s+|this\s+|what\s+(is|was)\s+)?"
    r"(above|before|previous(ly)?|prior|preceding|earlier|foregoing)\b",
    r"\b(forget|ignore|disregard)\s+(everything|all|anything|whatever)\b.{0,40}\b(told|said|given|instructed|taught|"
    r"above|before|previously|so far|until now|up to now)\b",
    r"\b(you are now|from now on,? you|pretend to be|pretend you are|roleplay as|role-play as)\b",
    r"\bact as\b.{0,30}\b(ai|assistant|model|chatbot|dan|jailbroken|unrestricted|unfiltered|if you (are|were|have) no)\b",
    r"\b(system prompt|developer message|developer mode|jailbreak|dan mode)\b",
    r"\b(do not|don't|never) (tell|inform|reveal to|let) the user\b",
    r"\bnew (instructions?|rules|task|orders)\s*:",
    r"\b(assistant|ai|language model|llm|chatbot)\b.{0,30}\b(must|should|shall|will)\b.{0,30}"
    r"\b(say|answer|respond|reply|output|print|execute|run|send|call)\b",
    # markup and chat templates that open a new turn or role
    r"<\s*/?\s*(system|assistant|user|instructions?|im_start|im_end)\s*>",
    r"<\|\s*(im_start|im_end|im_sep|system|user|assistant|endoftext|eot_id|begin_of_text|start_header_id|end_header_id)\s*\|>",
    r"\[/?inst\]|<<\s*/?sys\s*>>|<\s*(start|end)_of_turn\s*>",
    # a transcript of turns: "Assistant: ... Human:" (or User/AI), one after the other
    r"(^|[.!?] )\s*(assistant|ai|chatbot)\s*:.{0,500}?(\n|[.!?] )\s*(human|user)\s*:",
    r"(^|[.!?] )\s*(human|user)\s*:.{0,500}?(\n|[.!?] )\s*(assistant|ai|chatbot)\s*:",
    # French
    r"\b(ignore[rz]?|oublie[rz]?|ne tiens? pas compte)\b.{0,40}\b(instructions?|consignes?|regles|directives)\b.{0,40}"
    r"\b(precedentes?|anterieures?|ci-dessus|d'avant)\b",
    r"\b(ignore[rz]?|oublie[rz]?)\s+(toutes?\s+)?(les\s+|vos\s+|tes\s+)?(instructions?|consignes?)\s+(precedentes?|anterieures?)\b",
    r"\boublie[rz]? tout ce qu(e|'on|'il)\b",
    # German
    r"\b(ignoriere|ignorier|ignorieren sie|vergiss|vergessen sie|missachte)\b.{0,40}\b(vorherigen?|bisherigen?|obigen?|"
    r"alle|fruheren?)\b.{0,40}\b(anweisungen|anweisung|instruktionen|befehle|regeln|vorgaben)\b",
    r"\b(vergiss|vergessen sie) alles\b",
    # Spanish
    r"\b(ignora|ignore|ignoren|olvida|olvide|olviden|omite)\b.{0,40}\b(instrucciones|indicaciones|reglas|ordenes)\b.{0,40}"
    r"\b(anteriores|previas|de arriba|precedentes)\b",
    r"\b(olvida|olvide) todo lo (que|anterior)\b",
    # Italian
    r"\b(ignora|dimentica)\b.{0,40}\b(istruzioni|indicazioni|regole)\b.{0,40}\b(precedenti|sopra)\b",
    # Chinese: ignore / disregard / forget ... previous / above / all ... instructions / prompts / rules
    r"(忽略|无视|忽视|不要理会|不要理睬|忘记|忘掉|無視|忽視)[^。！？\n]{0,12}(之前|以前|以上|上述|上面|先前|前面|此前|所有|全部|一切)"
    r"[^。！？\n]{0,12}(指令|指示|说明|說明|提示|规则|規則|要求|设定|設定)",
    # Portuguese
    r"\b(ignore|ignora|esqueca|esquece)\b.{0,40}\b(instrucoes|regras|orientacoes)\b.{0,40}\b(anteriores|acima|previas)\b",
]
_INJECTION_RE = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.DOTALL | re.MULTILINE)


# Every pattern needs one of these (normalised) strings; looking for them first (at
# C speed) keeps the regex, whose gaps make it slow, off almost all passages: it runs
# on every result.
_TRIGGERS = (
    "ignor", "disregard", "forget", "overrid", "overrul", "bypass", "discard", "you are now",
    "from now on", "pretend", "roleplay", "role-play", "act as", "system prompt", "developer m",
    "jailbreak", "dan mode", "the user", "new instruction", "new rule", "new task", "new order",
    "system>", "assistant>", "user>", "instruction>", "instructions>", "<|", "im_start", "im_end",
    "[inst]", "[/inst]", "sys>>", "_of_turn", "assistant", "chatbot", "language model", "llm",
    " ai ", " ai:", "\nai ", "\nai:", "human", "user:", "user :",
    "oubli", "tiens pas compte", "vergiss", "missachte", "olvid", "omite", "dimentica", "esquec",
    "忽略", "无视", "忽视", "不要理", "忘记", "忘掉", "無視", "忽視",
)


# the same passages are checked for every question that returns them
CHECKS_KEPT = 4096


@lru_cache(maxsize=CHECKS_KEPT)
def looks_like_injection(text: str) -> bool:
    """True when ``text`` reads like an instruction to an AI model rather than content."""
    folded = " " + normalise(text)
    if not any(trigger in folded for trigger in _TRIGGERS):
        return False
    return _INJECTION_RE.search(folded) is not None


def context_looks_injected(ctx: "Context") -> bool:
    """True when a retrieved context's headings or text read like injected instructions.

    Headings are document text too, and reach the answer prompt beside the passage.
    """
    return looks_like_injection("\n".join([*ctx.heading_path, ctx.text]))
