"""One writer per conversation, with the real interactive Claude Code (issue 25).

An interactive Claude Code 2.1.332 in tmux, rewake's hooks in its settings (StopFailure with
`--auto-resume`, UserPromptSubmit), a real `rewake sweep` with the command executor running
`rewake run --resume-of`, and the loopback mock: the provider's first answer is a limit whose
reset is seconds ahead, every later one an answer. After the reset, and after Claude's own
continuation could have fired (reset plus its 30-90 s jitter), the mock must have been asked to
continue the conversation exactly once, and the mark's outcome says who did:

- (a) a model limit, menu answered "Wait here": Claude continues; its continuation runs the
  UserPromptSubmit hook, which clears rewake's mark (`cleared`), or, when rewake's mark falls due
  first, the resume finds the open session and stands down (`superseded`);
- (b) a model limit, menu answered "Stop and wait", the session left open: Claude does not
  continue, and a headless Claude beside it would be a second writer, so rewake types the
  resume into its tmux pane, after checking the pane shows Claude at its prompt (`done`);
- (c) a five-hour limit under a day ahead: Claude continues by itself; rewake arms nothing;
- (d) a model limit, the session closed before the reset: rewake resumes headless (`done`);
- (e) a five-hour limit Claude continues itself, heard through the Notification hook
  (`quota_auto_resume_fired`), which rewake notes for the failed attempt;
- (f) the same limit, then Claude's `autoContinueAtUsageLimit` turned off while it waits: it
  gives up (`quota_auto_resume_disabled`), rewake arms the resume it had left to Claude and
  types it into that Claude's pane (`done`).

And `rewake run --auto-resume` with Claude and Codex headless: a conversation continued by hand
(the CLI's own resume) before the reset is not resumed again.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.realcli import mock_provider as mp
from tests.realcli.realcli_cases import run_parallel
from tests.realcli.realcli_drive import (
    Box,
    Tmux,
    claude_env,
    cli_binary,
    codex_env,
    end_tree,
    run_ended,
    waits_for,
)
from tests.realcli.realcli_install import CLAUDE, CODEX
from tests.realcli.realcli_one_writer import (
    PROMPT,
    SETTLED_AFTER_RESET_S,
    continuations,
    reset_after,
)
from tests.realcli.realcli_rewake import (
    hook_settings,
    resume_sweeper_env,
    rewake_env,
    session_of,
    sessions_of_or_empty,
    wait_armed,
)
from tests.support.sweeper import start_sweeper, stop_all

pytestmark = pytest.mark.realcli


def run_case(tmp_path: Path, claim: str, menu: str | None, *, close: bool) -> dict[str, Any]:
    """Drive one case; the session as rewake recorded it, with the continuations counted."""
    binary = cli_binary(CLAUDE)
    box = Box.make(tmp_path)
    with mp.running() as mock:
        env = claude_env(box, binary, mock.url, "UTC", interactive=True)
        (box.home / ".claude" / "settings.json").write_text(json.dumps(hook_settings(box)))
        sweeper_env = resume_sweeper_env(box, env, REWAKE_COMMAND_GRACE_S="5")
        sweeper = start_sweeper(sweeper_env, box.root / "sweeper.log")
        tmux = Tmux(box, [str(binary)], env)
        closed = False
        try:
            tmux.wait_for(waits_for(r"❯|for shortcuts"), timeout=150)
            reset = reset_after(time.time())
            mock.script(mp.ANTHROPIC, mp.claude_limit(reset, claim), mp.answer("continued"))
            tmux.submit(PROMPT, lambda: len(mock.requests(mp.ANTHROPIC)))
            tmux.wait_for(waits_for(r"Stop and wait|Continuing automatically"), timeout=150)
            hook_log = box.root / "state" / "hook.log"
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and "auto-resume" not in (
                hook_log.read_text() if hook_log.exists() else ""
            ):
                time.sleep(0.5)
            if menu is not None:
                tmux.send(menu)
                time.sleep(2)
            if close:
                tmux.close()
                closed = True
            while time.time() < reset + SETTLED_AFTER_RESET_S:
                time.sleep(1)
            screen = "" if closed else tmux.screen()
        finally:
            if not closed:
                tmux.close()
            stop_all([sweeper])
        sessions = sessions_of_or_empty(box)
        assert len(sessions) == 1, (box.root / "sweeper.log").read_text()
        session = session_of(box, sessions[0]["root_id"])
        session["continuations"] = len(continuations(mock))
        session["screen"] = screen
        session["sweeper_log"] = (box.root / "sweeper.log").read_text()
        hook_log = box.root / "state" / "hook.log"
        session["hook_log"] = hook_log.read_text() if hook_log.exists() else ""
        return session


#: The cases that wait out Claude's own continuation window (the next minute's reset plus
#: SETTLED_AFTER_RESET_S: three to four minutes each, nearly all of it asleep). One after
#: another they took over twenty minutes; each has its own mock, tmux server, sweeper and
#: rewake state, so the module's fixture runs them together and each test judges its own.
OVERLAPPED: dict[str, Callable[[Path], dict[str, Any]]] = {
    "wait_here": lambda root: run_case(root, "seven_day_opus", "2", close=False),
    "stop_and_wait": lambda root: run_case(root, "seven_day_opus", "1", close=False),
    "five_hour": lambda root: run_case(root, "five_hour", None, close=False),
    "closed": lambda root: run_case(root, "seven_day_opus", None, close=True),
    "fired": lambda root: fired_case(root),
    "giving_up": lambda root: giving_up_case(root),
}


@pytest.fixture(scope="module")
def overlapped(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, dict[str, Any] | BaseException]:
    """Every case in OVERLAPPED, run together; a case whose run raised keeps its exception."""
    cli_binary(CLAUDE)
    root = tmp_path_factory.mktemp("one-writer")
    return run_parallel(lambda name: OVERLAPPED[name](root / name), list(OVERLAPPED),
                        workers=len(OVERLAPPED))  # fmt: skip


def outcome(overlapped: dict[str, dict[str, Any] | BaseException], name: str) -> dict[str, Any]:
    """The case's result, or its run's own failure raised."""
    result = overlapped[name]
    if isinstance(result, BaseException):
        raise result
    return result


def test_wait_here_claude_continues_and_rewake_stands_down(
    overlapped: dict[str, dict[str, Any] | BaseException],
) -> None:
    """(a) Opus limit, "Wait here" chosen: one continuation (Claude's); rewake's armed resume
    is cleared by it, or stands down (superseded)."""
    session = outcome(overlapped, "wait_here")
    mark = session.get("mark") or {}
    assert session["continuations"] == 1, (session["screen"], session["sweeper_log"])
    assert mark.get("state") in ("cleared", "superseded"), (mark, session["sweeper_log"])


def test_stop_and_wait_rewake_types_the_resume_into_the_pane(
    overlapped: dict[str, dict[str, Any] | BaseException],
) -> None:
    """(b) Opus limit, "Stop and wait" chosen, the session open: rewake types the resume into
    that Claude's pane; one continuation, the mark done."""
    session = outcome(overlapped, "stop_and_wait")
    mark = session.get("mark") or {}
    assert session["continuations"] == 1, (session["screen"], session["sweeper_log"])
    assert mark.get("state") == "done", (mark, session["sweeper_log"], session["screen"])
    # The continuation is the interactive Claude's (its UserPromptSubmit hook recorded the
    # typed resume), not a headless one (whose hook would have stayed silent).
    assert "continued by hand (UserPromptSubmit): attempt 2 started" in session["hook_log"]


def test_five_hour_limit_claude_continues_by_itself(
    overlapped: dict[str, dict[str, Any] | BaseException],
) -> None:
    """(c) five-hour limit under a day ahead: Claude continues by itself, once; rewake armed
    nothing."""
    session = outcome(overlapped, "five_hour")
    mark = session.get("mark") or {}
    assert session["continuations"] == 1, session["screen"]
    assert mark.get("state") in (None, "none"), mark


def test_session_closed_before_the_reset_rewake_resumes_headless(
    overlapped: dict[str, dict[str, Any] | BaseException],
) -> None:
    """(d) Opus limit, the session closed before the reset: rewake's headless resume is the one
    continuation, and the mark ends done."""
    session = outcome(overlapped, "closed")
    mark = session.get("mark") or {}
    assert session["continuations"] == 1, session["sweeper_log"]
    assert mark.get("state") == "done", (mark, session["sweeper_log"])


@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_rewake_run_does_not_resume_a_conversation_continued_by_hand(
    cli: str, tmp_path: Path
) -> None:
    """`rewake run --auto-resume` waits for a reset; before it, the conversation is continued
    by hand with the CLI's own resume: at the reset the mark ends superseded, nothing is sent
    (one continuation in all, the hand's), and rewake run exits 7."""
    pin = CLAUDE if cli == "claude" else CODEX
    binary = cli_binary(pin)
    box = Box.make(tmp_path)
    name = f"hand-{cli}"
    with mp.running() as mock:
        now = time.time()
        reset = int(now + 30)
        if cli == "claude":
            api = mp.ANTHROPIC
            mock.script(api, mp.claude_limit(reset, "five_hour"), mp.answer("By hand."))
            env = claude_env(box, binary, mock.url, "UTC")
            argv = ["claude", "-p", PROMPT]
        else:
            api = mp.OPENAI
            mock.script(api, mp.codex_limit(reset, now=now), mp.answer("By hand."))
            env = codex_env(box, binary, mock.url, "UTC")
            subprocess.run(["git", "init", "-q", str(box.work)], check=True, timeout=30)
            argv = ["codex", "exec", PROMPT]
        process = subprocess.Popen(
            [sys.executable, "-m", "rewake", "run", "--provider", cli, "--name", name,
             "--auto-resume", "--", *argv],
            cwd=box.work, env=rewake_env(box, env), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            conversation = wait_armed(box, name, process, timeout=120)
            if cli == "claude":
                by_hand = [str(binary), "-p", "--resume", conversation, "--", "go on"]
            else:
                by_hand = [str(binary), "exec", "resume", conversation, "--json", "--", "go on"]
            done = run_ended(by_hand, cwd=box.work, env=env, capture_output=True, timeout=120)
            assert done.returncode == 0, done.stdout + done.stderr
            out = process.communicate(timeout=240)[0]
        finally:
            end_tree(process)
        seen = mock.requests(api)
    limit = next(i for i, s in enumerate(seen) if s.kind == "limit")
    after = [s for s in seen[limit + 1 :] if PROMPT in json.dumps(s.body)]
    assert len(after) == 1, (len(after), out)
    assert process.returncode == 7, out
    assert "not resumed" in out, out
    assert (session_of(box, name).get("mark") or {}).get("state") == "superseded", out


def fired_case(tmp_path: Path) -> dict[str, Any]:
    """Drive case (e): what the hook said, the screen, the continuations counted."""
    binary = cli_binary(CLAUDE)
    box = Box.make(tmp_path)
    with mp.running() as mock:
        env = claude_env(box, binary, mock.url, "UTC", interactive=True)
        settings = hook_settings(box)
        (box.home / ".claude" / "settings.json").write_text(json.dumps(settings))
        tmux = Tmux(box, [str(binary)], env)
        hook_log = box.root / "state" / "hook.log"
        try:
            tmux.wait_for(waits_for(r"❯|for shortcuts"), timeout=150)
            reset = reset_after(time.time())
            mock.script(mp.ANTHROPIC, mp.claude_limit(reset, "five_hour"), mp.answer("continued"))
            tmux.submit(PROMPT, lambda: len(mock.requests(mp.ANTHROPIC)))
            tmux.wait_for(waits_for(r"Continuing automatically"), timeout=150)
            # Claude runs the hook as it fires, before its continuation reaches the mock: wait
            # out the whole window, as the other cases do, so that a second one would be seen.
            while time.time() < reset + SETTLED_AFTER_RESET_S:
                time.sleep(1)
            screen = tmux.screen()
        finally:
            tmux.close()
        count = len(continuations(mock))
    said = hook_log.read_text() if hook_log.exists() else ""
    return {"said": said, "screen": screen, "count": count}


def test_claudes_own_continue_is_heard_through_the_notification_hook(
    overlapped: dict[str, dict[str, Any] | BaseException],
) -> None:
    """A five-hour limit Claude waits out by itself (the hook arms nothing), with the
    Notification entry `rewake setup claude` writes: Claude's own continuation runs the hook
    with `quota_auto_resume_fired`, which the hook reads from the real payload and notes for
    the failed attempt; the mock sees one continuation, Claude's."""
    case = outcome(overlapped, "fired")
    said, screen, count = case["said"], case["screen"], case["count"]
    assert "continues attempt 1 itself (quota_auto_resume_fired)" in said, (said, screen)
    assert count == 1, (said, screen)


def giving_up_case(tmp_path: Path) -> dict[str, Any]:
    """Drive case (f): what the hook and the sweeper said, the screen, the session, the
    continuations counted."""
    binary = cli_binary(CLAUDE)
    box = Box.make(tmp_path)
    with mp.running() as mock:
        env = claude_env(box, binary, mock.url, "UTC", interactive=True)
        settings = hook_settings(box)
        path = box.home / ".claude" / "settings.json"
        path.write_text(json.dumps(settings))
        sweeper_env = resume_sweeper_env(box, env, REWAKE_COMMAND_GRACE_S="5")
        sweeper = start_sweeper(sweeper_env, box.root / "sweeper.log")
        tmux = Tmux(box, [str(binary)], env)
        hook_log = box.root / "state" / "hook.log"
        try:
            tmux.wait_for(waits_for(r"❯|for shortcuts"), timeout=150)
            reset = reset_after(time.time())
            mock.script(mp.ANTHROPIC, mp.claude_limit(reset, "five_hour"), mp.answer("continued"))
            tmux.submit(PROMPT, lambda: len(mock.requests(mp.ANTHROPIC)))
            tmux.wait_for(waits_for(r"Continuing automatically"), timeout=150)
            time.sleep(3)
            path.write_text(json.dumps({**settings, "autoContinueAtUsageLimit": False}))
            while time.time() < reset + SETTLED_AFTER_RESET_S:
                time.sleep(1)
            screen = tmux.screen()
        finally:
            tmux.close()
            stop_all([sweeper])
        count = len(continuations(mock))
    said = hook_log.read_text() if hook_log.exists() else ""
    sessions = sessions_of_or_empty(box)
    session = session_of(box, sessions[0]["root_id"]) if sessions else {}
    swept = (box.root / "sweeper.log").read_text()
    return {"said": said, "screen": screen, "count": count, "session": session, "swept": swept}


def test_claude_giving_up_its_own_continue_arms_rewakes_resume(
    overlapped: dict[str, dict[str, Any] | BaseException],
) -> None:
    """(f) a five-hour limit Claude waits out by itself (the hook arms nothing); then its
    setting `autoContinueAtUsageLimit` is turned off: Claude gives up, reports
    `quota_auto_resume_disabled` through the Notification hook, and rewake arms the resume it
    had left to Claude, which the sweeper types into that Claude's pane: one continuation, the
    mark done."""
    case = outcome(overlapped, "giving_up")
    said, screen, count, swept = case["said"], case["screen"], case["count"], case["swept"]
    session = case["session"]
    assert "will not continue attempt 1 itself" in said, (said, screen)
    assert "(quota_auto_resume_disabled)" in said and "auto-resume armed" in said, said
    assert session, ("no session recorded", said, swept)
    assert (session.get("mark") or {}).get("state") == "done", (session.get("mark"), swept)
    assert count == 1, (said, screen, swept)
