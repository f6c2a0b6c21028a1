"""API keys that carry principals, stored as hashes only.

A key is 32 random bytes (``ag_`` + URL-safe base64). The keys file keeps, per key, an
id, the SHA-256 of the key, the principal, the creation date, a revoked flag and a
write flag (the key may change the served documents) — never the key itself. SHA-256 without salt or stretching is enough here: the keys are
random, so there is nothing to guess from a hash (passwords would need scrypt).
Lookups compare digests with :func:`hmac.compare_digest` against every record, so the
time taken does not depend on how much of a hash matched.

The file is re-read when it changes on disk, so ``arborgraph keys revoke`` takes effect
on a running server without a restart. Every change (add, revoke) is a read-modify-write
under an exclusive ``flock`` on a lock file beside it, held across processes: concurrent
``keys add`` and ``keys revoke`` commands each see the others' writes, so none is lost
and no revocation is undone. The new file is written and fsynced beside the old one,
renamed over it, and the directory fsynced, so a crash leaves one or the other whole.

A keys file that others may write is refused (as ssh refuses such an authorized_keys):
whoever can write it can give themselves any principal.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import stat
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from arborgraph.core.errors import UserError
from ingest.models import PRINCIPAL_FORBIDDEN

KEY_PREFIX = "ag_"
FILE_VERSION = 1


class KeyStoreError(UserError, ValueError):
    """A keys file that cannot be used, or a key operation that cannot be done (the
    CLI says so in one line and exits 2, as for every :class:`UserError`)."""


@dataclass(frozen=True)
class KeyRecord:
    """One key as the keys file holds it (the key itself is not kept)."""

    id: str
    principal: str
    created: str  # ISO 8601, UTC
    sha256: str
    revoked: bool = False
    # may change the served documents (upload, delete, rebuild); files written before
    # this field existed read as read-only keys
    write: bool = False


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def check_principal(name: str) -> str:
    """The principal name, or KeyStoreError if it could never match a document's acl."""
    if not name.strip():
        raise KeyStoreError("a principal name is empty")
    if any(c in name for c in PRINCIPAL_FORBIDDEN):
        raise KeyStoreError(f"principal name {name!r} contains ',' or a line break")
    return name


class KeyStore:
    """The keys file: add, list, revoke, and resolve a presented key to its record."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._records: list[KeyRecord] = []
        self._stamp: tuple[int, int, int] | None = None

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(f".{self.path.name}.lock")

    # -- reading ------------------------------------------------------------------

    def _file_stamp(self) -> tuple[int, int, int] | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        # the inode too: each write renames a new file in, so two writes within one
        # mtime tick that leave the size unchanged still differ
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def _load(self, *, fresh: bool = False) -> list[KeyRecord]:
        stamp = self._file_stamp()
        if stamp is None:
            self._records, self._stamp = [], None
            return self._records
        if stamp == self._stamp and not fresh:
            return self._records
        check_permissions(self.path)
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("version") != FILE_VERSION:
                raise ValueError("unknown version")
            records = [KeyRecord(**item) for item in data["keys"]]
            if not all(isinstance(getattr(r, f), str) for r in records for f in ("id", "principal", "created", "sha256")):
                raise TypeError("a field is not text")
            if not all(isinstance(r.write, bool) and isinstance(r.revoked, bool) for r in records):
                raise TypeError("a flag is not true or false")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise KeyStoreError(f"{self.path}: not a keys file ({type(exc).__name__})") from None
        self._records, self._stamp = records, stamp
        return records

    def records(self) -> list[KeyRecord]:
        """Every key record, revoked ones included, oldest first."""
        with self._lock:
            return list(self._load())

    def resolve(self, key: str) -> KeyRecord | None:
        """The record of ``key`` (revoked or not), or None for a key this file never issued.
        Raises :class:`KeyStoreError` when the file cannot be read as a keys file."""
        digest = hash_key(key)
        with self._lock:
            records = self._load()
        found = None
        for record in records:  # no early exit: every presented key costs the same
            if hmac.compare_digest(record.sha256, digest):
                found = record
        return found

    # -- writing ------------------------------------------------------------------

    @contextlib.contextmanager
    def _changing(self) -> Iterator[list[KeyRecord]]:
        """The records as on disk now, under the cross-process lock (and this object's
        own), for the block to change and :meth:`_write` before the lock is released."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield list(self._load(fresh=True))
            finally:
                os.close(fd)  # releases the flock

    def add(self, principal: str, *, write: bool = False) -> tuple[str, KeyRecord]:
        """A new random key for ``principal``: (the key, to hand out once; its record).
        ``write``: the key may also change the served documents and rebuild the index."""
        check_principal(principal)
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        with self._changing() as records:
            taken = {r.id for r in records}
            key_id = "key-" + secrets.token_hex(4)
            while key_id in taken:
                key_id = "key-" + secrets.token_hex(4)
            record = KeyRecord(
                id=key_id,
                principal=principal,
                created=dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
                sha256=hash_key(key),
                write=write,
            )
            self._write([*records, record])
        return key, record

    def revoke(self, key_id: str) -> KeyRecord:
        """Mark the key with this id revoked (it stays listed, so the id is not reused)."""
        with self._changing() as records:
            if not any(r.id == key_id for r in records):
                raise KeyStoreError(f"no key with id {key_id!r} in {self.path}")
            updated = [
                KeyRecord(**{**asdict(r), "revoked": True}) if r.id == key_id else r for r in records
            ]
            self._write(updated)
        return next(r for r in updated if r.id == key_id)

    def _write(self, records: list[KeyRecord]) -> None:
        text = json.dumps(
            {"version": FILE_VERSION, "keys": [asdict(r) for r in records]}, indent=2
        )
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        # owner-only from the first byte: the hashes are not secrets, the principals may be
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)  # the rename itself survives a crash
        finally:
            os.close(directory)
        self._records, self._stamp = records, self._file_stamp()


def check_permissions(path: Path) -> None:
    """Refuse a keys file that someone other than its owner may write, or that belongs to
    another user (root's files excepted): its writer decides every caller's principal."""
    st = path.stat()
    if not stat.S_ISREG(st.st_mode):
        raise KeyStoreError(f"{path}: not a regular file")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise KeyStoreError(
            f"{path}: writable by {'others' if st.st_mode & stat.S_IWOTH else 'its group'}; "
            f"refusing it (chmod 600 {path})"
        )
    if st.st_uid not in (os.getuid(), 0):
        raise KeyStoreError(f"{path}: owned by another user (uid {st.st_uid}); refusing it")
