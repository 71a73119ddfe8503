"""`rewake run` stopped by a signal: Ctrl-C stops the CLI's whole process group (a grandchild
that ignores SIGINT too), and a hang-up stops the CLI and still records the attempt halted.
Also: a resume that finds no conversation keeps the conversation id on record."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from tests.support.db import migrate
from tests.support.run import RunEnv, attempts_of, epoch_in, run_env
from tests.support.sweeper import wait_until

__all__ = ["run_env"]

TASK = "fix the tests"


def gone(pid: int) -> bool:
    """No such process, or only its zombie left for init to reap."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def stopped_by(run_env: RunEnv, signum: int, *, grandchild: bool) -> tuple[str, int, int]:
    """Start a hanging run, send `signum` to rewake run; its output, status and the CLI's pid."""
    run_env.scenario({"do": "hang", "grandchild": grandchild}, {"do": "success"})
    proc = run_env.start("run", "--name", "h1", "--", "claude", "-p", TASK)
    pidfile = run_env.tmp / "standin.pid"
    try:
        assert wait_until(pidfile.exists, 20)
        if grandchild:
            assert wait_until(Path(f"{pidfile}.gc").exists, 20)
        child = int(pidfile.read_text())
        proc.send_signal(signum)
        out, _ = proc.communicate(timeout=40)
    finally:
        if proc.poll() is None:
            proc.kill()
    return out, proc.returncode, child


def test_ctrl_c_stops_a_grandchild_that_ignores_sigint(run_env: RunEnv) -> None:
    """After Ctrl-C the CLI's process group is emptied: a grandchild that ignores SIGINT gets
    SIGTERM once the CLI has exited, and does not outlive rewake run."""
    out, code, _child = stopped_by(run_env, signal.SIGINT, grandchild=True)
    grandchild = int((run_env.tmp / "standin.pid.gc").read_text())
    try:
        assert code == 130, out
        assert wait_until(lambda: gone(grandchild), 10), "the grandchild survived Ctrl-C"
    finally:
        if not gone(grandchild):
            os.kill(grandchild, signal.SIGKILL)


def test_a_hang_up_stops_the_cli_and_records_the_attempt_halted(run_env: RunEnv) -> None:
    """SIGHUP to rewake run (the terminal closed) is handled like SIGTERM: the CLI is stopped,
    the attempt is reported halted, and rewake run exits 128 + SIGHUP."""
    out, code, child = stopped_by(run_env, signal.SIGHUP, grandchild=False)
    assert code == 128 + signal.SIGHUP, out
    assert gone(child)
    failure = attempts_of(run_env.session("h1"))[0]["failure"]
    assert failure["halted"] is True
    assert "rewake run --resume h1" in out


def test_a_missing_conversation_keeps_the_recorded_id(run_env: RunEnv) -> None:
    """The resume's "No conversation found" result carries a new, empty id: the record keeps
    the id of the conversation it was resuming."""
    run_env.scenario({"do": "limit", "resets_at": epoch_in(1), "forget": True}, {"do": "success"})
    done = run_env.rewake("run", "--auto-resume", "--name", "m2", "--", "claude", "-p", TASK)
    assert done.returncode != 0
    first = run_env.invocations()[0]["argv"]
    pinned = first[first.index("--session-id") + 1]
    assert run_env.record("m2")["cli_session_id"] == pinned


def test_a_sweeper_on_the_log_executor_is_named_before_waiting(tmp_path: Path) -> None:
    """With a sweeper alive whose heartbeat says it runs the log executor, rewake run warns
    before it waits that such a sweeper would only log the resume, and says how to fix it."""
    from rewake.db.engine import Database
    from tests.support.run import make_run_env
    from tests.support.sweeper import heartbeat_seen, start_sweeper, stop_all

    env = make_run_env(tmp_path, executor="log")
    migrate(env.database_url)
    sweep_log = tmp_path / "sweeper.log"
    sweeper = start_sweeper(env.env, sweep_log)
    database = Database(env.database_url)
    try:
        assert wait_until(lambda: heartbeat_seen(database), 30), sweep_log.read_text()
        env.scenario({"do": "limit", "resets_at": epoch_in(1)}, {"do": "success"})
        done: subprocess.CompletedProcess[str] = env.rewake(
            "run", "--auto-resume", "--name", "lg1", "--", "claude", "-p", TASK
        )
    finally:
        stop_all([sweeper])
        database.dispose()
    out = done.stdout
    assert "the sweepers running here log a due mark instead of resuming it" in out, out
    assert "the command executor (`rewake setup` installs one)" in out
    assert out.index("rewake setup") < out.index("⏳")
    assert len(env.invocations()) <= 2  # never more than the one resume
