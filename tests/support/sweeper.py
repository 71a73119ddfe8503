"""Helpers for the sweeper's tests and benches: arm marks through the real domain functions,
seed many marks in bulk, read mark states back, and run rewake processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select

from rewake import heartbeats
from rewake.context import Context
from rewake.db.engine import Database
from rewake.db.models import MarkRow, RunRow, SessionRow, TimelineRow
from rewake.marks.service import set_auto_resume
from rewake.parsers import parse
from rewake.reports.failures import FailureReport, report_failure
from tests.support.slowdown import Wait

REPO = Path(__file__).absolute().parents[2]


def context(now: datetime, *, actor: str = "alice", delay_s: int = 30) -> Context:
    return Context(now=now, actor=actor, resume_delay_s=delay_s, display_zone=None)


def arm(
    database: Database,
    root_id: str,
    *,
    message: str,
    observed_at: datetime,
    now: datetime,
    zone: str | None = None,
    run_id: str = "r1",
    attempt: int = 1,
    account_key: str | None = None,
    session_id: str | None = None,
    delay_s: int = 30,
) -> dict[str, Any]:
    """Report a failure and arm auto-resume, as the API would; the mark's JSON."""
    ctx = context(now, delay_s=delay_s)
    report = FailureReport(
        root_id=root_id, run_id=run_id, attempt=attempt, message=message,
        observed_at=observed_at, zone=zone, account_key=account_key, session_id=session_id,
    )  # fmt: skip
    with database.writer() as db, db.begin():
        report_failure(db, report, parse=parse, ctx=ctx)
        return set_auto_resume(db, root_id, enabled=True, despite_native=False, ctx=ctx)


def seed_marks(
    database: Database,
    count: int,
    *,
    due_at: Callable[[int], datetime],
    account: Callable[[int], str | None] = lambda _n: None,
    prefix: str = "s",
    batch: int = 5000,
) -> list[str]:
    """Insert `count` paused sessions with one armed mark each, in bulk; their root ids."""
    now = datetime.now(UTC)
    roots = [f"{prefix}-{n:06d}" for n in range(count)]
    with database.writer() as db, db.begin():
        for start in range(0, count, batch):
            chunk = range(start, min(count, start + batch))
            db.execute(
                insert(SessionRow),
                [
                    {"root_id": roots[n], "state": "paused", "current_run_id": "r1",
                     "current_attempt": 1, "created_at": now, "updated_at": now}
                    for n in chunk
                ],
            )  # fmt: skip
            db.execute(
                insert(RunRow),
                [
                    {"root_id": roots[n], "run_id": "r1", "status": "paused",
                     "current_attempt": 1, "created_at": now, "updated_at": now}
                    for n in chunk
                ],
            )  # fmt: skip
            db.execute(
                insert(MarkRow),
                [
                    {"root_id": roots[n], "run_id": "r1", "attempt": 1, "state": "armed",
                     "reset_at": due_at(n), "resolution_s": 0, "due_at": due_at(n),
                     "armed_by": "seed", "armed_at": now, "account_key": account(n),
                     "despite_native": False, "updated_at": now}
                    for n in chunk
                ],
            )  # fmt: skip
    return roots


def marks_by_root(database: Database, roots: Sequence[str] | None = None) -> dict[str, MarkRow]:
    """The latest mark of each session (all sessions when `roots` is None)."""
    stmt = select(MarkRow).order_by(MarkRow.id)  # type: ignore[arg-type]
    with database.reader() as db:
        rows = list(db.scalars(stmt))
    wanted = None if roots is None else set(roots)
    return {row.root_id: row for row in rows if wanted is None or row.root_id in wanted}


def rewake_env(database_url: str, **settings: object) -> dict[str, str]:
    """The environment of a rewake process: the repository on the path, REWAKE_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWAKE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    env["REWAKE_DATABASE_URL"] = database_url
    for name, value in settings.items():
        env[f"REWAKE_{name.upper()}"] = str(value)
    return env


def start_sweeper(env: dict[str, str], log: Path, *extra: str) -> subprocess.Popen[bytes]:
    """A `rewake sweep` process (as `python -m rewake sweep`), its output in `log`."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "rewake", "sweep", *extra],
            env=env, stdout=out, stderr=subprocess.STDOUT, cwd=str(REPO),
        )  # fmt: skip


@contextmanager
def sweepers(
    env: dict[str, str], count: int, logs: Path
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`count` sweeper processes, stopped with SIGTERM (then killed) afterwards."""
    logs.mkdir(parents=True, exist_ok=True)
    procs = [start_sweeper(env, logs / f"sweeper-{n}.log") for n in range(count)]
    try:
        yield procs
    finally:
        stop_all(procs)


def stop_all(procs: Sequence[subprocess.Popen[bytes]], timeout_s: float = 20) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    deadline = time.monotonic() + timeout_s
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_until(predicate: Callable[[], bool], timeout_s: float, poll_s: float = 0.1) -> bool:
    """Poll `predicate` until it holds or the wait runs out; whether it held. `timeout_s` is an
    idle machine's: past it, the wait goes on while the machine's load says it runs that many
    times slower (`load_stretch`, at most 4). Under CI's load (8 to 14 on two cores) a chain of
    rewake processes took longer than a wait made for an idle machine, and the test failed on
    its wait, not on what it checks."""
    wait = Wait(timeout_s)
    while not predicate():
        if wait.over():
            return predicate()
        time.sleep(poll_s)
    return True


def heartbeat_seen(database: Database) -> bool:
    """Whether a sweeper has written its heartbeat: the process is up and sweeping."""
    with database.reader() as db:
        return heartbeats.latest_heartbeat(db) is not None


def utc(seconds_from_now: float = 0.0) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds_from_now)


def count_in_states(database: Database, states: Sequence[str]) -> int:
    """How many marks (of every session) are in `states`: a cheap poll for settling."""
    from sqlalchemy import func

    stmt = select(func.count()).where(MarkRow.state.in_(states))  # type: ignore[attr-defined]
    with database.reader() as db:
        return int(db.scalar(stmt) or 0)


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def mark_events(database: Database, event: str) -> dict[int, datetime]:
    """When each mark's session timeline first records `event` for it, by mark id (e.g.
    mark_uncertain: every mark that was ever reaped uncertain, whatever it ended as)."""
    stmt = (
        select(TimelineRow.mark_id, TimelineRow.at)
        .where(TimelineRow.event == event)
        .order_by(TimelineRow.id)
    )
    with database.reader() as db:
        rows = db.execute(stmt).all()
    first: dict[int, datetime] = {}
    for mark_id, at in rows:
        if mark_id is not None:
            first.setdefault(int(mark_id), at)
    return first


@contextmanager
def fresh_database_url(kind: str, folder: Path) -> Iterator[str]:
    """A migrated database no other test uses, for a sweeper that claims whatever is due: a
    SQLite file in `folder`, or a PostgreSQL schema of its own (skipped when none is set)."""
    from tests.support.db import fresh_postgres_schema, migrate

    if kind == "postgres":
        with fresh_postgres_schema() as url:
            yield url
        return
    url = f"sqlite:///{folder / f'{uuid.uuid4().hex[:8]}.db'}"
    migrate(url)
    yield url
