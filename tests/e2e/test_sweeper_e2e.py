"""End to end over loopback: a real `rewake serve` process, a real `rewake sweep` process and
the example host. Limit messages are rendered from true resets the test chooses (minute-printed
forms included, hosts west of UTC); the host sees every resume at or after true reset + delay,
exactly once, signed, within about a second of its due time; every clearing reason stops one."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.hosts.example_host import ExampleHost
from tests.support.render import (
    Rendered,
    claude_epoch,
    claude_session_limit,
    claude_stream_json,
    codex_try_again_at,
    codex_try_again_in,
    gemini_capacity_reset_after,
    gemini_usage_dialog,
)
from tests.support.slowdown import Slowdown
from tests.support.sweeper import REPO, free_port, rewake_env, start_sweeper, stop_all, wait_until

DELAY_S = 2
SECRET = "e2e-webhook-secret-0123456789"
#: A secret in the Standard Webhooks form, as the libraries generate them.
WHSEC = "whsec_" + base64.b64encode(b"e2e host process key: 32 bytes!").decode()
TOKEN = "e2e-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
#: The bound on lateness this proof allows on an idle machine: the timer aims well under a
#: second. Scaled by how much slower the machine ran around the fire (tests/support/slowdown.py).
FIRE_BOUND_S = 1.5


@dataclass
class Api:
    url: str
    client: httpx.Client


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    """`rewake serve` on a fresh SQLite file, its own sweeper off (a separate process fires)."""
    url = f"sqlite:///{tmp_path / 'rewake.db'}"
    port = free_port()
    env = rewake_env(
        url, api_tokens=f"e2e:{TOKEN}", resume_delay_s=DELAY_S, executor="webhook",
        display_zone="America/Los_Angeles",
    )  # fmt: skip
    with (tmp_path / "api.log").open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rewake", "serve", "--port", str(port), "--no-sweeper"],
            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=str(REPO),
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=base, headers=AUTH, timeout=10) as client:

        def healthy() -> bool:
            try:
                return client.get("/healthz").status_code == 200
            except httpx.HTTPError:
                return False

        try:
            assert wait_until(healthy, 30), (tmp_path / "api.log").read_text()
            yield Api(base, client)
        finally:
            stop_all([proc])


@pytest.fixture
def host() -> Iterator[ExampleHost]:
    with ExampleHost(SECRET) as running:
        yield running


@dataclass
class Case:
    """One session: the message rendered from `true_reset`, and whether it must fire."""

    root_id: str
    true_reset: datetime
    rendered: Rendered
    observed_at: datetime
    zone: str
    fires: bool = True
    clear: Callable[[Api, Case], None] | None = None
    due_at: datetime | None = None


def next_minute_end(after: datetime) -> datetime:
    """The last moments of a minute, at least `after`: a minute-printed reset whose true
    instant is 0.4 s before the next minute, the tightest case for never-early."""
    candidate = after.replace(second=59, microsecond=600000)
    return candidate if candidate >= after else candidate + timedelta(minutes=1)


def report_and_arm(api: Api, case: Case, attempt: int = 1) -> None:
    body = {
        "attempt": attempt, "message": case.rendered.text,
        "observed_at": case.observed_at.isoformat(), "zone": case.zone,
    }  # fmt: skip
    answer = api.client.post(f"/api/agent/runs/{case.root_id}/runs/r1/failures", json=body)
    assert answer.status_code == 201, answer.text
    verdict = answer.json()["verdict"]
    assert verdict["kind"] == "provider_quota", verdict
    mark = api.client.put(f"/api/agent/runs/{case.root_id}/auto-resume", json={"enabled": True})
    assert mark.status_code == 200, mark.text
    case.due_at = datetime.fromisoformat(mark.json()["due_at"].replace("Z", "+00:00"))
    # The service's rule: due = printed reset + the CLI's cut + delay, never before the truth.
    assert case.due_at >= case.true_reset + timedelta(seconds=DELAY_S)


def clear_by_manual_resume(api: Api, case: Case) -> None:
    assert api.client.post(f"/api/agent/runs/{case.root_id}/runs/r1/resume").status_code == 200


def clear_by_new_failure(api: Api, case: Case) -> None:
    body = {
        "attempt": 2, "message": "Error: something else went wrong",
        "observed_at": datetime.now(UTC).isoformat(),
    }  # fmt: skip
    answer = api.client.post(f"/api/agent/runs/{case.root_id}/runs/r1/failures", json=body)
    assert answer.status_code == 201, answer.text


def clear_by_cancel(api: Api, case: Case) -> None:
    assert api.client.post(f"/api/agent/runs/{case.root_id}/cancel").status_code == 200


def clear_by_cancel_and_delete(api: Api, case: Case) -> None:
    clear_by_cancel(api, case)
    assert api.client.delete(f"/api/agent/runs/{case.root_id}").status_code == 200


def clear_by_disable(api: Api, case: Case) -> None:
    answer = api.client.put(f"/api/agent/runs/{case.root_id}/auto-resume", json={"enabled": False})
    assert answer.status_code == 200, answer.text


CLEARINGS = {
    "manual_resume": clear_by_manual_resume,
    "new_failure": clear_by_new_failure,
    "cancel": clear_by_cancel,
    "delete": clear_by_cancel_and_delete,
    "disabled": clear_by_disable,
}


def build_cases(now: datetime) -> list[Case]:
    """Sessions over every kind of printed reset, from hosts west of UTC."""
    soon = now.replace(microsecond=0) + timedelta(seconds=6)  # whole seconds, as CLIs print
    minute_end = next_minute_end(now + timedelta(seconds=5))
    la, sp, den = "America/Los_Angeles", "America/Sao_Paulo", "America/Denver"
    backdated = minute_end - timedelta(seconds=119.6)  # "try again in 1 minutes", printed then
    cases = [
        Case("claude-minute", minute_end, claude_session_limit(minute_end, la, now), now, la),
        Case("gemini-minute", minute_end, gemini_usage_dialog(minute_end, den, now), now, den),
        Case("codex-at", minute_end, codex_try_again_at(minute_end, sp, now), now, sp),
        Case(
            "codex-in", minute_end, codex_try_again_in(minute_end, sp, backdated), backdated, sp
        ),
        Case("claude-epoch", soon, claude_epoch(soon, la, now), now, la),
        Case("claude-stream", soon + timedelta(seconds=1), claude_stream_json(
            soon + timedelta(seconds=1), la, now), now, la),
        # Printed 400 s before the reset (a wait under 300 s would be a throttle, not a limit).
        Case("gemini-after", soon, gemini_capacity_reset_after(
            soon, den, soon - timedelta(seconds=400)), soon - timedelta(seconds=400), den),
    ]  # fmt: skip
    for reason, clear in CLEARINGS.items():
        reset = soon + timedelta(seconds=2)
        cases.append(
            Case(f"cleared-{reason}", reset, claude_epoch(reset, la, now), now, la, False, clear)
        )
    suffix = uuid.uuid4().hex[:6]
    for case in cases:
        case.root_id = f"{case.root_id}-{suffix}"
    return cases


def test_every_resume_once_signed_never_early(api: Api, host: ExampleHost, tmp_path: Path) -> None:
    """Every armed session is resumed exactly once, signed, at or after its true reset plus
    the delay and within about a second of due; no cleared session is resumed."""
    env = rewake_env(
        f"sqlite:///{tmp_path / 'rewake.db'}", executor="webhook",
        webhook_url=host.resume_template, webhook_secret=SECRET,
        webhook_lookup_url=host.lookup_template, sweep_interval_s=30,
    )  # fmt: skip
    sweeper = start_sweeper(env, tmp_path / "sweeper.log")
    with Slowdown() as slowdown:
        try:
            cases = build_cases(datetime.now(UTC))
            for case in cases:
                host.state.paused[(case.root_id, "r1")] = 1
                report_and_arm(api, case)
            time.sleep(1.0)
            for case in cases:
                if case.clear is not None:
                    case.clear(api, case)
            firing = [c for c in cases if c.fires]
            last_due = max(c.due_at for c in cases if c.due_at is not None)
            wait_s = (last_due - datetime.now(UTC)).total_seconds() + 10
            assert wait_until(lambda: len(host.calls()) >= len(firing), wait_s), (
                tmp_path / "sweeper.log"
            ).read_text()[-3000:]
            time.sleep(max(0.0, (last_due - datetime.now(UTC)).total_seconds()) + 2)
        finally:
            stop_all([sweeper])
    calls = host.calls()
    by_root = {c.root_id: [call for call in calls if call.root_id == c.root_id] for c in cases}
    for case in cases:
        got = by_root[case.root_id]
        if not case.fires:
            assert got == [], f"{case.root_id} was resumed after being cleared"
            continue
        assert len(got) == 1, f"{case.root_id}: {len(got)} calls"
        (call,) = got
        assert call.signature_problem is None and call.status == 202
        assert call.expected_attempt == 1
        arrived = datetime.fromtimestamp(call.arrived, UTC)
        assert arrived >= case.true_reset + timedelta(seconds=DELAY_S), case.root_id
        assert case.due_at is not None and arrived >= case.due_at
        slower = slowdown.ratio(since=case.due_at.timestamp() - 2, until=call.arrived)
        late = (arrived - case.due_at).total_seconds()
        assert late < FIRE_BOUND_S * slower, (
            f"{case.root_id}: sent {late:.2f} s after due; allowed {FIRE_BOUND_S} s on an idle "
            f"machine, this one ran {slower:.1f} times slower then"
        )
        mark = api.client.get(f"/api/agent/runs/{case.root_id}/auto-resume").json()
        assert (mark["state"], mark["outcome"]) == ("done", "done")
    for case in cases:
        if case.clear is not None and case.clear is not clear_by_cancel_and_delete:
            mark = api.client.get(f"/api/agent/runs/{case.root_id}/auto-resume").json()
            assert mark["state"] == "cleared", (case.root_id, mark)


def read_journal(path: Path) -> list[dict[str, object]]:
    """The host process's record: one JSON object per request it received."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_host_process_verifies_the_sweepers_webhooks_with_the_library(
    api: Api, tmp_path: Path
) -> None:
    """A host in a process of its own verifies with the standardwebhooks library (from a whsec_
    secret) the resume, the lookup and the notification a real sweeper sends it."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    journal = tmp_path / "host.jsonl"
    suffix = uuid.uuid4().hex[:6]
    plain, gateway = f"host-plain-{suffix}", f"host-gateway-{suffix}"
    with (tmp_path / "host.log").open("wb") as log:
        host = subprocess.Popen(
            [sys.executable, "-m", "tests.hosts.example_host", "--secret", WHSEC,
             "--port", str(port), "--record", str(journal), "--refuse", f"{gateway}=502:gateway"],
            stdout=log, stderr=subprocess.STDOUT, cwd=str(REPO),
        )  # fmt: skip
    env = rewake_env(
        f"sqlite:///{tmp_path / 'rewake.db'}", executor="webhook", webhook_secret=WHSEC,
        webhook_url=base + "/api/agent/runs/{root_id}/runs/{run_id}/resume",
        webhook_lookup_url=base + "/resumes/{attempt_key}", notify_url=base + "/notify",
        sweep_interval_s=1,
    )  # fmt: skip
    sweeper = None
    try:

        def listening() -> bool:
            try:
                return httpx.get(base + "/", timeout=1).status_code == 404
            except httpx.HTTPError:
                return False

        assert wait_until(listening, 20), (tmp_path / "host.log").read_text()
        sweeper = start_sweeper(env, tmp_path / "sweeper.log")
        now = datetime.now(UTC)
        reset = now.replace(microsecond=0) + timedelta(seconds=3)
        la = "America/Los_Angeles"
        for root_id in (plain, gateway):
            report_and_arm(api, Case(root_id, reset, claude_epoch(reset, la, now), now, la))

        def marks() -> dict[str, dict[str, object]]:
            return {
                root_id: api.client.get(f"/api/agent/runs/{root_id}/auto-resume").json()
                for root_id in (plain, gateway)
            }

        def settled() -> bool:
            kinds = {entry["kind"] for entry in read_journal(journal)}
            done = all(mark["state"] == "done" for mark in marks().values())
            return done and kinds == {"resume", "lookup", "notify"}

        assert wait_until(settled, 40, poll_s=0.3), (
            marks(), read_journal(journal), (tmp_path / "sweeper.log").read_text()[-3000:],
        )  # fmt: skip
    finally:
        stop_all([proc for proc in (sweeper, host) if proc is not None])
    keys = {root_id: mark["attempt_key"] for root_id, mark in marks().items()}
    entries = read_journal(journal)
    assert all(entry["problem"] is None for entry in entries), entries
    resumes = sorted((e["id"], e["status"]) for e in entries if e["kind"] == "resume")
    assert resumes == sorted([(keys[plain], 202), (keys[gateway], 502)])
    lookups = {(e["id"], e["status"]) for e in entries if e["kind"] == "lookup"}
    assert lookups == {(keys[gateway], 200)}
    (notice,) = [e for e in entries if e["kind"] == "notify"]
    assert notice["event"] == "mark_uncertain" and notice["status"] == 204
    assert re.fullmatch(r"notify-[0-9a-f]{32}", str(notice["id"]))
