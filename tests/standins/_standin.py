"""What the stand-in `claude`, `codex` and `gemini` do: the facts `rewake run` relies on, and
the errors it must avoid, with texts and events taken from tests/corpus/real.

Driven by environment variables the test sets:
- STANDIN_SCENARIO: a JSON file {"outcomes": [{"do": ...}, ...]}; invocation n (the `--version`
  calls not counted) plays outcome n, the last one repeating. `do` is one of success, warning
  (an allowed_warning rate-limit event, then success), limit (with "resets_at", epoch seconds),
  login, crash, hang (waits for a signal; writes its pid to STANDIN_PIDFILE). With "forget":
  true, Claude loses the conversation after a limit (its transcript is gone at the resume).
  With "grandchild": true, a hanging Claude first starts a child in its process group that
  ignores SIGINT (as an MCP server or a background shell may), its pid in STANDIN_PIDFILE.gc.
  With "slow_start": seconds, Claude waits that long before it looks at the session. "says":
  the text of Claude's first assistant message; "stderr": a line written to stderr before it.
  With "answered": true, Gemini's limit comes after a tool call (the model answered first), so
  its session is saved; without it, the limit hits the first request and nothing is saved.
- STANDIN_STATE: a directory for the sessions each CLI knows (Claude's ids, Codex's threads,
  Gemini's per-directory sessions), so resuming an unknown one fails as the real CLI does.
- STANDIN_LOG: each invocation's argv, cwd and environment are appended here as a JSON line.

Facts reproduced: `claude -p --output-format stream-json` without --verbose is an error; a
--session-id that already has a transcript is "already in use"; `claude --resume` may report a
new session id (it does here, every time); a missing conversation ends as a `result` with
is_error and "No conversation found with session ID"; `codex exec resume` keeps no flags and
runs read-only unless the sandbox flags are passed again; Gemini's sessions are per directory,
and Gemini saves a session only once the model answered in it: `--resume` then says "No
previous sessions found for this project" in a directory with none (Gemini CLI 0.61.0).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REJECTED_429 = "API Error: Request rejected (429) · The usage limit has been reached"
READ_ONLY = "Read-only file system"
VERSIONS = {"claude": "2.1.220 (Claude Code)", "codex": "codex-cli 0.98.0", "gemini": "0.30.0"}


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def fail(text: str, code: int = 1) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
    raise SystemExit(code)


def state_dir(cli: str) -> Path:
    path = Path(os.environ.get("STANDIN_STATE", "/tmp/standin-state")) / cli
    path.mkdir(parents=True, exist_ok=True)
    return path


def next_outcome() -> dict[str, Any]:
    """This invocation's outcome: the scenario's next one (a counter beside the file)."""
    scenario = os.environ.get("STANDIN_SCENARIO")
    if not scenario:
        return {"do": "success"}
    outcomes = json.loads(Path(scenario).read_text())["outcomes"]
    counter = Path(scenario + ".n")
    with Path(scenario + ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        n = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(n + 1))
    return dict(outcomes[min(n, len(outcomes) - 1)])


def log_invocation(cli: str, outcome: dict[str, Any]) -> None:
    path = os.environ.get("STANDIN_LOG")
    if path:
        line = {
            "cli": cli, "argv": sys.argv[1:], "cwd": str(Path.cwd()), "do": outcome.get("do"),
            "at": time.time(), "pid": os.getpid(), "env": dict(os.environ),
        }  # fmt: skip
        with Path(path).open("a") as out:
            out.write(json.dumps(line) + "\n")


def write_pid(path: Path, pid: int) -> None:
    """Write `pid` to `path` whole or not at all: a test waits for the file to exist and then
    reads it, and a plain write let it read the file empty, between its creation and the
    write."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(str(pid))
    partial.replace(path)  # a rename within one folder is atomic


def hang(on_stop: Any) -> None:
    """Wait for a signal, as a CLI busy with a long turn; SIGINT/SIGTERM end it."""
    pidfile = os.environ.get("STANDIN_PIDFILE")
    if pidfile:
        write_pid(Path(pidfile), os.getpid())

    def stop(signum: int, _frame: Any) -> None:
        on_stop()
        raise SystemExit(130 if signum == signal.SIGINT else 143)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.05)
    raise SystemExit(0)


def spawn_grandchild() -> None:
    """A child that shrugs off Ctrl-C and outlives the CLI unless its group is stopped."""
    code = "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(120)"
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    pidfile = os.environ.get("STANDIN_PIDFILE")
    if pidfile:
        write_pid(Path(pidfile + ".gc"), child.pid)


def value(argv: list[str], *names: str) -> str | None:
    for n, arg in enumerate(argv):
        for name in names:
            if arg == name and n + 1 < len(argv):
                return argv[n + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def prompt_after_dashes(argv: list[str]) -> str:
    return argv[argv.index("--") + 1] if "--" in argv else (argv[-1] if argv else "")


# -- claude --------------------------------------------------------------------------------


def claude(argv: list[str]) -> None:
    outcome = next_outcome()
    log_invocation("claude", outcome)
    if "-p" not in argv and "--print" not in argv:
        fail("standin: interactive mode is not supported here")
    if value(argv, "--output-format") == "stream-json" and "--verbose" not in argv:
        fail("Error: When using --print, --output-format=stream-json requires --verbose")
    # "slow_start": seconds before Claude gets as far as looking for the conversation (a cold
    # start, MCP servers), so a missing one is only known that late.
    time.sleep(float(outcome.get("slow_start", 0)))
    sessions = state_dir("claude")
    resume = value(argv, "--resume", "-r")
    pinned = value(argv, "--session-id")
    if pinned is not None:
        if (sessions / pinned).exists():
            fail(f"Error: Session ID {pinned} is already in use.")
        session_id = pinned
    elif resume is not None:
        if not (sessions / resume).exists():
            emit(
                {
                    "type": "result",
                    "subtype": "error_during_execution",
                    "is_error": True,
                    "result": f"No conversation found with session ID: {resume}",
                    "session_id": str(uuid.uuid4()),
                }
            )
            fail(f"No conversation found with session ID: {resume}")
        # `-p --resume` continues the conversation under a new session id.
        session_id = str(uuid.uuid4())
        (sessions / session_id).write_text((sessions / resume).read_text())
    else:
        session_id = str(uuid.uuid4())
    transcript = sessions / session_id
    with transcript.open("a") as out:
        out.write(prompt_after_dashes(argv) + "\n")
    sid = {"session_id": session_id}
    emit(
        {
            "type": "system",
            "subtype": "init",
            "cwd": str(Path.cwd()),
            **sid,
            "tools": ["Bash"],
            "model": "claude-sonnet-4-5",
            "claude_code_version": "2.1.220",
        }
    )
    do = outcome.get("do")

    def said(text: str) -> dict[str, Any]:
        return {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": text}],
            },
            **sid,
        }

    if do == "hang":
        if outcome.get("grandchild"):
            spawn_grandchild()
        emit(said("Looking at the failing tests…"))
        hang(lambda: None)
    if do == "login":
        emit(
            {
                "type": "result",
                "subtype": "success",
                "is_error": True,
                "result": "Invalid API key · Please run /login",
                **sid,
            }
        )
        raise SystemExit(1)
    if do == "crash":
        fail("TypeError: Cannot read properties of undefined (reading 'map')")
    if "stderr" in outcome:
        sys.stderr.write(outcome["stderr"] + "\n")
        sys.stderr.flush()
    emit(said(outcome.get("says", "Looking at the failing tests…")))
    emit(
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "Bash",
                        "input": {"command": "pytest -q", "description": "Run the tests"},
                    }
                ],
            },
            **sid,
        }
    )
    emit(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01", "content": "3 passed"}
                ],
            },
            **sid,
        }
    )
    if do == "limit":
        # hv-cc-rate-limit-event-rejected-5776 and syn-cc-stream-rejected, with the test's reset.
        emit(
            {
                "type": "rate_limit_event",
                "rate_limit_info": {
                    "status": "rejected",
                    "resetsAt": outcome["resets_at"],
                    "rateLimitType": "five_hour",
                    "overageStatus": "rejected",
                    "overageDisabledReason": "org_level_disabled_until",
                    "isUsingOverage": False,
                },
                **sid,
            }
        )
        emit(
            {
                "type": "assistant",
                "message": {
                    "model": "<synthetic>",
                    "role": "assistant",
                    "content": [
                        {
                            "type": "text",
                            "text": REJECTED_429,
                        }
                    ],
                },
                "error": "rate_limit",
                "is_api_error_message": True,
                **sid,
            }
        )
        emit(
            {
                "type": "result",
                "subtype": "success",
                "is_error": True,
                "api_error_status": 429,
                "num_turns": 1,
                "result": "API Error: Request rejected (429) · The usage limit has been reached",
                **sid,
            }
        )
        if outcome.get("forget"):
            transcript.unlink()
        raise SystemExit(1)
    status = "allowed_warning" if do == "warning" else "allowed"
    emit(
        {
            "type": "rate_limit_event",
            "rate_limit_info": {
                "status": status,
                "resetsAt": int(time.time()) + 3 * 3600,
                "rateLimitType": "five_hour",
                "isUsingOverage": False,
            },
            **sid,
        }
    )
    emit(said("All tests pass now."))
    emit(
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "num_turns": 2,
            "result": "All tests pass now.",
            **sid,
        }
    )


def main(cli: str) -> None:
    argv = sys.argv[1:]
    if argv == ["--version"]:
        print(VERSIONS[cli])
        return
    if cli == "claude":
        claude(argv)
        return
    import _codex_gemini

    getattr(_codex_gemini, cli)(argv)
