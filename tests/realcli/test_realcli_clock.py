"""The faked-clock support of the real-CLI tier, without a CLI: how a statically linked binary
is told from a dynamic one, how a transition is found, how a fold is read, that a missing
libfaketime skips (or fails under REWAKE_REQUIRE_REALCLI=1), and that the library really
moves a dynamically linked process's clock."""

from __future__ import annotations

import random
import struct
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.realcli import realcli_clock
from tests.realcli.realcli_cases import draw_near_transition, named_reading, next_transitions
from tests.realcli.realcli_clock import (
    FakedClock,
    clock_written,
    elf_interpreter,
    libfaketime_or_skip,
)

NEW_YORK_2027 = datetime(2027, 1, 1, tzinfo=UTC)


def elf(tmp_path: Path, interpreter: bytes | None) -> Path:
    """A minimal 64-bit little-endian ELF file: one PT_LOAD, and a PT_INTERP naming
    `interpreter` when given."""
    headers = [(1, 0, 0)]  # PT_LOAD
    if interpreter is not None:
        headers.append((3, 64 + 56 * 2, len(interpreter) + 1))  # PT_INTERP
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 64, 0, 0, 64, 56,
                                 len(headers), 64, 0, 0)  # fmt: skip
    table = b"".join(struct.pack("<IIQQQQQQ", kind, 4, offset, 0, 0, size, size, 1)
                     for kind, offset, size in headers)  # fmt: skip
    path = tmp_path / ("dynamic" if interpreter else "static")
    path.write_bytes(header + table + (interpreter + b"\0" if interpreter else b""))
    return path


def test_elf_interpreter_tells_static_from_dynamic(tmp_path: Path) -> None:
    """A PT_INTERP names the loader that would honour LD_PRELOAD; none means static; a script
    is no ELF file at all."""
    assert elf_interpreter(elf(tmp_path, b"/lib64/ld-linux-x86-64.so.2")) == (
        "/lib64/ld-linux-x86-64.so.2"
    )
    assert elf_interpreter(elf(tmp_path, None)) == ""
    script = tmp_path / "cli.js"
    script.write_text("#!/usr/bin/env node\n")
    assert elf_interpreter(script) is None


def test_next_transitions_finds_each_change_to_the_second() -> None:
    """New York's 2027 changes at 07:00Z (forward, a gap) and 06:00Z (back, a fold), and Lord
    Howe's half-hour ones, each found at its exact instant with its length."""
    york = next_transitions("America/New_York", NEW_YORK_2027, timedelta(days=365))
    assert [(c.at, c.gap, c.length) for c in york] == [
        (datetime(2027, 3, 14, 7, tzinfo=UTC), True, timedelta(hours=1)),
        (datetime(2027, 11, 7, 6, tzinfo=UTC), False, timedelta(hours=1)),
    ]
    howe = next_transitions("Australia/Lord_Howe", NEW_YORK_2027, timedelta(days=365))
    assert [(c.at, c.gap, c.length) for c in howe] == [
        (datetime(2027, 4, 3, 15, tzinfo=UTC), False, timedelta(minutes=30)),
        (datetime(2027, 10, 2, 15, 30, tzinfo=UTC), True, timedelta(minutes=30)),
    ]
    assert next_transitions("UTC", NEW_YORK_2027) == []


def test_named_reading_is_the_second_pass_only_in_a_fold() -> None:
    """1:30 EDT (first pass of New York's fold) reads as 1:30 EST an hour later; 1:30 EST and
    times outside the fold read as themselves."""
    first = datetime(2027, 11, 7, 5, 30, 12, tzinfo=UTC)  # 01:30:12 EDT
    assert named_reading(first, "America/New_York") == first + timedelta(hours=1)
    second = datetime(2027, 11, 7, 6, 30, 12, tzinfo=UTC)  # 01:30:12 EST
    assert named_reading(second, "America/New_York") == second
    plain = datetime(2027, 11, 7, 9, 0, tzinfo=UTC)
    assert named_reading(plain, "America/New_York") == plain


@pytest.mark.parametrize("kind", ["across", "gap", "gap_dated", "short_day"])
def test_gap_draws_land_where_their_kind_says(kind: str) -> None:
    """Across a gap the run starts before it and the reset lands after it: just after for
    `gap`, a short day (under 24 h, its wall time repeated an hour ahead) for `short_day`."""
    change = next(c for c in next_transitions("Australia/Lord_Howe", NEW_YORK_2027) if c.gap)
    for seed in range(50):
        start, truth = draw_near_transition(random.Random(seed), kind, change)
        assert start < change.at < truth
        if kind in ("gap", "gap_dated"):
            assert truth - change.at <= timedelta(minutes=20)
        if kind == "short_day":
            assert timedelta(hours=23) < truth - start < timedelta(hours=24)
            earlier = truth - (timedelta(days=1) - change.length)
            assert start < earlier < change.at


@pytest.mark.parametrize("kind", ["across", "fold_first", "fold_second", "fold_now", "fold_dated"])
def test_fold_draws_land_where_their_kind_says(kind: str) -> None:
    """Around a fold the reset lands in the first pass, the second pass, or past it, and for
    `fold_now` the run starts in the first pass a few minutes of wall time after the reset's."""
    change = next(c for c in next_transitions("America/New_York", NEW_YORK_2027) if not c.gap)
    first_pass = (change.at - change.length, change.at)
    for seed in range(50):
        start, truth = draw_near_transition(random.Random(seed), kind, change)
        if kind in ("fold_first", "fold_dated"):
            assert start < first_pass[0] <= truth < first_pass[1]
        elif kind == "fold_second":
            assert start < first_pass[0] and change.at <= truth < change.at + change.length
        elif kind == "fold_now":
            assert first_pass[0] <= start < change.at <= truth < change.at + change.length
            assert timedelta(minutes=2) <= start + change.length - truth <= timedelta(minutes=8)
        else:
            assert start < first_pass[0] and truth > change.at + change.length


def test_missing_libfaketime_skips_or_fails(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:  # fmt: skip
    """No libfaketime: the faked-clock cases skip, and fail under REWAKE_REQUIRE_REALCLI=1."""
    monkeypatch.setenv(realcli_clock.LIBFAKETIME_ENV, str(tmp_path / "absent.so"))
    monkeypatch.delenv("REWAKE_REQUIRE_REALCLI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="libfaketime is not installed"):
        libfaketime_or_skip()
    monkeypatch.setenv("REWAKE_REQUIRE_REALCLI", "1")
    with pytest.raises(pytest.fail.Exception, match="REWAKE_REQUIRE_REALCLI=1"):
        libfaketime_or_skip()


def test_faked_clock_moves_a_dynamic_process(tmp_path: Path) -> None:
    """libfaketime, preloaded as the cases preload it, moves a dynamically linked process's
    wall clock to the faked instant, and the clock check tells a faked run from a real one."""
    clock = FakedClock.at(libfaketime_or_skip(), datetime(2027, 11, 7, 5, 30, tzinfo=UTC))
    started = clock.now()
    done = subprocess.run(
        [sys.executable, "-c", "import time; print(time.time())"],
        capture_output=True, text=True, check=True, timeout=30, env=clock.env(),
    )  # fmt: skip
    seen = datetime.fromtimestamp(float(done.stdout), UTC)
    assert abs(seen - started) < timedelta(seconds=30), seen
    # Written as the CLIs write their transcripts: milliseconds, "Z".
    written = seen.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    (tmp_path / "log.json").write_text(f'{{"timestamp": "{written}"}}')
    assert clock_written(tmp_path) == [datetime.fromisoformat(written)]
    # Claude Code's first start, in the ~/.claude.json it writes at start-up, counts too.
    (tmp_path / ".claude.json").write_text(f'{{"firstStartTime": "{written}", "x": 1}}')
    assert clock_written(tmp_path) == [datetime.fromisoformat(written)] * 2
    realcli_clock.assert_clock_faked(tmp_path, started, clock.now())
    with pytest.raises(AssertionError, match="not the faked one"):
        realcli_clock.assert_clock_faked(tmp_path, datetime.now(UTC), datetime.now(UTC))
