"""End to end with real processes on a real SQLite file: Claude Code's StopFailure hook reports
a rejected rate limit, arms the resume, the terminal views show the armed mark, and a real
sweeper with the command executor resumes the session exactly once, never before the reset."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.support.hook import claude_dir, stop_failure
from tests.support.sweeper import REPO, rewake_env, start_sweeper, stop_all, wait_until

RECORDER = """import json, os, sys, time
with open(sys.argv[1], "a", encoding="utf-8") as out:
    env = {k: v for k, v in os.environ.items() if k.startswith("REWAKE_")}
    out.write(json.dumps({"argv": sys.argv[2:], "env": env, "at": time.time()}) + "\\n")
"""


def rewake(
    env: dict[str, str], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewake", *args], input=stdin, capture_output=True, text=True,
        env=env, cwd=str(REPO), timeout=60, check=False,
    )  # fmt: skip


def resumes(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_the_hook_arms_and_a_real_sweeper_resumes_exactly_once(tmp_path: Path) -> None:
    """`rewake hook claude --auto-resume` arms the mark (ls/show --json show it), and a sweeper
    with the command executor runs the resume once, for that root and mark, after the reset."""
    recorder, out = tmp_path / "recorder.py", tmp_path / "resumes.jsonl"
    recorder.write_text(RECORDER)
    command = [sys.executable, str(recorder), str(out), "{root_id}", "{mark_id}", "{session_id}"]
    env = rewake_env(
        f"sqlite:///{tmp_path / 'rewake.db'}", state_dir=tmp_path / "state", resume_delay_s=0,
        executor="command", command=json.dumps(command), sweep_interval_s=1,
    )  # fmt: skip
    env["CLAUDE_CONFIG_DIR"] = str(claude_dir(tmp_path))
    env["TZ"] = "Europe/Berlin"
    session_id = str(uuid.uuid4())
    root_id = f"claude-{session_id}"
    resets_at = int(time.time()) + 6

    hooked = rewake(env, "hook", "claude", "--auto-resume",
                    stdin=stop_failure(tmp_path, session_id, resets_at))  # fmt: skip
    assert hooked.returncode == 0
    assert "auto-resume armed" in hooked.stderr, hooked.stderr

    listing = json.loads(rewake(env, "ls", "--json").stdout)
    [session] = listing["sessions"]
    assert (session["root_id"], session["mark"]["state"]) == (root_id, "armed")
    shown = json.loads(rewake(env, "show", root_id, "--json").stdout)
    mark = shown["mark"]
    assert (mark["state"], mark["run_id"], mark["attempt"]) == ("armed", "interactive", 1)
    assert mark["reset_at"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(resets_at))
    fresh = rewake(env, "auto-resume", root_id, "on", "--fresh-if-missing")
    assert fresh.returncode == 0 and "started fresh in" in fresh.stdout, fresh.stderr
    record = json.loads((tmp_path / "state" / "runs" / f"{root_id}.json").read_text())
    assert (record["cli_session_id"], record["fresh_if_missing"], record["cwd"]) == (
        session_id, True, str(tmp_path),
    )  # fmt: skip

    sweeper = start_sweeper(env, tmp_path / "sweeper.log")
    try:
        assert wait_until(lambda: bool(resumes(out)), 40), (tmp_path / "sweeper.log").read_text()
        time.sleep(3)  # several more sweeps: none may send it again
    finally:
        stop_all([sweeper])
    [resume] = resumes(out)
    assert resume["argv"][:4] == [root_id, str(mark["id"]), session_id, "--"]
    assert resume["env"]["REWAKE_ROOT_ID"] == root_id
    assert resume["env"]["REWAKE_MARK_ID"] == str(mark["id"])
    assert resume["env"]["REWAKE_EXPECTED_ATTEMPT"] == "1"
    assert resume["at"] >= resets_at  # never early
    done = json.loads(rewake(env, "show", root_id, "--json").stdout)["mark"]
    assert done["state"] == "done"


def native_continue_stop(tmp_path: Path, session_id: str, hour: int) -> str:
    """A StopFailure whose transcript ends on interactive Claude's five-hour banner and its
    promise to continue by itself when the limit resets (corpus: syn-cc-local-native-...)."""
    clock = f"{hour % 12 or 12}{'am' if hour < 12 else 'pm'}"
    banner = (f"5-hour limit reached ∙ resets {clock}\n"
              "  ⎿  Claude will continue automatically when the limit resets.")  # fmt: skip
    rows: list[dict[str, Any]] = [
        {"type": "user", "message": {"role": "user", "content": "fix the tests"}, "uuid": "u-1"},
        {"type": "assistant", "message": {"model": "<synthetic>", "role": "assistant",
         "content": [{"type": "text", "text": banner}]}, "isApiErrorMessage": True, "uuid": "a-2"},
    ]  # fmt: skip
    transcript = claude_dir(tmp_path) / "projects" / "p" / f"{session_id}.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    transcript.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return json.dumps({
        "session_id": session_id, "transcript_path": str(transcript), "cwd": str(tmp_path),
        "hook_event_name": "StopFailure", "error": "rate_limit", "last_assistant_message": banner,
    })  # fmt: skip


def test_no_resume_is_armed_when_claude_continues_by_itself(tmp_path: Path) -> None:
    """A banner saying Claude continues by itself at the reset: the hook's --auto-resume arms
    nothing (native_auto_continue), `auto-resume on` is refused with the reason (exit 3), so
    rewake never resumes a session the CLI resumes itself."""
    env = rewake_env(f"sqlite:///{tmp_path / 'rewake.db'}", state_dir=tmp_path / "state")
    env["CLAUDE_CONFIG_DIR"] = str(claude_dir(tmp_path))
    env["TZ"] = "UTC"
    session_id = str(uuid.uuid4())
    root_id = f"claude-{session_id}"
    # The next whole hour at least 10 minutes ahead, printed as interactive Claude prints it.
    hour = (time.gmtime(time.time() + 600 + 3600).tm_hour) % 24

    hooked = rewake(env, "hook", "claude", "--auto-resume",
                    stdin=native_continue_stop(tmp_path, session_id, hour))  # fmt: skip
    assert hooked.returncode == 0 and "armed" not in hooked.stderr.replace("not armed", ""), (
        hooked.stderr
    )
    showing = rewake(env, "show", root_id, "--json")
    assert showing.returncode == 0, (showing.stderr, hooked.stderr)
    shown = json.loads(showing.stdout)
    assert shown["mark"]["state"] in (None, "none"), shown["mark"]
    [attempt] = [a for run in shown["runs"] for a in run["attempts"]]
    verdict = attempt["failure"]["verdict"]
    assert verdict["native_auto_continue"] is True and verdict["scope"] == "five_hour", verdict

    refused = rewake(env, "auto-resume", root_id, "on")
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert "itself" in (refused.stdout + refused.stderr).lower()


def test_a_prompt_while_a_rewake_run_holds_the_session_lock_is_blocked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the session's SessionLock held (as `rewake run --resume-of` holds it while the
    headless Claude runs), `rewake hook claude` on a UserPromptSubmit exits 2 with the reason on
    stderr and records nothing; once the lock is free the prompt continues by hand (exit 0)."""
    from rewake.runner.process.guard import SessionLock

    env = rewake_env(f"sqlite:///{tmp_path / 'rewake.db'}", state_dir=tmp_path / "state")
    env["CLAUDE_CONFIG_DIR"] = str(claude_dir(tmp_path))
    session_id = str(uuid.uuid4())
    root_id = f"claude-{session_id}"
    hooked = rewake(env, "hook", "claude", "--auto-resume",
                    stdin=stop_failure(tmp_path, session_id, int(time.time()) + 3600))  # fmt: skip
    assert hooked.returncode == 0 and "auto-resume armed" in hooked.stderr, hooked.stderr
    prompt = json.dumps(
        {"session_id": session_id, "hook_event_name": "UserPromptSubmit", "prompt": "go on"}
    )

    monkeypatch.setenv("REWAKE_STATE_DIR", str(tmp_path / "state"))  # where SessionLock looks
    lock = SessionLock(root_id)
    lock.acquire("resume-of mark 1 (the test)")
    try:
        blocked = rewake(env, "hook", "claude", stdin=prompt)
    finally:
        lock.release()
    assert blocked.returncode == 2, blocked.stderr
    assert blocked.stdout == "" and "prompt blocked" in blocked.stderr
    assert f"rewake show {root_id}" in blocked.stderr and "the test" in blocked.stderr
    shown = json.loads(rewake(env, "show", root_id, "--json").stdout)
    assert [a["status"] for run in shown["runs"] for a in run["attempts"]] == ["failed"]

    continued = rewake(env, "hook", "claude", stdin=prompt)
    assert continued.returncode == 0 and "attempt 2 started" in continued.stderr


def test_the_hook_announces_the_pause_with_its_due_time(tmp_path: Path) -> None:
    """With REWAKE_NOTIFY, `rewake hook claude --auto-resume` sends one notification for the
    limit, with the time the armed resume is due, to a listener on 127.0.0.1, before it exits;
    run again for the same failure, it reports nothing new and sends nothing."""
    from tests.support.announce import listening

    env = rewake_env(
        f"sqlite:///{tmp_path / 'rewake.db'}", state_dir=tmp_path / "state", resume_delay_s=0,
    )  # fmt: skip
    env["CLAUDE_CONFIG_DIR"] = str(claude_dir(tmp_path))
    session_id = str(uuid.uuid4())
    payload = stop_failure(tmp_path, session_id, int(time.time()) + 3600)
    with listening() as listener:
        env["REWAKE_NOTIFY"] = listener.url
        hooked = rewake(env, "hook", "claude", "--auto-resume", stdin=payload)
        got = list(listener.received)  # the hook waited for the send before exiting
        again = rewake(env, "hook", "claude", "--auto-resume", stdin=payload)
        time.sleep(0.5)
        after = list(listener.received)
    assert hooked.returncode == 0 and "auto-resume armed" in hooked.stderr, hooked.stderr
    assert [g["title"] for g in got] == [f"Paused · provider limit · claude-{session_id}"]
    assert "auto-resume is on: due at" in got[0]["message"]
    assert again.returncode == 0 and "nothing new" in again.stderr, again.stderr
    assert after == got


def test_a_prompt_hook_neither_reads_nor_warns_of_rewake_notify(tmp_path: Path) -> None:
    """A prompt typed in a session rewake does not know (UserPromptSubmit) says nothing, even
    with a REWAKE_NOTIFY that apprise cannot read: the notifier is made only for a notice."""
    env = rewake_env(f"sqlite:///{tmp_path / 'rewake.db'}", state_dir=tmp_path / "state")
    env["CLAUDE_CONFIG_DIR"] = str(claude_dir(tmp_path))
    env["REWAKE_NOTIFY"] = "notaurl://x"
    payload = json.dumps({
        "session_id": str(uuid.uuid4()), "hook_event_name": "UserPromptSubmit",
        "prompt": "go on", "cwd": str(tmp_path),
    })  # fmt: skip
    prompted = rewake(env, "hook", "claude", stdin=payload)
    assert prompted.returncode == 0 and prompted.stderr == "", prompted.stderr
