"""The sweeper as a whole, in-process and as `rewake sweep`: it fires on time with the real
scheduler and timer, writes its heartbeat, holds accounts after a resume into a live limit,
gives claims back when stopped, and starts only on a current schema with a usable executor."""

from __future__ import annotations

import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prometheus_client import CollectorRegistry
from sqlalchemy import select, text

from rewake.db import migrations
from rewake.db.engine import Database
from rewake.db.models import SweeperHeartbeatRow, TimelineRow, TombstoneRow
from rewake.executors.base import Outcome
from rewake.executors.log import LogExecutor
from rewake.marks.pacing import PacingRules
from rewake.parsers import parse
from rewake.reports.failures import FailureReport, report_failure
from rewake.sessions import repository as repo
from rewake.settings import Settings
from rewake.sweeper import step
from rewake.sweeper.config import SweeperConfig
from rewake.sweeper.metrics import SweeperMetrics
from rewake.sweeper.runtime import Sweeper
from tests.support.api import loopback_client
from tests.support.sweeper import (
    REPO,
    arm,
    context,
    free_port,
    marks_by_root,
    rewake_env,
    seed_marks,
    wait_until,
)


def make_sweeper(database: Database, **config: object) -> Sweeper:
    return Sweeper(
        database, LogExecutor(), SweeperConfig(**config),  # type: ignore[arg-type]
        SweeperMetrics(CollectorRegistry()),
    )  # fmt: skip


def test_in_process_sweeper_fires_and_beats(database: Database) -> None:
    """Started with the real scheduler and timer, the sweeper logs a mark due in a second,
    within about a second of due, and writes its heartbeat."""
    prefix = f"rt-{uuid.uuid4().hex[:6]}"
    due = datetime.now(UTC) + timedelta(seconds=1)
    roots = seed_marks(database, 1, prefix=prefix, due_at=lambda _n: due)
    sweeper = make_sweeper(database, pacing=PacingRules(100, 0))
    sweeper.start()
    try:
        assert wait_until(lambda: marks_by_root(database, roots)[roots[0]].state == "logged", 10)
    finally:
        sweeper.stop()
    row = marks_by_root(database, roots)[roots[0]]
    assert row.sent_at is not None and due <= row.sent_at < due + timedelta(seconds=1.5)
    assert row.outcome == "logged" and "requested in advance" in (row.outcome_detail or "")
    with database.reader() as db:
        beat = db.get(SweeperHeartbeatRow, sweeper.sweeper_id)
    assert beat is not None


def test_stop_gives_waiting_claims_back(database: Database) -> None:
    """Claims held back by pacing go back to armed when the sweeper stops."""
    prefix = f"rt-{uuid.uuid4().hex[:6]}"
    now = datetime.now(UTC)
    roots = seed_marks(
        database, 3, prefix=prefix, due_at=lambda _n: now - timedelta(seconds=1),
        account=lambda _n: f"{prefix}-acct",
    )  # fmt: skip
    mine = {m.id for m in marks_by_root(database, roots).values()}
    sweeper = make_sweeper(database, pacing=PacingRules(1, 3600))
    sweeper.dispatcher.fire(now)
    # The database is shared by the tests a process runs: marks other tests left due may be
    # claimed too, so only this test's are judged.
    waiting = [claim for claim in sweeper.dispatcher.backlog() if claim.mark_id in mine]
    assert len(waiting) == 2
    sweeper.dispatcher.close(now)
    states = {m.id: m.state for m in marks_by_root(database, roots).values()}
    assert all(states[c.mark_id] == "armed" for c in waiting)


def test_resume_into_live_limit_holds_the_account(database: Database) -> None:
    """A resumed attempt that reports a new limit minutes later moves the account's other
    marks to the new reset (never earlier), says why in their timelines, and is counted."""
    observed = datetime.now(UTC).replace(microsecond=0)
    account = f"acct-{uuid.uuid4().hex[:6]}"
    zone = "America/Chicago"
    first, other = f"h1-{account}", f"h2-{account}"
    soon = int((observed + timedelta(seconds=30)).timestamp())
    for root in (first, other):
        arm(
            database, root, message=f"Claude AI usage limit reached|{soon}", observed_at=observed,
            now=observed, zone=zone, account_key=account, delay_s=0,
        )  # fmt: skip
    marks = marks_by_root(database, [first, other])
    due = marks[first].due_at
    claims = [c for c in step.claim(database, due, limit=50, sweeper_id="t", lease_s=60)]
    mine = [c for c in claims if c.mark_id == marks[first].id]
    step.release(database, due, [c for c in claims if c.mark_id != marks[first].id])
    started = step.start(database, due, mine, PacingRules(5, 0), lease_s=60)
    step.finish(database, due, [(started.deliveries[0], Outcome("done", "done"))])
    new_reset = int((due + timedelta(hours=2)).timestamp())
    later = due + timedelta(minutes=3)
    with database.writer() as db, db.begin():
        answer, _ = report_failure(
            db,
            FailureReport(
                root_id=first, run_id="r1", attempt=2, observed_at=later, zone=zone,
                message=f"Claude AI usage limit reached|{new_reset}", account_key=account,
            ),
            parse=parse, ctx=context(later, delay_s=0),
        )  # fmt: skip
    assert answer["resumed_into_live_limit"] is True
    assert answer["held_marks"] == [marks[other].id]
    held = marks_by_root(database, [other])[other]
    assert held.due_at == datetime.fromtimestamp(new_reset, UTC)
    with database.reader() as db:
        events = list(db.scalars(select(TimelineRow).where(TimelineRow.root_id == other)))  # type: ignore[arg-type]
    entry = next(e for e in events if e.event == "mark_held")
    assert entry.detail["because"]["root_id"] == first


def _run_sweep(url: str, *args: str, **settings: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewake", "sweep", *args], env=rewake_env(url, **settings),
        cwd=str(REPO), capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_sweep_purges_tombstones_past_their_retention(database: Database) -> None:
    """A sweep deletes tombstones older than REWAKE_TOMBSTONE_RETENTION_DAYS, keeps younger."""
    prefix = f"rt-{uuid.uuid4().hex[:6]}"
    now = datetime.now(UTC)
    ages = {f"{prefix}-old": timedelta(days=30, seconds=1), f"{prefix}-young": timedelta(days=29)}
    with database.writer() as db, db.begin():
        for root_id, age in ages.items():
            row = TombstoneRow(root_id=root_id, deleted_at=now - age, deleted_by="t", summary={})
            repo.put_tombstone(db, row)
    settings = Settings(database_url="sqlite://", tombstone_retention_days=30)
    assert SweeperConfig.from_settings(settings).tombstone_retention_days == 30
    sweeper = make_sweeper(database, pacing=PacingRules(100, 0), tombstone_retention_days=30)
    try:
        sweeper.sweep(now)
    finally:
        sweeper.stop()
    with database.reader() as db:
        kept = {root_id for root_id in ages if repo.get_tombstone(db, root_id) is not None}
    assert kept == {f"{prefix}-young"}


def test_sweep_waits_for_schema_then_gives_up(tmp_path: Path) -> None:
    """On an empty database `rewake sweep` waits for the schema; with a timeout it gives up
    (exit 2) without creating anything."""
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    result = _run_sweep(url, "--schema-timeout", "1")
    assert result.returncode == 2
    assert "schema_waiting" in result.stderr and "schema_timeout" in result.stderr
    database = Database(url)
    assert migrations.schema_status(database.engine).current == ()
    database.dispose()


def test_sweep_refuses_a_newer_schema(tmp_path: Path) -> None:
    """A schema stamped by a newer rewake is refused at once."""
    url = f"sqlite:///{tmp_path / 'newer.db'}"
    database = Database(url)
    migrations.upgrade(database.engine)
    with database.engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    database.dispose()
    result = _run_sweep(url, "--schema-timeout", "30")
    assert result.returncode == 2
    assert "schema_refused" in result.stderr


def test_sweep_refuses_webhook_without_secret(sqlite_url: str) -> None:
    """The webhook executor does not start without REWAKE_WEBHOOK_SECRET."""
    result = _run_sweep(sqlite_url, "--once", executor="webhook", webhook_url="http://h/{root_id}")
    assert result.returncode == 2
    assert "REWAKE_WEBHOOK_SECRET" in result.stderr


def test_sweep_refuses_a_whsec_secret_that_is_not_base64(sqlite_url: str) -> None:
    """A `whsec_` REWAKE_WEBHOOK_SECRET that cannot be a key stops the sweeper even when only the
    notify webhook would use it, naming the variable and never echoing the secret."""
    secret = "whsec_not base64!"
    result = _run_sweep(
        sqlite_url, "--once", notify_url="http://127.0.0.1:9/notify", webhook_secret=secret
    )
    assert result.returncode == 2
    assert "REWAKE_WEBHOOK_SECRET" in result.stderr
    assert secret not in result.stderr


def test_sweep_once_fires_due_marks(tmp_path: Path) -> None:
    """`rewake sweep --once` fires what is due and exits."""
    url = f"sqlite:///{tmp_path / 'once.db'}"
    database = Database(url)
    migrations.upgrade(database.engine)
    roots = seed_marks(database, 2, prefix="once", due_at=lambda _n: datetime.now(UTC))
    result = _run_sweep(url, "--once")
    assert result.returncode == 0, result.stderr
    assert {m.state for m in marks_by_root(database, roots).values()} == {"logged"}
    database.dispose()


def test_serve_runs_a_sweeper_in_process(tmp_path: Path) -> None:
    """`rewake serve` fires marks by itself: the mark ends logged, /readyz sees the sweeper,
    and the sweeper's metrics are on the API's /metrics. Its log has one access line per
    request and none of APScheduler's "Running job" lines."""
    import httpx

    port = free_port()
    url = f"sqlite:///{tmp_path / 'serve.db'}"
    env = rewake_env(url, api_tokens="t:serve-token-0123456789", resume_delay_s=0)
    auth = {"Authorization": "Bearer serve-token-0123456789"}
    with (tmp_path / "serve.log").open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rewake", "serve", "--port", str(port)],
            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=str(REPO),
        )  # fmt: skip
    try:
        with loopback_client(f"http://127.0.0.1:{port}", headers=auth) as client:

            def up() -> bool:
                try:
                    return client.get("/readyz").status_code == 200
                except httpx.HTTPError:
                    return False

            assert wait_until(up, 30), (tmp_path / "serve.log").read_text()
            now = datetime.now(UTC)
            reset = int(now.timestamp()) + 2
            body = {
                "attempt": 1, "message": f"Claude AI usage limit reached|{reset}",
                "observed_at": now.isoformat(), "zone": "UTC",
            }  # fmt: skip
            assert client.post("/api/agent/runs/s1/runs/r1/failures", json=body).status_code == 201
            mark = client.put("/api/agent/runs/s1/auto-resume", json={"enabled": True}).json()
            assert "executor is log: nothing will be resumed" in mark["warnings"]

            def logged() -> bool:
                return client.get("/api/agent/runs/s1/auto-resume").json()["state"] == "logged"

            assert wait_until(logged, 10)
            metrics = client.get("/metrics").text
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert 'rewake_resume_outcomes_total{executor="log",state="logged"} 1.0' in metrics
    assert "rewake_resume_lateness_seconds_count 1.0" in metrics
    said = (tmp_path / "serve.log").read_text()
    assert "Running job" not in said and "apscheduler" not in said, said
    [scrape] = [line for line in said.splitlines() if " request " in line and "/metrics" in line]
    assert " info request method=GET path=/metrics status=200 ms=" in scrape
    assert scrape.endswith(" actor=t")
