"""The sweeper tells REWAKE_NOTIFY's URLs how each resume it sent ended, once per mark, beside
the signed notify webhook; a failing endpoint leaves the sweep and its outcomes as they were."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from rewake.db.engine import Database
from rewake.executors.base import Delivery, Outcome
from rewake.executors.log import LogExecutor
from rewake.marks.pacing import PacingRules
from rewake.notifications.apprise_notices import Announcer
from rewake.sweeper.config import SweeperConfig
from rewake.sweeper.metrics import SweeperMetrics
from rewake.sweeper.runtime import Sweeper
from tests.support.announce import listening
from tests.support.sweeper import arm, fresh_database_url, marks_by_root


class Scripted(LogExecutor):
    """Answers each root's resume with the outcome its name asks for."""

    def deliver(self, delivery: Delivery) -> Outcome:
        if delivery.root_id.endswith("-ok"):
            return Outcome("done", "accepted", None)
        if delivery.root_id.endswith("-bad"):
            return Outcome("failed", "http_500", "the host answered 500")
        raise RuntimeError("lost")  # the dispatcher records it uncertain


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """A database of its own: the sweeper fires whatever is due, other tests' marks included."""
    with fresh_database_url(request.param, tmp_path) as url:
        opened = Database(url)
        try:
            yield opened
        finally:
            opened.dispose()


def fire_due(database: Database, announcer: Announcer, roots: list[str]) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    seen = now - timedelta(minutes=5)
    for root in roots:
        reset = int((seen + timedelta(seconds=30)).timestamp())
        arm(database, root, message=f"Claude AI usage limit reached|{reset}", observed_at=seen,
            now=seen, delay_s=0)  # fmt: skip
    config = SweeperConfig(pacing=PacingRules(100, 0))
    sweeper = Sweeper(database, Scripted(), config, SweeperMetrics(CollectorRegistry()),
                      announcer=announcer)  # fmt: skip
    sweeper.dispatcher.fire(now)
    sweeper.dispatcher.close(now)
    announcer.close()


def test_sent_failed_and_uncertain_are_one_notification_each(database: Database) -> None:
    """Three marks sent: done, failed and uncertain, each told once in the page's words."""
    prefix = f"an-{uuid.uuid4().hex[:6]}"
    roots = [f"{prefix}-ok", f"{prefix}-bad", f"{prefix}-lost"]
    with listening() as listener:
        fire_due(database, Announcer(listener.url), roots)
        got = listener.wait_for(3)
    assert sorted(g["title"] for g in got) == sorted([
        f"Resumed · {prefix}-ok",
        f"The resume failed · {prefix}-bad",
        f"Unknown whether the resume arrived · {prefix}-lost",
    ])  # fmt: skip
    assert len(listener.wait_for(4, timeout_s=0.5)) == 3


def test_a_failing_endpoint_leaves_the_outcomes_recorded(database: Database) -> None:
    """Every notification answered 500: the marks still end as their sends did."""
    prefix = f"af-{uuid.uuid4().hex[:6]}"
    with listening(status=500) as listener:
        fire_due(database, Announcer(listener.url), [f"{prefix}-ok", f"{prefix}-bad"])
        assert len(listener.wait_for(2)) == 2
    rows = marks_by_root(database, [f"{prefix}-ok", f"{prefix}-bad"])
    assert rows[f"{prefix}-ok"].state == "done" and rows[f"{prefix}-bad"].state == "failed"
