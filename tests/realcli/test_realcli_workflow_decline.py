"""`rewake hook claude` beside a real interactive Claude Code 2.1.332 that declines to wait out a
usage limit inside a workflow, and the armed resume that continues the run the one-writer way
(the same mock and six-agent script as test_realcli_workflow.py).

With its `autoContinueAtUsageLimit` setting off, Claude Code does not pause: agents 4, 5 and 6
fail (a StopFailure apiece), the run ends "completed" with their nulls, and the session sits
open. The hook reports the run's end, at the main turn's Stop, as the session's usage limit and
arms it (the agents' StopFailure entry has `--auto-resume`); after the reset a real `rewake
sweep` fires it. While that Claude is open, the resume, which names the run, is typed into its
tmux pane; once it was closed, rewake resumes headless (`claude -p --resume`). Either way the
provider gets agents 4, 5, 6 once more and 1-3 not at all (docs/workflows.md).

With the setting on, Claude Code waits out two limits in one run and declines a third: limits at
agents 4, 5 and 6 in turn, the resume re-runs agent 6 alone.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.realcli.realcli_drive import Box, Tmux, claude_env, cli_binary, waits_for
from tests.realcli.realcli_install import CLAUDE
from tests.realcli.realcli_rewake import hook_settings, resume_sweeper_env, session_of
from tests.realcli.realcli_workflow_mock import Served
from tests.support.sweeper import start_sweeper, stop_all

pytestmark = pytest.mark.realcli

#: How long after the first refused agent asks the limit resets: the run's end is reported and
#: armed well before (the exact reset comes from the lost agents' rows, so the minute Claude
#: prints does not matter). Counted from the refusal, not from when the test asks for the
#: workflow: on a loaded machine Claude has taken 20 s to reach agent 4, and the hook 13 s more
#: to arm, so a window counted from the prompt ran out first.
RESET_AHEAD_S = 40
#: The same when the session is also closed before the reset: time for /exit as well.
CLOSED_RESET_AHEAD_S = 60
#: After the reset: the mark falls due, the sweeper resumes, the run's three agents go.
RESUMED_WITHIN_S = 90
#: The agents as the mock saw them on the declined run: 1-3 answered, 4-6 refused.
DECLINED = [(1, "ok"), (2, "ok"), (3, "ok"), (4, "limit"), (5, "limit"), (6, "limit")]


@dataclass
class Declining:
    """An interactive Claude in tmux with rewake's hooks (Stop included), and a real `rewake
    sweep` with the command executor beside it."""

    box: Box
    tmux: Tmux
    sweeper: Any
    hook_log: Path

    def said(self) -> str:
        return self.hook_log.read_text() if self.hook_log.exists() else ""

    def wait_armed(self, timeout: float = 120) -> float:
        """The instant the hook's log says the run's end was armed (or the timeout's end)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and "auto-resume armed" not in self.said():
            time.sleep(0.5)
        return time.time()

    def wait_resumed(self, reset_epoch: int, counts: Any) -> str:
        """Until agent 6 ran again (at most RESUMED_WITHIN_S past the reset), then the resumed
        run's end (its task notification, the last Stop): the screen then."""
        deadline = reset_epoch + RESUMED_WITHIN_S
        while time.time() < deadline and counts()[6] < 2:
            time.sleep(1)
        time.sleep(8)
        return self.tmux.screen()

    def swept(self) -> str:
        """What the sweeper logged."""
        return (self.box.root / "sweeper.log").read_text()

    def stop(self) -> None:
        self.tmux.close()
        stop_all([self.sweeper])

    def session(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """rewake's record of the session (its state folder) and the store's session."""
        runs = self.box.root / "state" / "runs"
        record = json.loads(next(runs.glob("claude-*.json")).read_text())
        return record, session_of(self.box, record["root_id"])


def start_declining(
    served: Served,
    tmp_path: Path,
    *,
    auto_continue: bool = False,
) -> Declining:
    """Start the sweeper and the Claude (`autoContinueAtUsageLimit` as `auto_continue`)."""
    binary = cli_binary(CLAUDE)
    box = Box.make(tmp_path)
    env = claude_env(box, binary, served.url, "UTC", interactive=True)
    env["CLAUDE_CODE_WORKFLOWS"] = "1"
    settings = hook_settings(box)
    settings["autoContinueAtUsageLimit"] = auto_continue
    (box.home / ".claude" / "settings.json").write_text(json.dumps(settings))
    sweeper_env = resume_sweeper_env(box, env, REWAKE_COMMAND_GRACE_S="5")
    sweeper = start_sweeper(sweeper_env, box.root / "sweeper.log")
    tmux = Tmux(box, [str(binary), "--allowedTools", "Workflow"], env)
    return Declining(box, tmux, sweeper, box.root / "state" / "hook.log")


def launch(case: Declining, served: Served, reset_ahead_s: int) -> None:
    """Claude at its prompt, the limit set for agents 4-6, the workflow asked for."""
    mock = served.mock
    case.tmux.wait_for(waits_for(r"❯|for shortcuts"), timeout=150)
    mock.limit({4, 5, 6}, reset_in_s=reset_ahead_s)
    case.tmux.submit("WFTEST use a workflow", lambda: len(mock.main))


def assert_reported_as_the_limit(said: str, session: dict[str, Any], reset_epoch: int) -> None:
    """The hook reported the declined run's end as the session's usage limit, its reset
    the one the mock served."""
    assert "Claude Code did not wait (its automatic wait is off" in said, said
    failure = session["runs"][0]["attempts"][0]["failure"]
    assert failure["failure_kind"] == "provider_quota", failure
    assert failure["verdict"]["reset_at"].startswith(
        time.strftime("%Y-%m-%dT%H:%M", time.gmtime(reset_epoch))
    ), failure["verdict"]


def test_a_declined_workflow_wait_is_armed_and_resumed_in_the_open_claude(
    served: Served,
    tmp_path: Path,
) -> None:
    """Setting off, a limit at agents 4-6 of 6: the hook reports the run's end as the limit and
    arms it; after the reset the sweeper types the named resume into the open Claude, the mock
    gets agents 4, 5, 6 once each, the mark ends done, and the prediction (3 of 6 from cache)
    is kept beside what ran live."""
    case = start_declining(served, tmp_path)
    mock = served.mock
    armed_at = 0.0
    try:
        launch(case, served, RESET_AHEAD_S)
        armed_at = case.wait_armed()
        screen = case.wait_resumed(mock.reset_epoch, mock.counts)
    finally:
        case.stop()
    said, swept = case.said(), case.swept()
    assert armed_at < mock.reset_epoch, said
    assert mock.agents == [*DECLINED, (4, "ok"), (5, "ok"), (6, "ok")], (said, swept, screen)
    record, session = case.session()
    assert_reported_as_the_limit(said, session, mock.reset_epoch)
    assert (session.get("mark") or {}).get("state") == "done", (session.get("mark"), swept)
    # The resume was typed into that Claude: its UserPromptSubmit hook started attempt 2.
    attempts = [(a["attempt"], a["status"]) for a in session["runs"][0]["attempts"]]
    assert attempts == [(1, "failed"), (2, "started")], (attempts, said)
    assert "continued by hand (UserPromptSubmit): attempt 2 started" in said, said
    assert f"{record['root_id']}: wf_" in said and "3 agents ran live (predicted 3)" in said, said
    (kept,) = record["extra"]["workflow_predictions"]["2"]
    assert (kept["cached"], kept["live"], kept.get("ran_live")) == (3, 3, 3), (kept, said)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def test_a_declined_workflow_is_resumed_headless_once_the_claude_was_closed(
    served: Served,
    tmp_path: Path,
) -> None:
    """Setting off, a limit at agents 4-6 of 6, then the user ends that Claude (/exit) before
    the reset: the sweeper resumes headless (`claude -p --resume`, the prompt naming the run),
    the mock gets agents 4, 5, 6 once each and nothing else, the mark ends done, and rewake's
    record keeps the prediction (3 of 6 from cache) beside what the resume ran live."""
    case = start_declining(served, tmp_path)
    mock = served.mock
    armed_at = closed_at = 0.0
    try:
        launch(case, served, CLOSED_RESET_AHEAD_S)
        armed_at = case.wait_armed()
        # The interactive Claude holding the session (Claude Code's sessions/<pid>.json).
        (claude_pid,) = (
            int(p.stem) for p in (case.box.home / ".claude" / "sessions").glob("*.json")
        )
        case.tmux.type_line("/exit")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _alive(claude_pid):
            time.sleep(0.25)
        closed_at = time.time() if not _alive(claude_pid) else 0.0
        main_before = len(mock.main)
        deadline = mock.reset_epoch + RESUMED_WITHIN_S
        while time.time() < deadline and not ran_live(case):
            time.sleep(1)
    finally:
        case.stop()
    said, swept = case.said(), case.swept()
    assert 0 < armed_at < closed_at < mock.reset_epoch, (armed_at, closed_at, said)
    assert mock.agents == [*DECLINED, (4, "ok"), (5, "ok"), (6, "ok")], (said, swept)
    record, session = case.session()
    assert_reported_as_the_limit(said, session, mock.reset_epoch)
    assert (session.get("mark") or {}).get("state") == "done", (session.get("mark"), swept)
    # Headless: no Claude was open to type into, so no hook heard a prompt; `rewake run
    # --resume-of` ran `claude -p --resume` as attempt 2 (its log), the prompt naming the run,
    # and the mock saw that run re-invoked, once.
    assert "UserPromptSubmit" not in said, said
    attempts = [(a["attempt"], a["status"]) for a in session["runs"][0]["attempts"]]
    assert attempts == [(1, "failed"), (2, "completed")], (attempts, swept)
    (run_id,) = record["extra"]["workflow_runs"]
    (log,) = (case.box.root / "state" / "logs" / record["root_id"]).glob("*-attempt-2.log")
    argv = next(line for line in log.read_text().splitlines() if line.startswith("# argv: "))
    assert argv.startswith(f"# argv: claude -p --resume {record['cli_session_id']} "), argv
    assert f'resumeFromRunId: "{run_id}"' in argv, argv
    assert [m for m in mock.main[main_before:] if m.startswith("resume")] == [f"resume {run_id}"]
    # The prediction, kept for attempt 2: 3 of 6 from cache, 3 live, and 3 ran live.
    (kept,) = record["extra"]["workflow_predictions"]["2"]
    assert (kept["run_id"], kept["cached"], kept["total"], kept["live"]) == (run_id, 3, 6, 3), kept
    assert kept.get("ran_live") == 3, (kept, swept)


def ran_live(case: Declining) -> bool:
    """Whether rewake's record says what the resume (attempt 2) ran live: its end."""
    runs = case.box.root / "state" / "runs"
    found = next(runs.glob("claude-*.json"), None) if runs.exists() else None
    if found is None:
        return False
    kept = json.loads(found.read_text()).get("extra", {}).get("workflow_predictions", {})
    return any("ran_live" in k for k in kept.get("2", []))


#: The third limit in one run: Claude Code waits out two resets (each the reset plus its 30-90 s
#: jitter) and declines the third. Two short resets keep the waits short; the third leaves the
#: hook time to arm before it. Each is counted from when its agent first asks (RESET_AHEAD_S).
SHORT_RESET_S = 5
THIRD_RESET_AHEAD_S = RESET_AHEAD_S


def limit_one_agent_at_a_time(served: Served, stages: list[int]) -> None:
    """Limit the agents in `stages` one after another, each until SHORT_RESET_S after it first
    asks: the first from now, the next once the one before has answered (Claude Code's re-run
    after its wait); the last until THIRD_RESET_AHEAD_S after it asks."""
    mock = served.mock
    answer = mock.answer
    pending = list(stages)

    def window(agent: int) -> int:
        return THIRD_RESET_AHEAD_S if agent == stages[-1] else SHORT_RESET_S

    def staged(request: dict[str, Any], serial: int) -> tuple[int, dict[str, str], bytes]:
        reply = answer(request, serial)
        if len(pending) > 1 and mock.agents and mock.agents[-1] == (pending[0], "ok"):
            pending.pop(0)
            mock.limit({pending[0]}, reset_in_s=window(pending[0]))
        return reply

    mock.limit({pending[0]}, reset_in_s=window(pending[0]))
    mock.answer = staged  # type: ignore[method-assign]


def test_a_third_limit_in_one_run_is_declined_and_resumed_for_the_last_agent(
    served: Served,
    tmp_path: Path,
) -> None:
    """Setting on, a limit at agent 4, then at 5, then at 6, each after Claude Code waited out
    the one before: it waits twice and declines the third ("already waited for 2 resets"); the
    hook reports and arms that, the sweeper types the resume into the open Claude, and the mock
    gets agent 6 once more and nothing else, predicted (5 of 6 from cache)."""
    case = start_declining(served, tmp_path, auto_continue=True)
    mock = served.mock
    armed_at = 0.0
    try:
        case.tmux.wait_for(waits_for(r"❯|for shortcuts"), timeout=150)
        limit_one_agent_at_a_time(served, [4, 5, 6])
        case.tmux.submit("WFTEST use a workflow", lambda: len(mock.main))
        armed_at = case.wait_armed(timeout=2 * (SHORT_RESET_S + 90) + 90)
        screen = case.wait_resumed(mock.reset_epoch, mock.counts)
    finally:
        case.stop()
    said, swept = case.said(), case.swept()
    waited = [(1, "ok"), (2, "ok"), (3, "ok"), (4, "limit"), (4, "ok"), (5, "limit"), (5, "ok")]
    assert mock.agents == [*waited, (6, "limit"), (6, "ok")], (said, swept, screen)
    assert armed_at < mock.reset_epoch, said
    assert "Claude Code did not wait (the run already waited for 2 resets)" in said, said
    record, session = case.session()
    failure = session["runs"][0]["attempts"][0]["failure"]
    assert failure["failure_kind"] == "provider_quota", failure
    assert failure["verdict"]["reset_at"].startswith(
        time.strftime("%Y-%m-%dT%H:%M", time.gmtime(mock.reset_epoch))
    ), failure["verdict"]
    assert (session.get("mark") or {}).get("state") == "done", (session.get("mark"), swept)
    (kept,) = record["extra"]["workflow_predictions"]["2"]
    assert (kept["cached"], kept["total"], kept["live"]) == (5, 6, 1), (kept, said)
