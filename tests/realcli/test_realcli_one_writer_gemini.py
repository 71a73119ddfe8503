"""One writer per conversation with the real Gemini CLI under `rewake run` (issue 25).

Gemini CLI 0.61.0 retries by itself a limit whose reset is near, so the mock serves one 310 s
ahead, on the real clock: the real `gemini -p` stops on it, and `rewake run --auto-resume`
arms the resume for after the reset. Then the person stops waiting (Ctrl-C: the mark stays
armed) and, in one case, continues the conversation by hand with Gemini's own `--resume`,
still before the reset. The reset is not waited out: the sweeper that fires the mark, a real
`rewake sweep` with the command executor, and the `rewake run --resume-of` it starts, run
under libfaketime with their clock moved just past the mark's due time, as after a wait.

The fire-time check compares the failure's observed time (stamped by `rewake run`, on the
real clock) with the rows Gemini saved (stamped by Gemini, on the real clock too); it never
reads the clock of the process that makes it, so the moved clock changes which marks are due
and nothing of what the check sees. That the sweeper's clock did move is shown by the mark
firing at all: on the real clock it is not due yet.

- continued by hand: the mark ends `superseded`, its reason naming the chat's later turn,
  nothing is sent (the mock sees one continuation, the hand's), `rewake show` says so;
- not continued (the control): the same setup resumes, once, and the mark ends `done`.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from rewake.instants import parse_instant
from rewake.runner.store import records
from tests.realcli import mock_provider as mp
from tests.realcli.realcli_clock import FakedClock, libfaketime_or_skip
from tests.realcli.realcli_drive import Box, cli_binary, gemini_env
from tests.realcli.realcli_install import GEMINI
from tests.realcli.realcli_rewake import rewake_env, session_of, wait_armed
from tests.support.sweeper import start_sweeper, stop_all, wait_until

pytestmark = pytest.mark.realcli

PROMPT = "say hello"
#: Gemini counts a wait under 300 s as a throttle and retries it by itself.
RETRY_DELAY_S = 310
#: How far past the mark's due time the sweeper's clock reads when it starts.
PAST_DUE_S = 5
#: A sitecustomize that lets Python 3.11's time.sleep work under libfaketime 0.9.10 (see it).
FAKETIME_SITE = Path(__file__).parent / "faketime_site"
SETTLED = ("done", "failed", "uncertain", "superseded", "logged", "cleared", "expired")


def continuations(mock: mp.MockProvider) -> list[mp.Seen]:
    """The conversation's turns after the limit: Gemini's streamed requests that carry the
    first prompt on (the model router's classifier requests are not turns)."""
    seen = mock.requests(mp.GEMINI)
    limit = max(i for i, s in enumerate(seen) if s.kind == "limit")
    return [
        s for s in seen[limit + 1 :]
        if "streamGenerateContent" in s.path and PROMPT in json.dumps(s.body.get("contents"))
    ]  # fmt: skip


def run_case(tmp_path: Path, *, by_hand: bool) -> dict[str, Any]:
    """Drive one case; what rewake recorded and printed, and what the mock saw."""
    library = libfaketime_or_skip()
    binary = cli_binary(GEMINI)
    box = Box.make(tmp_path)
    name = "hand-gemini" if by_hand else "net-gemini"
    with mp.running() as mock:
        # A first turn with a tool call saves the chat (one that fails on its first request
        # leaves nothing to resume), then the limit, then answers.
        mock.script(mp.GEMINI, mp.tool_call(), mp.gemini_limit(retry_delay=f"{RETRY_DELAY_S}s"),
                    mp.answer("Continued."))  # fmt: skip
        env = gemini_env(box, binary, mock.url, "UTC")
        run = subprocess.Popen(
            [sys.executable, "-m", "rewake", "run", "--provider", "gemini", "--name", name,
             "--auto-resume", "--", "gemini", "-p", PROMPT],
            cwd=box.work, env=rewake_env(box, env), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        sweeper = None
        try:
            conversation = wait_armed(box, name, run, timeout=120)
            # The person stops waiting: the mark stays armed, for a sweeper to fire.
            run.send_signal(signal.SIGINT)
            out = run.communicate(timeout=30)[0]
            mark = session_of(box, name)["mark"]
            due = parse_instant(str(mark["due_at"]))
            limit_at = mock.limit_answered_at()
            assert limit_at is not None, out
            if by_hand:
                hand = subprocess.run(
                    [str(binary), "--resume", conversation, "--prompt=go on",
                     "--output-format", "stream-json"],
                    cwd=box.work, env=env, capture_output=True, text=True, timeout=120,
                    stdin=subprocess.DEVNULL, check=False,
                )  # fmt: skip
                assert hand.returncode == 0, hand.stdout + hand.stderr
            clock = FakedClock(library, int(due.timestamp() - time.time()) + PAST_DUE_S)
            sweeper_env = rewake_env(box, env)
            sweeper_env.update(
                clock.env(), PYTHONPATH=f"{FAKETIME_SITE}:{sweeper_env['PYTHONPATH']}"
            )
            sweeper_env.update(
                REWAKE_EXECUTOR="command", REWAKE_SWEEP_INTERVAL_S="1",
                REWAKE_COMMAND_GRACE_S="30",
                REWAKE_COMMAND=json.dumps([sys.executable, "-m", "rewake", "run", "--resume-of",
                                           "{mark_id}"]),
                # The resume it starts runs on the same moved clock.
                REWAKE_PASS_ENV="LD_PRELOAD,FAKETIME,FAKETIME_DONT_FAKE_MONOTONIC,PYTHONPATH",
            )  # fmt: skip
            sweeper = start_sweeper(sweeper_env, box.root / "sweeper.log")
            settled = wait_until(
                lambda: (session_of(box, name).get("mark") or {}).get("state") in SETTLED,
                timeout_s=120, poll_s=0.5,
            )  # fmt: skip
            if settled and not by_hand:  # the resumed Gemini's turn, recorded as it ends
                wait_until(lambda: len(session_of(box, name)["runs"][0]["attempts"]) == 2
                           and session_of(box, name)["runs"][0]["attempts"][1]["status"]
                           != "running", timeout_s=120, poll_s=0.5)  # fmt: skip
            settled_by = datetime.now(UTC)
        finally:
            if sweeper is not None:
                stop_all([sweeper])
            if run.poll() is None:
                run.kill()
                run.communicate()
        show = subprocess.run(
            [sys.executable, "-m", "rewake", "show", name], cwd=box.work,
            env=rewake_env(box, env), capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        record = records.load(name, {"REWAKE_STATE_DIR": str(box.root / "state")})
        return {
            "session": session_of(box, name),
            "record_extra": record.extra if record is not None else {},
            "run_out": out,
            "run_code": run.returncode,
            "show": show.stdout + show.stderr,
            "continuations": len(continuations(mock)),
            "limit_at": datetime.fromtimestamp(limit_at, UTC),
            "due": due,
            "settled_by": settled_by,
            "sweeper_log": (box.root / "sweeper.log").read_text(),
        }


def assert_fired_early_on_the_real_clock(case: dict[str, Any]) -> None:
    """The limit was served 310 s ahead, and the mark was settled long before it fell due on
    the real clock: the sweeper's moved clock fired it, no wall wait did."""
    assert (case["due"] - case["limit_at"]).total_seconds() >= RETRY_DELAY_S, case
    assert case["settled_by"] < case["due"], (case["settled_by"], case["due"])
    # Ctrl-C left the mark armed for the sweeper (rewake run fired nothing itself).
    assert case["run_code"] == 130, case["run_out"]
    assert "stays armed" in case["run_out"], case["run_out"]


def test_gemini_continued_by_hand_is_not_resumed_again(tmp_path: Path) -> None:
    """A Gemini conversation continued by hand (`gemini --resume`) before the reset: the
    sweeper's `rewake run --resume-of` sends nothing, the mark ends superseded naming the
    chat's later turn, the mock sees one continuation (the hand's), and `rewake show` says
    who continued."""
    case = run_case(tmp_path, by_hand=True)
    assert_fired_early_on_the_real_clock(case)
    mark = case["session"]["mark"]
    assert mark["state"] == "superseded", (mark, case["sweeper_log"])
    assert mark.get("outcome") == "attempt_moved_on", mark
    detail = str(mark.get("outcome_detail"))
    # The hand's prompt is the first row after the failure in Gemini's saved chat.
    assert "a prompt was sent in this chat at" in detail, detail
    assert "after the failed attempt" in detail and "nothing was resumed" in detail, detail
    assert case["continuations"] == 1, (case["continuations"], case["sweeper_log"])
    attempts = [(a["attempt"], a["status"]) for r in case["session"]["runs"]
                for a in r["attempts"]]  # fmt: skip
    assert attempts == [(1, "failed")], attempts
    # The run's record keeps it too, for the run that reads it next.
    kept = case["record_extra"].get("superseded") or {}
    assert kept.get("attempt") == 1, kept
    assert "prompt was sent in this chat" in str(kept.get("reason")), kept
    show = " ".join(case["show"].split())  # as printed, its lines wrapped to the terminal
    assert "superseded" in show and "prompt was sent in this chat at" in show, case["show"]


def test_gemini_not_continued_is_resumed_once(tmp_path: Path) -> None:
    """The control: the same setup without the hand's turn resumes the conversation once
    (the sweeper's `--resume-of` on the moved clock), and the mark ends done."""
    case = run_case(tmp_path, by_hand=False)
    assert_fired_early_on_the_real_clock(case)
    mark = case["session"]["mark"]
    assert mark["state"] == "done", (mark, case["sweeper_log"])
    assert case["continuations"] == 1, (case["continuations"], case["sweeper_log"])
    attempts = [(a["attempt"], a["status"]) for r in case["session"]["runs"]
                for a in r["attempts"]]  # fmt: skip
    assert attempts == [(1, "failed"), (2, "completed")], (attempts, case["sweeper_log"])


def test_python_under_libfaketime_sleeps_and_waits_with_the_site_fix() -> None:
    """A Python process given the faked clock as the sweeper above is: its wall clock is moved,
    and time.sleep and a child's timed wait (which libfaketime 0.9.10 breaks for Python 3.11)
    work, on the real monotonic clock."""
    clock = FakedClock(libfaketime_or_skip(), 3600)
    code = (
        "import datetime, subprocess, time\n"
        "start = time.monotonic()\n"
        "time.sleep(0.2)\n"
        "child = subprocess.Popen(['sleep', '0.2'])\n"
        "print(child.wait(timeout=10), round(time.monotonic() - start, 1),\n"
        "      datetime.datetime.now(datetime.UTC).timestamp())\n"
    )
    env = {"PATH": "/usr/bin:/bin", **clock.env(), "PYTHONPATH": str(FAKETIME_SITE)}
    began = time.time()
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    status, slept, now = done.stdout.split()
    assert status == "0" and 0.4 <= float(slept) < 5, done.stdout
    assert began + 3600 - 5 <= float(now) <= time.time() + 3600 + 5, (began, now)
