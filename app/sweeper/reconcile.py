"""Lookups of uncertain marks, beside the sweep rather than in it.

A lookup may take the executor's whole deadline, and a host's lookup route may be slow for all
of them; asked inside the sweep, a round of lookups held up the next sweep's reaping and
claiming for as long as it lasted (a mark left claimed by a dead sweeper waited that long to be
re-armed). So the sweep only asks for a round (`kick`), and rounds run on a thread of their
own, one at a time: a kick while a round runs is remembered, not queued twice. Each round asks
about at most `batch` marks, starts no lookup once `budget_s` has passed, and continues from
where the previous one stopped, so marks the host cannot answer yet do not keep the others
from being asked. Before `start` (a one-off sweep, `rewake sweep --once`) a kick runs the
round in the caller, after the sweep's reaping and claiming.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime

from rewake.db.engine import Database
from rewake.executors.base import Executor
from rewake.logs import log_event
from rewake.sweeper import step

logger = logging.getLogger("rewake.sweeper")


class Reconciler:
    """Runs rounds of lookups for one sweeper process."""

    def __init__(
        self,
        database: Database,
        executor: Executor,
        *,
        batch: int,
        budget_s: float,
        clock: Callable[[], datetime],
    ) -> None:
        self.database = database
        self.executor = executor
        self.batch = batch
        self.budget_s = budget_s
        self.clock = clock
        self._after_id = 0
        self._round_lock = threading.Lock()
        self._kicked = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def kick(self) -> None:
        """Ask for a round: on the reconciler's thread once started, else now, here."""
        if self._thread is not None:
            self._kicked.set()
        else:
            self.run_round()

    def run_round(self) -> step.Reconciliation | None:
        """One round of lookups (None when one is running already, or it failed)."""
        if self.batch <= 0 or not self._round_lock.acquire(blocking=False):
            return None
        try:
            ends = time.monotonic() + self.budget_s
            done = step.reconcile_uncertain(
                self.database, self.clock(), self.executor, limit=self.batch,
                after_id=self._after_id, clock=self.clock,
                keep_going=lambda: time.monotonic() < ends and not self._stopping.is_set(),
            )  # fmt: skip
            self._after_id = done.next_after_id
            return done
        except Exception as error:  # the database away for a moment: the next round retries
            log_event(
                logger, "reconcile_failed", logging.WARNING,
                repeats=type(error).__name__, error=repr(error),
            )  # fmt: skip
            return None
        finally:
            self._round_lock.release()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="rewake-lookups", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            self._kicked.wait()
            if self._stopping.is_set():
                return
            self._kicked.clear()
            self.run_round()

    def stop(self, timeout_s: float) -> None:
        """Start no more lookups; wait up to `timeout_s` for the one in flight."""
        self._stopping.set()
        self._kicked.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)
