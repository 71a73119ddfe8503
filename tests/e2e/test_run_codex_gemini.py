"""`rewake run` supervising the stand-in `codex` and `gemini`: Codex's resume gets the original
flags again (it keeps none and falls back to a read-only sandbox), Gemini resumes by hand in
the same directory, and a Gemini limit is reported with the command that arms it, or, when
Gemini saved no conversation (its first request hit the limit), with the fresh start."""

from __future__ import annotations

import json
import subprocess

from tests.support.run import RunEnv, attempts_of, epoch_in, run_env

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
    """Without --auto-resume, a limit with a stated reset after the model answered is reported
    and the terminal shows the banner, the reset in local time and `rewake auto-resume NAME
    on`; nothing is armed."""
    run_env.scenario({"do": "limit", "answered": True})
    done = run_env.rewake("run", "--name", "g2", "--", "gemini", "-p", "fix the tests")
    assert done.returncode == 1
    failure = attempts_of(run_env.session("g2"))[0]["failure"]
    assert failure["failure_kind"] == "provider_quota"
    assert failure["verdict"]["reset_at"] is not None
    assert "Paused · provider limit" in done.stdout
    assert "(local time)" in done.stdout
    assert "rewake auto-resume g2 on\n" in done.stdout
    assert run_env.session("g2")["mark"]["state"] is None


def test_gemini_limit_on_the_first_request_offers_only_a_fresh_start(run_env: RunEnv) -> None:
    """A Gemini limit before the model ever answered leaves nothing to resume: rewake says so,
    offers `auto-resume NAME on --fresh-if-missing` and `run --resume NAME --fresh-if-missing`
    instead of the plain arming command, and keeps `conversation_saved: false`."""
    run_env.scenario({"do": "limit"})
    done = run_env.rewake("run", "--name", "g3", "--", "gemini", "-p", "fix the tests")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "gemini saved no conversation for g3" in done.stdout
    assert "rewake auto-resume g3 on --fresh-if-missing" in done.stdout
    assert "rewake run --resume g3 --fresh-if-missing" in done.stdout
    assert "rewake auto-resume g3 on\n" not in done.stdout
    assert run_env.record("g3")["conversation_saved"] is False
    session = run_env.session("g3")
    assert session["mark"]["state"] is None
    assert attempts_of(session)[0]["failure"]["conversation_saved"] is False
    assert session["mark"]["offer"]["code"] == "conversation_not_saved"


def test_auto_resume_on_for_a_gemini_session_with_nothing_saved_arms_nothing(
    run_env: RunEnv,
) -> None:
    """`rewake auto-resume NAME on` for a Gemini session whose first request hit the limit
    arms nothing (exit 3) and names the fresh start, before any sweeper question; with
    `--fresh-if-missing` the store arms it."""
    run_env.scenario({"do": "limit"})
    run_env.rewake("run", "--name", "g7", "--", "gemini", "-p", "fix the tests")
    refused = run_env.rewake("auto-resume", "g7", "on", "--anyway")
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert "not armed: gemini saved no conversation for g7" in refused.stderr
    assert "rewake auto-resume g7 on --fresh-if-missing" in refused.stderr
    assert run_env.session("g7")["mark"]["state"] is None
    fresh = run_env.rewake("auto-resume", "g7", "on", "--fresh-if-missing", "--anyway")
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    assert run_env.session("g7")["mark"]["state"] == "armed"


def test_gemini_auto_resume_without_a_saved_conversation_is_not_armed(run_env: RunEnv) -> None:
    """`--auto-resume` on a Gemini limit that saved no conversation arms nothing (the resume
    could only fail with "No previous sessions found"), says why, and prints the command that
    arms a fresh start; rewake exits with the CLI's status at once instead of waiting."""
    run_env.scenario({"do": "limit"})
    done = run_env.rewake("run", "--auto-resume", "--name", "g4", "--",
                          "gemini", "-p", "fix the tests")  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "auto-resume not armed: it would resume a conversation that does not exist" in (
        done.stdout
    )
    assert "rewake auto-resume g4 on --fresh-if-missing" in done.stdout
    assert run_env.session("g4")["mark"]["state"] is None
    assert len(run_env.invocations()) == 1


def test_gemini_fresh_if_missing_arms_and_the_resume_starts_afresh(run_env: RunEnv) -> None:
    """With `--auto-resume --fresh-if-missing`, a first-request Gemini limit is armed (with a
    note that it will start afresh); the resume then starts the task afresh in the same
    directory, with a warning, instead of a `gemini --resume` bound to fail (here by hand)."""
    import signal
    import time

    run_env.scenario({"do": "limit"}, {"do": "success"})
    waiting = run_env.start("run", "--auto-resume", "--fresh-if-missing", "--name", "g5", "--",
                            "gemini", "-p", "fix the tests")  # fmt: skip
    assert waiting.stdout is not None
    said = ""
    deadline = time.monotonic() + 60
    while "auto-resume due at" not in said and time.monotonic() < deadline:
        said += waiting.stdout.readline()
    waiting.send_signal(signal.SIGINT)
    said += waiting.communicate(timeout=30)[0]
    assert "auto-resume armed" in said, said
    assert "the auto-resume starts the task afresh" in said
    assert run_env.session("g5")["mark"]["state"] == "armed"
    again = run_env.rewake("run", "--resume", "g5", "--fresh-if-missing")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "gemini saved no conversation for g5" in again.stdout
    assert "starting a FRESH conversation" in again.stdout
    calls = run_env.invocations()
    assert len(calls) == 2 and "--resume" not in calls[1]["argv"]
    assert calls[1]["argv"][-1] == "--prompt=fix the tests"
    assert calls[1]["cwd"] == calls[0]["cwd"]
    assert run_env.record("g5")["conversation_saved"] is True


def test_gemini_limit_after_an_answer_resumes_the_conversation(run_env: RunEnv) -> None:
    """A Gemini limit after the model answered (a tool call) leaves a saved conversation: the
    plain arming command is offered and the resume is `gemini --resume <id>`, which finds it."""
    run_env.scenario({"do": "limit", "answered": True}, {"do": "success"})
    done = run_env.rewake("run", "--name", "g6", "--", "gemini", "-p", "fix the tests")
    assert "rewake auto-resume g6 on\n" in done.stdout and "saved no" not in done.stdout
    again = run_env.rewake("run", "--resume", "g6")
    assert again.returncode == 0, again.stdout + again.stderr
    calls = run_env.invocations()
    assert calls[1]["argv"][:2] == ["--resume", run_env.record("g6")["cli_session_id"]]
    assert run_env.record("g6")["conversation_saved"] is True
