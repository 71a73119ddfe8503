"""The precise timer: fire within a second of the earliest due_at, whatever the wall clock does.

It sleeps in short steps and re-reads the wall clock after each one, instead of sleeping until
due_at in one go: a long sleep is measured on a clock that stops during a suspend and ignores
the wall clock being set, so it would wake late. The loop also watches the distance between the
wall clock and the monotonic clock: when it changes (the clock was set, or the machine slept),
the owner is told, so that interval schedules anchored on the old wall clock are re-anchored.

Never early: a mark fires only when the wall clock (the database's clock on PostgreSQL, through
`offset`) has reached its due_at. Late by one step at most after the clock reaches it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from rewake.logs import log_event

logger = logging.getLogger("rewake.sweeper.timer")

#: The longest single sleep: how quickly a clock jump, a resume from suspend, or a due mark
#: that nobody announced is noticed.
STEP_S = 0.2
#: How often the earliest due_at is re-read even when no change was announced.
REFRESH_S = 1.0
#: A change of the wall-minus-monotonic offset above this is a jump, not drift.
JUMP_THRESHOLD_S = 1.0
#: The pause after firing: what stays due (every worker busy, an account held by pacing) is
#: looked at again this soon, without spinning.
FIRE_GAP_S = 0.05


def sleep_for(now: datetime, earliest_due: datetime | None, step_s: float = STEP_S) -> float:
    """How long to sleep before looking again: until due_at, but never longer than a step."""
    if earliest_due is None:
        return step_s
    return max(0.0, min(step_s, (earliest_due - now).total_seconds()))


class JumpDetector:
    """Notices the wall clock moving apart from the monotonic clock: a jump or a suspend."""

    def __init__(self, threshold_s: float = JUMP_THRESHOLD_S) -> None:
        self.threshold_s = threshold_s
        self._offset: float | None = None

    def observe(self, wall: datetime, monotonic: float) -> float | None:
        """The size of the jump since the last observation, in seconds (negative: backwards),
        or None when the clocks moved together."""
        offset = wall.timestamp() - monotonic
        previous, self._offset = self._offset, offset
        if previous is None:
            return None
        jump = offset - previous
        return jump if abs(jump) >= self.threshold_s else None


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class TimerHooks:
    """What the loop acts through. `fire(now)` claims and starts what is due; `earliest_due()`
    says when to fire next (re-reading the database); `changed()` says whether new marks may
    have appeared since the last call; `on_jump` hears of clock jumps."""

    fire: Callable[[datetime], object]
    earliest_due: Callable[[], datetime | None]
    changed: Callable[[], bool] = lambda: False
    on_jump: Callable[[datetime, float], None] = lambda _now, _jump: None


class PreciseTimer:
    """The loop; `step()` is one turn of it, so tests can drive it turn by turn."""

    def __init__(
        self,
        hooks: TimerHooks,
        *,
        wall: Callable[[], datetime] = utc_now,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] | None = None,
        step_s: float = STEP_S,
        refresh_s: float = REFRESH_S,
        fire_gap_s: float = FIRE_GAP_S,
        offset: Callable[[], timedelta] = lambda: timedelta(0),
    ) -> None:
        self.hooks = hooks
        self.wall = wall
        self.monotonic = monotonic
        self.step_s = step_s
        self.refresh_s = refresh_s
        self.fire_gap_s = fire_gap_s
        self.offset = offset
        self.stopping = threading.Event()
        self._sleep = sleep or (lambda seconds: self.stopping.wait(seconds) and None)
        self._jumps = JumpDetector()
        self._earliest: datetime | None = None
        self._refreshed_at: float | None = None

    def wake(self) -> None:
        """Re-read the earliest due_at at the next turn (a mark may have been added)."""
        self._refreshed_at = None

    def step(self) -> float:
        """One turn: notice jumps and new marks, fire what is due; the seconds to sleep next."""
        now = self.wall() + self.offset()
        mono = self.monotonic()
        jump = self._jumps.observe(now, mono)
        if jump is not None:
            self.hooks.on_jump(now, jump)
            self._refreshed_at = None
        if (
            self._refreshed_at is None
            or mono - self._refreshed_at >= self.refresh_s
            or self.hooks.changed()
        ):
            self._earliest = self.hooks.earliest_due()
            self._refreshed_at = mono
        if self._earliest is not None and self._earliest <= now:
            progressed = self.hooks.fire(now)
            self._refreshed_at = None  # what is due next is re-read at the next turn
            # After a fire that started sends, look again at once (the next start may be due
            # a stagger later); after one that could do nothing, pause instead of spinning.
            return 0.0 if progressed else self.fire_gap_s
        return sleep_for(now, self._earliest, self.step_s)

    def run(self) -> None:
        """Turn until `stopping` is set. A turn that fails (the database away for a moment) is
        logged and retried after a step: the timer must outlive any single error."""
        while not self.stopping.is_set():
            try:
                pause = self.step()
            except Exception as error:
                log_event(
                    logger, "timer_turn_failed", logging.WARNING,
                    repeats=type(error).__name__, error=repr(error),
                )  # fmt: skip
                self._refreshed_at = None
                pause = self.step_s
            self._sleep(pause)

    def stop(self) -> None:
        self.stopping.set()
