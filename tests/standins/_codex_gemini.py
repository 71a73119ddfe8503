"""The stand-in `codex` and `gemini` (see _standin.py for the scenario and the facts kept)."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from pathlib import Path

from _standin import READ_ONLY, emit, fail, log_invocation, next_outcome, state_dir, value

# -- codex ---------------------------------------------------------------------------------


def writable(argv: list[str]) -> bool:
    if "--full-auto" in argv or "--dangerously-bypass-approvals-and-sandbox" in argv:
        return True
    return value(argv, "-s", "--sandbox") in ("workspace-write", "danger-full-access")


def codex(argv: list[str]) -> None:
    outcome = next_outcome()
    log_invocation("codex", outcome)
    if argv[:1] != ["exec"]:
        fail("standin: only `codex exec` is supported here")
    if "--json" not in argv:
        fail("standin: pass --json")
    threads = state_dir("codex")
    if argv[1:2] == ["resume"]:
        thread_id = argv[2]
        if not (threads / thread_id).exists():
            fail(f"Error: thread/resume failed: no rollout found for thread id {thread_id}")
    else:
        thread_id = str(uuid.uuid4())
        (threads / thread_id).write_text("")
    emit({"type": "thread.started", "thread_id": thread_id})
    emit({"type": "turn.started"})
    do = outcome.get("do")
    if do == "limit":
        # ho-cx-exec-json-aug20-thread, with the usage_limit_reached body (resets_at) beside it.
        body = {
            "error": {
                "type": "usage_limit_reached",
                "message": "The usage limit has been reached",
                "plan_type": "plus",
                "resets_at": outcome["resets_at"],
                "resets_in_seconds": max(0, outcome["resets_at"] - int(time.time())),
            }
        }
        emit({"type": "error", "message": json.dumps(body)})
        emit(
            {
                "type": "turn.failed",
                "error": {
                    "message": "You've hit your usage limit. Upgrade "
                    "to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/codex/settings/"
                    "usage to purchase more credits or try again later."
                },
            }
        )
        raise SystemExit(1)
    target = Path.cwd() / f"codex-wrote-{thread_id[:8]}.txt"
    if not writable(argv):
        # `codex exec resume` without the original flags falls back to the read-only sandbox.
        emit(
            {
                "type": "item.completed",
                "item": {
                    "id": "item_1",
                    "type": "command_execution",
                    "command": f"touch {target.name}",
                    "exit_code": 1,
                    "status": "failed",
                    "aggregated_output": f"touch: cannot touch '{target.name}': {READ_ONLY}",
                },
            }
        )
        emit({"type": "turn.failed", "error": {"message": "sandbox: read-only file system"}})
        raise SystemExit(1)
    target.write_text("ok\n")
    emit(
        {
            "type": "item.completed",
            "item": {
                "id": "item_1",
                "type": "command_execution",
                "command": f"touch {target.name}",
                "exit_code": 0,
                "status": "completed",
            },
        }
    )
    emit(
        {
            "type": "item.completed",
            "item": {"id": "item_2", "type": "agent_message", "text": "Wrote the file."},
        }
    )
    emit({"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 5}})


# -- gemini --------------------------------------------------------------------------------


def gemini(argv: list[str]) -> None:
    outcome = next_outcome()
    log_invocation("gemini", outcome)
    prompt = value(argv, "-p", "--prompt")
    if prompt is None:
        fail("standin: only -p is supported here")
    # Sessions are kept per project directory.
    project = hashlib.sha256(str(Path.cwd()).encode()).hexdigest()[:12]
    sessions = state_dir("gemini") / project
    sessions.mkdir(exist_ok=True)
    resume = value(argv, "--resume", "-r")
    if resume is not None:
        if not any(sessions.iterdir()):
            fail("Error resuming session: No previous sessions found for this project.")
        if not (sessions / resume).exists():
            fail(f'Error resuming session: Invalid session identifier "{resume}".')
        session_id = resume
    else:
        session_id = str(uuid.uuid4())
    emit({"type": "init", "session_id": session_id, "model": "gemini-2.5-pro"})
    emit({"type": "message", "role": "user", "content": prompt})
    if outcome.get("do") != "limit" or outcome.get("answered"):
        # Saved once the model answers; a first request that hits the limit saves nothing.
        (sessions / session_id).write_text("")
    if outcome.get("do") == "limit":
        if outcome.get("answered"):
            emit({"type": "tool_use", "tool_name": "list_directory", "tool_id": "t0",
                  "parameters": {"dir_path": "."}})  # fmt: skip
            emit({"type": "tool_result", "tool_id": "t0", "status": "success", "output": "."})
        # gm-capacity-title-8h44m7s
        text = (
            "You have exhausted your capacity on this model. Your quota will reset after 8h44m7s."
        )
        emit({"type": "error", "severity": "error", "message": f"[API Error: {text}]"})
        emit(
            {"type": "result", "status": "error", "error": {"type": "FatalError", "message": text}}
        )
        raise SystemExit(1)
    for piece in ("Fixing ", "the tests", "…\n"):
        emit({"type": "message", "role": "assistant", "content": piece, "delta": True})
    emit(
        {
            "type": "tool_use",
            "tool_name": "run_shell_command",
            "tool_id": "t1",
            "parameters": {"command": "npm test"},
        }
    )
    emit({"type": "tool_result", "tool_id": "t1", "status": "success", "output": "ok"})
    emit({"type": "result", "status": "success", "stats": {"total_tokens": 12}})
