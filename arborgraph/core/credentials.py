"""Credentials out of messages: what an error, a log line or a report says about a
server connection never carries its password.

A URI's user information (``bolt://neo4j:secret@host``) loses its password (or, with
no colon, the whole of it: it may be a token), and every known secret (a password
given by an option or an environment variable) is masked wherever it appears, also
percent-encoded, as a URI would carry it. Pure functions over strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import quote

MASK = "***"

# scheme://userinfo@ : userinfo runs to the last '@' before the host part ends (a
# password may itself hold an unencoded '@'); it never crosses whitespace, quotes or '/'
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^\s/'\"<>]*)@")


def _mask_userinfo(match: re.Match[str]) -> str:
    user, colon, _ = match.group("userinfo").partition(":")
    kept = f"{user}:{MASK}" if colon else MASK
    return f"{match.group('scheme')}{kept}@"


def redact_credentials(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` without passwords: URI user information masked, then every non-empty
    value of ``secrets`` (as given and percent-encoded) replaced by ``***``. A short
    secret masks its every occurrence: a mangled word costs less than a leaked password."""
    out = _USERINFO.sub(_mask_userinfo, text)
    forms = {form for secret in secrets if secret for form in (secret, quote(secret, safe=""))}
    # the longest first, so that a secret inside another is not left half masked
    for form in sorted(forms, key=len, reverse=True):
        out = out.replace(form, MASK)
    return out
