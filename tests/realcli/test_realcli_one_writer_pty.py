"""One writer per conversation when rewake cannot reach the open Claude's terminal (issue 25),
with the real interactive Claude Code 2.1.332 on a terminal that is no tmux pane: a pty this
test holds, Claude started detached from the test's process tree (so no tmux pane is among its
ancestors, whatever terminal runs the tests).

Opus limit, menu answered "Stop and wait": Claude stays open at its prompt and will not
continue. rewake's armed resume falls due; the sweeper's `rewake run --resume-of` finds the
open Claude, cannot type into it, sends nothing and exits 8, and the mark waits (`armed`,
outcome `deferred`, the reason on record), looked at again every few seconds. Claude is closed;
the next look resumes the conversation headless. The mock counts exactly one continuation.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import struct
import subprocess
import termios
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.realcli import mock_provider as mp
from tests.realcli.realcli_drive import (
    Box,
    claude_env,
    cli_binary,
    descendants,
    end_processes,
    submit_heard,
)
from tests.realcli.realcli_install import CLAUDE
from tests.realcli.realcli_one_writer import (
    PROMPT,
    continuations,
    reset_after,
)
from tests.realcli.realcli_rewake import (
    hook_settings,
    resume_sweeper_env,
    session_of,
    sessions_of_or_empty,
)
from tests.support.sweeper import start_sweeper, stop_all

pytestmark = pytest.mark.realcli

#: How often the sweeper looks at a deferred mark again here (REWAKE_DEFER_RECHECK_S).
RECHECK_S = 3
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b."
)


class Pty:
    """Claude Code on a pty this test holds, detached (its parent gone): its output read as it
    comes, keys written to it."""

    def __init__(self, box: Box, argv: list[str], env: dict[str, str]) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 45, 140, 0, 0))
        env_args = [f"{key}={value}" for key, value in env.items()]
        # `setsid -c` makes the pty its controlling terminal; `&` and the shell's exit leave it
        # without the test as an ancestor.
        # The pty comes in as the shell's stdin (an explicit redirection: a background job's
        # stdin is /dev/null otherwise).
        detach = 'exec 3<&0; setsid -c "$@" 0<&3 1>&3 2>&3 3<&- & echo $!'
        started = subprocess.run(
            ["sh", "-c", detach, "sh", "env", "-i", *env_args, *argv],
            stdin=slave, capture_output=True, text=True,
            cwd=box.work, check=True, timeout=20,
        )  # fmt: skip
        os.close(slave)
        self.pid = int(started.stdout)
        self._master = master
        self._out: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self._out.append(chunk)

    def screen(self) -> str:
        """What it wrote lately, escapes dropped."""
        text = b"".join(self._out[-400:]).decode("utf-8", "replace")
        return _ESCAPES.sub("", text)

    def wait_for(self, pattern: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if re.search(pattern, self.screen()):
                return
            time.sleep(0.25)
        raise AssertionError(f"timed out waiting for {pattern!r}; last output:\n{self.screen()}")

    def send(self, keys: str) -> None:
        os.write(self._master, keys.encode())

    def submit(self, text: str, requests: Any) -> None:
        """Type `text`, then Enter, again only as `submit_heard` allows (what the CLI has
        written so far stands for its screen)."""

        def type_line() -> None:
            self.send(text)
            time.sleep(0.6)  # apart from the text, so that Enter is not taken as pasted
            self.send("\r")

        submit_heard(type_line, lambda: self.send("\r"), requests, lambda: len(self._out))

    def close(self) -> None:
        end_processes(descendants([self.pid]))
        with contextlib.suppress(OSError):
            os.close(self._master)


def test_stop_and_wait_on_a_terminal_rewake_cannot_reach_waits_then_resumes_headless(
    tmp_path: Path,
) -> None:
    """Opus limit, "Stop and wait", Claude open on a terminal that is no tmux pane: the mark
    waits (deferred, nothing sent, no second Claude) while Claude is open; once it is closed,
    rewake resumes headless. One continuation in all, and the mark done."""
    binary = cli_binary(CLAUDE)
    box = Box.make(tmp_path)
    with mp.running() as mock:
        env = claude_env(box, binary, mock.url, "UTC", interactive=True)
        (box.home / ".claude" / "settings.json").write_text(json.dumps(hook_settings(box)))
        sweeper_env = resume_sweeper_env(
            box, env, REWAKE_COMMAND_GRACE_S="30", REWAKE_DEFER_RECHECK_S=str(RECHECK_S)
        )
        sweeper = start_sweeper(sweeper_env, box.root / "sweeper.log")
        claude = Pty(box, [str(binary)], env)
        closed = False
        try:
            claude.wait_for(r"❯|for shortcuts", timeout=150)
            reset = reset_after(time.time())
            mock.script(mp.ANTHROPIC, mp.claude_limit(reset, "seven_day_opus"),
                        mp.answer("continued"))  # fmt: skip
            claude.submit(PROMPT, lambda: len(mock.requests(mp.ANTHROPIC)))
            claude.wait_for(r"Stop and wait", timeout=150)
            hook_log = box.root / "state" / "hook.log"
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and "auto-resume" not in (
                hook_log.read_text() if hook_log.exists() else ""
            ):
                time.sleep(0.5)
            claude.send("1")  # "Stop and wait for limit to reset"
            time.sleep(2)

            def mark() -> dict[str, Any]:
                sessions = sessions_of_or_empty(box)
                return (
                    (session_of(box, sessions[0]["root_id"]).get("mark") or {}) if sessions else {}
                )

            def waited_twice() -> dict[str, Any] | None:
                """The mark, once it was looked at twice and waits (not mid-look): armed, due
                later than the one deferral the timeline tells of (a look deferred again for
                the same reason leaves no entry of its own)."""
                told = [e for e in _timeline(box) if e["event"] == "mark_deferred"]
                found = mark()
                looked_again = (
                    len(told) == 1
                    and found.get("due_at") is not None
                    and datetime.fromisoformat(found["due_at"])
                    > datetime.fromisoformat(told[0]["detail"]["due_at"])
                )
                return found if looked_again and found.get("state") == "armed" else None

            # The mark falls due at the printed minute's end plus the resume delay: 110 to 170 s
            # after the limit, by the minute it lands in. Two looks must have come by that time
            # plus a margin for a loaded machine.
            deadline = time.time() + 60
            while time.time() < deadline and not mark().get("due_at"):
                time.sleep(0.5)
            due = mark().get("due_at")
            due_s = datetime.fromisoformat(due).timestamp() if due else time.time() + 180
            # A mark due later than the limit's minute allows would make this wait that long.
            assert due_s <= reset + 60 + 30, (due, "the reset was read for another minute")
            deadline = due_s + 10 * RECHECK_S + 60
            while time.time() < deadline and waited_twice() is None:
                time.sleep(0.5)
            held = waited_twice() or mark()
            sweep_log = (box.root / "sweeper.log").read_text()
            assert (held.get("state"), held.get("outcome")) == ("armed", "deferred"), (
                held, sweep_log, claude.screen()[-3000:],
            )  # fmt: skip
            assert f"pid {claude.pid}" in held["outcome_detail"], held
            assert "runs in no tmux pane rewake can reach" in held["outcome_detail"], held
            assert continuations(mock) == [], "a continuation was sent while Claude held it"

            claude.close()
            closed = True
            deadline = time.time() + 120
            while time.time() < deadline and mark().get("state") in ("armed", "claimed", "sending"):
                time.sleep(1)
            time.sleep(5)  # a second continuation, were one coming, would show by now
            done = mark()
        finally:
            if not closed:
                claude.close()
            stop_all([sweeper])
        sweep_log = (box.root / "sweeper.log").read_text()
        assert len(continuations(mock)) == 1, sweep_log
        assert done.get("state") == "done", (done, sweep_log)
        deferred = [e for e in _timeline(box) if e["event"] == "mark_deferred"]
        assert len(deferred) == 1, deferred


def _timeline(box: Box) -> list[dict[str, Any]]:
    sessions = sessions_of_or_empty(box)
    if not sessions:
        return []
    timeline: list[dict[str, Any]] = session_of(box, sessions[0]["root_id"]).get("timeline") or []
    return timeline
