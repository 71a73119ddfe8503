"""The sweeper process: APScheduler for the interval sweep and the heartbeat, the precise timer
for due marks, worker threads for sends, and a thread for lookups of uncertain marks (so a slow
lookup route never holds up the sweep's reaping and claiming).

APScheduler 3.11 runs with an in-memory job store (never shared between processes: the marks
table is the only source of truth), in UTC, with `misfire_grace_time=None` (a sweep missed
during a suspend still runs, once: `coalesce`, one instance at a time). Its interval jobs are
anchored on the wall clock, so when the timer sees the clock jump or the machine wake from a
suspend, it re-anchors them to run now: a clock set back an hour would otherwise stall the
sweep for that hour.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from apscheduler.executors.pool import ThreadPoolExecutor as SchedulerThreads
from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import BaseScheduler

from rewake.db.engine import Database
from rewake.executors.base import Executor
from rewake.logs import log_event
from rewake.notifications.apprise_notices import Announcer
from rewake.notifications.webhook import Notifier
from rewake.sweeper import step
from rewake.sweeper.config import SweeperConfig
from rewake.sweeper.dispatcher import Dispatcher
from rewake.sweeper.metrics import SweeperMetrics
from rewake.sweeper.reconcile import Reconciler
from rewake.sweeper.timer import PreciseTimer, TimerHooks, utc_now
from rewake.sweeper.watch import ChangeWatcher, PollingWatcher

logger = logging.getLogger("rewake.sweeper")

JOB_DEFAULTS = {"coalesce": True, "max_instances": 1, "misfire_grace_time": None}


def reanchor(scheduler: BaseScheduler, now: datetime, job_ids: Iterable[str]) -> None:
    """Make the interval jobs run now: after a clock jump their next run is computed from the
    old wall clock (an hour away after the clock is set back an hour)."""
    for job_id in job_ids:
        if scheduler.get_job(job_id) is not None:
            scheduler.modify_job(job_id, next_run_time=now)


def new_sweeper_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Sweeper:
    """One sweeper: `sweep(now)` is the interval job's body; `start()`/`stop()` run it all."""

    def __init__(
        self,
        database: Database,
        executor: Executor,
        config: SweeperConfig,
        metrics: SweeperMetrics,
        *,
        clock: Callable[[], datetime] = utc_now,
        watcher: ChangeWatcher | None = None,
        notifier: Notifier | None = None,
        announcer: Announcer | None = None,
        sweeper_id: str | None = None,
    ) -> None:
        self.database = database
        self.executor = executor
        self.config = config
        self.metrics = metrics
        self.clock = clock
        self.watcher = watcher or PollingWatcher()
        self.notifier = notifier
        self.announcer = announcer
        self.sweeper_id = sweeper_id or new_sweeper_id()
        self.dispatcher = Dispatcher(
            database, executor, config, metrics, sweeper_id=self.sweeper_id, clock=clock,
            on_change=self._wake, notifier=notifier, announcer=announcer,
        )  # fmt: skip
        self.reconciler = Reconciler(
            database, executor, batch=config.reconcile_batch, budget_s=config.interval_s,
            clock=clock,
        )  # fmt: skip
        self.timer = PreciseTimer(
            TimerHooks(
                fire=self.dispatcher.fire,
                earliest_due=self.next_fire,
                changed=self.watcher.changed,
                on_jump=self.clock_jumped,
            ),
            wall=clock,
            step_s=config.step_s,
            offset=lambda: self.dispatcher.db_offset,
        )
        self.scheduler = BackgroundScheduler(
            jobstores={"default": MemoryJobStore()},
            executors={"default": SchedulerThreads(2)},
            job_defaults=JOB_DEFAULTS,
            timezone="UTC",
        )
        self._timer_thread: threading.Thread | None = None

    # -- the jobs ------------------------------------------------------------------------

    def sweep(self, now: datetime) -> None:
        """The safety net: reap lost leases, expire stale marks, purge old tombstones, claim
        whatever is due that the timer has not, then ask for a round of lookups of uncertain
        marks (beside the sweep once started: see rewake.sweeper.reconcile)."""
        with self.metrics.sweep_duration.time():
            done = step.housekeeping(
                self.database,
                now,
                expire_after_s=self.config.expire_after_s,
                tombstone_retention_days=self.config.tombstone_retention_days,
                host_unseen_s=self.config.host_unseen_s,
            )
            if done.purged_tombstones:
                log_event(logger, "tombstones_purged", count=done.purged_tombstones)
            self.metrics.reaped.labels("armed").inc(len(done.rearmed))
            self.metrics.reaped.labels("uncertain").inc(len(done.uncertain))
            self.metrics.expired.inc(len(done.expired))
            for row in done.uncertain + done.expired:
                self.dispatcher.tell(row, now)
            self.dispatcher.fire(now)
        self.reconciler.kick()

    def now(self) -> datetime:
        """The edge: the database's clock on PostgreSQL, this machine's on SQLite."""
        return step.database_clock(self.database, self.clock())

    def sweep_job(self) -> None:
        self.sweep(self.now())

    def heartbeat_job(self) -> None:
        step.heartbeat(
            self.database, self.now(), self.sweeper_id, host=socket.gethostname(),
            pid=os.getpid(), executor=self.executor.name,
        )  # fmt: skip

    # -- what the timer calls ------------------------------------------------------------

    def next_fire(self) -> datetime | None:
        """When the timer should fire next: the earliest due mark this process could claim,
        or a waiting claim's next look, whichever comes first."""
        wakes = [self.dispatcher.next_wake()]
        if self.dispatcher.capacity() > 0:
            due = step.earliest_due(self.database, self.dispatcher.saturated_accounts())
            wakes.append(due)
        return min((w for w in wakes if w is not None), default=None)

    def clock_jumped(self, now: datetime, jump_s: float) -> None:
        log_event(logger, "clock_jumped", logging.WARNING, seconds=round(jump_s, 3))
        reanchor(self.scheduler, now, ("sweep", "heartbeat"))

    def _wake(self) -> None:
        self.timer.wake()

    # -- running -------------------------------------------------------------------------

    def start(self) -> None:
        now = self.clock()
        self.scheduler.add_job(
            self.heartbeat_job, "interval", seconds=self.config.heartbeat_s, id="heartbeat",
            next_run_time=now,
        )  # fmt: skip
        self.scheduler.add_job(
            self.sweep_job, "interval", seconds=self.config.interval_s, id="sweep",
            jitter=self.config.jitter_s, next_run_time=now + timedelta(seconds=0.1),
        )  # fmt: skip
        self.reconciler.start()
        self.scheduler.start()
        self._timer_thread = threading.Thread(
            target=self.timer.run, name="rewake-timer", daemon=True
        )
        self._timer_thread.start()
        log_event(
            logger, "sweeper_started", sweeper_id=self.sweeper_id, executor=self.executor.name
        )

    def stop(self) -> None:
        self.timer.stop()
        if self._timer_thread is not None:
            self._timer_thread.join(timeout=10)
        if self.scheduler.running:
            self.scheduler.shutdown(wait=True)
        self.dispatcher.close(self.now())
        self.reconciler.stop(timeout_s=(self.config.send_timeout_s or 5.0) + 1.0)
        self.watcher.close()
        self.executor.close()
        if self.notifier is not None:
            self.notifier.close()
        if self.announcer is not None:
            self.announcer.close()
        log_event(logger, "sweeper_stopped", sweeper_id=self.sweeper_id)
