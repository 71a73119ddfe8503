"""`rewake run --auto-resume` waiting in the foreground for its mark to fall due.

When a sweeper is alive (a heartbeat within the last 90 s, as /readyz counts them) and the
executor setting is `command`, rewake run only watches the mark: the sweeper fires it and its
`rewake run --resume-of` runs the CLI. A heartbeat does not say which executor its sweeper runs,
so the local setting (REWAKE_EXECUTOR) is the best knowledge there is: when it is not `command`,
a sweeper would only log or post the resume, and rewake run says so and fires the mark itself at
the due time, racing that sweeper through the same claim (whoever claims first fires it; if the
sweeper wins, the mark ends `logged` and nothing runs, which rewake run reports).
When no sweeper is alive, and the store is the local database, rewake run fires the mark itself
through the sweeper's own steps (`claim_or_expire` for this mark only, then `start`, which
commits `sending` before anything runs): every transition is the same compare-and-set, so if a
sweeper starts meanwhile exactly one of them wins. With an HTTP store the service's sweeper
fires it, and rewake run polls the mark.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO

from rewake.executors.base import Delivery, Outcome
from rewake.instants import local_clock, parse_instant
from rewake.reports.banners import describe_wait
from rewake.runner.process.guard import SessionLock
from rewake.runner.store import records
from rewake.runner.store.stores import JSON, LocalStore, Store
from rewake.sweeper import step
from rewake.sweeper.config import SweeperConfig

#: Mark states that will not change by themselves any more (uncertain waits for a person).
SETTLED = ("done", "failed", "uncertain", "superseded", "logged", "cleared", "expired")


@dataclass(frozen=True)
class Fire:
    """This process claimed the mark and moved it to `sending`: it must run the resume now and
    record how the send ended (`finish`)."""

    store: LocalStore
    delivery: Delivery


@dataclass(frozen=True)
class Settled:
    """The mark ended without this process firing it: fired by a sweeper, cleared, expired.
    With `taken_over`, the mark this process armed is gone and `mark` is another attempt's
    (or the record moved past it): this process must not fire anything, and `taken_over` says
    what happened in words."""

    mark: JSON
    taken_over: str | None = None


def utc_now() -> datetime:
    return datetime.now(UTC)


def is_terminal(out: IO[str]) -> bool:
    """Whether `out` is a terminal (the countdown is then one line updated in place)."""
    try:
        return out.isatty()
    except (AttributeError, ValueError, OSError):  # a closed or odd stream: plain lines
        return False


def time_left(due: datetime, now: datetime) -> str:
    """`1:59:58` (hours, minutes, seconds left), `2 d 3:04:05` past a day, `0:00:00` once due."""
    seconds = max(0, int((due - now).total_seconds() + 0.999))  # never says 0 before it is due
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    clock = f"{hours}:{rest // 60:02d}:{rest % 60:02d}"
    return f"{days} d {clock}" if days else clock


#: On a terminal: back to the line's start, and clear what the last refresh left after it.
REWRITE, CLEAR_TO_END = "\r", "\x1b[K"


class Countdown:
    """The wait's countdown. On a terminal (`live`), one line rewritten in place about once a
    second: the time left and the due time in local time. Elsewhere (a log, a pipe), one plain
    line every `every_s` seconds and no escape sequence, so a log stays readable. Time is what
    `show` is given (the caller reads the clock), so a test pins the cadence."""

    def __init__(self, out: IO[str], *, live: bool, every_s: float = 60.0) -> None:
        self.out = out
        self.live = live
        self.every_s = 1.0 if live else every_s
        self._shown_at: datetime | None = None
        self._open = False  # a live line is on the screen, not yet ended

    def show(self, due: datetime, now: datetime) -> None:
        """Print or refresh the line if it is time to (a clock set back counts as time)."""
        if self._shown_at is not None:
            elapsed = (now - self._shown_at).total_seconds()
            if 0 <= elapsed < self.every_s:
                return
        self._shown_at = now
        try:
            if self.live:
                self.out.write(
                    f"{REWRITE}⏳ auto-resume in {time_left(due, now)}, due at {local_clock(due)}"
                    f" · Ctrl-C stops waiting and leaves the mark armed{CLEAR_TO_END}"
                )
                self._open = True
            else:
                wait = describe_wait(due, now) if due > now else "now"
                self.out.write(
                    f"⏳ auto-resume due at {local_clock(due)} ({wait}); Ctrl-C stops waiting "
                    "and leaves the mark armed\n"
                )
            self.out.flush()
        except OSError:
            pass  # the terminal hung up: waiting goes on

    def end(self) -> None:
        """End a live line, so that what is printed next starts on a line of its own."""
        if self._open:
            self._open = False
            try:
                self.out.write("\n")
                self.out.flush()
            except OSError:
                pass


def fires_itself(store: Store) -> bool:
    """Whether this process fires the mark (else a sweeper or the service does): on the local
    database, unless a sweeper seen there lately resumes marks (its heartbeat says which
    executor it runs; this process's own REWAKE_EXECUTOR says nothing about it)."""
    if not isinstance(store, LocalStore):
        return False
    return store.what_sweepers_will_do() != "resume"


def resume_path(store: Store) -> list[str]:
    """Who will run the resume, in words, for the terminal."""
    if not isinstance(store, LocalStore):
        return ["the service's sweeper fires the resume; rewake run watches the mark"]
    will = store.what_sweepers_will_do()
    if will == "nothing":
        return ["no sweeper is running: rewake run fires the resume itself at the due time"]
    if will == "resume":
        return ["a sweeper is running: it fires the resume; rewake run watches the mark"]
    return [
        "warning: the sweepers running here log a due mark instead of resuming it: rewake run "
        "fires it itself at the due time, but if a sweeper claims it first the resume is only "
        "logged. Run the sweeper with the command executor (`rewake setup` installs one), or "
        "stop it",
    ]


def self_fire(store: LocalStore, mark_id: int, now: datetime) -> Fire | None:
    """Claim and start this one mark as a sweeper would; None when another writer won (or
    pacing holds it, in which case the claim is given back)."""

    config = SweeperConfig.from_settings(store.settings)
    database = store.database
    now = step.database_clock(database, now)
    claimed = step.claim_or_expire(
        database, now, limit=1, sweeper_id=f"rewake-run:{socket.gethostname()}:{os.getpid()}",
        lease_s=config.lease_s, host_unseen_s=config.host_unseen_s, only_ids=[mark_id],
    )  # fmt: skip
    if not claimed.claims:
        return None
    started = step.start(database, now, claimed.claims, config.pacing, lease_s=config.lease_s)
    if started.deliveries:
        return Fire(store, started.deliveries[0])
    waiting = [claim for claim in claimed.claims if claim.mark_id in started.waiting]
    if waiting:
        step.release(database, now, waiting)
    return None


def finish(fire: Fire, now: datetime, state: str, code: str, detail: str | None) -> None:
    """Record how the resume this process fired ended (a no-op when the resumed attempt's
    own report already settled the mark)."""

    database = fire.store.database
    outcome = Outcome(state, code, detail)  # type: ignore[arg-type]
    step.finish(database, step.database_clock(database, now), [(fire.delivery, outcome)])


def moved_on(root_id: str, mark: JSON, attempt: int | None) -> str | None:
    """Why firing `mark` here would resume the wrong attempt (None when it would not): the
    mark must resume `attempt`, and the record on disk must still be at that attempt (a
    resume run by another process saves its attempt number before it starts the CLI)."""

    if attempt is None:
        return None
    if mark.get("attempt") != attempt:
        return (f"mark {mark.get('id')} resumes attempt {mark.get('attempt')}, not attempt "
                f"{attempt}, which this run armed it for")  # fmt: skip
    record = records.load(root_id)
    if record is not None and record.attempt != attempt:
        return (f"the session's record is at attempt {record.attempt}: another rewake run "
                f"resumed attempt {attempt} already")  # fmt: skip
    return None


#: The longest a waiting rewake run goes without asking the store: a cancel, a manual resume
#: or auto-resume turned off is seen within this long.
MAX_POLL_S = 60.0


def poll_interval(due: datetime, now: datetime, poll_s: float) -> float:
    """How long to go between two looks at the mark: `poll_s` once it is due, and half the time
    left before (at least `poll_s`, at most MAX_POLL_S): the mark cannot fire before it is due,
    and hours of waiting against a service then cost one request a minute, not one every
    `poll_s` (the service's access log filled with them)."""
    ahead = (due - now).total_seconds()
    if ahead <= 0:
        return poll_s
    return min(MAX_POLL_S, max(poll_s, ahead / 2))


def wait_for_mark(
    store: Store,
    root_id: str,
    mark: JSON,
    *,
    out: IO[str],
    clock: Callable[[], datetime] = utc_now,
    sleep: Callable[[float], None] = time.sleep,
    poll_s: float = 2.0,
    countdown_s: float = 60.0,
    lock: SessionLock | None = None,
    attempt: int | None = None,
    monotonic: Callable[[], float] = time.monotonic,
) -> Fire | Settled:
    """Wait until the mark is fired (here or by a sweeper) or otherwise settled. With `lock`,
    the session's lock is taken before claiming, and kept only when this process fires.

    The store answers with the session's mark (live, else latest), which need not be the one
    that was armed: a sweeper's `--resume-of` may have resumed it, failed on a new limit and
    armed the next one between two polls. Another mark id therefore settles the wait, and
    `attempt` (the attempt whose failure armed `mark`, as the caller's record says) is checked
    against the mark and the record on disk before this process fires anything."""
    countdown = Countdown(out, live=is_terminal(out), every_s=countdown_s)
    try:
        return _watch(store, root_id, mark, countdown, clock=clock, sleep=sleep, poll_s=poll_s,
                      lock=lock, attempt=attempt, monotonic=monotonic)  # fmt: skip
    finally:
        countdown.end()


def _watch(
    store: Store,
    root_id: str,
    mark: JSON,
    countdown: Countdown,
    *,
    clock: Callable[[], datetime],
    sleep: Callable[[float], None],
    poll_s: float,
    lock: SessionLock | None,
    attempt: int | None,
    monotonic: Callable[[], float],
) -> Fire | Settled:
    """wait_for_mark's loop: the countdown on every turn, the store every `poll_interval`."""
    armed_id = mark.get("id")
    polled_at = float("-inf")
    while True:
        now = clock()
        due = parse_instant(str(mark["due_at"]))
        countdown.show(due, now)
        if now >= due or monotonic() - polled_at >= poll_interval(due, now, poll_s):
            polled_at = monotonic()
            mark = store.get_mark(root_id)
            state = mark.get("state")
            if mark.get("id") not in (armed_id, None):
                # The armed mark ended (it was resumed) and a later attempt owns this one:
                # firing it here would resume that attempt from this process's stale record.
                return Settled(mark, taken_over=(
                    f"mark {armed_id} was resumed elsewhere, and attempt {mark.get('attempt')} "
                    f"now owns mark {mark.get('id')} ({state})"
                ))  # fmt: skip
            if state in SETTLED:
                return Settled(mark)
            due = parse_instant(str(mark["due_at"]))
            if state == "armed" and now >= due and fires_itself(store):
                assert isinstance(store, LocalStore)
                # Lock first, then claim: a manual resume holding the lock means the mark is
                # being cleared, and a claim taken then could not be run here.
                if lock is None or lock.try_acquire("firing its auto-resume"):
                    # Under the lock: no other rewake run is writing the record meanwhile.
                    moved = moved_on(root_id, mark, attempt)
                    if moved is not None:
                        if lock is not None:
                            lock.release()
                        return Settled(mark, taken_over=moved)
                    fired = self_fire(store, int(mark["id"]), now)
                    if fired is not None:
                        return fired
                    if lock is not None:
                        lock.release()
        # Short sleeps that re-read the wall clock: the mark fires within a second of due_at.
        ahead = (due - now).total_seconds()
        sleep(min(0.25, ahead) if ahead > 0 else min(poll_s, 0.5))
