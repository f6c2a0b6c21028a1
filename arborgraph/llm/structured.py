"""Structured (JSON) output: request formats, validation, and one repair round."""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from arborgraph.core.errors import MalformedReply
from arborgraph.core.errors import UnusableReply
from arborgraph.core.protocols import ChatModel
from arborgraph.core.concurrency import naming_item

M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(.*?)\n?```\s*$", re.DOTALL)
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def strip_code_fence(text: str) -> str:
    """Remove one surrounding Markdown code fence (```json ... ```), which many models
    add even in JSON mode; other text is returned stripped but unchanged."""
    match = _FENCE.match(text)
    return (match.group(1) if match else text).strip()


def check_json_reply(text: str, schema: dict[str, Any]) -> str:
    """Return the reply's JSON text when it parses and is valid against ``schema``.

    Raises ``MalformedReply`` with a short reason otherwise.
    """
    import jsonschema  # type: ignore[import-untyped]  # only structured output needs it

    cleaned = strip_code_fence(text)
    try:
        value = json.loads(cleaned)
    except json.JSONDecodeError as exc:
        raise MalformedReply(f"not valid JSON: {exc}") from exc
    validator_cls = jsonschema.validators.validator_for(schema)
    error = jsonschema.exceptions.best_match(validator_cls(schema).iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise MalformedReply(f"JSON does not match the schema at {where}: {error.message}")
    return cleaned


def parse_model_reply(text: str, schema: type[M]) -> M:
    """Validate a reply with the caller's pydantic model; raise ``MalformedReply``."""
    try:
        return schema.model_validate_json(strip_code_fence(text))
    except ValidationError as exc:
        raise MalformedReply(f"reply does not fit {schema.__name__}: {exc}") from exc


def repair_messages(
    messages: list[dict[str, str]], bad_reply: str, problem: str
) -> list[dict[str, str]]:
    """The conversation for one repair attempt: the bad reply and what is wrong with it."""
    return [
        *messages,
        {"role": "assistant", "content": bad_reply},
        {
            "role": "user",
            "content": (
                f"That reply cannot be used: {problem}\n"
                "Answer again with only the corrected JSON object, no other text."
            ),
        },
    ]


def schema_instruction(schema: dict[str, Any]) -> str:
    """Text telling the model the schema, for modes where the endpoint does not get it."""
    return (
        "Reply with one JSON object, and nothing else, that is valid against this "
        f"JSON schema:\n{json.dumps(schema, sort_keys=True)}"
    )


def with_schema_instruction(
    messages: list[dict[str, str]], schema: dict[str, Any]
) -> list[dict[str, str]]:
    """Add the schema instruction to the first system message (or a new leading one).

    Merged rather than appended because several chat templates (llama.cpp, vLLM)
    accept a system message only in first position.
    """
    instruction = schema_instruction(schema)
    if messages and messages[0].get("role") == "system":
        first = {**messages[0], "content": f"{messages[0]['content']}\n\n{instruction}"}
        return [first, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]


def response_format(mode: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The ``response_format`` request field for a JSON mode ("none" gives ``None``)."""
    if mode == "json_schema":
        name = _NAME_UNSAFE.sub("_", str(schema.get("title", "response")))[:64] or "response"
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def structured_chat(
    model: ChatModel,
    messages: list[dict[str, str]],
    schema: type[M],
    *,
    stage: str,
    item: str | None = None,
    max_tokens: int | None = None,
) -> M:
    """Ask any ``ChatModel`` for JSON and return it validated as ``schema``.

    The JSON schema sent is ``schema.model_json_schema()``; a reply that pydantic rejects
    gets one repair round (the reply and the validation error are sent back); a second
    bad reply raises ``UnusableReply`` (an ``LLMError``) naming ``item``. The OpenAI provider already repairs
    replies that break the JSON schema, so here the round mostly matters for rules
    only pydantic checks, and for other ``ChatModel`` implementations.
    """
    label = item if item is not None else "unnamed item"
    json_schema = schema.model_json_schema()
    with naming_item(label):
        reply = model.chat(messages, stage=stage, json_schema=json_schema, max_tokens=max_tokens)
    try:
        return parse_model_reply(reply, schema)
    except MalformedReply as first_problem:
        with naming_item(label):
            repaired = model.chat(
                repair_messages(messages, reply, str(first_problem)),
                stage=stage,
                json_schema=json_schema,
                max_tokens=max_tokens,
            )
        try:
            return parse_model_reply(repaired, schema)
        except MalformedReply as exc:
            raise UnusableReply(
                f"{label}: stage {stage!r}: malformed structured reply after one repair: {exc}"
            ) from exc
