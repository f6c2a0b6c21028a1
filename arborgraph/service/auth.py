"""Who is calling: the principal comes from the request's key and nowhere else."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from arborgraph.service.keys import KeyStoreError, KeyStore


class Unauthorized(Exception):
    """A request that must be answered 401; the message says why in one line."""


class AmbiguousCredentials(Exception):
    """A request that must be answered 400: it carries a credential header twice, and
    servers and proxies disagree on which one counts."""


class KeysUnavailable(Exception):
    """A keyed request while the keys file cannot be read: answered 503, failing closed
    (no key is trusted, none is taken for anonymous)."""


@dataclass(frozen=True)
class Caller:
    principal: str | None  # None: the anonymous caller (public documents only)
    key_id: str | None = None
    # a key added with --write: may upload and delete documents and rebuild (never anonymous)
    can_write: bool = False


ANONYMOUS = Caller(principal=None)


Headers = Mapping[str, str] | Iterable[tuple[str, str]]


def presented_key(headers: Headers) -> str | None:
    """The key in ``Authorization: Bearer KEY`` or ``X-API-Key: KEY``, else None.

    ``headers`` is every (name, value) pair of the request, repeats included (a
    Starlette ``Headers`` or the ASGI list, decoded): a request with either header twice
    is refused, whatever the copies say."""
    pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
    found: dict[str, str] = {}
    for name, value in pairs:
        name = name.lower()
        if name in ("authorization", "x-api-key"):
            if name in found:
                raise AmbiguousCredentials(f"the {name} header is given twice")
            found[name] = value
    bearer = None
    authorization = found.get("authorization")
    if authorization is not None:
        scheme, _, value = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise Unauthorized("the Authorization header must be 'Bearer KEY'")
        bearer = value.strip()
    api_key = found.get("x-api-key")
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

    def problem(self) -> str | None:
        """Why keyed requests are refused now (an unreadable keys file), else None."""
        if self.keys is None:
            return None
        try:
            self.keys.records()
        except KeyStoreError as exc:
            return self._without_path(exc)
        return None

    def _without_path(self, exc: Exception) -> str:
        # the server's paths are nobody's business over HTTP
        assert self.keys is not None
        return str(exc).replace(str(self.keys.path), self.keys.path.name)

    def caller(self, headers: Headers) -> Caller:
        key = presented_key(headers)
        if key is None:
            if self.require_key:
                raise Unauthorized("this server requires a key (Authorization: Bearer KEY)")
            return ANONYMOUS
        try:
            record = self.keys.resolve(key) if self.keys is not None else None
        except KeyStoreError as exc:
            raise KeysUnavailable(f"keys cannot be checked now: {self._without_path(exc)}") from None
        # one message for both: a caller learns nothing about which keys exist
        if record is None or record.revoked:
            raise Unauthorized("unknown or revoked key")
        return Caller(principal=record.principal, key_id=record.id, can_write=record.write)
