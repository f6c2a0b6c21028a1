"""Errors as RFC 9457 ``application/problem+json``, each with a one-line detail."""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

PROBLEM_TYPE = "application/problem+json"
log = logging.getLogger("arborgraph.service")

TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Content",
    503: "Service Unavailable",
    504: "Gateway Timeout",
    500: "Internal Server Error",
    502: "Bad Gateway",
}


def one_line(text: str, limit: int = 300) -> str:
    first = " ".join(str(text).split())
    return first if len(first) <= limit else first[: limit - 1] + "…"


def problem_body(status: int, detail: str) -> dict[str, Any]:
    return {"type": "about:blank", "title": TITLES.get(status, "Error"), "status": status, "detail": one_line(detail)}


def problem(status: int, detail: str, headers: dict[str, str] | None = None) -> Response:
    return Response(
        json.dumps(problem_body(status, detail)),
        status_code=status,
        media_type=PROBLEM_TYPE,
        headers=headers,
    )


def validation_detail(errors: list[dict[str, Any]]) -> tuple[int, str]:
    """(status, detail) for pydantic/FastAPI validation errors: 400 for a body that is
    not JSON at all, 422 for JSON of the wrong shape."""
    if not errors:
        return 422, "invalid request"
    first = errors[0]
    if first.get("type") == "json_invalid":
        return 400, f"the body is not valid JSON ({first.get('ctx', {}).get('error', 'parse error')})"
    # ("body", "question") -> "question"; query/path parameters keep their kind
    loc = [str(p) for p in first.get("loc", ()) if p != "body"]
    where = ".".join(loc) or "body"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    message = str(first.get("msg", "invalid")).removeprefix("Value error, ")  # our validators' own words
    return 422, f"{where}: {message}{more}"


async def unexpected(request: Request, exc: Exception) -> Response:
    # the question text is in the body, never in the log; the route and type are enough
    log.error("internal error on %s %s: %s", request.method, request.url.path, type(exc).__name__)
    return problem(500, "internal error; the server log has the exception type")
