"""For a Python 3.11+ process under libfaketime 0.9.10 (Debian's) with real monotonic clocks.

`time.sleep` calls `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, ...)` since Python 3.11,
and libfaketime 0.9.10 with `FAKETIME_DONT_FAKE_MONOTONIC=1` moves that deadline as if it were
a faked time: the kernel gets a negative one and every sleep fails with EINVAL (libfaketime
issue 426). With the monotonic clocks faked too, timed waits on them hang instead. So the
monotonic clocks stay real and, in a process that has libfaketime preloaded, `time.sleep`
waits through `select` with a relative timeout, which libfaketime leaves alone: the same wait,
on the same real clock. The wall clock, the one the faked-clock tests move, is untouched.

It is on PYTHONPATH only for the processes a test runs under the faked clock
(tests/realcli/test_realcli_one_writer_gemini.py), and does nothing elsewhere.
"""

from __future__ import annotations

import operator
import os
import select
import time
from typing import SupportsIndex

if "faketime" in os.environ.get("LD_PRELOAD", "") and os.environ.get("FAKETIME"):

    def _sleep(secs: float | SupportsIndex, /) -> None:
        seconds = secs if isinstance(secs, float) else float(operator.index(secs))
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            select.select([], [], [], left)

    time.sleep = _sleep
