"""`rewake hook claude`: Claude Code's hook, as a command.

Claude Code runs it on every prompt typed, most of them in sessions rewake never saw: it imports
the hook's own module, the store and the notices only once it knows it has something to do
(tests/unit/test_cli_budget.py holds it to its imports). It reads the clock once and passes
`now` down.

Its exit status is 0: Claude Code must never be disturbed by it. Its one exception is 2,
blocking a prompt typed while rewake resumes that conversation headless.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rewake.exits import Exit
from rewake.printable import printable
from rewake.runner.clis.hostzone import host_zone
from rewake.runner.hook.payload import MAX_STDIN_BYTES
from rewake.runner.store.base import Store
from rewake.runner.store.records import state_dir

if TYPE_CHECKING:
    from rewake.notifications.apprise_notices import Announcer, Notice

HOOK_TIMEOUT_S = 20.0
#: How long the hook waits for REWAKE_NOTIFY's notification to go out before it exits.
NOTIFY_WAIT_S = 5.0
#: Of the hook's time limit, what is kept for its own lines after the notification's wait.
NOTIFY_MARGIN_S = 1.0


def register(commands: Any) -> None:
    hook = commands.add_parser(
        "hook",
        help="report an interactive Claude Code session's failed turn, or its continuation",
        description=(
            "Read Claude Code's hook JSON on stdin: a StopFailure is reported to rewake; a "
            "UserPromptSubmit or SessionStart (resume) in a session the hook reported records "
            "that the user continued by hand, clearing an armed auto-resume. "
            "Exits 0: problems are one line on stderr (and in <state dir>/hook.log); exits 2, "
            "blocking the prompt, only while rewake resumes that conversation headless."
        ),
    )
    hook.add_argument("provider", choices=["claude"])
    hook.add_argument(
        "--auto-resume",
        action="store_true",
        help="arm the resume at once when the failure is a provider limit with a stated reset",
    )
    hook.add_argument(
        "--timeout", type=float, default=HOOK_TIMEOUT_S, help="give up after this many seconds"
    )
    hook.set_defaults(func=run_hook_command)


def run_hook_command(args: argparse.Namespace) -> int:
    """The hook, bounded in time: exit 0 within `--timeout` seconds whatever happens, except
    exit 2 to block a prompt typed while rewake resumes the conversation headless."""
    lines: list[str] = []
    blocked: list[bool] = []
    now = datetime.now(UTC)  # the hook's one reading of the clock: report, store and log
    deadline = time.monotonic() + max(args.timeout, 0.1)
    worker = threading.Thread(
        target=_hook_worker, args=(args, now, deadline, lines, blocked), daemon=True
    )
    worker.start()
    worker.join(max(deadline - time.monotonic(), 0.0))
    if worker.is_alive():
        # The report may still land; Claude Code must not wait for it. The daemon thread dies
        # with the process (a SQLite write in flight is rolled back, never half-done).
        lines.append(f"gave up after {args.timeout:g} s (store slow or stdin never closed)")
    _say(lines, now)
    # Claude Code blocks a UserPromptSubmit on exit 2 and shows stderr to the user; on a
    # SessionStart exit 2 only shows stderr, which is the warning wanted there.
    return Exit.HOOK_BLOCK if blocked else Exit.OK


def _hook_worker(
    args: argparse.Namespace, now: datetime, deadline: float, lines: list[str], blocked: list[bool]
) -> None:

    try:
        if sys.stdin is None or sys.stdin.isatty():
            lines.append("reads Claude Code's hook JSON on stdin (see docs/providers.md)")
            return
        raw = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
        if len(raw) > MAX_STDIN_BYTES:
            lines.append(f"ignored: stdin is over {MAX_STDIN_BYTES} bytes, not a payload")
            return
        announcers: list[Announcer] = []

        def announce(notice: Notice) -> None:
            # Made only for a notice: reading REWAKE_NOTIFY loads apprise, which every prompt
            # (UserPromptSubmit) would otherwise wait for.
            from rewake.runner.process.notices import announcer_from_env

            announcer = announcer_from_env(lines.append)
            if announcer is not None:
                announcer.send(notice)
                announcers.append(announcer)

        # The hook's own module loads what a report needs only once it has one to make.
        from rewake.runner.hook import claude as hook

        result = hook.run_hook(
            raw.decode("utf-8", errors="replace"),
            now=now,
            env=os.environ,
            open_store=lambda: _open_store(now),
            auto_resume=args.auto_resume,
            zone=host_zone(),
            announce=announce,
        )
        lines.extend(result.lines)
        for announcer in announcers:
            # What is left of the hook's time limit, less a margin for its own lines: a slow
            # notification service does not hold Claude Code up.
            left = deadline - time.monotonic() - NOTIFY_MARGIN_S
            announcer.close(wait_s=max(min(NOTIFY_WAIT_S, left), 0.0))
        if result.blocked:
            blocked.append(True)
    except Exception as error:  # the hook never breaks Claude: one line instead
        lines.append(f"failed: {type(error).__name__}: {error}")


def _open_store(now: datetime) -> Store:
    """The store, answering as of `now`; loaded only when the hook has something to record."""
    from rewake.runner.store.stores import open_store

    return open_store(clock=lambda: now)


def _say(lines: list[str], now: datetime) -> None:
    """Each line on stderr and appended to <state dir>/hook.log (Claude Code shows neither).
    Nothing at all when there is nothing to say: a prompt in an unknown session."""

    if not lines:
        return
    stamp = now.isoformat(timespec="seconds")
    lines = [printable(line) for line in lines]  # the store's words, a transcript's text
    for line in lines:
        print(f"rewake hook: {line}", file=sys.stderr)
    try:
        log = state_dir() / "hook.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as out:
            out.writelines(f"{stamp} {line}\n" for line in lines)
    except OSError:
        pass  # the log is a convenience; stderr already has the lines
