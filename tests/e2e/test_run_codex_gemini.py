"""`rewake run` supervising the stand-in `codex` and `gemini`: Codex's resume gets the original
flags again (it keeps none and falls back to a read-only sandbox), Gemini resumes by hand in
the same directory, and a Gemini limit is reported with the command that arms it."""

from __future__ import annotations

import json
import subprocess

from run_support import RunEnv, attempts_of, epoch_in, run_env

__all__ = ["run_env"]


def thread_of(run_env: RunEnv, name: str) -> str:
    for line in run_env.log(name, 1).read_text().splitlines():
        if not line.startswith("{"):
            continue  # rewake's header lines
        event = json.loads(line)
        if event.get("type") == "thread.started":
            return str(event["thread_id"])
    raise AssertionError("no thread.started")


def test_codex_auto_resume_passes_the_original_flags_again(run_env: RunEnv) -> None:
    """The automatic resume is `codex exec resume <thread> <original flags> --json -- <prompt>`,
    so the resumed turn may still write (the file appears in the work directory)."""
    run_env.scenario({"do": "limit", "resets_at": epoch_in(1)}, {"do": "success"})
    done = run_env.rewake(
        "run", "--auto-resume", "--name", "x1", "--",
        "codex", "exec", "--full-auto", "-m", "gpt-5", "write the file",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    thread = thread_of(run_env, "x1")
    calls = run_env.invocations()
    assert len(calls) == 2
    assert calls[0]["argv"] == ["exec", "--full-auto", "-m", "gpt-5", "--json", "--",
                                "write the file"]  # fmt: skip
    resume = calls[1]["argv"]
    assert resume[:4] == ["exec", "resume", thread, "--full-auto"]
    assert resume[4:7] == ["-m", "gpt-5", "--json"]
    assert (run_env.work / f"codex-wrote-{thread[:8]}.txt").exists()
    assert run_env.record("x1")["cli_session_id"] == thread


def test_standin_codex_resume_without_the_flags_is_read_only(run_env: RunEnv) -> None:
    """The stand-in keeps Codex's rule: `exec resume` without the sandbox flags runs read-only,
    and the write fails with a sandbox error (what rewake run's re-passed flags avoid)."""
    run_env.scenario({"do": "success"})

    def codex(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["codex", *argv], env=run_env.env, cwd=run_env.work, capture_output=True,
            text=True, check=False, timeout=20,
        )  # fmt: skip

    first = codex("exec", "--full-auto", "--json", "--", "write")
    assert first.returncode == 0
    thread = json.loads(first.stdout.splitlines()[0])["thread_id"]
    bare = codex("exec", "resume", thread, "--json", "--", "go on")
    assert bare.returncode == 1 and "Read-only file system" in bare.stdout


def test_gemini_resume_by_hand_runs_in_the_same_directory(run_env: RunEnv) -> None:
    """`rewake run --resume NAME -- PROMPT` runs `gemini --resume <id> --prompt=PROMPT` in the saved
    work directory (Gemini's sessions are per directory), as attempt 2 with its own log."""
    run_env.scenario({"do": "success"})
    first = run_env.rewake("run", "--name", "g1", "--", "gemini", "-m", "gemini-2.5-pro", "-p",
                           "fix the tests")  # fmt: skip
    assert first.returncode == 0, first.stdout + first.stderr
    session_id = run_env.record("g1")["cli_session_id"]
    again = run_env.rewake("run", "--resume", "g1", "--", "go on")
    assert again.returncode == 0, again.stdout + again.stderr
    calls = run_env.invocations()
    assert calls[0]["argv"] == ["-m", "gemini-2.5-pro", "--output-format", "stream-json",
                                "--prompt=fix the tests"]  # fmt: skip
    assert calls[1]["argv"][:3] == ["--resume", session_id, "--prompt=go on"]
    assert "-m" in calls[1]["argv"]
    assert calls[1]["cwd"] == calls[0]["cwd"]
    statuses = [a["status"] for a in attempts_of(run_env.session("g1"))]
    assert statuses == ["completed", "completed"]
    assert run_env.log("g1", 1).exists() and run_env.log("g1", 2).exists()


def test_gemini_limit_shows_the_banner_and_the_arming_command(run_env: RunEnv) -> None:
    """Without --auto-resume, a limit with a stated reset is reported and the terminal shows
    the banner, the reset in local time and `rewake auto-resume NAME on`; nothing is armed."""
    run_env.scenario({"do": "limit"})
    done = run_env.rewake("run", "--name", "g2", "--", "gemini", "-p", "fix the tests")
    assert done.returncode == 1
    failure = attempts_of(run_env.session("g2"))[0]["failure"]
    assert failure["failure_kind"] == "provider_quota"
    assert failure["verdict"]["reset_at"] is not None
    assert "Paused · provider limit" in done.stdout
    assert "(local time)" in done.stdout
    assert "rewake auto-resume g2 on" in done.stdout
    assert run_env.session("g2")["mark"]["state"] is None
