"""A usage limit that hit an agent of a Claude Code workflow, seen by `rewake hook claude`.

In the interactive CLI (2.1.332) such a limit pauses the workflow: Claude Code fires StopFailure
for the agent, the payload naming it (`agent_type` "workflow-subagent", `agent_id`):

    {"session_id": "2364f963-...", "transcript_path": ".../2364f963-....jsonl",
     "agent_id": "a7937fc76bdec689d", "agent_type": "workflow-subagent",
     "hook_event_name": "StopFailure", "error": "rate_limit",
     "last_assistant_message": "You've hit your 5-hour limit · resets 12:39pm (UTC)"}

and re-runs the waiting agents itself 30-90 s after the reset. The main session's turn did not
fail: reporting this as the session's failed turn would arm a resume, and a resume typed into
the open session beside Claude Code's own re-run would be a second writer. So the hook reports
no attempt and arms nothing; it records the hold against the session (the run id, its journal,
the agents started and returned, whether the hook was asked to arm) and remembers the run where
a resume of the session looks for it (rewake.runner.process.workflows).

Claude Code declines the wait when its `autoContinueAtUsageLimit` setting is off, when the
reset is more than 24 h ahead, or when the run already waited for two resets
(docs/workflows.md): each limited agent fails (a StopFailure apiece), the run ends "completed"
with their nulls, Claude Code's task notification starts one more main turn, and the session
sits open with nobody to continue the run. The hook learns the end at the main turn's `Stop`:
a held run whose record (`<session>/workflows/<run-id>.json`, written when the run ends) is
there, and whose journal still has agents started and never returned, was declined. That is
the session's failure: it is reported as the usage limit (the rejected rate-limit events from
the lost agents' transcripts, and the journal's gap), and armed when the agent's StopFailure
was heard with `--auto-resume`. A held run that ends with every agent returned was re-run by
Claude Code: the hook notes it and stays down.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
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
    hook: HookInput,
    agent_id: str,
    result: HookResult,
    *,
    now: datetime,
    env: Mapping[str, str],
    auto_resume: bool = False,
) -> None:
    """Record the limit that paused a workflow against the session; report no failed turn and
    arm nothing (the module's docstring says why). `auto_resume`: the hook was asked to arm,
    which holds for the run's end should Claude Code decline the wait."""
    root_id = result.root_id = root_id_for(hook.session_id)
    folder = run_folder_of(hook, agent_id, env)
    hold: dict[str, Any] = {"agent_id": agent_id, "observed_at": now.isoformat(),
                            "limit": hook.last_assistant_message or hook.error,
                            "continued_by": CONTINUED_BY, "auto_resume": auto_resume}  # fmt: skip
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
    earlier = holds.get(run_id or "")
    if isinstance(earlier, dict) and "ended" not in earlier:
        # Another agent of the same run: the hook's word to arm holds if either said it.
        hold["auto_resume"] = auto_resume or bool(earlier.get("auto_resume"))
    holds[run_id or f"agent-{agent_id}"] = hold
    extra[HOLDS_KEY] = holds
    records.save(replace(base, extra=extra), env)
    what = f"workflow {run_id}" if run_id else f"a workflow (agent {agent_id}; its run not found)"
    counts = (f": {hold['returned']} of {hold['started']} agents started returned"
              if "started" in hold else "")  # fmt: skip
    result.say(
        f"{root_id}: {what} paused at a usage limit{counts}; not the session's failed turn, "
        "nothing armed: Claude Code re-runs the waiting agents after the reset (if it declines, "
        "the run's end is reported)"
    )


@dataclass(frozen=True)
class Declined:
    """A held run that ended with agents lost to a usage limit: Claude Code did not wait."""

    run_id: str
    limit: workflows.WorkflowLimit
    #: Why Claude Code did not wait, as its run's log says, or what it can be.
    why: str
    #: The hook was asked to arm when the agent's StopFailure came (`--auto-resume`).
    auto_resume: bool

    @property
    def key(self) -> str:
        """What makes this failure the same as one reported before (the hook's failure key)."""
        journal = self.limit.journals[0]
        return f"workflow:{self.run_id}:{journal.started_entries}"

    def message(self) -> str:
        """The report's message: the journal's gap, why Claude Code did not wait, the limit's
        banner (which the parser reads)."""
        return "\n".join([*self.limit.message().split("\n")[:1],
                          f"Claude Code did not wait for the reset: {self.why}",
                          *dict.fromkeys(self.limit.banners)])  # fmt: skip

    def resume_args(self, args: list[str]) -> list[str]:
        """The resume's ARGS (flags, `--`, the task) with the Workflow tool allowed. What let
        the interactive Claude run it (`--allowedTools Workflow`, an answer at its permission
        prompt) is not in the hook's payload, and a headless resume (`claude -p --resume`) is
        refused a tool that needs permission: in `default` mode outright, in `auto` mode unless
        Claude Code's server-side check passes it, which a provider on another host does not
        (seen with 2.1.332: "Auto mode is unavailable ... so Workflow was not run"). The resume
        asks for exactly that tool, on a run this session already ran."""
        end = args.index("--") if "--" in args else len(args)
        if RESUME_TOOL in args[:end]:
            return args
        return [*args[:end], "--allowedTools", RESUME_TOOL, *args[end:]]


#: The tool a declined run's resume calls (Declined.resume_args).
RESUME_TOOL = "Workflow"


#: What the run's log says when Claude Code declined to wait (2.1.332's words), and the reason.
_DECLINED_BECAUSE = (
    ("too far out to wait for", "the reset is more than 24 h ahead"),
    ("already waited for", "the run already waited for 2 resets"),
    ("will not run again", "waiting for usage limits was turned off while it waited"),
)
_DECLINED_OTHERWISE = (
    "its automatic wait is off (the autoContinueAtUsageLimit setting) or does not apply to "
    "this limit or sign-in"
)


def why_declined(logs: list[str]) -> str:
    for line in logs:
        for said, why in _DECLINED_BECAUSE:
            if said in line:
                return why
    return _DECLINED_OTHERWISE


def run_ended(
    hook: HookInput, result: HookResult, *, now: datetime, env: Mapping[str, str]
) -> Declined | None:
    """At the main turn's Stop: look at the session's held runs that have ended since. One
    that ended with agents lost to a limit is returned (Claude Code declined the wait) for
    the caller to report; one whose agents all returned was re-run by Claude Code, and is
    noted. Each held run is looked at until it ends, once; a session with no hold costs one
    file lookup."""
    root_id = root_id_for(hook.session_id)
    old = records.load(root_id, env)
    holds = old.extra.get(HOLDS_KEY) if old is not None else None
    if old is None or not isinstance(holds, dict):
        return None
    holds = dict(holds)
    noted = _note_ran_live(old, result)
    found: Declined | None = None
    for run_id, hold in holds.items():
        if found is not None or not isinstance(hold, dict) or "ended" in hold:
            continue
        journal_path = Path(str(hold.get("journal") or ""))
        if not workflows.RUN_ID.fullmatch(run_id) or journal_path.name != workflows.JOURNAL:
            continue
        folder = journal_path.parent
        if not workflows.in_layout(folder) or (status := workflows.run_status(folder)) is None:
            continue  # still paused or running (its record is written at its end)
        try:
            journal = workflows.read_journal(journal_path, run_id)
        except workflows.WorkflowError:
            continue
        total, lost = len(journal.order), len(journal.lost)
        ended = {
            "at": now.isoformat(),
            "status": status,
            "started": total,
            "returned": total - lost,
        }
        result.root_id = root_id
        if not lost:
            ended["outcome"] = "rerun_by_claude_code"
            result.say(
                f"{root_id}: workflow {run_id} ended {status} with all {total} agents "
                "returned: Claude Code re-ran the waiting agents; nothing to resume"
            )
        else:
            events = workflows.limit_events(journal)
            banners = [t for t in workflows.limit_texts(folder) if "limit" in t.lower()]
            if not (events or banners):
                ended["outcome"] = "lost_not_to_a_limit"
                result.say(
                    f"{root_id}: workflow {run_id} ended {status} with {lost} of {total} "
                    "agents lost, and nothing says to a usage limit: not reported"
                )
            else:
                why = why_declined(workflows.run_logs(folder))
                limit = workflows.WorkflowLimit((journal,), tuple(events), tuple(banners))
                found = Declined(run_id, limit, why, bool(hold.get("auto_resume")))
                ended["outcome"] = "declined"
                ended["why"] = why
                result.say(
                    f"{root_id}: workflow {run_id} ended {status} with {lost} of {total} "
                    f"agents lost to a usage limit: Claude Code did not wait ({why}); "
                    "reported as the session's failed turn"
                )
        holds[run_id] = {**hold, "ended": ended}
    if result.root_id is not None or noted:
        result.root_id = root_id
        records.save(replace(old, extra={**old.extra, HOLDS_KEY: holds}), env)
    return found


def _note_ran_live(record: records.RunRecord, result: HookResult) -> bool:
    """After a resume typed into the open session: once its runs have ended, what ran live
    beside what was predicted for that attempt (kept in `record.extra`, changed in place). A
    run has ended for this only once the resume added to its journal: the Stop of the turn
    that launched the resume can come before its first agent starts, when the earlier
    execution's record still describes the journal."""
    kept = record.extra.get(workflows.PREDICTIONS_KEY)
    kept = kept.get(str(record.attempt)) if isinstance(kept, dict) else None
    ended = [item for item in kept or [] if isinstance(item, dict) and _resumed_run_ended(item)]
    for line in workflows.note_ran_live(ended):
        result.say(f"{record.root_id}: {line}")
    return bool(ended)


def _resumed_run_ended(item: dict[str, Any]) -> bool:
    if "ran_live" in item or not item.get("journal"):
        return False
    journal = Path(str(item["journal"]))
    if not workflows.in_layout(journal.parent) or workflows.run_status(journal.parent) is None:
        return False
    try:
        now = workflows.read_journal(journal, journal.parent.name)
    except workflows.WorkflowError:
        return False
    return now.started_entries > int(item.get("started_entries") or 0)
