"""Who is calling: the principal comes from the request's key and nowhere else."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from arborgraph.service.keys import KeyStore


class Unauthorized(Exception):
    """A request that must be answered 401; the message says why in one line."""


@dataclass(frozen=True)
class Caller:
    principal: str | None  # None: the anonymous caller (public documents only)
    key_id: str | None = None


ANONYMOUS = Caller(principal=None)


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The key in ``Authorization: Bearer KEY`` or ``X-API-Key: KEY``, else None."""
    bearer = None
    authorization = headers.get("authorization")
    if authorization is not None:
        scheme, _, value = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise Unauthorized("the Authorization header must be 'Bearer KEY'")
        bearer = value.strip()
    api_key = headers.get("x-api-key")
    api_key = api_key.strip() if api_key is not None else None
    if bearer is not None and api_key is not None and bearer != api_key:
        raise Unauthorized("the Authorization and X-API-Key headers carry different keys")
    key = bearer if bearer is not None else api_key
    if key is not None and not key:
        raise Unauthorized("the X-API-Key header is empty")
    return key


class Authenticator:
    """Resolves a request's headers to a :class:`Caller`, or raises Unauthorized."""

    def __init__(self, keys: KeyStore | None, *, require_key: bool = False) -> None:
        self.keys = keys
        self.require_key = require_key

    def caller(self, headers: Mapping[str, str]) -> Caller:
        key = presented_key(headers)
        if key is None:
            if self.require_key:
                raise Unauthorized("this server requires a key (Authorization: Bearer KEY)")
            return ANONYMOUS
        record = self.keys.resolve(key) if self.keys is not None else None
        # one message for both: a caller learns nothing about which keys exist
        if record is None or record.revoked:
            raise Unauthorized("unknown or revoked key")
        return Caller(principal=record.principal, key_id=record.id)
