"""`rewake serve` in a process of its own, as a user starts it: no REWAKE_ setting inherited
from the test run, its answers read over real HTTP on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.support.slowdown import Wait
from tests.support.sweeper import free_port

ROOT = Path(__file__).resolve().parents[2]


def rewake(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """`rewake ARGS` started in `cwd` with no REWAKE_ setting but `env`'s, its output piped."""
    clean = {key: value for key, value in os.environ.items() if not key.startswith("REWAKE_")}
    clean["PYTHONPATH"] = str(ROOT)
    return subprocess.Popen(
        [sys.executable, "-m", "rewake", *args],
        cwd=cwd,
        env=clean | (env or {}),
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def wait_healthy(url: str, process: subprocess.Popen[str]) -> None:
    """Until `url`/healthz answers 200; fails after 30 s or when the process ends first."""
    wait = Wait(30)
    while not wait.over() and process.poll() is None:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"rewake serve did not answer: {process.stderr}")


@contextmanager
def serving_with_token(work: Path, token: str) -> Iterator[str]:
    """`rewake serve` with one named token (`token` is `name:secret`), on a SQLite file of its
    own in `work`, no sweeper: its URL while it runs."""
    port = free_port()
    process = rewake(
        "serve", "--port", str(port), "--no-sweeper", cwd=work, env={"REWAKE_API_TOKENS": token}
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process)
        yield url
    finally:
        process.terminate()
        process.communicate(timeout=30)  # waits, and closes its pipes
