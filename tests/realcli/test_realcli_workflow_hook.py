"""`rewake hook claude` beside a real interactive Claude Code 2.1.332 whose workflow hits a
usage limit at one agent (the same mock and six-agent script as test_realcli_workflow.py).

Claude Code pauses the workflow, fires StopFailure for the agent (`workflow-subagent`) and
re-runs the waiting agents itself after the reset: the hook must record the hold against the
session (run id, journal counts) and report and arm nothing, and each agent after the limited
one must reach the provider once (docs/workflows.md).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.realcli.realcli_drive import Box, Tmux, claude_env, cli_binary, waits_for
from tests.realcli.realcli_install import CLAUDE
from tests.realcli.realcli_one_writer import reset_after
from tests.realcli.realcli_rewake import hook_settings, rewake_env
from tests.realcli.realcli_workflow_mock import Served

pytestmark = pytest.mark.realcli

#: Claude Code re-runs a paused workflow's agents at the reset plus 30-90 s (its jitter).
SETTLED_AFTER_RESET_S = 120


def test_a_paused_workflow_is_recorded_and_left_to_claude(
    served: Served,
    tmp_path: Path,
) -> None:
    """A limit at agent 4 of 6: the hook records the hold (3 of 4 returned) without a failed
    turn or a mark, and Claude Code itself re-runs agent 4, then 5 and 6, once each; the Stop
    after the run's end notes the re-run and reports nothing."""
    binary = cli_binary(CLAUDE)
    box = Box.make(tmp_path)
    env = claude_env(box, binary, served.url, "UTC", interactive=True)
    env["CLAUDE_CODE_WORKFLOWS"] = "1"
    settings = hook_settings(box)
    (box.home / ".claude" / "settings.json").write_text(json.dumps(settings))
    rewake_env(box, env)  # the hook's own environment is in its command line
    tmux = Tmux(box, [str(binary), "--allowedTools", "Workflow"], env)
    try:
        tmux.wait_for(waits_for(r"❯|for shortcuts"), timeout=150)
        mock = served.mock
        mock.limited = {4}
        mock.reset_epoch = reset_after(time.time())
        tmux.submit("WFTEST use a workflow", lambda: len(mock.main))
        tmux.wait_for(waits_for(r"paused · usage limit resets"), timeout=120)
        deadline = mock.reset_epoch + SETTLED_AFTER_RESET_S
        while time.time() < deadline and mock.counts()[6] == 0:
            time.sleep(1)
        time.sleep(8)  # anything after the sixth agent would show now, and the last Stop
    finally:
        tmux.close()
    assert mock.agents == [(1, "ok"), (2, "ok"), (3, "ok"), (4, "limit"), (4, "ok"), (5, "ok"),
                           (6, "ok")]  # fmt: skip
    state = box.root / "state"
    record = json.loads(next((state / "runs").glob("claude-*.json")).read_text())
    ((run_id, hold),) = record["extra"]["workflow_holds"].items()
    assert (hold["started"], hold["returned"], hold["continued_by"]) == (4, 3, "claude_code")
    assert hold["ended"]["outcome"] == "rerun_by_claude_code", hold
    assert run_id in record["extra"]["workflow_runs"]
    log = (state / "hook.log").read_text()
    assert f"workflow {run_id} paused at a usage limit" in log
    # No attempt reported ("attempt 1 reported: ..."), no mark ("auto-resume armed: ...").
    assert " reported: " not in log and "auto-resume" not in log, log
    assert f"workflow {run_id} ended completed with all 6 agents returned" in log, log
