"""Whether a question can be asked at all, checked before anything is loaded."""

from __future__ import annotations


# the longest question anyone may ask, everywhere: the library, the CLI (and its
# batches), the HTTP API and MCP
MAX_QUESTION_CHARS = 4000


def question_problem(question: object, max_chars: int = MAX_QUESTION_CHARS) -> str | None:
    """Why ``question`` cannot be asked (not text, empty, longer than ``max_chars``, not
    valid Unicode), or None.

    Checked by :meth:`KnowledgeBase.query`, by the CLI (every line of a batch before
    the first answer), the HTTP API and the MCP tools: one limit everywhere.
    """
    if not isinstance(question, str):
        return "the question must be a string"
    if not question.strip():
        return "the question is empty"
    if len(question) > max_chars:
        return f"the question is {len(question)} characters long; the limit is {max_chars}"
    try:
        question.encode("utf-8")
    except UnicodeEncodeError:
        # a lone surrogate: from a JSON "\udc80" escape or undecodable bytes on the command line
        return "the question is not valid Unicode (it holds a lone surrogate or bytes that are not UTF-8)"
    return None
