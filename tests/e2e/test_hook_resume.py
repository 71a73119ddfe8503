"""The whole interactive path with real processes: Claude Code's StopFailure hook reports a
limit and arms it, a real sweeper's command executor runs `rewake run --resume-of`, and that
resumes the stand-in `claude` headless, once, in the session's directory, after the reset."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from tests.support.db import migrate
from tests.support.hook import claude_dir, stop_failure
from tests.support.run import attempts_of, make_run_env
from tests.support.sweeper import start_sweeper, stop_all, wait_until


def test_the_hook_arms_and_rewake_run_resumes_the_conversation_once(tmp_path: Path) -> None:
    """hook --auto-resume arms; the sweeper spawns `rewake run --resume-of`, which runs
    `claude -p --resume <the session>` once, in the hook's cwd, never before the reset, and the
    resumed attempt's start settles the mark done."""
    command = [sys.executable, "-m", "rewake", "run", "--resume-of", "{mark_id}"]
    run_env = make_run_env(
        tmp_path, executor="command", command=json.dumps(command), command_grace_s=30,
        sweep_interval_s=1,
    )  # fmt: skip
    migrate(run_env.database_url)
    # Where the hook reads the transcript, and `rewake run --resume-of` looks for a later turn.
    run_env.env["CLAUDE_CONFIG_DIR"] = str(claude_dir(run_env.work))
    session_id = str(uuid.uuid4())
    root_id = f"claude-{session_id}"
    # The stand-in knows this conversation, as Claude Code would after the interactive turn.
    known = tmp_path / "standin-state" / "claude"
    known.mkdir(parents=True)
    (known / session_id).write_text("{}\n")
    run_env.scenario({"do": "success"})
    resets_at = int(time.time()) + 4

    hooked = subprocess.run(
        [sys.executable, "-m", "rewake", "hook", "claude", "--auto-resume"],
        input=stop_failure(run_env.work, session_id, resets_at), cwd=run_env.work,
        env=run_env.env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert hooked.returncode == 0 and "auto-resume armed" in hooked.stderr, hooked.stderr

    sweeper = start_sweeper(run_env.env, tmp_path / "sweeper.log")
    try:

        def settled() -> bool:
            return run_env.session(root_id)["mark"]["state"] not in ("armed", "claimed", "sending")

        assert wait_until(settled, 60), (tmp_path / "sweeper.log").read_text()

        def completed() -> bool:
            attempts = attempts_of(run_env.session(root_id))
            return [a["status"] for a in attempts] == ["failed", "completed"]

        assert wait_until(completed, 30), run_env.session(root_id)
    finally:
        stop_all([sweeper])
    mark = run_env.session(root_id)["mark"]
    assert mark["state"] == "done", mark
    [call] = run_env.invocations()
    assert call["argv"][:3] == ["-p", "--resume", session_id], call
    assert call["cwd"] == str(run_env.work)
    assert call["at"] >= resets_at  # the stand-in stamps each invocation with time.time()
    assert mark["reset_at"] == datetime.fromtimestamp(resets_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
