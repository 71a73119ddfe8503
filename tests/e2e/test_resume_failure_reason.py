"""A resume that fails says why: the command executor keeps the last line its program wrote to
stderr, and the mark, `rewake show` and the page's words carry it (not "pid N exited 5")."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.support.run import epoch_in, make_run_env, sweeper_running
from tests.support.sweeper import wait_until


def test_a_failed_resume_command_carries_its_last_stderr_line(tmp_path: Path) -> None:
    """A wrapper that drops the sweeper's database: `rewake run --resume-of` refuses the other
    store, and the mark's failure says so in its words, shown by `rewake show`."""
    # `env -u` stands for a wrapper script that loses the store the sweeper handed on.
    command = ["env", "-u", "REWAKE_DATABASE_URL", sys.executable, "-m", "rewake", "run",
               "--resume-of", "{mark_id}"]  # fmt: skip
    run_env = make_run_env(
        tmp_path, executor="command", command=json.dumps(command), command_grace_s=30
    )
    with sweeper_running(run_env, tmp_path):
        run_env.scenario({"do": "limit", "resets_at": epoch_in(1)}, {"do": "success"})
        run_env.rewake("run", "--auto-resume", "--name", "why1", "--", "claude", "-p", "go")

        def settled() -> bool:
            return run_env.session("why1")["mark"]["state"] == "failed"

        assert wait_until(settled, 30), (
            run_env.session("why1")["mark"],
            (tmp_path / "sweeper.log").read_text(),
        )
    mark = run_env.session("why1")["mark"]
    assert mark["outcome"] == "exit_5"
    assert mark["outcome_detail"].startswith("exited 5: rewake run: mark ")
    assert "is not in the store this resume would record into" in mark["outcome_detail"]
    shown = run_env.rewake("show", "why1")
    assert "is not in the store this resume would record into" in " ".join(shown.stdout.split())
    assert len(run_env.invocations()) == 1  # nothing was resumed
