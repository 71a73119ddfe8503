"""The host drills: a `rewake sweep` process against hosts that are slow or rude, over
loopback, counting what must never happen. Used by bench/host_drills.py (the audit's figures)
and by the test suite (short forms, tests/e2e/test_sweeper_host_drills.py).

- slow host: a healthy host slower than the send queue drains. No resume may be lost, none
  may be reaped uncertain (the host answered every request within the timeout).
- dripping host: hosts that answer 200 and then a byte now and then hold some workers; the
  other marks due must still go out within the deadlines ahead of them.
- slow lookup: uncertain marks and a slow lookup route; a mark left claimed by a dead sweeper
  must be re-armed and sent within a sweep of its lease running out.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rewake.db.engine import Database
from rewake.marks import repository as mark_repo
from rewake.marks.pacing import PacingRules
from rewake.sweeper import step
from tests.hosts.example_host import ExampleHost
from tests.hosts.rough_host import MIB, RoughHost
from tests.support.slowdown import Slowdown
from tests.support.sweeper import (
    REPO,
    count_in_states,
    heartbeat_seen,
    mark_events,
    marks_by_root,
    rewake_env,
    seed_marks,
    start_sweeper,
    stop_all,
    wait_until,
)

SECRET = "drill-secret-0123456789"
UNSETTLED = ("armed", "claimed", "sending", "uncertain")
#: How long after seeding the marks fall due (the sweeper is running by then).
LEAD_S = 1.0


def wait_for_heartbeat(database: Database, timeout_s: float = 60) -> None:
    """Wait until a sweeper has written its heartbeat: the process is up and sweeping."""
    if not wait_until(lambda: heartbeat_seen(database), timeout_s, poll_s=0.1):
        raise RuntimeError("the sweeper process did not start")


@dataclass
class SlowHostResult:
    marks: int
    workers: int
    host_s: float
    timeout_s: float
    lease_s: float
    lookup: bool
    delivered: int
    double_deliveries: int
    lost: int
    uncertain_ever: int
    refused: int
    max_late_s: float
    states: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.uncertain_ever == 0 and self.double_deliveries == 0

    def report(self) -> str:
        return (
            f"slow host: {self.marks} marks due at once, {self.workers} workers, host "
            f"{self.host_s:g} s a resume, timeout {self.timeout_s:g} s, lease {self.lease_s:g} s, "
            f"lookup {'on' if self.lookup else 'off'}; in {self.seconds:.0f} s: delivered "
            f"{self.delivered}, resumes lost {self.lost}, double deliveries "
            f"{self.double_deliveries}, wrongly uncertain {self.uncertain_ever} (every request "
            f"was answered within the timeout), refused by the host {self.refused}, last "
            f"resume {self.max_late_s:.1f} s after due; final states {dict(self.states)}"
        )


def slow_host_drill(
    database_url: str,
    workdir: Path,
    *,
    marks: int = 64,
    workers: int = 16,
    host_s: float = 6.0,
    timeout_s: float = 8.0,
    lease_s: float = 13.0,
    lookup: bool = True,
    interval_s: float = 1.0,
) -> SlowHostResult:
    """`marks` due at once against a host taking `host_s` a resume, one sweeper process."""
    database = Database(database_url)
    logs = workdir / "slow-host-logs"
    logs.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    with ExampleHost(SECRET) as host:
        host.state.delay_s = host_s
        settings: dict[str, object] = {
            "executor": "webhook", "webhook_url": host.resume_template, "webhook_secret": SECRET,
            "webhook_timeout_s": timeout_s, "sweep_lease_s": lease_s, "sweep_workers": workers,
            "sweep_interval_s": interval_s,
        }  # fmt: skip
        if lookup:
            settings["webhook_lookup_url"] = host.lookup_template
        proc = start_sweeper(rewake_env(database_url, **settings), logs / "sweeper.log")
        try:
            wait_for_heartbeat(database)
            due = datetime.now(UTC) + timedelta(seconds=LEAD_S)
            roots = seed_marks(
                database, marks, prefix=f"slow-{uuid.uuid4().hex[:6]}", due_at=lambda _n: due
            )
            rounds = math.ceil(marks / workers)
            wait_until(
                lambda: count_in_states(database, UNSETTLED) == 0,
                LEAD_S + rounds * host_s + lease_s + 30,
                poll_s=0.5,
            )
        finally:
            stop_all([proc])
        seconds = time.monotonic() - began
        with host.state.lock:
            resumed = Counter(host.state.resumed)
        calls = host.calls()
    rows = marks_by_root(database, roots)
    uncertain_ever = set(mark_events(database, "mark_uncertain"))
    database.dispose()
    keys = {row.attempt_key for row in rows.values()}
    arrivals = [call.arrived for call in calls if call.key in keys]
    return SlowHostResult(
        marks=marks, workers=workers, host_s=host_s, timeout_s=timeout_s, lease_s=lease_s,
        lookup=lookup, delivered=len(keys & set(resumed)),
        double_deliveries=sum(n - 1 for n in resumed.values()),
        lost=len(keys - set(resumed)),
        uncertain_ever=sum(1 for row in rows.values() if row.id in uncertain_ever),
        refused=sum(1 for call in calls if call.status == 409),
        max_late_s=max(arrivals, default=due.timestamp()) - due.timestamp(),
        states=Counter(row.state for row in rows.values()), seconds=seconds,
    )  # fmt: skip


@dataclass
class DripResult:
    drips: int
    others: int
    workers: int
    drip_every_s: float
    drip_for_s: float
    timeout_s: float
    others_max_late_s: float
    others_on_time: bool
    drips_held_s: float
    states: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    #: How many times slower than idle the machine ran while the marks were due.
    slowdown: float = 1.0

    @property
    def allowed_late_s(self) -> float:
        """The most the other marks may wait: the rounds of deadlines ahead of them, and a
        sweep interval (1 s here) for noticing a free worker, on an idle machine; that slack
        scaled by the slowdown measured meanwhile (tests/support/slowdown.py)."""
        return math.ceil(self.drips / self.workers) * self.timeout_s + 1.0 * self.slowdown

    def report(self) -> str:
        return (
            f"dripping host: {self.drips} sends answered 200 then a byte every "
            f"{self.drip_every_s:g} s for {self.drip_for_s:g} s, {self.workers} workers, "
            f"timeout {self.timeout_s:g} s; {self.others} other marks due 1 s later went out "
            f"at most {self.others_max_late_s:.1f} s after due (allowed: "
            f"{self.allowed_late_s:.1f} s, the deadlines ahead of them and a sweep interval, "
            f"the machine {self.slowdown:.1f} times slower than idle); each dripping send held "
            f"its worker at most {self.drips_held_s:.1f} s; final states {dict(self.states)} "
            f"in {self.seconds:.0f} s"
        )


def drip_drill(
    database_url: str,
    workdir: Path,
    *,
    drips: int = 16,
    others: int = 5,
    workers: int = 16,
    drip_every_s: float = 2.0,
    drip_for_s: float = 60.0,
    timeout_s: float = 3.0,
) -> DripResult:
    """`drips` marks whose host drips its answers, `others` due a second later."""
    database = Database(database_url)
    logs = workdir / "drip-logs"
    logs.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    with RoughHost() as host:
        host.state.drip_every_s = drip_every_s
        host.state.drip_for_s = drip_for_s
        prefix = uuid.uuid4().hex[:6]
        env = rewake_env(
            database_url, executor="webhook", webhook_url=host.resume_template,
            webhook_secret=SECRET, webhook_timeout_s=timeout_s, sweep_workers=workers,
            sweep_interval_s=1,
        )  # fmt: skip
        proc = start_sweeper(env, logs / "sweeper.log")
        try:
            wait_for_heartbeat(database)
            due = datetime.now(UTC) + timedelta(seconds=LEAD_S)
            dripping = seed_marks(database, drips, prefix=f"drip-{prefix}", due_at=lambda _n: due)
            later = due + timedelta(seconds=1)
            normal = seed_marks(database, others, prefix=f"ok-{prefix}", due_at=lambda _n: later)
            with Slowdown() as slow:
                wait_until(
                    lambda: count_in_states(database, UNSETTLED) == 0,
                    LEAD_S + drip_for_s * math.ceil(drips / workers) + 30,
                    poll_s=0.5,
                )
        finally:
            stop_all([proc])
        arrived = {a.root_id: a.arrived for a in host.arrivals()}
    seconds = time.monotonic() - began
    rows = marks_by_root(database, dripping + normal)
    database.dispose()
    late = [arrived[r] - rows[r].due_at.timestamp() for r in normal if r in arrived]
    held = [
        (rows[r].updated_at - rows[r].sent_at).total_seconds()
        for r in dripping
        if rows[r].sent_at is not None
    ]
    result = DripResult(
        drips=drips, others=others, workers=workers, drip_every_s=drip_every_s,
        drip_for_s=drip_for_s, timeout_s=timeout_s,
        others_max_late_s=max(late, default=float("inf")), others_on_time=False,
        drips_held_s=max(held, default=0.0),
        states=Counter(row.state for row in rows.values()), seconds=seconds,
        slowdown=slow.ratio(),
    )  # fmt: skip
    result.others_on_time = len(late) == others and result.others_max_late_s <= (
        result.allowed_late_s
    )
    return result


@dataclass
class SlowLookupResult:
    uncertain: int
    lookup_s: float
    interval_s: float
    rearmed_late_s: float
    sent_late_s: float
    settled: int
    seconds: float = 0.0
    #: How many times slower than idle the machine ran from the lease's end to the send.
    slowdown: float = 1.0

    @property
    def on_time(self) -> bool:
        """Re-armed within one sweep interval of the lease's end, and a second of slack on an
        idle machine (scaled by the slowdown measured meanwhile, tests/support/slowdown.py)."""
        return self.rearmed_late_s <= self.interval_s + 1.0 * self.slowdown

    @property
    def sent_on_time(self) -> bool:
        """Sent within one sweep interval of the lease's end, and two seconds of slack on an
        idle machine, scaled as `on_time`'s."""
        return self.sent_late_s <= self.interval_s + 2.0 * self.slowdown

    def report(self) -> str:
        return (
            f"slow lookup: {self.uncertain} uncertain marks, a lookup route taking "
            f"{self.lookup_s:g} s each, sweeps every {self.interval_s:g} s; a mark left claimed "
            f"by a dead sweeper was re-armed {self.rearmed_late_s:.1f} s and sent "
            f"{self.sent_late_s:.1f} s after its lease ended (the machine "
            f"{self.slowdown:.1f} times slower than idle); {self.settled} of the uncertain "
            f"marks settled by lookups meanwhile, in {self.seconds:.0f} s"
        )


def slow_lookup_drill(
    database_url: str,
    workdir: Path,
    *,
    uncertain: int = 20,
    lookup_s: float = 2.9,
    interval_s: float = 5.0,
) -> SlowLookupResult:
    """`uncertain` marks the host never saw and a lookup route taking `lookup_s`; once the
    sweeper is asking about them, a mark claimed by a sweeper that died loses its lease."""
    database = Database(database_url)
    logs = workdir / "slow-lookup-logs"
    logs.mkdir(parents=True, exist_ok=True)
    prefix = uuid.uuid4().hex[:6]
    then = datetime.now(UTC) - timedelta(seconds=60)
    roots = seed_marks(database, uncertain, prefix=f"unc-{prefix}", due_at=lambda _n: then)
    claims = step.claim(database, then, limit=uncertain, sweeper_id="gone:1:x", lease_s=1)
    step.start(database, then, claims, PacingRules(100, 0), lease_s=1)
    step.housekeeping(
        database, datetime.now(UTC), expire_after_s=3600, tombstone_retention_days=365
    )
    (dead_root,) = seed_marks(database, 1, prefix=f"dead-{prefix}", due_at=lambda _n: then)
    (dead,) = step.claim(database, datetime.now(UTC), limit=1, sweeper_id="dead:2:y", lease_s=600)
    began = time.monotonic()
    with ExampleHost(SECRET) as host:
        host.state.lookup_delay_s = lookup_s
        env = rewake_env(
            database_url, executor="webhook", webhook_url=host.resume_template,
            webhook_secret=SECRET, webhook_lookup_url=host.lookup_template,
            webhook_timeout_s=lookup_s + 2, sweep_interval_s=interval_s,
        )  # fmt: skip
        proc = start_sweeper(env, logs / "sweeper.log")
        try:
            # Once the sweeper is busy asking, the dead sweeper's lease runs out.
            wait_until(lambda: bool(host.state.lookups), 60, poll_s=0.05)
            lease_end = datetime.now(UTC) + timedelta(seconds=1)
            with database.writer() as db, db.begin():
                now = datetime.now(UTC)
                mark_repo.renew_claim(db, dead.mark_id, dead.attempt_key, lease_end, now)
            with Slowdown() as slow:
                wait_until(
                    lambda: any(c.root_id == dead_root for c in host.calls()),
                    uncertain * lookup_s + 2 * interval_s + 30,
                    poll_s=0.1,
                )
        finally:
            stop_all([proc])
        sent = [c.arrived for c in host.calls() if c.root_id == dead_root]
    seconds = time.monotonic() - began
    rearmed = mark_events(database, "mark_rearmed").get(dead.mark_id)
    rows = marks_by_root(database, roots)
    database.dispose()
    return SlowLookupResult(
        uncertain=uncertain, lookup_s=lookup_s, interval_s=interval_s,
        rearmed_late_s=(
            (rearmed - lease_end).total_seconds() if rearmed is not None else float("inf")
        ),
        sent_late_s=(sent[0] - lease_end.timestamp()) if sent else float("inf"),
        settled=sum(1 for row in rows.values() if row.state != "uncertain"),
        seconds=seconds, slowdown=slow.ratio(),
    )  # fmt: skip


#: The child that sends one resume and says how its peak memory moved (ru_maxrss, KiB).
_HUGE_CHILD = """
import json, resource, sys
from datetime import UTC, datetime
from rewake.executors.base import Delivery
from rewake.executors.webhook import WebhookExecutor
now = datetime.now(UTC)
delivery = Delivery(
    mark_id=1, root_id="huge-1", run_id="r1", attempt=1, attempt_key="k-1", reset_at=now,
    resolution_s=0, due_at=now, armed_by="drill", armed_at=now, sent_at=now,
)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
executor = WebhookExecutor(sys.argv[1], "drill-secret", timeout_s=float(sys.argv[2]))
outcome = executor.deliver(delivery)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"before": before, "after": after, "state": outcome.state,
                  "kept": len(outcome.detail or "")}))
"""


@dataclass
class HugeAnswerResult:
    answer_mib: float
    written_mib: float
    peak_before_mib: float
    peak_after_mib: float
    state: str
    kept_chars: int

    @property
    def bounded(self) -> bool:
        """Far less than the answer was read, and memory grew by far less than it."""
        return (
            self.written_mib < self.answer_mib / 10
            and self.peak_after_mib - self.peak_before_mib < self.answer_mib / 10
        )

    def report(self) -> str:
        return (
            f"huge answer: a host answering 200 with {self.answer_mib:g} MiB wrote "
            f"{self.written_mib:.1f} MiB of it before rewake hung up; the sending process's "
            f"peak memory went from {self.peak_before_mib:.0f} to {self.peak_after_mib:.0f} MiB; "
            f"mark {self.state}, {self.kept_chars} characters of the answer kept"
        )


def huge_answer_drill(*, answer_mib: int = 200, timeout_s: float = 30.0) -> HugeAnswerResult:
    """One resume to a host whose answer is `answer_mib` MiB, sent by a process of its own."""
    with RoughHost() as host:
        host.state.huge_bytes = answer_mib * MIB
        child = subprocess.run(
            [sys.executable, "-c", _HUGE_CHILD, host.resume_template, str(timeout_s)],
            env=rewake_env("sqlite://"), cwd=str(REPO), capture_output=True, text=True,
            timeout=timeout_s + 30, check=True,
        )  # fmt: skip
        wait_until(lambda: "huge-1" in host.state.written, 10)
        written = host.state.written.get("huge-1", 0)
    figures = json.loads(child.stdout.strip().splitlines()[-1])
    return HugeAnswerResult(
        answer_mib=answer_mib, written_mib=written / MIB,
        peak_before_mib=figures["before"] / 1024, peak_after_mib=figures["after"] / 1024,
        state=figures["state"], kept_chars=figures["kept"],
    )  # fmt: skip
