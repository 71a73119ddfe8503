"""The kill drill: sweeper processes killed with SIGKILL at random while marks fall due, and
restarted. Used by bench/kill_drill.py (a minute, 5,000 marks) and by the test suite (a short
form). Counts what must never happen (double deliveries, lost marks) and what may (uncertain
marks, only for sends in flight when a sweeper was killed)."""

from __future__ import annotations

import random
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rewake.db.engine import Database
from rewake.db.models import LIVE_STATES
from tests.hosts.example_host import ExampleHost
from tests.support.sweeper import (
    marks_by_root,
    rewake_env,
    seed_marks,
    start_sweeper,
    stop_all,
    wait_until,
)

SECRET = "drill-secret-0123456789"


@dataclass
class DrillResult:
    marks: int
    kills: int
    delivered: int
    double_deliveries: int
    lost: int
    uncertain: int
    uncertain_received: int
    uncertain_unexplained: int
    states: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    def report(self) -> str:
        return (
            f"{self.marks:,} marks, {self.kills} kill -9s in {self.seconds:.0f} s: "
            f"delivered {self.delivered:,}, double deliveries {self.double_deliveries}, "
            f"lost {self.lost}, uncertain {self.uncertain} (the host had received "
            f"{self.uncertain_received}; not explained by a kill: "
            f"{self.uncertain_unexplained}); final states {dict(self.states)}"
        )


def run_drill(
    database_url: str,
    workdir: Path,
    *,
    marks: int,
    kill_for_s: float,
    sweepers: int = 3,
    accounts: int = 50,
    seed: int = 1,
    lease_s: float = 2,
    timeout_s: float = 1,
    settle_s: float = 60,
) -> DrillResult:
    """Seed `marks` falling due over `kill_for_s`, run `sweepers` processes and kill -9 one at
    random every 0.3-1.2 s (restarting it at once), then let the survivors settle everything
    (for at most `settle_s` of an idle machine's time, which `wait_until` stretches under load:
    a mark still armed then counts as lost). A send whose sweeper lives must end within
    `timeout_s` and be recorded within `lease_s`, or it is reaped uncertain with no kill to
    explain it: both must allow for the machine's load."""
    rng = random.Random(seed)
    database = Database(database_url)
    logs = workdir / "drill-logs"
    logs.mkdir(parents=True, exist_ok=True)
    with ExampleHost(SECRET) as host:
        host.state.delay_s = 0.03  # a send takes a moment, so kills catch some in flight
        env = rewake_env(
            database_url, executor="webhook", webhook_url=host.resume_template,
            webhook_secret=SECRET, webhook_timeout_s=timeout_s, sweep_lease_s=lease_s,
            sweep_interval_s=1,
            account_max_in_flight=4, account_stagger_s=0, sweep_workers=8,
        )  # fmt: skip
        start = datetime.now(UTC) + timedelta(seconds=2)
        span_ms = int(kill_for_s * 1000)
        roots = seed_marks(
            database, marks, prefix=f"drill-{uuid.uuid4().hex[:6]}",
            due_at=lambda _n: start + timedelta(milliseconds=rng.randrange(span_ms)),
            account=lambda n: f"acct-{n % accounts}",
        )  # fmt: skip
        procs = [start_sweeper(env, logs / f"s{n}.log") for n in range(sweepers)]
        kills: list[tuple[int, datetime]] = []  # (pid, when)
        began = time.monotonic()
        try:
            while time.monotonic() - began < kill_for_s + 2:
                time.sleep(rng.uniform(0.3, 1.2))
                victim = rng.randrange(sweepers)
                procs[victim].kill()
                procs[victim].wait()
                kills.append((procs[victim].pid, datetime.now(UTC)))
                procs[victim] = start_sweeper(env, logs / f"s{victim}.log")

            def settled() -> bool:
                rows = marks_by_root(database, roots).values()
                return all(row.state not in LIVE_STATES for row in rows)

            wait_until(settled, settle_s, poll_s=0.5)
        finally:
            stop_all(procs)
        seconds = time.monotonic() - began
        rows = marks_by_root(database, roots)
        calls = host.calls()
    database.dispose()
    per_mark = Counter(call.mark_id for call in calls)
    received = set(per_mark)
    killed = dict(kills)
    lost = sum(
        1 for row in rows.values()
        if row.state in LIVE_STATES or (row.state == "done" and row.id not in received)
    )  # fmt: skip
    uncertain = [row for row in rows.values() if row.state == "uncertain"]
    unexplained = 0
    for row in uncertain:
        pid = int((row.claimed_by or "::").split(":")[1] or 0)
        killed_at = killed.get(pid)
        if killed_at is None or row.sent_at is None or killed_at < row.sent_at:
            unexplained += 1
    return DrillResult(
        marks=marks,
        kills=len(kills),
        delivered=len(received),
        double_deliveries=sum(n - 1 for n in per_mark.values()),
        lost=lost,
        uncertain=len(uncertain),
        uncertain_received=sum(1 for row in uncertain if row.id in received),
        uncertain_unexplained=unexplained,
        states=Counter(row.state for row in rows.values()),
        seconds=seconds,
    )
