"""The run_env fixture's promise: what a test started with `rewake` ends with the test."""

from __future__ import annotations

from pathlib import Path

from tests.support.run import make_run_env, process_running
from tests.support.sweeper import wait_until


def test_a_run_the_test_left_running_ends_with_it(tmp_path: Path) -> None:
    """A `rewake run` a test left running (it failed midway) is ended at teardown, the CLI it
    supervises with it, and its pipe is closed (not left to the garbage collector)."""
    env = make_run_env(tmp_path)
    env.scenario({"do": "hang"})
    process = env.start("run", "--name", "left", "--", "claude", "-p", "go")
    pidfile = Path(env.env["STANDIN_PIDFILE"])
    try:
        assert wait_until(lambda: pidfile.exists() and pidfile.read_text().strip() != "", 30)
        cli = int(pidfile.read_text())
        assert process_running(cli)
    finally:
        env.end_started()
    assert process.returncode is not None
    assert process.stdout is not None and process.stdout.closed
    assert not process_running(cli)
