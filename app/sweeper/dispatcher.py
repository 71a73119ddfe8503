"""One sweeper process's sends: claim what is due, start what pacing allows and a free worker
can send at once, deliver on worker threads, record each outcome.

A mark turns `sending` (its lease and its signed timestamp start then) only when a worker is
free to send it: one start moves no more claims than there are free workers, so no send waits
in a queue while its lease runs out. Claims waiting for pacing or for a worker stay `claimed`
in a local backlog, their leases renewed, so a busy account does not bounce its marks between
sweepers. A sweeper claims nothing while all its workers are busy, holds no more claims than
its workers can send within one lease (`SweeperConfig.claim_limit`), and does not claim more
marks of an account than the account may have in flight while earlier ones still wait here.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

from rewake.db.engine import Database
from rewake.db.models import MarkRow
from rewake.executors.base import Delivery, Executor, Outcome
from rewake.logs import log_event
from rewake.marks.states import MarkState
from rewake.notifications.apprise_notices import Announcer
from rewake.notifications.webhook import Notifier
from rewake.sweeper import step
from rewake.sweeper.config import SweeperConfig
from rewake.sweeper.metrics import SweeperMetrics

logger = logging.getLogger("rewake.sweeper")

#: Outcomes written per transaction at most.
RECORD_BATCH = 200


class Dispatcher:
    """Claims, paces and sends for one sweeper process. Thread-safe: the timer, the interval
    sweep and the workers all call in."""

    def __init__(
        self,
        database: Database,
        executor: Executor,
        config: SweeperConfig,
        metrics: SweeperMetrics,
        *,
        sweeper_id: str,
        clock: Callable[[], datetime],
        on_change: Callable[[], None] = lambda: None,
        notifier: Notifier | None = None,
        announcer: Announcer | None = None,
    ) -> None:
        self.database = database
        self.executor = executor
        self.config = config
        self.metrics = metrics
        self.sweeper_id = sweeper_id
        self.clock = clock
        self.on_change = on_change
        self.notifier = notifier
        self.announcer = announcer
        self._pool = ThreadPoolExecutor(config.workers, thread_name_prefix="rewake-send")
        self._lock = threading.RLock()
        self._backlog: dict[int, step.Claim] = {}
        self._retry_at: dict[int, datetime] = {}
        self._busy = 0
        self._closed = False
        self._outcomes: queue.Queue[tuple[Delivery, Outcome] | None] = queue.Queue()
        self._recorder = threading.Thread(
            target=self._record_outcomes, name="rewake-record", daemon=True
        )
        self._recorder.start()
        #: The database's clock minus this machine's, as last seen (0 on SQLite). Every instant
        #: kept here is on the database's clock.
        self.db_offset = timedelta(0)

    # -- what the timer asks -------------------------------------------------------------

    def capacity(self) -> int:
        """How many more marks this process may claim now: none while every worker is busy,
        else up to `claim_limit` in all, sends and waiting claims included. Claims held back
        by pacing, or waiting for a worker, stay claimed without one, their leases renewed."""
        with self._lock:
            if self._closed or self._busy >= self.config.workers:
                return 0
            return max(0, self.config.claim_limit - self._busy - len(self._backlog))

    def saturated_accounts(self) -> list[str]:
        """Accounts with as many claims waiting here as they may have in flight."""
        with self._lock:
            counts = Counter(c.account_key for c in self._backlog.values() if c.account_key)
        limit = self.config.pacing.max_in_flight
        return sorted(account for account, count in counts.items() if count >= limit)

    def next_wake(self) -> datetime | None:
        """When a waiting claim should be looked at again (on the database's clock): its next
        chance to start, or the time to renew its lease, whichever comes first. While every
        worker is busy only renewals count: a finished send wakes the timer (`on_change`)."""
        half_lease = timedelta(seconds=self.config.lease_s / 2)
        with self._lock:
            renewals = [claim.lease_until - half_lease for claim in self._backlog.values()]
            if self._busy >= self.config.workers:
                return min(renewals, default=None)
            return min([*self._retry_at.values(), *renewals], default=None)

    def backlog(self) -> list[step.Claim]:
        with self._lock:
            return list(self._backlog.values())

    # -- firing --------------------------------------------------------------------------

    def fire(self, now: datetime) -> int:
        """Renew, claim, start and hand to workers what is due at `now` (this machine's
        estimate of the database's clock, re-read here); how many sends started."""
        with self._lock:
            if self._closed:
                return 0
            try:
                return self._fire(self._edge(now))
            except Exception as error:  # a failed transaction is retried at the next turn
                log_event(logger, "fire_failed", logging.WARNING, error=repr(error))
                return 0

    def _edge(self, estimate: datetime) -> datetime:
        """The instant to act on: the database's clock on PostgreSQL (noting how far it is from
        this machine's, for the timer), the timer's reading on SQLite."""
        if self.database.dialect != "postgresql":
            return estimate
        local = self.clock()
        now = step.database_clock(self.database, local)
        self.db_offset = now - local
        return now

    def _fire(self, now: datetime) -> int:
        self._renew_expiring(now)
        capacity = self.capacity()
        if capacity > 0:
            claimed = step.claim_or_expire(
                self.database, now, limit=capacity, sweeper_id=self.sweeper_id,
                lease_s=self.config.lease_s, exclude_accounts=self.saturated_accounts(),
                host_unseen_s=self.config.host_unseen_s,
            )  # fmt: skip
            self._expired(claimed.expired, now)
            self.metrics.claims.inc(len(claimed.claims))
            for claim in claimed.claims:
                self._backlog[claim.mark_id] = claim
                self._retry_at[claim.mark_id] = now
        ready = [self._backlog[mark_id] for mark_id, at in self._retry_at.items() if at <= now]
        free = self.config.workers - self._busy
        if not ready or free <= 0:
            return 0
        # No more sends start than workers are free, so each leaves as it turns `sending`; the
        # claims past that stay ready here (`started.queued`) for the next free worker. The
        # clock is read again, so that the leases and sent_at do not start before the renewals
        # and the claim just made (never earlier than `now`: all of this was due by then).
        now = max(now, self._edge(self.clock() + self.db_offset))
        started = step.start(
            self.database, now, ready, self.config.pacing, lease_s=self.config.lease_s,
            limit=free,
        )  # fmt: skip
        for mark_id in started.dropped + started.released:
            self._forget(mark_id)
        poll = now + timedelta(seconds=self.config.pacing_poll_s)
        for mark_id, at in started.waiting.items():
            self._retry_at[mark_id] = poll if at is None else at
        for delivery in started.deliveries:
            self._forget(delivery.mark_id)
            self._busy += 1
            lateness = (delivery.sent_at - delivery.due_at).total_seconds()
            self.metrics.lateness.observe(max(0.0, lateness))
            self._pool.submit(self._send, delivery)
        return len(started.deliveries)

    def _expired(self, rows: list[MarkRow], now: datetime) -> None:
        """Count and notify marks expired at the claim (their host went unseen)."""
        self.metrics.expired.inc(len(rows))
        for row in rows:
            self.tell(row, now)

    def tell(self, row: MarkRow, now: datetime) -> None:
        """A mark's state changed: the notify webhook and REWAKE_NOTIFY's URLs are told (each
        picks the states it sends)."""
        if self.notifier is not None:
            self.notifier.mark_changed(row, now)
        if self.announcer is not None:
            self.announcer.mark_changed(row, now)

    def _forget(self, mark_id: int) -> None:
        self._backlog.pop(mark_id, None)
        self._retry_at.pop(mark_id, None)

    def _renew_expiring(self, now: datetime) -> None:
        """Renew the leases of waiting claims that are past half their lease."""
        margin = timedelta(seconds=self.config.lease_s / 2)
        expiring = [c for c in self._backlog.values() if c.lease_until - now < margin]
        if not expiring:
            return
        renewed, lost = step.renew(self.database, now, expiring, lease_s=self.config.lease_s)
        for claim in renewed:
            self._backlog[claim.mark_id] = claim
        for mark_id in lost:
            self._forget(mark_id)

    # -- sending -------------------------------------------------------------------------

    def _send(self, delivery: Delivery) -> None:
        """On a worker thread: deliver, then hand the outcome to the recorder."""
        try:
            outcome = self.executor.deliver(delivery)
        except Exception as error:  # whether anything left the process is unknown
            log_event(logger, "executor_crashed", logging.ERROR, error=repr(error))
            outcome = Outcome(MarkState.UNCERTAIN, "executor_error", repr(error))
        self._outcomes.put((delivery, outcome))

    def _record_outcomes(self) -> None:
        """The recorder thread: outcomes are written in batches, one transaction each, so a
        burst of sends does not become a burst of write transactions."""
        while True:
            item = self._outcomes.get()
            if item is None:
                return
            batch = [item]
            while len(batch) < RECORD_BATCH:
                try:
                    more = self._outcomes.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._record(batch)
                    return
                batch.append(more)
            self._record(batch)

    def _record(self, batch: list[tuple[Delivery, Outcome]]) -> None:
        now = self.clock()
        try:
            now = step.database_clock(self.database, now)
            rows = step.finish(self.database, now, batch, defer_s=self.config.defer_recheck_s)
        except Exception as error:  # their leases run out and the reaper says uncertain
            log_event(
                logger, "outcome_not_recorded", logging.ERROR,
                repeats=type(error).__name__, error=repr(error),
            )  # fmt: skip
            rows = [None] * len(batch)
        for (delivery, outcome), row in zip(batch, rows, strict=True):
            self.metrics.outcomes.labels(self.executor.name, outcome.state).inc()
            log_event(
                logger, "resume_sent", root_id=delivery.root_id, run_id=delivery.run_id,
                attempt=delivery.attempt, attempt_key=delivery.attempt_key, state=outcome.state,
                code=outcome.code, recorded=row is not None,
            )  # fmt: skip
            if row is not None:
                self.tell(row, now)
        accounts = {delivery.account_key for delivery, _ in batch}
        with self._lock:
            self._busy -= len(batch)
            # Sends of these accounts finished: their waiting claims may start now.
            for mark_id, claim in self._backlog.items():
                if claim.account_key in accounts:
                    self._retry_at[mark_id] = min(self._retry_at.get(mark_id, now), now)
        self.on_change()

    # -- stopping ------------------------------------------------------------------------

    def close(self, now: datetime) -> None:
        """Stop claiming, give waiting claims back, let sends in flight finish."""
        with self._lock:
            self._closed = True
            waiting = list(self._backlog.values())
            self._backlog.clear()
            self._retry_at.clear()
        if waiting:
            try:
                step.release(self.database, now, waiting)
            except Exception as error:  # their leases run out and the reaper re-arms them
                log_event(logger, "release_failed", logging.WARNING, error=repr(error))
        self._pool.shutdown(wait=True)
        self._outcomes.put(None)
        self._recorder.join(timeout=60)
