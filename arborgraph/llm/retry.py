"""When to retry a failed request and how long to wait first (pure functions)."""

from __future__ import annotations

import email.utils
import math
from collections.abc import Mapping

# 408 request timeout, 409 lock conflict, 429 rate limit; every 5xx is retried too.
RETRYABLE_STATUS = frozenset({408, 409, 429})


def is_retryable_status(status: int) -> bool:
    """True for statuses worth trying again: 408, 409, 429 and any 5xx."""
    return status in RETRYABLE_STATUS or status >= 500


def parse_retry_after(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds the server asks us to wait, from ``retry-after-ms`` or ``Retry-After``.

    ``Retry-After`` may be a number of seconds or an HTTP date; ``now`` (epoch seconds)
    is needed for the date form. Unparseable or negative values give ``None``.
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = lowered.get(name)
        if raw is None:
            continue
        seconds: float | None
        try:
            seconds = float(raw) / divisor
        except ValueError:
            seconds = _seconds_until_date(raw, now)
        if seconds is not None and math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


def _seconds_until_date(value: str, now: float) -> float | None:
    parsed = email.utils.parsedate_tz(value)
    if parsed is None:
        return None
    return max(0.0, email.utils.mktime_tz(parsed) - now)


def backoff_delay(
    attempt: int,
    retry_after_s: float | None,
    *,
    initial_s: float,
    max_s: float,
    max_retry_after_s: float,
) -> float:
    """Delay before retry number ``attempt + 1`` (``attempt`` counts from 0).

    The server's ``Retry-After`` wins (cut to ``max_retry_after_s``); otherwise
    exponential backoff ``initial_s * 2**attempt`` cut to ``max_s``. No jitter: delays
    stay reproducible, and a server's Retry-After already spreads clients out.
    """
    if retry_after_s is not None:
        return min(retry_after_s, max_retry_after_s)
    return min(initial_s * (2.0 ** min(attempt, 30)), max_s)
