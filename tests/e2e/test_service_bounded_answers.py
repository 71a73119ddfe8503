"""A session with many failures of a megabyte each, served by a real `rewake serve`: its
answer (and the server's memory while answering) stays bounded, and the whole stored text of
each failure is still there to read."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rewake.reports.rules import MESSAGE_LIMIT_CHARS
from tests.support.reports import QUOTA, failure, runs_url
from tests.support.sweeper import REPO, free_port, stop_all, wait_until

SECRET = "bounded-secret-0123456789-abc"
#: Failures stored: more than one page of attempts (50 by default).
FAILURES = 60


def _peak_kib(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[httpx.Client, int]]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWAKE_")}
    env |= {"PYTHONPATH": str(REPO), "REWAKE_DATABASE_URL": f"sqlite:///{tmp_path / 'r.db'}",
            "REWAKE_SERVE_SWEEPER": "false", "REWAKE_API_TOKENS": f"alice:{SECRET}"}  # fmt: skip
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "rewake", "serve", "--port", str(port)], env=env,
        cwd=str(tmp_path), stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    log.close()
    client = httpx.Client(
        base_url=f"http://127.0.0.1:{port}",
        headers={"Authorization": f"Bearer {SECRET}"},
        timeout=60,
    )

    def healthy() -> bool:
        try:
            return client.get("/healthz").status_code == 200
        except httpx.HTTPError:
            return False

    try:
        assert wait_until(healthy, 30), (tmp_path / "serve.log").read_text()
        yield client, process.pid
    finally:
        client.close()
        stop_all([process])


def test_a_session_of_megabyte_failures_answers_in_bounded_size(
    served: tuple[httpx.Client, int],
) -> None:
    """60 failures of 1 MiB each: the session's answer is under 1 MB (before, 60 MB: every
    failure's whole text), the server's peak memory grows by less than 20 MiB while answering
    it, older attempts come on a second page, and each failure's whole text is at its URL."""
    client, pid = served
    filler = "x" * (MESSAGE_LIMIT_CHARS - len(QUOTA) - 1) + "\n"
    for attempt in range(1, FAILURES + 1):
        body = failure(attempt=attempt, message=filler + QUOTA)
        assert client.post(runs_url("big"), json=body).status_code == 201
    before_kib = _peak_kib(pid)
    answer = client.get("/api/agent/runs/big")
    grown_kib = _peak_kib(pid) - before_kib
    assert answer.status_code == 200
    assert len(answer.content) < 1_000_000, len(answer.content)
    assert grown_kib < 20 * 1024, grown_kib
    view = answer.json()
    attempts = view["runs"][0]["attempts"]
    assert [a["attempt"] for a in attempts] == list(range(FAILURES - 49, FAILURES + 1))
    assert view["attempts_next_offset"] == 50
    older = client.get("/api/agent/runs/big", params={"attempts_offset": 50}).json()
    assert [a["attempt"] for a in older["runs"][0]["attempts"]] == list(range(1, FAILURES - 49))
    assert older["attempts_next_offset"] is None
    shown = attempts[-1]["failure"]
    assert shown["message"].endswith(QUOTA) and len(shown["message"]) <= 8_192
    assert shown["message_from"] + len(shown["message"]) == MESSAGE_LIMIT_CHARS
    assert client.get(shown["message_url"]).text == filler + QUOTA
