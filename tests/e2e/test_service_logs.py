"""What `rewake serve` and `rewake sweep` write to their logs while resumes go out: never the
credentials a webhook or notify URL carries (user info, query values), whoever logs the URL."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rewake.db.engine import Database
from tests.support.db import migrate
from tests.support.sweeper import REPO, free_port, rewake_env, seed_marks, stop_all, wait_until

SECRETS = ("hook-password-1234", "hook-query-5678", "notify-password-9012", "notify-query-3456")


class _Host(BaseHTTPRequestHandler):
    """Refuses every resume (409 question_open: the mark fails, which is worth a notice) and
    answers every notice 500 (which the sweeper logs)."""

    seen: list[str]

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).seen.append(self.path)
        notice = self.path.startswith("/notify")
        body = b"{}" if notice else b'{"code": "question_open"}'
        self.send_response(500 if notice else 409)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def host() -> Iterator[tuple[int, list[str]]]:
    seen: list[str] = []
    handler = type("Host", (_Host,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_port, seen
    finally:
        server.shutdown()
        server.server_close()


def _env(tmp_path: Path, port: int) -> dict[str, str]:
    """One armed mark due now, and URLs that carry credentials in both places."""
    url = f"sqlite:///{tmp_path / 'rewake.db'}"
    migrate(url)
    database = Database(url)
    seed_marks(database, 1, due_at=lambda _n: datetime.now(UTC) - timedelta(seconds=5))
    database.dispose()
    hook = f"http://hook-user:{SECRETS[0]}@127.0.0.1:{port}"
    notify = f"http://notify-user:{SECRETS[2]}@127.0.0.1:{port}"
    return rewake_env(
        url, executor="webhook", webhook_secret="webhook-secret-0123456789",
        webhook_url=f"{hook}/api/agent/runs/{{root_id}}/runs/{{run_id}}/resume?key={SECRETS[1]}",
        notify_url=f"{notify}/notify?key={SECRETS[3]}", sweep_interval_s=1,
    )  # fmt: skip


def _check(log: str, seen: list[str]) -> None:
    assert any(path.startswith("/api/agent/runs/") for path in seen), log
    assert any(path.startswith("/notify") for path in seen), log
    leaked = [secret for secret in SECRETS if secret in log]
    assert not leaked, log
    [notice] = [line for line in log.splitlines() if "notify_failed" in line]
    assert "notify-user:***@127.0.0.1" in notice and "key=***" in notice and "500" in notice
    assert "HTTP Request:" not in log  # httpx's INFO line for every request


def test_sweep_logs_no_url_credentials(tmp_path: Path, host: tuple[int, list[str]]) -> None:
    """`rewake sweep --once` sends a resume and a failed notice: its log names the notify URL
    with its password and query values redacted, and no credential at all."""
    port, seen = host
    done = subprocess.run(
        [sys.executable, "-m", "rewake", "sweep", "--once"], env=_env(tmp_path, port),
        cwd=str(REPO), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    _check(done.stderr, seen)


def test_serve_logs_no_url_credentials(tmp_path: Path, host: tuple[int, list[str]]) -> None:
    """`rewake serve`'s own sweeper sends the same resume and notice: httpx's request lines
    (the URL with its password, at INFO) stay out of its log, as does every credential."""
    port, seen = host
    env = _env(tmp_path, port)
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        serve = subprocess.Popen(
            [sys.executable, "-m", "rewake", "serve", "--port", str(free_port())],
            env=env, cwd=str(REPO), stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        noticed = wait_until(lambda: any(p.startswith("/notify") for p in seen), 30)
        assert noticed, log.read_text()
        assert wait_until(lambda: "notify_failed" in log.read_text(), 10), log.read_text()
    finally:
        stop_all([serve])
    _check(log.read_text(), seen)
