"""`rewake hook claude` beside a real interactive Claude Code 2.1.332 that declines to wait out a
usage limit inside a workflow (its `autoContinueAtUsageLimit` setting off), and the armed resume
that continues the run in that same open Claude (the same mock and six-agent script as
test_realcli_workflow.py).

Claude Code does not pause: agents 4, 5 and 6 fail (a StopFailure apiece), the run ends
"completed" with their nulls, and the session sits open. The hook reports the run's end, at the
main turn's Stop, as the session's usage limit and arms it (the agents' StopFailure entry has
`--auto-resume`); after the reset a real `rewake sweep` fires it, finds the open Claude and
types the resume, which names the run, into its tmux pane; the provider gets agents 4, 5, 6 once
more and 1-3 not at all (docs/workflows.md).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.realcli.realcli_drive import Box, Tmux, claude_env, cli_binary, waits_for
from tests.realcli.realcli_install import CLAUDE
from tests.realcli.realcli_rewake import hook_settings, resume_sweeper_env, session_of
from tests.realcli.realcli_workflow_mock import Served
from tests.support.sweeper import start_sweeper, stop_all

pytestmark = pytest.mark.realcli

#: How far ahead the limit resets: the run's end is reported and armed well before (the
#: exact reset comes from the lost agents' rows, so the minute Claude prints does not matter).
RESET_AHEAD_S = 30
#: After the reset: the mark falls due, the sweeper types the resume, the run's three agents go.
RESUMED_WITHIN_S = 90


def test_a_declined_workflow_wait_is_armed_and_resumed_in_the_open_claude(
    served: Served,
    tmp_path: Path,
) -> None:
    """Setting off, a limit at agents 4-6 of 6: the hook reports the run's end as the limit and
    arms it; after the reset the sweeper types the named resume into the open Claude, the mock
    gets agents 4, 5, 6 once each, the mark ends done, and the prediction (3 of 6 from cache)
    is kept beside what ran live."""
    binary = cli_binary(CLAUDE)
    box = Box.make(tmp_path)
    env = claude_env(box, binary, served.url, "UTC", interactive=True)
    env["CLAUDE_CODE_WORKFLOWS"] = "1"
    settings = hook_settings(box)
    rewake = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    settings["hooks"]["Stop"] = [{"hooks": [{"type": "command", "command": rewake, "timeout": 30}]}]
    settings["autoContinueAtUsageLimit"] = False
    (box.home / ".claude" / "settings.json").write_text(json.dumps(settings))
    sweeper_env = resume_sweeper_env(box, env, REWAKE_COMMAND_GRACE_S="5")
    sweeper = start_sweeper(sweeper_env, box.root / "sweeper.log")
    tmux = Tmux(box, [str(binary), "--allowedTools", "Workflow"], env)
    hook_log = box.root / "state" / "hook.log"
    mock = served.mock
    armed_at = 0.0
    try:
        tmux.wait_for(waits_for(r"❯|for shortcuts"), timeout=150)
        mock.limited = {4, 5, 6}
        mock.reset_epoch = int(time.time()) + RESET_AHEAD_S
        tmux.submit("WFTEST use a workflow", lambda: len(mock.main))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and "auto-resume armed" not in (
            hook_log.read_text() if hook_log.exists() else ""
        ):
            time.sleep(0.5)
        armed_at = time.time()
        deadline = mock.reset_epoch + RESUMED_WITHIN_S
        while time.time() < deadline and mock.counts()[6] < 2:
            time.sleep(1)
        time.sleep(8)  # the resumed run's end: its task notification, the last Stop
        screen = tmux.screen()
    finally:
        tmux.close()
        stop_all([sweeper])
    said = hook_log.read_text() if hook_log.exists() else ""
    swept = (box.root / "sweeper.log").read_text()
    assert armed_at < mock.reset_epoch, said
    limited = [(1, "ok"), (2, "ok"), (3, "ok"), (4, "limit"), (5, "limit"), (6, "limit")]
    assert mock.agents == [*limited, (4, "ok"), (5, "ok"), (6, "ok")], (said, swept, screen)
    assert "Claude Code did not wait (its automatic wait is off" in said, said
    state = box.root / "state"
    record = json.loads(next((state / "runs").glob("claude-*.json")).read_text())
    session = session_of(box, record["root_id"])
    failure = session["runs"][0]["attempts"][0]["failure"]
    assert failure["failure_kind"] == "provider_quota", failure
    assert failure["verdict"]["reset_at"].startswith(
        time.strftime("%Y-%m-%dT%H:%M", time.gmtime(mock.reset_epoch))
    ), failure["verdict"]
    assert (session.get("mark") or {}).get("state") == "done", (session.get("mark"), swept)
    # The resume was typed into that Claude: its UserPromptSubmit hook started attempt 2.
    attempts = [(a["attempt"], a["status"]) for a in session["runs"][0]["attempts"]]
    assert attempts == [(1, "failed"), (2, "started")], (attempts, said)
    assert "continued by hand (UserPromptSubmit): attempt 2 started" in said, said
    assert f"{record['root_id']}: wf_" in said and "3 agents ran live (predicted 3)" in said, said
    (kept,) = record["extra"]["workflow_predictions"]["2"]
    assert (kept["cached"], kept["live"], kept.get("ran_live")) == (3, 3, 3), (kept, said)
