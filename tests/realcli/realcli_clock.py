"""A faked wall clock for a real CLI: libfaketime, preloaded into the CLI's process.

The CLIs read the real clock, and no zone changes its offset in most weeks of the year, so
the matrix alone cannot put a CLI next to a DST transition. libfaketime (Debian's
`faketime` / `libfaketime` packages) can: with `LD_PRELOAD=libfaketime.so.1` and
`FAKETIME=+<seconds>` every `clock_gettime` / `gettimeofday` / `time` of a dynamically linked
process (and of the processes it starts) reads the real clock moved by that many seconds. The
offset is relative, so the faked clock ticks with the real one and a test knows the faked
"now" at every moment as `time.time() + skew_s`; the mock provider shares it
(`MockProvider(skew_s=...)`). The monotonic clocks stay real (`FAKETIME_DONT_FAKE_MONOTONIC`):
timers and timeouts behave as they always do.

What it cannot reach: a statically linked binary has no dynamic loader to honour LD_PRELOAD.
Codex 0.171.0 is one (its npm package's `codex.js` starts a static-pie musl build), so a
faked-clock case skips Codex saying so; `static_binaries` finds such binaries by their ELF
program headers (no PT_INTERP), so a later pin that links dynamically runs without a change.

That the clock took effect is not assumed: `assert_clock_faked` reads the timestamps the CLI
wrote under its HOME during the run (Claude's transcript, Gemini's session and log files,
Codex's rollout) and requires every one of them to lie in the faked run's span.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.realcli.realcli_install import CODEX, Pin, binary_path, required

#: Where the library may be; REWAKE_LIBFAKETIME overrides the search.
LIBFAKETIME_ENV = "REWAKE_LIBFAKETIME"
_LIBFAKETIME_GLOBS = (
    "/usr/lib/*/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
    "/usr/lib64/faketime/libfaketime.so.1",
    "/usr/local/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/*/faketime/libfaketime.so.1",
)
#: How far a timestamp the CLI wrote may lie outside the faked span of its run (the CLIs
#: write whole-millisecond times; a minute covers any rounding and a slow start).
CLOCK_SLACK = timedelta(seconds=60)


def libfaketime() -> Path | None:
    """libfaketime.so.1, from REWAKE_LIBFAKETIME or the usual install folders."""
    configured = os.environ.get(LIBFAKETIME_ENV)
    if configured:
        return Path(configured) if Path(configured).is_file() else None
    for pattern in _LIBFAKETIME_GLOBS:
        found = sorted(Path("/").glob(pattern.removeprefix("/")))
        if found:
            return found[0]
    return None


def libfaketime_or_skip() -> Path:
    """The library, or a skip (a failure under REWAKE_REQUIRE_REALCLI=1) saying why not."""
    found = libfaketime()
    if found is not None:
        return found
    why = ("libfaketime is not installed (Debian: apt-get install faketime), so no CLI can run "
           "under a faked clock")  # fmt: skip
    if required():
        pytest.fail(f"REWAKE_REQUIRE_REALCLI=1 but {why}")
    pytest.skip(why)


_ELF_MAGIC = b"\x7fELF"
_PT_INTERP = 3


def elf_interpreter(path: Path) -> str | None:
    """The dynamic loader an ELF file asks for (PT_INTERP), "" for a static one, and None
    when `path` is no ELF file (a script)."""
    with path.open("rb") as handle:
        head = handle.read(64)
        if len(head) < 64 or head[:4] != _ELF_MAGIC:
            return None
        wide, little = head[4] == 2, head[5] == 1
        order = "<" if little else ">"
        if wide:
            (phoff,) = struct.unpack_from(order + "Q", head, 0x20)
            phentsize, phnum = struct.unpack_from(order + "HH", head, 0x36)
        else:
            (phoff,) = struct.unpack_from(order + "I", head, 0x1C)
            phentsize, phnum = struct.unpack_from(order + "HH", head, 0x2A)
        for index in range(phnum):
            handle.seek(phoff + index * phentsize)
            entry = handle.read(phentsize)
            if len(entry) < phentsize:
                break
            (p_type,) = struct.unpack_from(order + "I", entry, 0)
            if p_type != _PT_INTERP:
                continue
            if wide:
                (offset,) = struct.unpack_from(order + "Q", entry, 8)
                (size,) = struct.unpack_from(order + "Q", entry, 32)
            else:
                (offset,) = struct.unpack_from(order + "I", entry, 4)
                (size,) = struct.unpack_from(order + "I", entry, 16)
            handle.seek(offset)
            return handle.read(size).rstrip(b"\0").decode(errors="replace")
        return ""


def _script_interpreter(path: Path) -> Path | None:
    """The program a `#!` script runs under (`#!/usr/bin/env node` is node from PATH)."""
    with path.open("rb") as handle:
        first = handle.readline(256)
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env" and len(words) > 1:
        found = shutil.which(words[-1])
        return Path(found) if found else None
    return Path(words[0])


def native_binaries(pin: Pin) -> list[Path]:
    """The machine-code programs that run when the pinned CLI runs: its binary, or the
    interpreter of its script, and for Codex the native build its launcher starts."""
    binary = binary_path(pin).resolve()
    interpreter = _script_interpreter(binary)
    found = [interpreter.resolve()] if interpreter is not None else [binary]
    if pin.package == CODEX.package:
        package_root = binary_path(pin).parents[1] / "@openai"
        found += sorted(package_root.glob("codex-*/vendor/*/bin/codex"))
    return found


def static_binaries(pin: Pin) -> list[Path]:
    """The programs of the pinned CLI that LD_PRELOAD cannot reach: statically linked ones."""
    return [path for path in native_binaries(pin) if elf_interpreter(path) == ""]


def unfakeable_reason(pin: Pin) -> str | None:
    """Why libfaketime cannot fake the pinned CLI's clock, or None when it can."""
    static = static_binaries(pin)
    if not static:
        return None
    names = ", ".join(str(path) for path in static)
    return (f"{pin.package}@{pin.version} runs a statically linked binary ({names}): no dynamic "
            "loader reads LD_PRELOAD there, so libfaketime cannot fake its clock")  # fmt: skip


@dataclass(frozen=True)
class FakedClock:
    """A wall clock `skew_s` seconds ahead of the real one (whole seconds, as FAKETIME takes
    them), for a CLI process and the mock it talks to."""

    library: Path
    skew_s: int

    @classmethod
    def at(cls, library: Path, instant: datetime) -> FakedClock:
        """A clock that reads `instant` now (to within a second) and ticks on from there."""
        return cls(library, round(instant.timestamp() - datetime.now(UTC).timestamp()))

    def env(self) -> dict[str, str]:
        return {
            "LD_PRELOAD": str(self.library),
            "FAKETIME": f"{self.skew_s:+d}",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        }

    def now(self) -> datetime:
        return self.faked(datetime.now(UTC))

    def faked(self, real: datetime) -> datetime:
        """A real instant, as the faked clock read it."""
        return real + timedelta(seconds=self.skew_s)


#: ISO instants in UTC as the CLIs write them into their transcripts, sessions and logs, and
#: Claude Code's first start into ~/.claude.json (a fresh HOME per case, so this run's): on a
#: loaded machine Claude's exit has been seen to end before it flushed the transcript, leaving
#: that as the only instant it wrote.
_WRITTEN = re.compile(
    rb'"(?:timestamp|startTime|lastUpdated|firstStartTime)"\s*:\s*'
    rb'"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)"'
)


def clock_written(home: Path, limit_bytes: int = 4_000_000) -> list[datetime]:
    """Every instant the CLI wrote as a JSON timestamp into a file under `home`."""
    found = []
    for path in sorted(home.rglob("*")):
        if not path.is_file() or path.is_symlink() or path.stat().st_size > limit_bytes:
            continue
        for match in _WRITTEN.finditer(path.read_bytes()):
            text = match.group(1).decode().replace("Z", "+00:00")
            found.append(datetime.fromisoformat(text))
    return found


def assert_clock_faked(home: Path, started: datetime, ended: datetime, ran: str = "") -> None:
    """The CLI ran on the faked clock: it wrote timestamps under `home`, each within the
    faked span [started, ended] of its run (give or take CLOCK_SLACK). `ran`: how the run
    ended, for the message."""
    written = clock_written(home)
    assert written, f"the CLI wrote no timestamp under {home}: its clock cannot be checked\n{ran}"
    outside = [at for at in written if not started - CLOCK_SLACK <= at <= ended + CLOCK_SLACK]
    assert not outside, (
        f"the CLI's clock was not the faked one: it wrote {outside[0].isoformat()} while the "
        f"faked clock ran from {started.isoformat()} to {ended.isoformat()}"
    )
