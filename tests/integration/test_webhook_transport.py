"""The webhook's transport against a host that answers badly, over loopback: the timeout is one
deadline for the whole exchange (a host dripping its answer a byte at a time cannot hold a
worker past it), only the start of an answer is read (a huge answer never loads into memory),
and a sweeper's other marks go out on time while such a host holds some of its workers."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from rewake.db.engine import Database
from rewake.executors.base import Delivery
from rewake.executors.webhook import WebhookExecutor
from rewake.marks.pacing import PacingRules
from rewake.sweeper.config import SweeperConfig
from rewake.sweeper.metrics import SweeperMetrics
from rewake.sweeper.runtime import Sweeper
from tests.hosts.rough_host import MIB, RoughHost
from tests.support.slowdown import Slowdown
from tests.support.sweeper import (
    count_in_states,
    fresh_database_url,
    marks_by_root,
    seed_marks,
    utc,
    wait_until,
)

SECRET = "rough-secret-0123456789"
TIMEOUT_S = 1.0
#: What a deadline may overrun by on a busy machine: thread start, socket shutdown, scheduling.
SLACK_S = 1.0


def delivery(root_id: str, key: str = "k-1") -> Delivery:
    now = datetime.now(UTC)
    return Delivery(
        mark_id=1, root_id=root_id, run_id="r1", attempt=1, attempt_key=key, reset_at=now,
        resolution_s=0, due_at=now, armed_by="alice", armed_at=now, sent_at=now,
    )  # fmt: skip


@pytest.fixture
def host() -> Iterator[RoughHost]:
    with RoughHost() as running:
        running.state.drip_every_s = 0.25
        running.state.drip_for_s = 8.0
        yield running


def webhook(host: RoughHost) -> WebhookExecutor:
    return WebhookExecutor(
        host.resume_template, SECRET, lookup_template=host.lookup_template, timeout_s=TIMEOUT_S
    )


def test_dripping_answer_is_cut_at_the_deadline(host: RoughHost) -> None:
    """A host that answers 200 and then sends one byte of body every 0.25 s holds the send
    no longer than the 1 s timeout; its 200 counts, the body kept is what arrived."""
    executor = webhook(host)
    began = time.monotonic()
    outcome = executor.deliver(delivery("drip-1"))
    took = time.monotonic() - began
    executor.close()
    assert took < TIMEOUT_S + SLACK_S, took
    assert (outcome.state, outcome.code) == ("done", "done")
    assert (outcome.detail or "").endswith("[cut]")


def test_dripping_status_line_is_a_timeout(host: RoughHost) -> None:
    """A host that sends its status line one byte every 0.25 s is cut off at the 1 s timeout:
    the request left, no answer came in time, so the mark is uncertain (timeout)."""
    executor = webhook(host)
    began = time.monotonic()
    outcome = executor.deliver(delivery("slowhead-1"))
    took = time.monotonic() - began
    executor.close()
    assert took < TIMEOUT_S + SLACK_S, took
    assert (outcome.state, outcome.code) == ("uncertain", "timeout")


def test_huge_answer_is_not_read_whole(host: RoughHost) -> None:
    """Of a 200 MiB answer only the start is read: the host gets to write a small part of
    it before rewake hangs up, and the mark keeps 2,000 characters of it, marked cut."""
    executor = webhook(host)
    outcome = executor.deliver(delivery("huge-1"))
    executor.close()
    assert (outcome.state, outcome.code) == ("done", "done")
    assert len(outcome.detail or "") <= 2000 + len(" [cut]")
    assert (outcome.detail or "").startswith('{"resumed": true')
    assert wait_until(lambda: "huge-1" in host.state.written, 10)
    assert host.state.written["huge-1"] < 16 * MIB, host.state.written["huge-1"]


@pytest.mark.parametrize(("key", "found"), [("drip-key", True), ("slowhead-key", None)])
def test_lookup_ends_at_the_deadline(host: RoughHost, key: str, found: bool | None) -> None:
    """A lookup whose answer trickles is given up at the 1 s timeout: a 200 whose body drips
    still says the key was seen; a status line that drips is no answer (asked again later)."""
    executor = webhook(host)
    began = time.monotonic()
    looked = executor.lookup(delivery("any", key=key), datetime.now(UTC))
    took = time.monotonic() - began
    executor.close()
    assert took < TIMEOUT_S + SLACK_S, took
    assert (looked.received if looked else None) == found


@pytest.fixture(params=["sqlite", "postgres"])
def fresh_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with fresh_database_url(request.param, tmp_path) as url:
        yield url


def test_dripping_host_does_not_hold_other_marks(fresh_url: str, host: RoughHost) -> None:
    """With both workers taken by hosts that drip their answers for 8 s, marks due next go
    out within the rounds of 1 s deadlines ahead of them, not after the drips end; the
    dripped sends end done, none uncertain."""
    database = Database(fresh_url)
    prefix = uuid.uuid4().hex[:6]
    drips = seed_marks(database, 4, prefix=f"drip-{prefix}", due_at=lambda _n: utc(-1))
    others = seed_marks(database, 3, prefix=f"ok-{prefix}", due_at=lambda _n: utc(0.5))
    workers = 2
    config = SweeperConfig(
        interval_s=0.5, lease_s=TIMEOUT_S + 1.5, workers=workers, jitter_s=0, heartbeat_s=5,
        pacing=PacingRules(max_in_flight=100, stagger_s=0),
    )  # fmt: skip
    sweeper = Sweeper(database, webhook(host), config, SweeperMetrics(CollectorRegistry()))
    sweeper.start()
    try:
        unsettled = ("armed", "claimed", "sending")
        with Slowdown() as slow:
            assert wait_until(lambda: count_in_states(database, unsettled) == 0, 30)
    finally:
        sweeper.stop()
    rows = marks_by_root(database, drips + others)
    database.dispose()
    arrived = {a.root_id: a.arrived for a in host.arrivals()}
    rounds = math.ceil(len(drips) / workers)
    late = {r: round(arrived[r] - rows[r].due_at.timestamp(), 2) for r in others}
    # Beyond the deadlines ahead of them: recording each outcome, waking the timer, starting,
    # on an idle machine; that slack scaled by the slowdown measured meanwhile.
    slower = slow.ratio()
    allowed = rounds * TIMEOUT_S + 2 * SLACK_S * slower
    assert all(lateness <= allowed for lateness in late.values()), (late, allowed, slower)
    assert {rows[r].state for r in drips} == {"done"}
