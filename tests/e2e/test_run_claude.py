"""`rewake run` supervising the stand-in `claude`: a limit, the foreground auto-resume, a
missing conversation, a fresh start on request, an allowed_warning that is no stop, a sign-in
stop, and Ctrl-C. Real processes, a real SQLite file, state in tmp_path."""

from __future__ import annotations

import os
import re
import signal
import subprocess

import pytest

from tests.support.run import RunEnv, attempts_of, epoch_in, first_event_session_id, run_env
from tests.support.sweeper import wait_until

__all__ = ["run_env"]

TASK = "fix the tests"


def test_limit_then_one_foreground_resume_after_the_reset(run_env: RunEnv) -> None:
    """A limit with a stated reset and --auto-resume: rewake run waits, fires its own mark once
    at the reset, resumes with `-p --resume <id>`, and records the id the CLI changed to."""
    reset = epoch_in(2)
    run_env.scenario({"do": "limit", "resets_at": reset}, {"do": "success"})
    done = run_env.rewake("run", "--auto-resume", "--name", "s1", "--", "claude", "-p", TASK)
    assert done.returncode == 0, done.stdout + done.stderr
    calls = run_env.invocations()
    assert len(calls) == 2
    first, resume = calls
    pinned = first["argv"][first["argv"].index("--session-id") + 1]
    assert first["argv"][-2:] == ["--", TASK]
    assert resume["argv"][:3] == ["-p", "--resume", pinned]
    assert "--session-id" not in resume["argv"]
    assert resume["at"] >= reset  # never before the stated reset
    assert resume["cwd"] == first["cwd"] == str(run_env.work)
    changed = first_event_session_id(run_env.log("s1", 2))
    assert changed is not None and changed != pinned
    assert run_env.record("s1")["cli_session_id"] == changed
    session = run_env.session("s1")
    assert session["mark"]["state"] == "done"
    assert [(a["attempt"], a["status"]) for a in attempts_of(session)] == [
        (1, "failed"),
        (2, "completed"),
    ]
    assert "auto-resume armed" in done.stdout and "firing auto-resume" in done.stdout
    assert run_env.log("s1", 1).read_text().count('"type": "rate_limit_event"') == 1


def test_allowed_warning_is_no_stop_and_nothing_is_resumed(run_env: RunEnv) -> None:
    """An allowed_warning rate-limit event on a run that ends well is not a failure: no report,
    no mark, one invocation, exit 0."""
    run_env.scenario({"do": "warning"})
    done = run_env.rewake("run", "--auto-resume", "--name", "w1", "--", "claude", "-p", TASK)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(run_env.invocations()) == 1
    session = run_env.session("w1")
    assert [(a["attempt"], a["status"]) for a in attempts_of(session)] == [(1, "completed")]
    assert session["mark"]["state"] is None
    assert "approaching the five_hour limit" in done.stdout


def test_missing_conversation_on_auto_resume_fails_the_mark(run_env: RunEnv) -> None:
    """The conversation is gone at the automatic resume: the mark ends failed with
    conversation_missing, the banner says so, and nothing fresh starts without being asked."""
    run_env.scenario({"do": "limit", "resets_at": epoch_in(1), "forget": True}, {"do": "success"})
    done = run_env.rewake("run", "--auto-resume", "--name", "m1", "--", "claude", "-p", TASK)
    assert done.returncode != 0
    assert len(run_env.invocations()) == 2  # the first run and the one resume; no fresh start
    session = run_env.session("m1")
    mark = session["mark"]
    assert (mark["state"], mark["outcome"]) == ("failed", "conversation_missing")
    failure = attempts_of(session)[1]["failure"]
    assert failure["failure_kind"] == "conversation_missing"
    assert "conversation not found" in done.stdout
    assert "--fresh-if-missing" in done.stdout


def test_fresh_if_missing_starts_the_task_afresh_after_a_warning(run_env: RunEnv) -> None:
    """With --fresh-if-missing, a missing conversation at the resume starts the original task
    in a new conversation on the same directory, after a warning line."""
    run_env.scenario({"do": "limit", "resets_at": epoch_in(1), "forget": True}, {"do": "success"})
    done = run_env.rewake(
        "run", "--auto-resume", "--fresh-if-missing", "--name", "f1", "--", "claude", "-p", TASK
    )
    assert done.returncode == 0, done.stdout + done.stderr
    calls = run_env.invocations()
    assert len(calls) == 3
    fresh = calls[2]["argv"]
    assert "--resume" not in fresh and "--session-id" in fresh and fresh[-1] == TASK
    assert calls[2]["cwd"] == str(run_env.work)
    out = done.stdout
    assert out.index("⚠") < out.index("attempt 2: claude -p --output-format")
    assert run_env.session("f1")["mark"]["state"] == "done"


def test_sign_in_stop_is_reported_and_never_armed(run_env: RunEnv) -> None:
    """A login_required stop is recorded with its banner; --auto-resume arms nothing."""
    run_env.scenario({"do": "login"})
    done = run_env.rewake("run", "--auto-resume", "--name", "l1", "--", "claude", "-p", TASK)
    assert done.returncode == 1
    session = run_env.session("l1")
    assert attempts_of(session)[0]["failure"]["failure_kind"] == "login_required"
    assert session["mark"]["state"] is None
    assert "sign-in needed" in done.stdout


def test_ctrl_c_stops_the_cli_and_leaves_the_session_resumable(run_env: RunEnv) -> None:
    """SIGINT to rewake run stops the CLI's process group, records the attempt as halted, exits
    130; `rewake run --resume NAME` then resumes the conversation."""
    run_env.scenario({"do": "hang"}, {"do": "success"})
    proc = run_env.start("run", "--name", "c1", "--", "claude", "-p", TASK)
    pidfile = run_env.tmp / "standin.pid"
    try:
        assert wait_until(pidfile.exists, 20)
        child = int(pidfile.read_text())
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
    failure = attempts_of(run_env.session("c1"))[0]["failure"]
    assert failure["halted"] is True
    assert failure["failure_kind"] == "execution_failure"
    assert "rewake run --resume c1" in out
    again = run_env.rewake("run", "--resume", "c1")
    assert again.returncode == 0, again.stdout + again.stderr
    calls = run_env.invocations()
    assert len(calls) == 2 and calls[1]["argv"][:2] == ["-p", "--resume"]
    assert run_env.log("c1", 1).exists() and run_env.log("c1", 2).exists()


def test_standin_claude_refuses_what_rewake_must_avoid(run_env: RunEnv) -> None:
    """The stand-in keeps the real CLI's rules: stream-json needs --verbose, and a --session-id
    with a transcript is already in use (rewake run never trips over either)."""
    run_env.scenario({"do": "success"})

    def claude(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["claude", *argv], env=run_env.env, cwd=run_env.work, capture_output=True,
            text=True, check=False, timeout=20,
        )  # fmt: skip

    no_verbose = claude("-p", "--output-format", "stream-json", "--", TASK)
    assert no_verbose.returncode == 1 and "requires --verbose" in no_verbose.stderr
    pin = ["-p", "--output-format", "stream-json", "--verbose", "--session-id"]
    uuid_ = "5d0c8f7e-8a53-4c1b-9a77-2f4b2d0b9e11"
    assert claude(*pin, uuid_, "--", TASK).returncode == 0
    reused = claude(*pin, uuid_, "--", TASK)
    assert reused.returncode == 1 and "already in use" in reused.stderr


def test_the_clis_terminal_controls_are_shown_not_obeyed(run_env: RunEnv) -> None:
    """What the CLI streams (a model's text, a line on stderr) reaches the terminal with its
    escapes shown, not acted on: no OSC 52 clipboard write, title, CSI or C1 code gets through,
    while the words and the line breaks of a multi-line answer stay; the log keeps it raw."""
    hostile = "\x1b]52;c;cm0gLXJm\x07\x1b]0;owned\x07\x9b2J\x9d0;t\x9c\rdone"
    run_env.scenario({"do": "success", "says": f"first line\n{hostile}", "stderr": hostile})
    done = run_env.rewake("run", "--name", "esc1", "--", "claude", "-p", TASK)
    assert done.returncode == 0, done.stdout + done.stderr
    acted_on = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
    assert not acted_on.findall(done.stdout) and not acted_on.findall(done.stderr)
    assert "first line\n\\x1b]52;c;cm0gLXJm\\x07" in done.stdout
    assert "\\x9b2J" in done.stderr
    assert "\\u001b]52" in run_env.log("esc1", 1).read_text()  # the JSON event, as written
