"""How much slower than an idle machine this one ran while a test waited on a time bound.

A bound on how late a rewake process acts (the precise timer fires within 1.5 s of due; a free
sweep worker is noticed within a sweep interval) is a promise for a machine with a core to
spare. The parallel suite runs eight workers, the real CLIs and their rewake processes on two
cores: a process ready to act there waits its turn, for seconds at a time, and no code of rewake
can act sooner than the machine lets it run. So a test that checks such a bound measures the
machine while it waits and scales the slack by what it saw, and says both when it fails.

`Slowdown` measures by doing: a daemon thread spins a few milliseconds of its own CPU time every
quarter second and records the wall time that took. The ratio is 1 on an idle machine and about
the number of runnable processes per core on a busy one (the kernel shares the cores fairly). A
structural part of a bound (the deadlines of the sends ahead in the queue) is not scaled.

A wait for an event (a server up, a resume settled) is no bound a test checks, only how long it
waits before it says the event did not come: `Wait` stretches its idle timeout by the load
average per core (`load_stretch`), which costs no thread.
"""

from __future__ import annotations

import os
import threading
import time
from types import TracebackType

#: The most a wait for an event is stretched by the machine's load (`load_stretch`).
MOST_STRETCH = 4.0


def load_stretch() -> float:
    """How many times longer than on an idle machine a wait for an event (a process up, a
    resume settled) should be allowed now: the last minute's load average per core, between 1
    and MOST_STRETCH. It costs a read of /proc/loadavg, so a wait can ask while it polls; what
    `Slowdown` measures by spinning is for the bounds a test checks, this only for how long it
    waits before it says a thing did not happen."""
    cores = len(os.sched_getaffinity(0)) or 1
    return min(MOST_STRETCH, max(1.0, os.getloadavg()[0] / cores))


class Wait:
    """A wait for an event of `timeout_s`, an idle machine's seconds: `over()` once that much
    has passed and, on a loaded machine, that much times `load_stretch()`."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.began = time.monotonic()

    def over(self) -> bool:
        waited = time.monotonic() - self.began
        return waited >= self.timeout_s and waited >= self.timeout_s * load_stretch()


class Slowdown:
    """While open, samples (instant, wall/CPU ratio) in a background thread. The instants are
    the wall clock's (time.time()), as are the due times and arrivals the bounds are about."""

    #: How often a sample is taken, and how much of the thread's own CPU time each one spins.
    PERIOD_S = 0.25
    WORK_S = 0.01

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="slowdown", daemon=True)

    def __enter__(self) -> Slowdown:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _sample(self) -> None:
        while not self._stop.wait(self.PERIOD_S):
            wall, cpu = time.perf_counter(), time.thread_time()
            while time.thread_time() - cpu < self.WORK_S:
                pass
            spent = time.thread_time() - cpu
            self.samples.append((time.time(), (time.perf_counter() - wall) / spent))

    def ratio(self, since: float | None = None, until: float | None = None) -> float:
        """The mean ratio of the samples taken in [since, until] (epoch seconds; open ends take
        every sample), never below 1: how many times slower than idle the machine ran then."""
        chosen = [
            r
            for at, r in list(self.samples)
            if (since is None or at >= since) and (until is None or at <= until)
        ]
        return max(1.0, sum(chosen) / len(chosen)) if chosen else 1.0
