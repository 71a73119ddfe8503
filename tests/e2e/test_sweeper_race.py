"""Races between real processes: four sweepers on one database (a SQLite file, PostgreSQL)
and an API process clearing marks while hundreds fall due within seconds. Every mark ends in
a final state, none is delivered twice, no cleared mark is delivered, pacing holds."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from rewake.db.engine import Database
from rewake.db.models import LIVE_STATES
from tests.hosts.example_host import ExampleHost
from tests.support.db import fresh_postgres_schema, migrate
from tests.support.sweeper import (
    REPO,
    free_port,
    marks_by_root,
    rewake_env,
    seed_marks,
    stop_all,
    sweepers,
    wait_until,
)

MARKS = 500
ACCOUNTS = 20
MAX_IN_FLIGHT = 3
SECRET = "race-secret-0123456789"
TOKEN = "race-token-0123456789"


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "postgres":
        with fresh_postgres_schema() as url:
            yield url
        return
    url = f"sqlite:///{tmp_path / 'race.db'}"

    migrate(url)
    yield url


def clear_some(
    base: str, roots: list[str], stop: threading.Event, cleared: list[str], errors: list[str]
) -> None:
    """Cancel, resume by hand or disable random sessions while they fall due."""
    rng = random.Random(7)
    actions = ["cancel", "resume", "disable"]
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        for root in rng.sample(roots, len(roots) // 5):
            if stop.is_set():
                return
            action = rng.choice(actions)
            if action == "cancel":
                answer = client.post(f"/api/agent/runs/{root}/cancel")
            elif action == "resume":
                answer = client.post(f"/api/agent/runs/{root}/runs/r1/resume")
            else:
                answer = client.put(f"/api/agent/runs/{root}/auto-resume", json={"enabled": False})
            if answer.status_code not in (200, 409):
                errors.append(f"{action} {root}: {answer.status_code} {answer.text}")
            cleared.append(root)


def test_four_sweepers_and_an_api_race(database_url: str, tmp_path: Path) -> None:
    """500 marks due within 3 s, 4 sweepers, clears racing the claims: each mark final, at
    most one delivery per mark, none for a cleared mark, per-account pacing never exceeded."""
    with ExampleHost(SECRET) as host:
        env = rewake_env(
            database_url, executor="webhook", webhook_url=host.resume_template,
            webhook_secret=SECRET, account_max_in_flight=MAX_IN_FLIGHT,
            account_stagger_s=0.01, api_tokens=f"race:{TOKEN}", sweep_workers=8,
        )  # fmt: skip
        database = Database(database_url)
        start = datetime.now(UTC) + timedelta(seconds=4)
        prefix = f"race-{uuid.uuid4().hex[:6]}"
        roots = seed_marks(
            database, MARKS, prefix=prefix,
            due_at=lambda n: start + timedelta(milliseconds=6 * n),
            account=lambda n: f"acct-{n % ACCOUNTS}",
        )  # fmt: skip
        port = free_port()
        with (tmp_path / "api.log").open("wb") as log:
            api = subprocess.Popen(
                [sys.executable, "-m", "rewake", "serve", "--port", str(port), "--no-sweeper"],
                env=env, stdout=log, stderr=subprocess.STDOUT, cwd=str(REPO),
            )  # fmt: skip
        stop = threading.Event()
        cleared: list[str] = []
        errors: list[str] = []
        try:
            base = f"http://127.0.0.1:{port}"
            assert wait_until(lambda: _healthy(base), 30)
            with sweepers(env, 4, tmp_path / "logs"):
                clearer = threading.Thread(
                    target=clear_some, args=(base, roots, stop, cleared, errors), daemon=True
                )
                clearer.start()

                def settled() -> bool:
                    marks = marks_by_root(database, roots)
                    return all(m.state not in LIVE_STATES for m in marks.values())

                assert wait_until(settled, 90, poll_s=0.5), _logs(tmp_path)
                clearer.join(timeout=30)
        finally:
            stop.set()
            stop_all([api])
        marks = marks_by_root(database, roots)
        database.dispose()
        calls = host.calls()
    assert errors == []
    per_mark = Counter(call.mark_id for call in calls)
    states = Counter(mark.state for mark in marks.values())
    assert set(states) <= {"done", "cleared"}, states
    assert max(per_mark.values()) == 1, "a mark was delivered twice"
    delivered = set(per_mark)
    for root, mark in marks.items():
        if mark.state == "cleared":
            assert mark.id not in delivered, f"cleared mark of {root} was delivered"
        else:
            assert mark.id in delivered, f"done mark of {root} never reached the host"
    assert all(call.signature_problem is None and call.status == 202 for call in calls)
    assert max(host.state.max_in_flight.values()) <= MAX_IN_FLIGHT
    assert states["cleared"] > 0 and states["done"] > MARKS // 2
    assert {r for r in cleared} >= {r for r, m in marks.items() if m.state == "cleared"}


def _healthy(base: str) -> bool:
    try:
        return httpx.get(base + "/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _logs(tmp_path: Path) -> str:
    return "\n".join(p.read_text()[-1500:] for p in sorted((tmp_path / "logs").glob("*.log")))
