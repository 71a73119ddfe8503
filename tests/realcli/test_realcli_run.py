"""`rewake run` and `rewake hook claude` with the real CLIs instead of the stand-ins.

`rewake run --auto-resume` supervises each real CLI against the mock: the provider answers
with a limit whose reset is a few seconds to minutes ahead, rewake waits, fires exactly one
resume (`claude -p --resume`, `codex exec resume` in a git repository, `gemini --resume`),
the provider answers, and the session ends finished. Gemini counts a wait under 300 s as a
throttle, so its limit is 310 s ahead; the three runs start as soon as the tests are
collected (tests/realcli/conftest.py) and go on while the matrix runs.

The hook: an interactive Claude Code with rewake's hooks in its settings hits a limit; the
StopFailure hook records it from the payload's last_assistant_message (the transcript then
holds only setup rows), and arms a resume unless Claude continues by itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.realcli import mock_provider as mp
from tests.realcli.realcli_drive import (
    Box,
    Tmux,
    claude_env,
    cli_binary,
    codex_env,
    descendants,
    end_tree,
    gemini_env,
    run_ended,
    waits_for,
)
from tests.realcli.realcli_install import CLAUDE, CODEX, GEMINI, Pin
from tests.realcli.realcli_rewake import hook_settings, rewake_env, session_of, sessions_of_or_empty
from tests.support.run import process_running

pytestmark = pytest.mark.realcli

#: How long a supervised run may take from its start: the reset, the minute Codex's text
#: costs, the CLIs.
RUN_TIMEOUT_S = 540


#: What a run's test waits at least, once its deadline has passed, to read a run that ended.
FINISHED_GRACE_S = 15.0


@dataclass
class Supervised:
    """One `rewake run` under way against its own mock."""

    name: str
    box: Box
    mock: mp.MockProvider
    process: subprocess.Popen[str]
    truth: datetime
    #: time.monotonic() by which the run must have ended: counted from its start, not from
    #: the test that waits for it (the three tests wait one after another).
    deadline: float

    def finish(self) -> tuple[int, str]:
        try:
            # A run that ended long before its test came (the tier runs for many minutes after
            # the three start) still gives its output: a finished process answers at once.
            left = max(FINISHED_GRACE_S, self.deadline - time.monotonic())
            out, _ = self.process.communicate(timeout=left)
        finally:
            self.end()
        return self.process.returncode, out

    def end(self) -> None:
        """End the run and everything it started, however far it got, and stop its mock.

        Killing `rewake run` alone leaves the CLI running: rewake starts it in a session of
        its own, which nothing stops once rewake is gone (a Gemini CLI retried for 20 minutes
        after its test so). So every process below `rewake run` is found first, then all get
        SIGTERM (rewake stops the CLI's group on it) and SIGKILL after a grace."""
        end_tree(self.process)
        self.mock.stop()


def start_run(name: str, pin: Pin, root: Path, argv: list[str]) -> Supervised:
    binary = cli_binary(pin)
    box = Box.make(root / name)
    mock = mp.MockProvider().start()
    now = time.time()
    if pin.cli == "claude":
        reset = int(now + 30)
        mock.script(mp.ANTHROPIC, mp.claude_limit(reset, "five_hour"), mp.answer("Resumed."))
        env = claude_env(box, binary, mock.url, "Asia/Kolkata")
        truth = datetime.fromtimestamp(reset, UTC)
    elif pin.cli == "codex":
        reset = int(now + 30)
        mock.script(mp.OPENAI, mp.codex_limit(reset, now=now), mp.answer("Resumed."))
        env = codex_env(box, binary, mock.url, "America/St_Johns")
        # Codex refuses to run outside a git repository without --skip-git-repo-check.
        subprocess.run(["git", "init", "-q", str(box.work)], check=True, timeout=30)
        truth = datetime.fromtimestamp(reset, UTC)
    else:
        # A first turn with a tool call saves the session (a turn that fails on its first
        # request leaves nothing to resume: "No previous sessions found for this project").
        mock.script(mp.GEMINI, mp.tool_call(), mp.gemini_limit(retry_delay="310s"),
                    mp.answer("Resumed."))  # fmt: skip
        env = gemini_env(box, binary, mock.url, "Australia/Adelaide")
        truth = datetime.fromtimestamp(now + 310, UTC)  # refined from the mock's answer
    process = subprocess.Popen(
        [sys.executable, "-m", "rewake", "run", "--provider", pin.cli, "--name", name,
         "--auto-resume", "--", *argv],
        cwd=box.work, env=rewake_env(box, env), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return Supervised(name, box, mock, process, truth, time.monotonic() + RUN_TIMEOUT_S)


def start_all(root: Path) -> dict[str, Supervised]:
    """All three supervised runs, started together (conftest.py starts them as soon as the
    session is collected, so their waits overlap the rest of the tier)."""
    for pin in (CLAUDE, CODEX, GEMINI):
        cli_binary(pin)
    return {
        "claude": start_run("rc-claude", CLAUDE, root, ["claude", "-p", "fix the tests"]),
        "codex": start_run("rc-codex", CODEX, root, ["codex", "exec", "fix the tests"]),
        "gemini": start_run("rc-gemini", GEMINI, root, ["gemini", "-p", "fix the tests"]),
    }


def assert_one_resume_after_the_reset(run: Supervised, api: str) -> None:
    code, out = run.finish()
    seen = run.mock.requests(api)
    kinds = [s.kind for s in seen]
    assert "limit" in kinds, f"the mock served no limit: {kinds}\n{out}"
    limit_at = max(s.answered_at for s in seen if s.kind == "limit")
    truth = run.truth
    if api == mp.GEMINI:  # the wait counts from the mock's answer
        truth = datetime.fromtimestamp(limit_at, UTC) + timedelta(seconds=310)
    after = [s for s in seen if s.answered_at > limit_at]
    assert code == 0, out
    assert after, f"nothing was resumed:\n{out}"
    first_resume = datetime.fromtimestamp(after[0].answered_at, UTC)
    assert first_resume >= truth, f"resumed at {first_resume}, before the reset {truth}\n{out}"
    session = session_of(run.box, run.name)
    attempts = [(a["attempt"], a["status"]) for r in session["runs"] for a in r["attempts"]]
    assert attempts == [(1, "failed"), (2, "completed")], (attempts, out)
    assert session["mark"]["state"] == "done", (session["mark"], out)
    assert out.count("firing auto-resume") == 1, out


def test_rewake_run_resumes_real_claude_once_after_the_reset(runs: dict[str, Supervised]) -> None:
    """`rewake run --auto-resume -- claude -p`: limit, wait, one `-p --resume`, finished."""
    assert_one_resume_after_the_reset(runs["claude"], mp.ANTHROPIC)


def test_rewake_run_resumes_real_codex_once_after_the_reset(runs: dict[str, Supervised]) -> None:
    """`rewake run --auto-resume -- codex exec` in a git repository: limit, wait until the
    printed minute has passed, one `exec resume`, finished."""
    assert_one_resume_after_the_reset(runs["codex"], mp.OPENAI)


def test_rewake_run_resumes_real_gemini_once_after_the_reset(runs: dict[str, Supervised]) -> None:
    """`rewake run --auto-resume -- gemini -p` after a tool turn: limit, a 310 s wait, one
    `--resume`, finished."""
    assert_one_resume_after_the_reset(runs["gemini"], mp.GEMINI)


def test_ending_a_run_ends_the_cli_it_supervises(tmp_path: Path) -> None:
    """Ending a supervised run (a test's deadline, the session's end) ends the CLI under
    `rewake run` too, though rewake starts it in a session of its own."""
    box = Box.make(tmp_path / "box")
    stand_in = box.root / "bin" / "gemini"  # a CLI that works for ten minutes
    stand_in.parent.mkdir()
    stand_in.write_text("#!/bin/sh\nexec sleep 600\n")
    stand_in.chmod(0o755)
    env = rewake_env(box, {"PATH": f"{stand_in.parent}:/usr/bin:/bin", "HOME": str(box.home)})
    process = subprocess.Popen(
        [sys.executable, "-m", "rewake", "run", "--provider", "gemini", "--name", "ended",
         "--", "gemini", "-p", "fix the tests"],
        cwd=box.work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    run = Supervised("ended", box, mp.MockProvider().start(), process, datetime.now(UTC), 0.0)
    try:
        deadline = time.monotonic() + 60
        while len(below := descendants([process.pid])) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        cli = below[1:]
        assert cli, "rewake run started no CLI"
    finally:
        run.end()
    assert process.returncode is not None
    assert [pid for pid in cli if process_running(pid)] == []


def test_a_run_out_of_time_ends_with_what_it_started(tmp_path: Path) -> None:
    """A CLI run (`run_ended`) that outlives its timeout ends with the process it started in
    a session of its own, as `rewake run` starts the CLI: subprocess.run would leave it."""
    pidfile = tmp_path / "child.pid"
    parent = ("import subprocess, sys, time\n"
              "child = subprocess.Popen(['sleep', '600'], start_new_session=True)\n"
              "open(sys.argv[1], 'w').write(str(child.pid))\n"
              "child.wait()\n")  # fmt: skip
    with pytest.raises(subprocess.TimeoutExpired):
        run_ended([sys.executable, "-c", parent, str(pidfile)], timeout=30,
                  capture_output=True)  # fmt: skip
    child = int(pidfile.read_text())
    assert not process_running(child), "the child outlived the run's timeout"


@pytest.mark.parametrize(
    ("claim", "offset_s", "zone"),
    [("five_hour", 2 * 3600 + 59, "Europe/Berlin"), ("seven_day", 3 * 86400 + 40, "Asia/Kolkata")],
    ids=["five_hour-2h-Berlin", "seven_day-3d-Kolkata"],
)
def test_hook_from_real_interactive_claude_records_the_limit(
    claim: str, offset_s: int, zone: str, tmp_path: Path
) -> None:
    """Interactive Claude Code fires StopFailure on the limit; `rewake hook claude
    --auto-resume` records a provider limit with the served reset, and arms a resume exactly
    when Claude does not continue by itself (its screen says "Continuing automatically")."""
    binary = cli_binary(CLAUDE)
    box = Box.make(tmp_path)
    with mp.running() as mock:
        env = claude_env(box, binary, mock.url, zone, interactive=True)
        (box.home / ".claude" / "settings.json").write_text(json.dumps(hook_settings(box)))
        tmux = Tmux(box, [str(binary)], env)
        try:
            tmux.wait_for(waits_for(r"❯|for shortcuts"), timeout=150)
            reset = int(time.time() + offset_s)
            mock.script(mp.ANTHROPIC, mp.claude_limit(reset, claim))
            tmux.submit("hi", lambda: len(mock.requests(mp.ANTHROPIC)))
            tmux.wait_for(waits_for(r"hit your [^\n]*limit|Stop and wait"), timeout=150)
            # The hook says what became of the offer last ("auto-resume armed" or "... not
            # offered"); closing the CLI before then would end the hook with it.
            hook_log = box.root / "state" / "hook.log"
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and "auto-resume" not in (
                hook_log.read_text() if hook_log.exists() else ""
            ):
                time.sleep(0.5)
            screen = tmux.screen()
        finally:
            tmux.close()
    sessions = sessions_of_or_empty(box)
    assert len(sessions) == 1, f"the hook recorded {len(sessions)} sessions\n{screen}"
    session = session_of(box, sessions[0]["root_id"])
    failure = next(a for r in session["runs"] for a in r["attempts"])["failure"]
    truth = datetime.fromtimestamp(reset, UTC)
    assert failure["failure_kind"] == "provider_quota", (failure, screen)
    verdict = failure["verdict"]
    reset_at = datetime.fromisoformat(verdict["reset_at"].replace("Z", "+00:00"))
    assert reset_at <= truth <= reset_at + timedelta(seconds=verdict["resolution_s"])
    # The payload carries the banner alone; where the screen says Claude continues by itself,
    # the hook must leave the session to it instead of arming a second resume.
    native = "Continuing automatically" in screen
    mark = session.get("mark") or {}
    assert (mark.get("state") == "armed") is (not native), (mark, screen)
    if native:
        assert "continues this session by itself" in hook_log.read_text(), hook_log.read_text()
