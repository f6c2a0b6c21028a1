"""The keys file under concurrent writers, and its permissions: real processes, a real file."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest
from service_server import cli, cli_env

from arborgraph.service.keys import KeyStoreError, KeyStore

ROOT = Path(__file__).resolve().parents[2]


def _add_after(barrier: "multiprocessing.synchronize.Barrier", path: str, principal: str, out: "multiprocessing.Queue[str]") -> None:
    barrier.wait()
    out.put(KeyStore(path).add(principal)[0])


def _revoke_after(barrier: "multiprocessing.synchronize.Barrier", path: str, key_id: str) -> None:
    barrier.wait()
    KeyStore(path).revoke(key_id)


def test_concurrent_cli_adds_lose_no_key(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "arborgraph.cli", "keys", "add", "--keys", str(path), "--principal", f"p{i}"],
            cwd=ROOT, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in range(8)
    ]
    printed = []
    for run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
        printed.append(out.strip())
    store = KeyStore(path)
    assert len(store.records()) == 8
    assert sorted(store.resolve(k).principal for k in printed) == sorted(f"p{i}" for i in range(8))  # type: ignore[union-attr]


def test_racing_adds_and_revokes_keep_every_key_and_every_revocation(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    path = tmp_path / "keys.json"
    victim_key, victim = KeyStore(path).add("victim")
    added: list[str] = []
    for trial in range(12):
        barrier = ctx.Barrier(6)
        out: "multiprocessing.Queue[str]" = ctx.Queue()
        workers = [ctx.Process(target=_add_after, args=(barrier, str(path), f"t{trial}-{i}", out)) for i in range(5)]
        if trial == 0:
            workers.append(ctx.Process(target=_revoke_after, args=(barrier, str(path), victim.id)))
        else:  # the same race shape: a sixth writer revoking one of the previous trial's keys
            previous = [r for r in KeyStore(path).records() if r.principal.startswith(f"t{trial - 1}-")][0]
            workers.append(ctx.Process(target=_revoke_after, args=(barrier, str(path), previous.id)))
        for w in workers:
            w.start()
        for w in workers:
            w.join(60)
            assert w.exitcode == 0
        added += [out.get(timeout=5) for _ in range(5)]
        store = KeyStore(path)
        assert store.resolve(victim_key).revoked, f"trial {trial}: the revocation was undone"  # type: ignore[union-attr]
    records = KeyStore(path).records()
    assert len(records) == 1 + 12 * 5
    assert len({r.id for r in records}) == len(records)
    resolved = [KeyStore(path).resolve(k) for k in added]
    assert all(r is not None for r in resolved)
    # trials 1..11 each revoked one key of the trial before: 11 of the added, plus the victim
    assert sum(r.revoked for r in records) == 12
    assert not any(name.endswith(".tmp") for name in os.listdir(tmp_path))


@pytest.mark.parametrize("mode, who", [(0o666, "others"), (0o620, "its group")])
def test_a_keys_file_others_may_write_is_refused(tmp_path: Path, mode: int, who: str) -> None:
    path = tmp_path / "keys.json"
    key, _ = KeyStore(path).add("ops")
    os.chmod(path, mode)
    with pytest.raises(KeyStoreError, match=f"writable by {who}; refusing it"):
        KeyStore(path).resolve(key)
    run = cli("keys", "list", "--keys", str(path))
    assert run.returncode == 2 and "refusing it (chmod 600" in run.stderr and "Traceback" not in run.stderr
    os.chmod(path, 0o600)
    assert KeyStore(path).resolve(key) is not None


def test_a_garbled_keys_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"version": 1, "keys": [{"id": 5}]}))
    os.chmod(path, 0o600)
    with pytest.raises(KeyStoreError, match="not a keys file"):
        KeyStore(path).records()
