"""Benchmark the sweeper, each figure against a baseline measured in the same run.

    python bench/sweep_bench.py [--database-url URL] [--quick]

1. An empty sweep (nothing due: reap, expire, reconcile, claim) with 0, 10,000 and 100,000
   armed marks waiting in the future. Goal: the 100,000 case within 3x the empty one.
2. 10,000 marks of 100 accounts falling due together, delivered by two `rewake sweep`
   processes to the example host over loopback, with pacing (2 in flight, 50 ms stagger per
   account). Reports the time; checks that pacing was never violated and nothing was early.
3. Lateness (the host's arrival minus due_at) for marks due one at a time, with one sweeper
   process. Goal: p99 under 250 ms.

The database defaults to a fresh SQLite file; pass a PostgreSQL URL to measure that instead.
--quick divides the mark counts by ten (for a smoke run).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).absolute().parent.parent
sys.path.insert(0, str(ROOT))

from rewake.db import migrations  # noqa: E402
from rewake.db.engine import Database  # noqa: E402
from rewake.db.models import LIVE_STATES  # noqa: E402
from rewake.executors.log import LogExecutor  # noqa: E402
from rewake.sweeper.config import SweeperConfig  # noqa: E402
from rewake.sweeper.metrics import SweeperMetrics  # noqa: E402
from rewake.sweeper.runtime import Sweeper  # noqa: E402
from tests.hosts.example_host import ExampleHost  # noqa: E402 - needs the path above
from tests.support.sweeper import (  # noqa: E402
    count_in_states,
    marks_by_root,
    rewake_env,
    seed_marks,
    sweepers,
    wait_until,
)

SECRET = "bench-secret-0123456789"
GOAL_EMPTY_RATIO = 3.0
#: PostgreSQL schemas this run created, dropped at the end: (base URL, schema).
SCHEMAS: list[tuple[str, str]] = []
GOAL_P99_S = 0.25
STAGGER_S = 0.05
MAX_IN_FLIGHT = 2


def fresh_database(url: str | None, workdir: Path) -> str:
    """A migrated database of its own: a new SQLite file, or a new PostgreSQL schema."""
    if url is None:
        url = f"sqlite:///{workdir / f'bench-{uuid.uuid4().hex[:6]}.db'}"
    else:
        schema = f"rewake_bench_{uuid.uuid4().hex[:8]}"
        admin = Database(url)
        with admin.engine.begin() as connection:
            connection.exec_driver_sql(f"CREATE SCHEMA {schema}")
        admin.dispose()
        SCHEMAS.append((url, schema))
        url += ("&" if "?" in url else "?") + f"options=-csearch_path%3D{schema}"
    database = Database(url)
    migrations.upgrade(database.engine)
    database.dispose()
    return url


def empty_sweep_seconds(url: str, repeats: int = 30) -> float:
    """Median time of one full sweep when nothing is due."""
    from prometheus_client import CollectorRegistry

    database = Database(url)
    sweeper = Sweeper(database, LogExecutor(), SweeperConfig(), SweeperMetrics(CollectorRegistry()))
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        sweeper.sweep(sweeper.now())
        times.append(time.perf_counter() - started)
    sweeper.dispatcher.close(sweeper.now())
    database.dispose()
    return statistics.median(times)


def bench_empty_sweep(base_url: str | None, workdir: Path, scale: int) -> bool:
    url = fresh_database(base_url, workdir)
    database = Database(url)
    far = datetime.now(UTC) + timedelta(days=3)
    results = {}
    seeded = 0
    for target in (0, 10_000 // scale, 100_000 // scale):
        if target > seeded:
            seed_marks(
                database,
                target - seeded,
                prefix=f"e{target}",
                due_at=lambda n: far + timedelta(seconds=n),
            )
            seeded = target
        results[target] = empty_sweep_seconds(url)
    database.dispose()
    base = results[0]
    print("empty sweep (nothing due), median of 30:")
    for count, seconds in results.items():
        print(f"  {count:>7,} armed marks: {seconds * 1000:7.2f} ms   {seconds / base:5.2f}x empty")
    largest = results[max(results)] / base
    ok = largest <= GOAL_EMPTY_RATIO
    verdict = "OK" if ok else "MISSED"
    print(f"  goal: {max(results):,} within {GOAL_EMPTY_RATIO}x empty -> {largest:.2f}x {verdict}")
    return ok


def bench_burst(base_url: str | None, workdir: Path, scale: int) -> bool:
    count, accounts = 10_000 // scale, 100
    url = fresh_database(base_url, workdir)
    database = Database(url)
    with ExampleHost(SECRET) as host:
        env = rewake_env(
            url, executor="webhook", webhook_url=host.resume_template, webhook_secret=SECRET,
            account_max_in_flight=MAX_IN_FLIGHT, account_stagger_s=STAGGER_S, sweep_workers=32,
        )  # fmt: skip
        due = datetime.now(UTC) + timedelta(seconds=6)
        roots = seed_marks(
            database, count, prefix="burst", due_at=lambda _n: due,
            account=lambda n: f"acct-{n % accounts}",
        )  # fmt: skip
        with sweepers(env, 2, workdir / "burst-logs"):

            def settled() -> bool:
                return count_in_states(database, LIVE_STATES) == 0

            wait_until(lambda: datetime.now(UTC) >= due, 30)
            wait_until(lambda: len(host.calls()) >= count, 900, poll_s=0.5)
            finished = datetime.now(UTC)
            wait_until(settled, 60, poll_s=0.5)
        calls = host.calls()
        marks = marks_by_root(database, roots)
    database.dispose()
    elapsed = (finished - due).total_seconds()
    early = [c for c in calls if datetime.fromtimestamp(c.arrived, UTC) < due]
    starts: dict[str, list[datetime]] = defaultdict(list)
    for mark in marks.values():
        if mark.sent_at is not None and mark.account_key is not None:
            starts[mark.account_key].append(mark.sent_at)
    tightest = min(
        (b - a).total_seconds()
        for times in starts.values()
        for a, b in zip(sorted(times), sorted(times)[1:], strict=False)
    )
    in_flight = max(host.state.max_in_flight.values())
    floor_s = (count / accounts - 1) * STAGGER_S
    per_mark = Counter(c.mark_id for c in calls)
    ok = (
        len(calls) == count and not early and in_flight <= MAX_IN_FLIGHT
        and tightest >= STAGGER_S - 1e-6 and max(per_mark.values()) == 1
    )  # fmt: skip
    baseline = burst_with_log_executor(base_url, workdir, count, accounts)
    print(f"{count:,} marks of {accounts} accounts due together, 2 sweeper processes:")
    print(f"  all delivered {elapsed:.1f} s after due ({count / elapsed:,.0f}/s); pacing floor "
          f"{floor_s:.1f} s ({count // accounts} per account x {STAGGER_S * 1000:.0f} ms) -> "
          f"{elapsed / floor_s:.2f}x the floor")  # fmt: skip
    print(f"  baseline, the log executor (no HTTP, no host): {baseline:.1f} s -> the webhook "
          f"run took {elapsed / baseline:.2f}x")  # fmt: skip
    doubles = sum(n - 1 for n in per_mark.values())
    print(f"  early: {len(early)}; most in flight per account: {in_flight} (limit "
          f"{MAX_IN_FLIGHT}); tightest start gap: {tightest * 1000:.1f} ms (stagger "
          f"{STAGGER_S * 1000:.0f} ms); double deliveries: {doubles}  "
          f"{'OK' if ok else 'VIOLATED'}")  # fmt: skip
    return ok


def burst_with_log_executor(
    base_url: str | None, workdir: Path, count: int, accounts: int
) -> float:
    """The same burst through the log executor: what the sweepers cost without any HTTP."""
    url = fresh_database(base_url, workdir)
    database = Database(url)
    env = rewake_env(
        url, executor="log", account_max_in_flight=MAX_IN_FLIGHT, account_stagger_s=STAGGER_S,
        sweep_workers=32, log_level="WARNING",
    )  # fmt: skip
    due = datetime.now(UTC) + timedelta(seconds=6)
    roots = seed_marks(
        database, count, prefix="base", due_at=lambda _n: due,
        account=lambda n: f"acct-{n % accounts}",
    )  # fmt: skip
    with sweepers(env, 2, workdir / "baseline-logs"):
        wait_until(lambda: count_in_states(database, ["logged"]) >= len(roots), 900, poll_s=0.2)
        elapsed = (datetime.now(UTC) - due).total_seconds()
    database.dispose()
    return elapsed


def bench_lateness(base_url: str | None, workdir: Path, scale: int) -> bool:
    count = max(20, 200 // scale)
    url = fresh_database(base_url, workdir)
    database = Database(url)
    with ExampleHost(SECRET) as host:
        env = rewake_env(
            url, executor="webhook", webhook_url=host.resume_template, webhook_secret=SECRET
        )
        first = datetime.now(UTC) + timedelta(seconds=5)
        gap = timedelta(milliseconds=150)
        roots = seed_marks(database, count, prefix="one", due_at=lambda n: first + n * gap)
        marks = marks_by_root(database, roots)
        due_by_id = {m.id: m.due_at for m in marks.values()}
        with sweepers(env, 1, workdir / "lateness-logs"):
            wait_until(lambda: len(host.calls()) >= count, 60 + count * 0.2, poll_s=0.5)
        calls = host.calls()
    database.dispose()
    lateness = sorted(
        c.arrived - due_by_id[c.mark_id].timestamp() for c in calls if c.mark_id in due_by_id
    )
    p50 = lateness[len(lateness) // 2]
    p99 = lateness[min(len(lateness) - 1, round(len(lateness) * 0.99) - 1)]
    ok = len(calls) == count and lateness[0] >= 0 and p99 < GOAL_P99_S
    print(f"lateness of {count} marks due one at a time, 150 ms apart (arrival at the host - due):")
    print(f"  min {lateness[0] * 1000:.0f} ms  p50 {p50 * 1000:.0f} ms  p99 {p99 * 1000:.0f} ms  "
          f"max {lateness[-1] * 1000:.0f} ms   goal p99 < {GOAL_P99_S * 1000:.0f} ms "
          f"{'OK' if ok else 'MISSED'}")  # fmt: skip
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=None, help="default: a fresh SQLite file")
    parser.add_argument("--quick", action="store_true", help="a tenth of the marks")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    with tempfile.TemporaryDirectory(prefix="rewake-bench-") as tmp:
        workdir = Path(tmp)
        print(f"database: {args.database_url or 'SQLite file'}")
        results = [
            bench_empty_sweep(args.database_url, workdir, scale),
            bench_burst(args.database_url, workdir, scale),
            bench_lateness(args.database_url, workdir, scale),
        ]
        for base, schema in SCHEMAS:
            admin = Database(base)
            with admin.engine.begin() as connection:
                connection.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
            admin.dispose()
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
