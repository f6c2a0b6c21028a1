"""Ask a chat model for JSON that validates against a pydantic model.

Malformed replies are first repaired (code fences, text around the object, trailing
commas), then retried with the validation error quoted back to the model; after the
last attempt :class:`arborgraph.core.errors.LLMError` is raised. Nothing is dropped
silently.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from arborgraph.core.errors import UnusableReply
from arborgraph.core.protocols import ChatModel
from arborgraph.core.concurrency import naming_item

M = TypeVar("M", bound=BaseModel)

_FENCE_RE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$", re.IGNORECASE)
_TRAILING_COMMA_RE = re.compile(r",\s*([}\]])")


def repair_json(reply: str) -> str:
    """Best-effort cleanup of a reply that should be one JSON object."""
    text = _FENCE_RE.sub("", reply.strip())
    start, end = text.find("{"), text.rfind("}")
    if start >= 0 and end > start:
        text = text[start : end + 1]
    return _TRAILING_COMMA_RE.sub(r"\1", text)


def parse_reply(reply: str, model: type[M]) -> M:
    """Validate ``reply`` as ``model``, repairing it first if plain parsing fails."""
    try:
        return model.model_validate_json(reply)
    except ValidationError:
        pass
    try:
        return model.model_validate(json.loads(repair_json(reply)))
    except json.JSONDecodeError as exc:
        raise ValueError(f"reply is not JSON ({exc.msg} at position {exc.pos})") from None
    except ValidationError as exc:
        raise ValueError(_short_error(exc)) from None


def _short_error(exc: ValidationError) -> str:
    parts = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]]
    return "reply does not match the schema (" + "; ".join(parts) + ")"


def ask_json(
    chat: ChatModel,
    messages: list[dict[str, str]],
    model: type[M],
    *,
    stage: str,
    what: str,
    retries: int = 2,
    check: Callable[[M], str | None] | None = None,
    max_tokens: int | None = None,
    json_schema: dict[str, Any] | None = None,
) -> tuple[M, list[dict[str, str]]]:
    """(validated reply, conversation including the accepted reply).

    ``check`` may reject a schema-valid reply with a message (e.g. an unknown chunk
    id); the message is sent back like a validation error. ``what`` names the item
    (e.g. "chunk <id>") in every ``LLMError`` raised: a call that failed for good, or
    no usable reply after the last attempt (an :class:`UnusableReply`).
    ``json_schema`` is sent instead of ``model``'s schema when given: a narrower one
    (say, the ids a reply may cite as an enum) that a decoding grammar can enforce.
    """
    schema = json_schema if json_schema is not None else model.model_json_schema()
    convo = list(messages)
    last_error = ""
    for _attempt in range(retries + 1):
        with naming_item(what):  # the provider's own error names only the request hash
            reply = chat.chat(convo, stage=stage, json_schema=schema, temperature=0.0, max_tokens=max_tokens)
        try:
            parsed = parse_reply(reply, model)
            problem = check(parsed) if check else None
            if problem:
                raise ValueError(problem)
        except ValueError as exc:
            last_error = str(exc)
            convo = convo + [
                {"role": "assistant", "content": reply},
                {
                    "role": "user",
                    "content": f"That reply could not be used: {last_error}. "
                    "Reply again with only the corrected JSON object.",
                },
            ]
            continue
        return parsed, convo + [{"role": "assistant", "content": reply}]
    raise UnusableReply(f"{stage}: no usable reply for {what} after {retries + 1} attempts: {last_error}")
