"""Typed relations from the words between two entity mentions in one sentence.

"A is controlled by B" -> B configures A; "A requires B" -> A requires B. Anything not
matched by a pattern is a co-occurrence, weighted by how close the mentions are.
"""

from __future__ import annotations

import re

# (pattern on the lowercased text between the two mentions, relation type, reversed)
# reversed=True means the second mention is the relation's source. More specific
# patterns come first; the first match wins.
_PATTERNS: list[tuple[re.Pattern[str], str, bool]] = [
    (re.compile(p), t, r)
    for p, t, r in [
        (r"\b(?:is|are|was|were)\s+(?:defined|declared|documented|described|specified)\s+in\b", "defined_in", False),
        (r"\b(?:is|are|can be)\s+(?:controlled|configured|set|determined|enabled|disabled|changed|adjusted|overridden|selected|tuned|activated|turned on|turned off)\s+(?:by|with|using|via|through)\b", "configures", True),
        (r"\b(?:is|are|can be)\s+(?:limited|restricted|capped|bounded|blocked|constrained)\s+(?:by|to)\b", "limits", True),
        (r"\b(?:is|are)\s+required\s+(?:by|for)\b", "requires", True),
        (r"\b(?:is|are)\s+(?:used|called|invoked)\s+by\b", "uses", True),
        (r"\b(?:is|are)\s+(?:a\s+)?(?:part|member|component|subset|field|column)s?\s+of\b|\bbelongs?\s+to\b|\b(?:is|are)\s+(?:stored|located|contained|found)\s+in(?:side)?\b", "part_of", False),
        (r"\b(?:contains?|includes?|consists?\s+of|comprises?|is\s+composed\s+of|holds?)\b", "part_of", True),
        (r"^\s*,?\s*(?:such\s+as|like|including|e\.g\.,?)\s*$", "is_a", True),
        (r"^\s*(?:is|are)\s+(?:an?|one\s+of\s+the|a\s+(?:kind|type|form|variant|special\s+case)\s+of|an\s+(?:instance|example)\s+of)\b(?!.*\b(?:that|which|who)\b)", "is_a", False),
        (r"\b(?:requires?|needs?|depends?\s+on|must\s+(?:have|use|be\s+used\s+with)|only\s+works\s+with|relies\s+on)\b", "requires", False),
        (r"\b(?:limits?|restricts?|caps?|bounds?|prevents?|blocks?|(?:sets|is)\s+the\s+(?:maximum|upper\s+limit|limit)\s+(?:size|number|length|value)?\s*(?:of|on|for))\b", "limits", False),
        (r"\b(?:configures?|controls?|sets?|determines?|changes?|enables?|disables?|specif(?:y|ies)|adjusts?|overrides?|selects?|turns?\s+(?:on|off)|activates?|governs?)\b", "configures", False),
        (r"\b(?:uses?|using|employs?|calls?|invokes?|is\s+implemented\s+(?:using|with|by|on\s+top\s+of)|is\s+built\s+on|runs?|via)\b", "uses", False),
        (r"\b(?:see(?:\s+also)?|compare|refer\s+to|cf\.)\b", "see_also", False),
    ]
]

MAX_GAP_CHARS = 80


def relation_between(between: str) -> tuple[str, bool] | None:
    """(type, reversed) for the text between two mentions, or None for co-occurrence."""
    if len(between) > MAX_GAP_CHARS or ";" in between:
        return None
    low = between.lower()
    for pat, rel_type, rev in _PATTERNS:
        if pat.search(low):
            return rel_type, rev
    return None


_SEE_RE = re.compile(r"^\W*(?:see|see\s+also|for\s+more\s+(?:information|details)[^,]*,\s*see)\b", re.IGNORECASE)


def is_see_also_unit(unit: str) -> bool:
    """True for a sentence that points elsewhere ("See also ...", "(See the ...)")."""
    return bool(_SEE_RE.search(unit))
