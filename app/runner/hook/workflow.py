"""A usage limit that hit an agent of a Claude Code workflow, seen by `rewake hook claude`.

In the interactive CLI (2.1.332) such a limit pauses the workflow: Claude Code fires StopFailure
for the agent, the payload naming it (`agent_type` "workflow-subagent", `agent_id`):

    {"session_id": "2364f963-...", "transcript_path": ".../2364f963-....jsonl",
     "agent_id": "a7937fc76bdec689d", "agent_type": "workflow-subagent",
     "hook_event_name": "StopFailure", "error": "rate_limit",
     "last_assistant_message": "You've hit your 5-hour limit · resets 12:39pm (UTC)"}

and re-runs the waiting agents itself 30-90 s after the reset (docs/workflows.md says when it
does not). The main session's turn did not fail: reporting this as the session's failed turn
would arm a resume, and a resume typed into the open session beside Claude Code's own re-run
would be a second writer. So the hook reports no attempt and arms nothing; it records the hold
against the session (the run id, its journal, the agents started and returned) and remembers
the run where a resume of the session looks for it (rewake.runner.process.workflows), so that a
resume the user asks for later names the run and predicts its replay.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from rewake.runner.hook.payload import (
    PROVIDER,
    RUN_ID,
    WORKFLOW_AGENT,
    HookInput,
    HookResult,
    root_id_for,
)
from rewake.runner.hook.transcript import projects_dir
from rewake.runner.process import workflows
from rewake.runner.store import records

#: The record's map of limits that paused a workflow: run id -> what the hook saw.
HOLDS_KEY = "workflow_holds"
#: Who continues a paused workflow (docs/workflows.md): Claude Code itself, after the reset.
CONTINUED_BY = "claude_code"


def workflow_agent(raw: str) -> str | None:
    """The agent id when `raw` is a StopFailure for an agent of a workflow, else None."""
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("agent_type") != WORKFLOW_AGENT:
        return None
    agent_id = data.get("agent_id")
    return agent_id if isinstance(agent_id, str) and agent_id.isalnum() else ""


def run_folder_of(hook: HookInput, agent_id: str, env: Mapping[str, str]) -> Path | None:
    """The run folder holding the agent's transcript: `<session>/subagents/workflows/<run>/`
    next to the session's transcript, inside Claude Code's projects folder only."""
    if not hook.transcript_path or not agent_id:
        return None
    transcript = Path(hook.transcript_path)
    session = transcript.with_suffix("")
    try:
        if not session.resolve().is_relative_to(projects_dir(env).resolve()):
            return None
        runs = session.joinpath(*workflows.RUNS_UNDER_SESSION)
        for meta in sorted(runs.glob(f"wf_*/agent-{agent_id}.meta.json")):
            if workflows.RUN_ID.fullmatch(meta.parent.name):
                return meta.parent
    except OSError:
        return None
    return None


def record_hold(
    hook: HookInput, agent_id: str, result: HookResult, *, now: datetime, env: Mapping[str, str]
) -> None:
    """Record the limit that paused a workflow against the session; report no failed turn and
    arm nothing (the module's docstring says why)."""
    root_id = result.root_id = root_id_for(hook.session_id)
    folder = run_folder_of(hook, agent_id, env)
    hold: dict[str, Any] = {"agent_id": agent_id, "observed_at": now.isoformat(),
                            "limit": hook.last_assistant_message or hook.error,
                            "continued_by": CONTINUED_BY}  # fmt: skip
    old = records.load(root_id, env)
    base = old or records.RunRecord(root_id, RUN_ID, PROVIDER, cwd=hook.cwd or "", args=[],
                                    cli_session_id=hook.session_id)  # fmt: skip
    extra = dict(base.extra)
    run_id = folder.name if folder is not None else None
    if folder is not None and run_id is not None:
        try:
            journal = workflows.read_journal(folder / workflows.JOURNAL, run_id)
        except workflows.WorkflowError as error:
            hold["journal_problem"] = str(error)
        else:
            hold.update(started=len(journal.order), returned=len(journal.order) - len(journal.lost))
        hold["journal"] = str(folder / workflows.JOURNAL)
        script = next(iter(sorted((folder.parents[2] / "workflows" / "scripts")
                                  .glob(f"*-{run_id}.js"))), None)  # fmt: skip
        workflows.remember(extra, [workflows.SeenRun(run_id, folder, script)], hook.session_id)
    holds = extra.get(HOLDS_KEY)
    holds = dict(holds) if isinstance(holds, dict) else {}
    holds[run_id or f"agent-{agent_id}"] = hold
    extra[HOLDS_KEY] = holds
    records.save(replace(base, extra=extra), env)
    what = f"workflow {run_id}" if run_id else f"a workflow (agent {agent_id}; its run not found)"
    counts = (f": {hold['returned']} of {hold['started']} agents started returned"
              if "started" in hold else "")  # fmt: skip
    result.say(
        f"{root_id}: {what} paused at a usage limit{counts}; not the session's failed turn, "
        "nothing armed: Claude Code re-runs the waiting agents after the reset"
    )
