"""`rewake hook claude` on a StopFailure for an agent of a workflow (interactive Claude Code
2.1.332 pauses the workflow and re-runs the agent itself after the reset): no failed turn of
the session, nothing armed, the hold and the run recorded for a later resume."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rewake.runner.hook import claude as hook
from rewake.runner.process import workflows
from rewake.runner.store import records
from rewake.runner.store.stores import JSON, StoreError

NOW = datetime(2026, 12, 7, 12, 38, 26, tzinfo=UTC)
SID = "2364f963-777b-41f7-b6d6-06552eababc1"
ROOT = f"claude-{SID}"
RUN = "wf_a966fb13-af3"
LIMITED = "a7937fc76bdec689d"
#: The payload 2.1.332 sent for agent 4 of six, limited (only the paths differ).
PAYLOAD = {
    "session_id": SID,
    "prompt_id": "07a81452-136c-4df6-9260-56af32a5cf30",
    "agent_id": LIMITED,
    "agent_type": "workflow-subagent",
    "effort": {"level": "medium"},
    "hook_event_name": "StopFailure",
    "error": "rate_limit",
    "last_assistant_message": "You've hit your 5-hour limit · resets 12:39pm (UTC)",
}
AGENTS = ["a657e1fa14aff8920", "a862e124c4dc1ba88", "a9d03cb53ba198c83", LIMITED]


class Store:
    """A store that fails the test if the hook reports or arms anything."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def get_session(self, root_id: str) -> JSON:
        raise StoreError("session_not_found", root_id, 404)

    def report_failure(self, root_id: str, run_id: str, body: Mapping[str, Any]) -> JSON:
        self.calls.append("report_failure")
        return {"auto_resume": {"available": True}, "verdict": {}}

    def set_auto_resume(self, root_id: str, *, enabled: bool, despite_native: bool = False) -> JSON:
        self.calls.append("set_auto_resume")
        return {"state": "armed"}

    def close(self) -> None:
        return


def session_on_disk(tmp_path: Path) -> Path:
    """The session's transcript and the run's folder as 2.1.332 lays them out, agents 1-3
    returned and agent 4 started (the journal's lines in its shape); the transcript path."""
    session = tmp_path / "projects" / "-w" / SID
    folder = session / "subagents" / "workflows" / RUN
    folder.mkdir(parents=True)
    lines: list[dict[str, Any]] = [{"type": "launched"}]
    for n, agent in enumerate(AGENTS, 1):
        key = f"v2:{n:064x}"
        lines.append({"type": "started", "key": key, "agentId": agent, "label": f"a{n}",
                      "phase": "Work"})  # fmt: skip
        if agent != LIMITED:
            lines.append({"type": "result", "key": key, "agentId": agent, "result": f"done{n}",
                          "sessionId": SID})  # fmt: skip
        (folder / f"agent-{agent}.meta.json").write_text(
            json.dumps({"agentType": "workflow-subagent", "inWorkflowRun": True})
        )
    (folder / "journal.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    scripts = session / "workflows" / "scripts"
    scripts.mkdir(parents=True)
    (scripts / f"six-{RUN}.js").write_text("export const meta = {}\n")
    transcript = session.with_suffix(".jsonl")
    transcript.write_text(json.dumps({"type": "user", "uuid": "u0",
                                      "message": {"content": "WFTEST"}}) + "\n")  # fmt: skip
    return transcript


def run(tmp_path: Path, payload: JSON) -> tuple[Store, list[str], dict[str, str]]:
    env = {"REWAKE_STATE_DIR": str(tmp_path / "state"), "CLAUDE_CONFIG_DIR": str(tmp_path)}
    store = Store()
    result = hook.run_hook(json.dumps(payload), now=NOW, env=env, open_store=lambda: store,  # type: ignore[arg-type,return-value]
                           auto_resume=True, zone="UTC")  # fmt: skip
    return store, result.lines, env


def test_a_workflow_agents_limit_is_not_the_sessions_failed_turn(tmp_path: Path) -> None:
    """The agent's StopFailure reports no attempt and arms nothing: Claude Code re-runs it."""
    transcript = session_on_disk(tmp_path)
    store, lines, _ = run(tmp_path, {**PAYLOAD, "transcript_path": str(transcript),
                                     "cwd": str(tmp_path)})  # fmt: skip
    assert store.calls == []
    assert lines == [f"{ROOT}: workflow {RUN} paused at a usage limit: 3 of 4 agents started "
                     "returned; not the session's failed turn, nothing armed: Claude Code "
                     "re-runs the waiting agents after the reset (if it declines, the run's end "
                     "is reported)"]  # fmt: skip


def test_the_hold_and_the_run_are_recorded_for_a_later_resume(tmp_path: Path) -> None:
    """The record holds the limit by run id (journal, counts, who continues) and the run in the
    map a resume reads, so that the resume names it and predicts 3 agents replayed."""
    transcript = session_on_disk(tmp_path)
    _, _, env = run(tmp_path, {**PAYLOAD, "transcript_path": str(transcript),
                               "cwd": str(tmp_path)})  # fmt: skip
    record = records.load(ROOT, env)
    assert record is not None and record.cli_session_id == SID and record.cwd == str(tmp_path)
    journal = transcript.with_suffix("") / "subagents" / "workflows" / RUN / "journal.jsonl"
    assert record.extra["workflow_holds"] == {RUN: {
        "agent_id": LIMITED, "observed_at": NOW.isoformat(), "journal": str(journal),
        "limit": PAYLOAD["last_assistant_message"], "continued_by": "claude_code",
        "started": 4, "returned": 3, "auto_resume": True,
    }}  # fmt: skip
    script = transcript.with_suffix("") / "workflows" / "scripts" / f"six-{RUN}.js"
    assert record.extra["workflow_runs"] == {
        RUN: {"journal": str(journal), "session_id": SID, "script": str(script)}
    }
    plan = workflows.plan_resume(record.extra, SID)
    assert plan.run_ids == (RUN,)
    assert (plan.predictions[0].cached, plan.predictions[0].total) == (3, 4)


def test_a_run_folder_outside_claudes_projects_folder_is_not_read(tmp_path: Path) -> None:
    """A transcript_path outside Claude Code's projects folder names no run; still no failed
    turn is reported for the session."""
    transcript = session_on_disk(tmp_path)
    store, lines, env = run(tmp_path / "elsewhere",
                            {**PAYLOAD, "transcript_path": str(transcript)})  # fmt: skip
    assert store.calls == []
    assert f"agent {LIMITED}; its run not found" in lines[0]
    record = records.load(ROOT, env)
    assert record is not None and "workflow_runs" not in record.extra


def test_the_main_turns_own_limit_is_still_reported(tmp_path: Path) -> None:
    """Without agent_type the StopFailure is the session's turn, reported as before."""
    transcript = session_on_disk(tmp_path)
    main_turn = {k: v for k, v in PAYLOAD.items() if k not in ("agent_id", "agent_type")}
    store, _, _ = run(tmp_path, {**main_turn, "transcript_path": str(transcript)})
    assert store.calls[0] == "report_failure"
