"""`rewake run` with REWAKE_NOTIFY: a limit's pause and the resume it fires itself are one
notification each, sent to a listener on 127.0.0.1; an endpoint that fails changes nothing."""

from __future__ import annotations

from pathlib import Path

from tests.support.announce import listening
from tests.support.run import epoch_in, make_run_env

TASK = "fix the tests"


def test_a_pause_and_the_foreground_resume_are_announced_once_each(tmp_path: Path) -> None:
    """A limit with --auto-resume: "Paused · provider limit" with the due time, then "Resumed"
    when rewake run fires the mark; nothing else."""
    env = make_run_env(tmp_path)
    env.scenario({"do": "limit", "resets_at": epoch_in(2)}, {"do": "success"})
    with listening() as listener:
        env.env["REWAKE_NOTIFY"] = listener.url
        done = env.rewake("run", "--auto-resume", "--name", "n1", "--", "claude", "-p", TASK)
        got = listener.wait_for(2)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [g["title"] for g in got] == ["Paused · provider limit · n1", "Resumed · n1"]
    assert got[0]["message"].startswith("n1: resets ")
    assert "auto-resume is on: due at" in got[0]["message"]
    assert "rewake run sent the resume of attempt 1" in got[1]["message"]


def test_a_failing_endpoint_does_not_change_the_run(tmp_path: Path) -> None:
    """Every notification answered 500: the run resumes and exits 0 as without REWAKE_NOTIFY,
    and stderr says, URL redacted, that the notifications were not sent."""
    env = make_run_env(tmp_path)
    env.scenario({"do": "limit", "resets_at": epoch_in(2)}, {"do": "success"})
    with listening(status=500) as listener:
        url = listener.url.replace("json://", "json://bot:hunter2@")
        env.env["REWAKE_NOTIFY"] = url
        done = env.rewake("run", "--auto-resume", "--name", "n2", "--", "claude", "-p", TASK)
    assert done.returncode == 0, done.stdout + done.stderr
    assert env.session("n2")["mark"]["state"] == "done"
    assert "was not sent" in done.stderr and "hunter2" not in done.stderr + done.stdout
