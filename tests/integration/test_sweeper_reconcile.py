"""Lookups of uncertain marks beside the sweep: a slow lookup route never holds up reaping and
claiming, and uncertain marks are asked about in turn, so those the host cannot answer yet do
not keep the rest waiting. In-process sweepers, the example host over loopback, a fresh SQLite
file and a fresh PostgreSQL schema."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from rewake.db.engine import Database
from rewake.executors.webhook import WebhookExecutor
from rewake.marks.pacing import PacingRules
from rewake.sweeper import step
from rewake.sweeper.config import SweeperConfig
from rewake.sweeper.metrics import SweeperMetrics
from rewake.sweeper.runtime import Sweeper
from tests.hosts.example_host import ExampleHost
from tests.support.slowdown import Slowdown
from tests.support.sweeper import (
    REPO,
    fresh_database_url,
    marks_by_root,
    rewake_env,
    seed_marks,
    utc,
    wait_until,
)

SECRET = "lookup-secret-0123456789"
INTERVAL_S = 0.5
#: What "within one sweep" may overrun by on a busy machine.
SLACK_S = 1.5


@pytest.fixture(params=["sqlite", "postgres"])
def fresh_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with fresh_database_url(request.param, tmp_path) as url:
        yield url


def make_uncertain(database: Database, count: int, prefix: str) -> list[str]:
    """`count` marks whose send started 20 s ago and was reaped uncertain; their roots."""
    then = utc(-20)
    roots = seed_marks(database, count, prefix=prefix, due_at=lambda _n: then)
    claims = step.claim(database, then, limit=count, sweeper_id="gone:1:x", lease_s=1)
    step.start(database, then, claims, PacingRules(100, 0), lease_s=1)
    step.housekeeping(database, utc(), expire_after_s=3600, tombstone_retention_days=365)
    assert {row.state for row in marks_by_root(database, roots).values()} == {"uncertain"}
    return roots


def make_sweeper(database: Database, host: ExampleHost, **config: object) -> Sweeper:
    executor = WebhookExecutor(
        host.resume_template, SECRET, lookup_template=host.lookup_template, timeout_s=2.0
    )
    settings = SweeperConfig(
        interval_s=INTERVAL_S, lease_s=4.0, workers=2, jitter_s=0, heartbeat_s=5,
        pacing=PacingRules(100, 0), **config,  # type: ignore[arg-type]
    )  # fmt: skip
    return Sweeper(database, executor, settings, SweeperMetrics(CollectorRegistry()))


def test_slow_lookups_do_not_delay_reaping(fresh_url: str) -> None:
    """With six uncertain marks and a lookup route taking 1 s each, a mark left claimed by a
    dead sweeper is re-armed and sent within a sweep of its lease running out; the uncertain
    marks are still settled by the lookups (not_sent: the host never saw them)."""
    database = Database(fresh_url)
    prefix = uuid.uuid4().hex[:6]
    uncertain = make_uncertain(database, 6, f"u-{prefix}")
    (dead,) = seed_marks(database, 1, prefix=f"d-{prefix}", due_at=lambda _n: utc(-1))
    (claim,) = step.claim(database, utc(), limit=1, sweeper_id="dead:2:y", lease_s=1.5)
    with ExampleHost(SECRET) as host:
        host.state.lookup_delay_s = 1.0
        sweeper = make_sweeper(database, host)
        sweeper.start()
        try:
            with Slowdown() as slow:
                assert wait_until(lambda: any(c.root_id == dead for c in host.calls()), 20)
            settled = wait_until(
                lambda: (
                    {r.state for r in marks_by_root(database, uncertain).values()} == {"failed"}
                ),
                20,
            )
        finally:
            sweeper.stop()
        arrived = next(c.arrived for c in host.calls() if c.root_id == dead)
    rows = marks_by_root(database, uncertain)
    database.dispose()
    late = arrived - claim.lease_until.timestamp()
    # SLACK_S is for an idle machine: scaled by the slowdown measured while the test waited.
    slower = slow.ratio()
    assert late <= INTERVAL_S + SLACK_S * slower, (
        f"re-armed and sent {late:.1f} s after its lease ended (the machine {slower:.1f} times "
        "slower than idle)"
    )
    assert settled
    assert {row.outcome for row in rows.values()} == {"not_sent"}


def test_uncertain_marks_are_asked_about_in_turn(fresh_url: str) -> None:
    """With two lookups a sweep and the two oldest uncertain marks still in progress at the
    host (no answer yet), the two others are asked about and settled within a few sweeps."""
    database = Database(fresh_url)
    roots = make_uncertain(database, 4, f"t-{uuid.uuid4().hex[:6]}")
    rows = marks_by_root(database, roots)
    pending, answerable = roots[:2], roots[2:]
    with ExampleHost(SECRET) as host:
        host.state.in_progress.update(rows[r].attempt_key or "" for r in pending)
        sweeper = make_sweeper(database, host, reconcile_batch=2)
        sweeper.start()
        try:
            settled = wait_until(
                lambda: (
                    {r.state for r in marks_by_root(database, answerable).values()} == {"failed"}
                ),
                6 * INTERVAL_S + SLACK_S,
            )
        finally:
            sweeper.stop()
    after = marks_by_root(database, roots)
    database.dispose()
    assert settled, {r: after[r].state for r in roots}
    assert {after[r].state for r in pending} == {"uncertain"}
    assert {after[r].outcome for r in answerable} == {"not_sent"}


def test_one_off_sweep_still_asks_about_uncertain_marks(tmp_path: Path) -> None:
    """`rewake sweep --once` runs its round of lookups itself, after reaping and claiming:
    an uncertain mark the host never saw ends failed (not_sent)."""
    with fresh_database_url("sqlite", tmp_path) as url:
        database = Database(url)
        roots = make_uncertain(database, 1, f"o-{uuid.uuid4().hex[:6]}")
        with ExampleHost(SECRET) as host:
            result = subprocess.run(
                [sys.executable, "-m", "rewake", "sweep", "--once"], cwd=str(REPO),
                env=rewake_env(
                    url, executor="webhook", webhook_url=host.resume_template,
                    webhook_secret=SECRET, webhook_lookup_url=host.lookup_template,
                ),
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
        row = marks_by_root(database, roots)[roots[0]]
        database.dispose()
    assert result.returncode == 0, result.stderr
    assert (row.state, row.outcome) == ("failed", "not_sent")
