"""docs/host-contract.md's minimal host, extracted from the page and run unchanged against a
live `rewake serve` with the webhook executor: the first delivery resumes the agent once and the
mark ends `done`; a replay of the same `webhook-id` starts nothing; a resume for an attempt the
host no longer holds paused is refused `409 attempt_moved_on` and the mark ends `superseded`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook

from tests.support.sweeper import REPO, free_port, rewake_env, stop_all, wait_until

DOC = REPO / "docs" / "host-contract.md"
SECRET = "doc-host-webhook-secret-0123456789"
TOKEN = "doc-host-token-0123456789"


def minimal_host() -> str:
    """The one ```python block under the page's "A minimal host" heading."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## A minimal host") :]
    section = section[: section.index("\n## ", 1)]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert len(blocks) == 1
    return blocks[0]


@dataclass
class System:
    api: httpx.Client
    host_url: str
    started: Path  # one line per agent the host started


def healthy(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code < 500
    except httpx.HTTPError:
        return False


@pytest.fixture
def system(tmp_path: Path) -> Iterator[System]:
    """`rewake serve` (webhook executor, its own sweeper) and the doc's host, as the page says."""
    api_port, host_port = free_port(), free_port()
    host_url = f"http://127.0.0.1:{host_port}"
    env = rewake_env(
        f"sqlite:///{tmp_path / 'rewake.db'}", api_tokens=f"host:{TOKEN}", executor="webhook",
        webhook_secret=SECRET, resume_delay_s=0, sweep_interval_s=1,
        webhook_url=host_url + "/api/agent/runs/{root_id}/runs/{run_id}/resume",
        webhook_lookup_url=host_url + "/resumes/{attempt_key}",
    )  # fmt: skip
    script = tmp_path / "host.py"
    script.write_text(minimal_host(), encoding="utf-8")
    started = tmp_path / "started.txt"
    agent = f"import sys; open({str(started)!r}, 'a').write(sys.argv[1][:40] + chr(10))"
    host_env = {
        "PATH": "/usr/bin:/bin", "REWAKE_WEBHOOK_SECRET": SECRET, "REWAKE_TOKEN": TOKEN,
        "REWAKE_URL": f"http://127.0.0.1:{api_port}", "HOST_PORT": str(host_port),
        "AGENT_COMMAND": subprocess.list2cmdline([sys.executable, "-c", agent]),
    }  # fmt: skip
    with (tmp_path / "api.log").open("wb") as api_log, (tmp_path / "host.log").open("wb") as log:
        serve = subprocess.Popen(
            [sys.executable, "-m", "rewake", "serve", "--port", str(api_port)],
            env=env, stdout=api_log, stderr=subprocess.STDOUT, cwd=str(tmp_path),
        )  # fmt: skip
        host = subprocess.Popen(
            [sys.executable, str(script)], env=host_env, stdout=log, stderr=subprocess.STDOUT,
            cwd=str(tmp_path),
        )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{api_port}"
        api_up = wait_until(lambda: healthy(base + "/healthz"), 30)
        assert api_up, (tmp_path / "api.log").read_text()
        host_up = wait_until(lambda: healthy(host_url + "/resumes/x"), 30)
        assert host_up, (tmp_path / "host.log").read_text()
        with httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10
        ) as api:
            yield System(api=api, host_url=host_url, started=started)
    finally:
        stop_all([serve, host])


def limit_message(now: datetime) -> str:
    """Claude's raw limit, reset a minute ago: the armed mark is due at once."""
    return f"Claude AI usage limit reached|{int((now - timedelta(minutes=1)).timestamp())}"


def settled_mark(system: System, root_id: str) -> dict[str, Any]:
    """The session's mark once it left armed/claimed/sending (within 30 s)."""
    seen: dict[str, Any] = {}

    def settled() -> bool:
        seen.update(system.api.get(f"/api/agent/runs/{root_id}/auto-resume").json())
        return seen.get("state") not in {"armed", "claimed", "sending"}

    assert wait_until(settled, 30, poll_s=0.25), seen
    return seen


def agents_started(system: System) -> list[str]:
    return system.started.read_text().splitlines() if system.started.exists() else []


def test_first_delivery_resumes_once_and_a_replay_starts_nothing(system: System) -> None:
    """Limit reported through the host, armed, fired: done, one agent; a replayed key: no second."""
    root_id = f"doc-{uuid.uuid4().hex[:12]}"
    stopped = httpx.post(
        f"{system.host_url}/limits/{root_id}/r1",
        json={"attempt": 1, "message": limit_message(datetime.now(UTC))}, timeout=10,
    )  # fmt: skip
    assert stopped.status_code == 200, stopped.text
    assert stopped.json()["verdict"]["kind"] == "provider_quota"
    armed = system.api.put(f"/api/agent/runs/{root_id}/auto-resume", json={"enabled": True})
    assert armed.status_code == 200, armed.text

    mark = settled_mark(system, root_id)
    assert mark["state"] == "done", mark
    assert wait_until(lambda: len(agents_started(system)) == 1, 10)
    session = system.api.get(f"/api/agent/runs/{root_id}").json()
    assert session["current"] == {"run_id": "r1", "attempt": 2}, session

    # The same webhook-id again, freshly signed: the stored answer, and no second agent.
    key = mark["attempt_key"]
    body = json.dumps({
        "expected_attempt": 1, "message": "continue", "note": "replayed",
        "mark": {"attempt_key": key, "root_id": root_id, "run_id": "r1", "attempt": 1},
    }).encode()  # fmt: skip
    stamp = datetime.now(UTC)
    signature = Webhook(SECRET.encode()).sign(key, stamp, body.decode())
    replay = httpx.post(
        f"{system.host_url}/api/agent/runs/{root_id}/runs/r1/resume", content=body,
        headers={"Idempotency-Key": key, "webhook-id": key, "webhook-signature": signature,
                 "webhook-timestamp": str(int(stamp.timestamp())),
                 "Content-Type": "application/json"},
        timeout=10,
    )  # fmt: skip
    assert replay.status_code == 202, replay.text
    time.sleep(1)
    assert len(agents_started(system)) == 1


def test_a_resume_for_an_attempt_that_moved_on_is_superseded(system: System) -> None:
    """A run the host holds no paused attempt of: 409 attempt_moved_on, the mark superseded."""
    root_id = f"doc-{uuid.uuid4().hex[:12]}"
    # Reported to rewake directly, never through the host: the host holds no paused attempt.
    failure = {
        "attempt": 1, "message": limit_message(datetime.now(UTC)),
        "observed_at": datetime.now(UTC).isoformat(),
    }  # fmt: skip
    reported = system.api.post(f"/api/agent/runs/{root_id}/runs/r1/failures", json=failure)
    assert reported.status_code == 201, reported.text
    armed = system.api.put(f"/api/agent/runs/{root_id}/auto-resume", json={"enabled": True})
    assert armed.status_code == 200, armed.text

    mark = settled_mark(system, root_id)
    assert mark["state"] == "superseded", mark
    assert mark["outcome"] == "attempt_moved_on", mark
    assert agents_started(system) == []
