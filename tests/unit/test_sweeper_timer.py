"""The precise timer under a moving wall clock (freezegun): never early, and late by one
step at most once the clock reaches due_at, across jumps, suspends and DST changes."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from apscheduler.schedulers.background import BackgroundScheduler
from freezegun import freeze_time
from freezegun.api import FrozenDateTimeFactory

from rewake.sweeper.runtime import JOB_DEFAULTS, reanchor
from rewake.sweeper.timer import JumpDetector, PreciseTimer, TimerHooks, sleep_for

START = datetime(2026, 11, 30, 16, 0, tzinfo=UTC)
STEP = 0.2


class FakeMarks:
    """Armed marks in memory, with the hooks the timer calls on the real marks table."""

    def __init__(self, *due: datetime) -> None:
        self.armed = sorted(due)
        self.fired: list[tuple[datetime, datetime]] = []  # (wall clock at fire, due_at)
        self.jumps: list[float] = []
        self.announced = False

    def fire(self, now: datetime) -> None:
        while self.armed and self.armed[0] <= now:
            self.fired.append((now, self.armed.pop(0)))

    def earliest_due(self) -> datetime | None:
        return self.armed[0] if self.armed else None

    def changed(self) -> bool:
        announced, self.announced = self.announced, False
        return announced

    def hooks(self) -> TimerHooks:
        return TimerHooks(
            fire=self.fire,
            earliest_due=self.earliest_due,
            changed=self.changed,
            on_jump=lambda _now, jump: self.jumps.append(jump),
        )


class Machine:
    """freezegun's wall clock, and a monotonic clock that only moves while the loop sleeps
    (as on Linux, where CLOCK_MONOTONIC stops during a suspend)."""

    def __init__(self, traveller: FrozenDateTimeFactory) -> None:
        self.traveller = traveller
        self.mono = 1000.0

    def monotonic(self) -> float:
        return self.mono

    def sleep(self, seconds: float) -> None:
        self.mono += seconds
        self.traveller.tick(timedelta(seconds=seconds))

    def wall(self) -> datetime:
        return datetime.now(UTC)


@pytest.fixture
def machine() -> Iterator[Machine]:
    with freeze_time(START) as traveller:
        yield Machine(traveller)


def make_timer(machine: Machine, marks: FakeMarks) -> PreciseTimer:
    return PreciseTimer(
        marks.hooks(), wall=machine.wall, monotonic=machine.monotonic, sleep=machine.sleep,
        step_s=STEP,
    )  # fmt: skip


def run_for(machine: Machine, timer: PreciseTimer, seconds: float) -> None:
    """Turn the loop until `seconds` of monotonic time have passed."""
    until = machine.mono + seconds
    while machine.mono < until:
        machine.sleep(timer.step())


def test_sleep_is_short_and_stops_at_due() -> None:
    """The loop never sleeps past due_at, nor longer than one step."""
    assert sleep_for(START, START + timedelta(hours=2), 0.2) == 0.2
    assert sleep_for(START, START + timedelta(seconds=0.05), 0.2) == pytest.approx(0.05)
    assert sleep_for(START, START - timedelta(seconds=5), 0.2) == 0.0
    assert sleep_for(START, None, 0.2) == 0.2


def test_fires_at_due_never_before(machine: Machine) -> None:
    """A mark due in 10.05 s fires at or after due_at, within one step of it."""
    due = START + timedelta(seconds=10.05)
    marks = FakeMarks(due)
    timer = make_timer(machine, marks)
    run_for(machine, timer, 9.9)
    assert marks.fired == []
    run_for(machine, timer, 1)
    ((fired_at, _),) = marks.fired
    assert due <= fired_at <= due + timedelta(seconds=STEP)


def test_clock_jump_forward_fires_at_once(machine: Machine) -> None:
    """The wall clock set an hour ahead: a mark due 30 min from the start fires at the first
    turn after the jump, and the jump is reported."""
    due = START + timedelta(minutes=30)
    marks = FakeMarks(due)
    timer = make_timer(machine, marks)
    run_for(machine, timer, 2)
    machine.traveller.tick(timedelta(hours=1))  # the clock is set; no time passes
    timer.step()
    ((fired_at, _),) = marks.fired
    assert fired_at >= due
    assert marks.jumps == [pytest.approx(3600, abs=0.01)]


def test_clock_jump_backward_never_fires_early(machine: Machine) -> None:
    """The wall clock set an hour back just before due_at: nothing fires until the clock
    reaches due_at again, then it fires within one step."""
    due = START + timedelta(seconds=10)
    marks = FakeMarks(due)
    timer = make_timer(machine, marks)
    run_for(machine, timer, 5)
    machine.traveller.tick(timedelta(hours=-1))
    run_for(machine, timer, 3600)  # an hour of real time: the clock is back at START + 5 s
    assert marks.fired == []
    run_for(machine, timer, 5.5)
    ((fired_at, _),) = marks.fired
    assert due <= fired_at <= due + timedelta(seconds=STEP)
    assert marks.jumps == [pytest.approx(-3600, abs=0.01)]


def test_suspend_longer_than_the_interval(machine: Machine) -> None:
    """A machine asleep for 5 min (wall clock moves, monotonic does not) fires the mark that
    fell due meanwhile at the first turn after waking, and reports the suspend as a jump."""
    due = START + timedelta(minutes=2)
    marks = FakeMarks(due)
    timer = make_timer(machine, marks)
    run_for(machine, timer, 1)
    machine.traveller.tick(timedelta(minutes=5))  # asleep: no monotonic time passes
    timer.step()
    ((fired_at, _),) = marks.fired
    assert fired_at >= due
    assert marks.jumps == [pytest.approx(300, abs=0.01)]


@pytest.mark.parametrize(
    ("zone", "change"),
    [
        ("America/New_York", datetime(2026, 3, 8, 7, 0, tzinfo=UTC)),  # 02:00 EST -> 03:00 EDT
        ("America/New_York", datetime(2026, 11, 1, 6, 0, tzinfo=UTC)),  # 02:00 EDT -> 01:00 EST
        ("Europe/Berlin", datetime(2026, 10, 25, 1, 0, tzinfo=UTC)),  # 03:00 CEST -> 02:00 CET
    ],
)
def test_dst_change_in_server_zone(zone: str, change: datetime) -> None:
    """A DST change in the server's own zone changes nothing: marks due just after it fire
    within one step of due_at, none early, and no jump is seen."""
    saved = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        with freeze_time(change - timedelta(seconds=3)) as traveller:
            machine = Machine(traveller)
            dues = [change - timedelta(seconds=1), change, change + timedelta(seconds=1.5)]
            marks = FakeMarks(*dues)
            timer = make_timer(machine, marks)
            run_for(machine, timer, 6)
    finally:
        if saved is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = saved
        time.tzset()
    assert [due for _, due in marks.fired] == dues
    for fired_at, due in marks.fired:
        assert due <= fired_at <= due + timedelta(seconds=STEP)
    assert marks.jumps == []


def test_announced_mark_is_seen_at_the_next_turn(machine: Machine) -> None:
    """A mark added and announced (data_version, NOTIFY) is picked up at the next turn,
    without waiting for the periodic re-read."""
    marks = FakeMarks()
    timer = PreciseTimer(
        marks.hooks(), wall=machine.wall, monotonic=machine.monotonic, sleep=machine.sleep,
        step_s=STEP, refresh_s=3600,
    )  # fmt: skip
    run_for(machine, timer, 1)
    due = machine.wall() + timedelta(seconds=0.3)
    marks.armed.append(due)
    marks.announced = True
    run_for(machine, timer, 1)
    ((fired_at, _),) = marks.fired
    assert due <= fired_at <= due + timedelta(seconds=STEP)


def test_unannounced_mark_is_seen_within_the_refresh(machine: Machine) -> None:
    """Without a watcher, a new mark already due is still fired within the re-read period."""
    marks = FakeMarks()
    timer = make_timer(machine, marks)
    run_for(machine, timer, 0.5)
    added = machine.wall()
    marks.armed.append(added - timedelta(seconds=5))
    run_for(machine, timer, 2)
    ((fired_at, _),) = marks.fired
    assert fired_at - added <= timedelta(seconds=1 + STEP)


def test_jump_detector_ignores_drift() -> None:
    """Sub-second disagreement between the clocks is drift, not a jump."""
    detector = JumpDetector(threshold_s=1.0)
    assert detector.observe(START, 100.0) is None
    assert detector.observe(START + timedelta(seconds=10.3), 110.0) is None
    assert detector.observe(START + timedelta(seconds=15), 111.0) == pytest.approx(3.7)


def test_reanchor_brings_interval_jobs_back_after_a_backward_jump() -> None:
    """After the clock is set back an hour, the interval sweep would wait that hour; the
    re-anchor makes it due now."""
    scheduler = BackgroundScheduler(job_defaults=JOB_DEFAULTS, timezone="UTC")
    with freeze_time(START) as traveller:
        scheduler.add_job(lambda: None, "interval", seconds=30, id="sweep")
        scheduler.start(paused=True)
        try:
            traveller.tick(timedelta(hours=-1))
            now = datetime.now(UTC)
            job = scheduler.get_job("sweep")
            assert job is not None and job.next_run_time - now > timedelta(minutes=59)
            reanchor(scheduler, now, ["sweep", "missing"])
            job = scheduler.get_job("sweep")
            assert job is not None and job.next_run_time <= now
        finally:
            scheduler.shutdown(wait=False)
