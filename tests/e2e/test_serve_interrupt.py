"""Ctrl-C on `rewake serve`: a clean shutdown, status 0, and no traceback after it."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx

from tests.support.sweeper import free_port, wait_until


def test_ctrl_c_stops_serve_quietly(tmp_path: Path) -> None:
    """SIGINT (what Ctrl-C sends) ends serve after its shutdown lines, with no traceback."""
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rewake", "serve", "--port", str(port)], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip

    def up() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
        except httpx.HTTPError:
            return False

    try:
        assert wait_until(up, 30)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "sweeper_stopped" in out, out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
    assert proc.returncode == 0, out
