"""A resume that an open interactive Claude holds, beside a real `rewake sweep` (issue 25): the
sweeper's `rewake run --resume-of` finds the conversation held by a live Claude it cannot type
into, sends nothing and exits 8, and the mark waits (armed again, its reason on record); once
that Claude has closed, the next look resumes the conversation headless, exactly once.

The holder is a stand-in: a live process registered as Claude Code registers an interactive
session (`sessions/<pid>.json` with its pid, start time and session id), detached from this
test's process tree, so that it runs in no tmux pane whatever terminal the test runs in."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from rewake.db.engine import Database
from rewake.runner.store.stores import StoreError
from tests.support.db import migrate
from tests.support.run import attempts_of, epoch_in, make_run_env, process_running
from tests.support.sweeper import heartbeat_seen, start_sweeper, stop_all, wait_until

#: How often the sweeper looks at a deferred mark again in this test (REWAKE_DEFER_RECHECK_S).
RECHECK_S = 2


def detached_holder(claude_dir: Path, session_id: str) -> int:
    """A live process, its parent gone (so no tmux pane is among its ancestors), registered
    as the interactive Claude Code that has conversation `session_id` open; its pid."""
    started = subprocess.run(
        ["sh", "-c", "sleep 600 >/dev/null 2>&1 </dev/null & echo $!"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    pid = int(started.stdout)
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    entry = {"pid": pid, "sessionId": session_id, "cwd": "/work", "kind": "interactive",
             "procStart": fields[19]}  # fmt: skip
    (claude_dir / "sessions").mkdir(parents=True, exist_ok=True)
    (claude_dir / "sessions" / f"{pid}.json").write_text(json.dumps(entry))
    return pid


def events(session: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [entry for entry in session["timeline"] if entry["event"] == name]


def test_a_held_conversation_waits_then_resumes_headless_once_the_holder_closed(
    tmp_path: Path,
) -> None:
    """While a live Claude (stand-in) holds the conversation and runs in no tmux pane, every
    fire of the sweeper defers the mark: nothing is started, the mark waits armed with the
    reason, told once on the timeline. Once it exits, the next fire resumes headless: one
    resume in all, the mark done, and the waiting `rewake run --auto-resume` sees it."""
    command = [sys.executable, "-m", "rewake", "run", "--resume-of", "{mark_id}"]
    run_env = make_run_env(
        tmp_path, executor="command", command=json.dumps(command), command_grace_s=30,
        defer_recheck_s=RECHECK_S,
    )  # fmt: skip
    claude_dir = tmp_path / "claude"
    run_env.env["CLAUDE_CONFIG_DIR"] = str(claude_dir)
    migrate(run_env.database_url)
    sweep_log = tmp_path / "sweeper.log"
    sweeper = start_sweeper(run_env.env, sweep_log)
    database = Database(run_env.database_url)
    holder = None
    try:
        # Seen, so that rewake run leaves the firing to the sweeper.
        assert wait_until(lambda: heartbeat_seen(database), 60), sweep_log.read_text()
        run_env.scenario({"do": "limit", "resets_at": epoch_in(20)}, {"do": "success"})
        waiting = run_env.start("run", "--auto-resume", "--name", "held", "--", "claude", "-p", "x")
        record = tmp_path / "state" / "runs" / "held.json"
        assert wait_until(record.exists, 30)
        holder = detached_holder(claude_dir, json.loads(record.read_text())["cli_session_id"])

        def looked_at_twice() -> bool:
            """Deferred, then looked at again and deferred again: armed, and due later than
            the one deferral the timeline tells of."""
            try:
                session = run_env.session("held")
            except StoreError:  # not reported yet
                return False
            told, mark = events(session, "mark_deferred"), session["mark"]
            return (
                mark["state"] == "armed"
                and len(told) == 1
                and datetime.fromisoformat(mark["due_at"])
                > datetime.fromisoformat(told[0]["detail"]["due_at"])
            )

        if not wait_until(looked_at_twice, 90, poll_s=0.2):
            waiting.terminate()
            said = waiting.communicate(timeout=30)[0]
            raise AssertionError(f"{sweep_log.read_text()}\n{said}\n{run_env.session('held')}")
        held = run_env.session("held")
        mark = held["mark"]
        assert mark["outcome"] == "deferred"
        assert (
            f"an open Claude Code (pid {holder}) holds this conversation"
            in (mark["outcome_detail"])
        )
        assert "runs in no tmux pane rewake can reach" in mark["outcome_detail"]
        assert len(events(held, "mark_deferred")) == 1
        # The look again left nothing: its claim and send were taken back with the deferral.
        assert len(events(held, "mark_claimed")) == len(events(held, "mark_sending")) == 1
        assert [call["argv"][:1] for call in run_env.invocations()] == [["-p"]]
        assert waiting.poll() is None  # still watching the mark

        os.kill(holder, signal.SIGTERM)
        assert wait_until(lambda: not process_running(holder or 0), 30)
        out = waiting.communicate(timeout=90)[0]
        assert waiting.returncode == 0, out + sweep_log.read_text()
        assert "a sweeper resumed held" in out
    finally:
        if holder is not None and process_running(holder):
            os.kill(holder, signal.SIGKILL)
        run_env.end_started()
        stop_all([sweeper])
        database.dispose()
    calls = run_env.invocations()
    assert len(calls) == 2 and calls[1]["argv"][:2] == ["-p", "--resume"]
    session = run_env.session("held")
    assert [a["status"] for a in attempts_of(session)] == ["failed", "completed"]
    assert session["mark"]["state"] == "done"
