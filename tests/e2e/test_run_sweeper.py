"""`rewake run --auto-resume` beside a real `rewake sweep` process: the sweeper, not rewake run,
fires the mark, through the command executor's `rewake run --resume-of {mark_id}`, exactly
once; rewake run only watches the mark."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from rewake.db.engine import Database
from rewake.db.models import SweeperHeartbeatRow
from rewake.runner.store.stores import StoreError
from tests.support.run import attempts_of, epoch_in, make_run_env, sweeper_running
from tests.support.sweeper import wait_until


def test_a_running_sweeper_fires_the_resume_through_the_command_executor(tmp_path: Path) -> None:
    """With a sweeper alive, rewake run waits for it; the sweeper spawns `rewake run
    --resume-of`, which runs `claude -p --resume` once in the session's directory."""
    command = [sys.executable, "-m", "rewake", "run", "--resume-of", "{mark_id}"]
    run_env = make_run_env(tmp_path, executor="command", command=json.dumps(command))
    with sweeper_running(run_env, tmp_path):
        run_env.scenario({"do": "limit", "resets_at": epoch_in(1)}, {"do": "success"})
        done = run_env.rewake("run", "--auto-resume", "--name", "sw1", "--", "claude", "-p", "go")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "a sweeper resumed sw1" in done.stdout

        def resumed() -> bool:
            attempts = attempts_of(run_env.session("sw1"))
            return [a["status"] for a in attempts] == ["failed", "completed"]

        assert wait_until(resumed, 30), (tmp_path / "sweeper.log").read_text()
    calls = run_env.invocations()
    assert len(calls) == 2
    assert calls[1]["argv"][:2] == ["-p", "--resume"]
    assert calls[1]["cwd"] == str(run_env.work)
    mark = run_env.session("sw1")["mark"]
    assert mark["state"] == "done"
    assert not str(mark["claimed_by"]).startswith("rewake-run:")
    assert run_env.log("sw1", 2).exists()


def test_a_conversation_found_missing_late_fails_the_sweepers_mark(tmp_path: Path) -> None:
    """The sweeper's `rewake run --resume-of` finds the conversation gone only 3 s into the
    resume (a slow start): with REWAKE_COMMAND_GRACE_S above that, as docs/run.md advises, the
    mark ends failed (conversation_missing), never done, and nothing starts afresh."""
    command = [sys.executable, "-m", "rewake", "run", "--resume-of", "{mark_id}"]
    run_env = make_run_env(
        tmp_path, executor="command", command=json.dumps(command), command_grace_s=30
    )
    with sweeper_running(run_env, tmp_path):
        run_env.scenario(
            {"do": "limit", "resets_at": epoch_in(1), "forget": True},
            {"do": "success", "slow_start": 3},
        )
        done = run_env.rewake("run", "--auto-resume", "--name", "sw2", "--", "claude", "-p", "go")
        # The watching run reports how the sweeper's resume ended, and exits non-zero.
        assert done.returncode == 1 and "found no conversation" in done.stdout, done.stdout

        def settled() -> bool:
            return run_env.session("sw2")["mark"]["state"] not in ("armed", "claimed", "sending")

        assert wait_until(settled, 40), (tmp_path / "sweeper.log").read_text()
    mark = run_env.session("sw2")["mark"]
    assert (mark["state"], mark["outcome"]) == ("failed", "conversation_missing"), mark
    calls = run_env.invocations()
    assert len(calls) == 2 and "--resume" in calls[1]["argv"]


#: How far ahead of the scenario mark 2's reset lies. The wait for mark 2 to be armed (the
#: sweeper's resume starting `rewake run --resume-of`, which starts the CLI) must end before it,
#: or the sweeper, still running, fires mark 2: under CI's load the first resume alone went out
#: 14 s after the sweeper started, and 20 s were not enough for both.
MARK_2_AHEAD_S = 90


def test_a_mark_armed_by_the_sweepers_resume_is_not_fired_again(tmp_path: Path) -> None:
    """The sweeper resumes mark 1, and its `--resume-of` attempt 2 arms mark 2 between two of
    the waiting run's polls; then the sweeper goes away. The waiting run, still holding its
    attempt-1 record, does not fire mark 2 (it would run attempt 2 again on the first
    conversation): it says a later attempt took over and exits 0, leaving mark 2 armed."""
    from sqlalchemy import delete

    command = [sys.executable, "-m", "rewake", "run", "--resume-of", "{mark_id}"]
    run_env = make_run_env(tmp_path, executor="command", command=json.dumps(command))
    with sweeper_running(run_env, tmp_path):
        mark_2_due = epoch_in(MARK_2_AHEAD_S)
        run_env.scenario(
            {"do": "limit", "resets_at": epoch_in(2)},
            {"do": "limit", "resets_at": mark_2_due},
            {"do": "success"},
        )
        proc = run_env.start("run", "--auto-resume", "--name", "st1", "--", "claude", "-p", "go")

        def second_mark_armed() -> bool:
            try:
                mark = run_env.session("st1")["mark"]
            except StoreError:  # not recorded yet: the first attempt is being set up
                return False
            return (mark.get("attempt"), mark.get("state")) == (2, "armed")

        armed = wait_until(second_mark_armed, MARK_2_AHEAD_S - 20)
        assert armed, (tmp_path / "sweeper.log").read_text()
    # The sweeper is gone: without its heartbeat, a run that still watched mark 2 would fire
    # it itself at its due time (within this test's wait).
    database = Database(run_env.database_url)
    try:
        with database.writer() as db, database.transaction(db):
            db.execute(delete(SweeperHeartbeatRow))
    finally:
        database.dispose()
    out, _ = proc.communicate(timeout=max(40, mark_2_due - time.time() + 30))
    assert proc.returncode == 0, out
    assert "went on without this run" in out or "a sweeper resumed st1" in out, out
    calls = run_env.invocations()
    assert len(calls) == 2, calls  # the first run and the sweeper's one resume
    mark = run_env.session("st1")["mark"]
    assert (mark["attempt"], mark["state"]) == (2, "armed")
    assert run_env.record("st1")["attempt"] == 2
    assert [a["status"] for a in attempts_of(run_env.session("st1"))] == ["failed", "failed"]


#: What the sweeper's environment holds besides (the service's secrets, another secret of the
#: machine) and the CLI's own key, which the resumed CLI needs.
SECRETS = {
    "REWAKE_API_TOKENS": "alice:token-secret-0123456789-1",
    "REWAKE_WEBHOOK_SECRET": "webhook-secret-2",
    "REWAKE_NOTIFY_URL": "https://ops:notify-secret-3@127.0.0.1:9/hook",
    "MACHINE_SECRET": "machine-secret-4",
}


def test_the_resumed_cli_sees_no_service_secret(tmp_path: Path) -> None:
    """The sweeper spawns `rewake run --resume-of`, which records the resume in the sweeper's
    database; the CLI it resumes sees its own key, PATH and the resume's ids, but none of the
    service's secrets, no database URL or state dir, and no variable outside the allowlist."""
    command = [sys.executable, "-m", "rewake", "run", "--resume-of", "{mark_id}"]
    run_env = make_run_env(tmp_path, executor="command", command=json.dumps(command))
    run_env.env.update(SECRETS, ANTHROPIC_API_KEY="cli-key")
    with sweeper_running(run_env, tmp_path):
        run_env.scenario({"do": "limit", "resets_at": epoch_in(1)}, {"do": "success"})
        done = run_env.rewake("run", "--auto-resume", "--name", "env1", "--", "claude", "-p", "go")
        assert done.returncode == 0, done.stdout + done.stderr

        def resumed() -> bool:
            attempts = attempts_of(run_env.session("env1"))
            return [a["status"] for a in attempts] == ["failed", "completed"]

        # The resume is recorded where the mark is: the child reached the sweeper's database.
        assert wait_until(resumed, 30), (tmp_path / "sweeper.log").read_text()
    first, resumed_cli = run_env.invocations()
    assert run_env.session("env1")["mark"]["state"] == "done"
    env = resumed_cli["env"]
    assert env["ANTHROPIC_API_KEY"] == "cli-key" and run_env.env["PATH"] in env["PATH"]
    assert env["REWAKE_MARK_ID"] == str(run_env.session("env1")["mark"]["id"])
    assert env["REWAKE_ROOT_ID"] == "env1" and "REWAKE_ATTEMPT_KEY" in env
    for name in [*SECRETS, "REWAKE_DATABASE_URL", "REWAKE_STATE_DIR", "REWAKE_PASS_ENV",
                 "REWAKE_COMMAND", "REWAKE_EXECUTOR", "PYTHONPATH"]:  # fmt: skip
        assert name not in env, name
    assert not any(value in json.dumps(env) for value in SECRETS.values())
    # Started by hand, the CLI keeps the user's environment, without rewake's settings.
    assert first["env"]["MACHINE_SECRET"] == "machine-secret-4"
    rewakes = [name for name in first["env"] if name.startswith("REWAKE_")]
    assert rewakes == ["REWAKE_SUPERVISED"]
