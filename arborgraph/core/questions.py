"""Whether a question can be asked at all, checked before anything is loaded."""

from __future__ import annotations


def question_problem(question: object) -> str | None:
    """Why ``question`` cannot be asked (empty, not text, not valid Unicode), or None.

    Checked by :meth:`KnowledgeBase.query` and, for every line before the first answer,
    by the CLI's batch mode.
    """
    if not isinstance(question, str):
        return "the question must be a string"
    if not question.strip():
        return "the question is empty"
    try:
        question.encode("utf-8")
    except UnicodeEncodeError:
        # a lone surrogate: from a JSON "\udc80" escape or undecodable bytes on the command line
        return "the question is not valid Unicode (it holds a lone surrogate or bytes that are not UTF-8)"
    return None
