"""`rewake run` refusing what would run a CLI twice, lose a record, or crash on local state:
another rewake run holding the session, a cancelled session, a store that does not answer, a
corrupt record, an unusable state directory, and a session name that leaves the state dir."""

from __future__ import annotations

import signal
import subprocess

from tests.support.run import RunEnv, epoch_in, run_env
from tests.support.sweeper import wait_until

__all__ = ["run_env"]

TASK = "fix the tests"


def resumes(run_env: RunEnv) -> list[list[str]]:
    return [call["argv"] for call in run_env.invocations() if "--resume" in call["argv"]]


def stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return out


def test_a_second_resume_while_one_runs_is_refused(run_env: RunEnv) -> None:
    """While one `rewake run --resume NAME` runs the CLI, a second one and the executor's
    `--resume-of` exit non-zero (6) without running anything: exactly one `--resume` ran."""
    run_env.scenario({"do": "limit", "resets_at": epoch_in(3600)}, {"do": "hang"})
    first = run_env.rewake("run", "--name", "k1", "--", "claude", "-p", TASK)
    assert first.returncode == 1, first.stdout + first.stderr
    running = run_env.start("run", "--resume", "k1")
    try:
        assert wait_until((run_env.tmp / "standin.pid").exists, 20)
        second = run_env.rewake("run", "--resume", "k1")
        executor = subprocess.run(
            [*second.args[:3], "run", "--resume-of", "1"], cwd=run_env.work,
            env={**run_env.env, "REWAKE_ROOT_ID": "k1"}, capture_output=True, text=True,
            timeout=60, check=False,
        )  # fmt: skip
    finally:
        stop(running)
    assert second.returncode == 6, second.stdout + second.stderr
    assert "another rewake run is running session 'k1'" in second.stderr
    assert executor.returncode == 6, executor.stdout + executor.stderr
    assert len(resumes(run_env)) == 1


def test_a_cancelled_session_is_not_resumed_by_hand(run_env: RunEnv) -> None:
    """`rewake run --resume NAME` on a cancelled session says so and runs nothing (7)."""
    from rewake.runner.store.stores import LocalStore
    from rewake.settings import Settings

    run_env.scenario({"do": "limit", "resets_at": epoch_in(3600)}, {"do": "success"})
    assert run_env.rewake("run", "--name", "k2", "--", "claude", "-p", TASK).returncode == 1
    store = LocalStore(Settings(database_url=run_env.database_url), migrate=False)
    try:
        store.cancel("k2")
    finally:
        store.close()
    again = run_env.rewake("run", "--resume", "k2")
    assert again.returncode == 3, again.stdout + again.stderr
    assert "was cancelled" in again.stderr and "--force" in again.stderr
    assert resumes(run_env) == []


def test_an_unreachable_service_starts_nothing(run_env: RunEnv) -> None:
    """With REWAKE_URL pointing at nothing, rewake run names the URL, exits 5 and never starts
    the CLI (its limit could not be recorded)."""
    run_env.env["REWAKE_URL"] = "http://127.0.0.1:9"
    run_env.scenario({"do": "success"})
    done = run_env.rewake("run", "--name", "u1", "--", "claude", "-p", TASK)
    assert done.returncode == 5, done.stdout + done.stderr
    assert "http://127.0.0.1:9" in done.stderr and "Traceback" not in done.stderr
    assert run_env.invocations() == []


def test_a_corrupt_record_is_one_line_and_exit_5(run_env: RunEnv) -> None:
    """A runs/NAME.json that is not JSON gives one line naming the file, exit 5, no traceback."""
    runs = run_env.tmp / "state" / "runs"
    runs.mkdir(parents=True)
    (runs / "bad.json").write_text("{not json")
    done = run_env.rewake("run", "--resume", "bad")
    assert done.returncode == 5, done.stdout + done.stderr
    assert "bad.json" in done.stderr and "Traceback" not in done.stderr


def test_an_unusable_state_directory_is_one_line_and_exit_5(run_env: RunEnv) -> None:
    """REWAKE_STATE_DIR under a file (/dev/null/x) gives one line, exit 5, and no CLI run."""
    run_env.env["REWAKE_STATE_DIR"] = "/dev/null/x"
    done = run_env.rewake("run", "--name", "d1", "--", "claude", "-p", TASK)
    assert done.returncode == 5, done.stdout + done.stderr
    assert "/dev/null/x" in done.stderr and "Traceback" not in done.stderr
    assert run_env.invocations() == []


def test_resume_refuses_a_name_that_leaves_the_state_directory(run_env: RunEnv) -> None:
    """`rewake run --resume ../../x` is bad usage (2): it never reads a file outside the state
    directory."""
    import json

    state = run_env.tmp / "a" / "b"
    (state / "runs").mkdir(parents=True)
    outside = {"root_id": "x", "run_id": "r1", "provider": "claude", "cwd": str(run_env.work),
               "args": ["-p", TASK], "cli_session_id": "5d0c8f7e"}  # fmt: skip
    (run_env.tmp / "a" / "x.json").write_text(json.dumps(outside))  # runs/../../x.json
    run_env.env["REWAKE_STATE_DIR"] = str(state)
    done = run_env.rewake("run", "--resume", "../../x")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--resume" in done.stderr and "Traceback" not in done.stderr
    assert run_env.invocations() == []
