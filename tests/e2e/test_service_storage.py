"""A full disk and a long-held lock, against a live `rewake serve` on loopback: a full disk
is said as such (503 storage_full) and /readyz reports it; writes that wait past the busy
timeout all get the same answer."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from tests.support.slowdown import Wait
from tests.support.sweeper import REPO, free_port

FAILURE = {"attempt": 1, "message": "Error: something else went wrong"}


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs: a real file system that fills (ENOSPC), as a full disk does. Needs
    root (mount); skipped without it."""
    where = tmp_path / "disk"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4M", "tmpfs", str(where)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(directory: Path) -> Path:
    """A file that takes every free byte of `directory`'s file system."""
    filler = directory / "filler"
    with filler.open("wb") as out:
        try:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
        except OSError as error:
            assert error.errno == errno.ENOSPC
    return filler


def _serve(database: Path, log: Path) -> tuple[str, subprocess.Popen[bytes]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWAKE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    env["REWAKE_DATABASE_URL"] = f"sqlite:///{database}"
    port = free_port()
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rewake", "serve", "--port", str(port)],
            env=env, stdout=out, stderr=subprocess.STDOUT, cwd=str(log.parent),
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    wait = Wait(30)
    while not wait.over():
        assert proc.poll() is None, log.read_text()
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return base, proc
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    proc.terminate()
    raise AssertionError(f"rewake serve never got ready: {log.read_text()}")


def _report(base: str) -> httpx.Response:
    body = FAILURE | {"observed_at": datetime.now(UTC).isoformat()}
    root = "disk-" + uuid.uuid4().hex[:8]
    return httpx.post(f"{base}/api/agent/runs/{root}/runs/r1/failures", json=body, timeout=60)


def test_a_full_disk_is_storage_full_and_not_ready(small_disk: Path, tmp_path: Path) -> None:
    """On a full file system a report is 503 storage_full (not database_unavailable) and
    /readyz is 503 naming the storage check; once space is freed both recover."""
    base, proc = _serve(small_disk / "rewake.db", tmp_path / "serve.log")
    try:
        assert _report(base).status_code == 201
        filler = _fill(small_disk)
        refused = _report(base)
        assert (refused.status_code, refused.json()["code"]) == (503, "storage_full"), refused.text
        ready = httpx.get(f"{base}/readyz", timeout=10)
        assert ready.status_code == 503 and ready.json()["checks"]["storage"]["ok"] is False
        filler.unlink()
        assert _report(base).status_code == 201
        assert httpx.get(f"{base}/readyz", timeout=10).json()["checks"]["storage"]["ok"] is True
    finally:
        proc.terminate()
        proc.wait(timeout=15)
