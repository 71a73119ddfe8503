"""The faked-clock support of the real-CLI tier, without a CLI: how a statically linked binary
is told from a dynamic one, that a missing libfaketime skips (or fails under
REWAKE_REQUIRE_REALCLI=1), and that the library really moves a dynamically linked process's
clock."""

from __future__ import annotations

import struct
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import realcli_clock
from realcli_clock import FakedClock, clock_written, elf_interpreter, libfaketime_or_skip


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
    realcli_clock.assert_clock_faked(tmp_path, started, clock.now())
    with pytest.raises(AssertionError, match="not the faked one"):
        realcli_clock.assert_clock_faked(tmp_path, datetime.now(UTC), datetime.now(UTC))
