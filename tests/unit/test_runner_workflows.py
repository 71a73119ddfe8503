"""Claude Code workflow journals (rewake.runner.process.workflows): the entries are the shapes
Claude Code 2.1.332 wrote against the mock (docs/workflows.md), keys shortened."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from rewake.runner.process import workflows as wf

SESSION = "22222222-2222-4222-8222-222222222222"
RUN = "wf_1b066adf-e28"


def _started(key: str, label: str) -> dict[str, Any]:
    return {"type": "started", "key": key, "agentId": f"a{label}", "label": label,
            "phase": "Work"}  # fmt: skip


def _result(key: str) -> dict[str, Any]:
    return {"type": "result", "key": key, "agentId": "a", "result": f"done-{key}",
            "remoteControlDeviceReport": False, "sessionId": SESSION}  # fmt: skip


#: A limit at agent 4 while 5 and 6 returned, in the order the CLI wrote it (5 started before
#: 4's failed entry).
LIMIT_AT_4 = [
    {"type": "launched"},
    _started("v2:k1", "a1"), _result("v2:k1"),
    _started("v2:k2", "a2"), _result("v2:k2"),
    _started("v2:k3", "a3"), _result("v2:k3"),
    _started("v2:k4", "a4"), _started("v2:k5", "a5"),
    {"type": "failed", "key": "v2:k4", "agentId": "a4"},
    _result("v2:k5"),
    _started("v2:k6", "a6"), _result("v2:k6"),
]  # fmt: skip


def _write_run(project: Path, session: str, entries: list[dict[str, Any]], *,
               cut_line: bool = False) -> Path:  # fmt: skip
    folder = project / session / "subagents" / "workflows" / RUN
    folder.mkdir(parents=True)
    text = "".join(json.dumps(entry) + "\n" for entry in entries)
    if cut_line:
        text += '{"type":"result","key":"v2:k'
    (folder / "journal.jsonl").write_text(text)
    (folder / "agent-a1.jsonl").write_text("{}\n")
    scripts = project / session / "workflows" / "scripts"
    scripts.mkdir(parents=True)
    (scripts / f"six-{RUN}.js").write_text("export const meta = { name: 'six' }\n")
    return folder / "journal.jsonl"


def _tool_result(folder: Path) -> dict[str, Any]:
    session = folder.parents[2] if len(folder.parents) > 2 else folder.parent
    text = (
        "Workflow launched in background. Task ID: wia760so7\nSummary: six sequential agents\n"
        f"Transcript dir: {folder}\nScript file: {session}/workflows/scripts/"
        f"six-{RUN}.js\nRun ID: {RUN}\n"
    )
    return {"type": "user", "message": {"role": "user", "content": [
        {"tool_use_id": "toolu_0000", "type": "tool_result", "content": text}]}}  # fmt: skip


REJECTED = {"type": "rate_limit_event", "rate_limit_info": {
    "status": "rejected", "resetsAt": 1796645978, "rateLimitType": "five_hour",
    "isUsingOverage": False}}  # fmt: skip


def test_journal_gap_is_counted_by_position(tmp_path: Path) -> None:
    """Agent 4 started and never returned: it is lost, and the cache serves 3 (the agents
    before it), not 5, although 5 and 6 returned."""
    journal = wf.read_journal(_write_run(tmp_path, SESSION, LIMIT_AT_4))
    assert journal.run_id == RUN
    assert journal.lost == ("v2:k4",)
    assert journal.cached_prefix == 3
    assert (journal.started_entries, journal.result_entries, journal.failed_entries) == (6, 5, 1)
    assert wf.predict(journal).words() == (
        f"resume of {RUN} replays at least 3 of 6 agents from cache; at most 3 run live"
    )


def test_rerun_from_a_position_is_the_latest_execution(tmp_path: Path) -> None:
    """A resume that re-ran agent 4 (started again) and then new keys: the earlier 5 and 6
    are not part of the latest execution, which is complete."""
    resumed = [*LIMIT_AT_4, _started("v2:k4", "a4"), _result("v2:k4"),
               _started("v2:n5", "a5"), _result("v2:n5"), _started("v2:n6", "a6"),
               _result("v2:n6")]  # fmt: skip
    journal = wf.read_journal(_write_run(tmp_path, SESSION, resumed))
    assert journal.order == ("v2:k1", "v2:k2", "v2:k3", "v2:k4", "v2:n5", "v2:n6")
    assert journal.lost == ()
    assert journal.cached_prefix == 6


def test_a_line_cut_by_a_kill_is_skipped(tmp_path: Path) -> None:
    """The last line, cut mid-write, is not an entry: the others still count."""
    journal = wf.read_journal(_write_run(tmp_path, SESSION, LIMIT_AT_4, cut_line=True))
    assert journal.result_entries == 5


def test_a_missing_journal_is_a_stable_error(tmp_path: Path) -> None:
    """No journal at the path: WorkflowError journal_missing, naming the path."""
    with pytest.raises(wf.WorkflowError) as raised:
        wf.read_journal(tmp_path / "nowhere" / "journal.jsonl")
    assert raised.value.code == "journal_missing"
    assert "nowhere" in raised.value.detail


def _agent(index: int, state: str, queued: int, ended: int) -> dict[str, Any]:
    return {"type": "workflow_agent", "index": index, "label": f"a{index}", "state": state,
            "agentId": f"aa{index}", "queuedAt": queued, "startedAt": queued + 2,
            "lastProgressAt": ended}  # fmt: skip


def _record(project: Path, agents: list[dict[str, Any]]) -> None:
    record = project / SESSION / "workflows" / f"{RUN}.json"
    record.write_text(
        json.dumps(
            {
                "runId": RUN,
                "status": "completed",
                "workflowProgress": [{"type": "workflow_phase"}, *agents],
            }
        )
    )


FIRST_LOST = [_started("v2:k1", "a1"), _started("v2:k2", "a2"), _result("v2:k2"),
              _started("v2:k3", "a3"), _result("v2:k3")]  # fmt: skip


def test_zero_percent_is_refused_when_every_call_waited_on_the_lost_one(tmp_path: Path) -> None:
    """Sequential calls (each made after agent 1 ended, as the record's times show): 0 of 3
    from cache although 2 completed, refused; the journal alone gives only a floor, which
    refuses nothing."""
    journal = _write_run(tmp_path, SESSION, FIRST_LOST)
    _record(tmp_path, [_agent(1, "error", 1000, 1200), _agent(2, "done", 1201, 1300),
                       _agent(3, "done", 1301, 1400)])  # fmt: skip
    refused = wf.predict(wf.read_journal(journal), wf.read_progress(journal.parent))
    assert (refused.cached, refused.total, refused.completed) == (0, 3, 2)
    assert refused.refused is not None and "0 of 3" in refused.refused
    floor = wf.predict(wf.read_journal(journal))
    assert (floor.cached, floor.certain, floor.refused) == (0, False, None)


def test_calls_made_alongside_the_lost_one_come_from_cache(tmp_path: Path) -> None:
    """parallel(): every call made before agent 1 ended; the resume replays 2 of 3 (Claude
    Code 2.1.332 re-ran only the lost agent of a parallel run), nothing refused."""
    journal = _write_run(tmp_path, SESSION, FIRST_LOST)
    _record(tmp_path, [_agent(1, "error", 1000, 1200), _agent(2, "done", 1000, 1300),
                       _agent(3, "done", 1001, 1400)])  # fmt: skip
    found = wf.predict(wf.read_journal(journal), wf.read_progress(journal.parent))
    assert (found.cached, found.live, found.refused) == (2, 1, None)


def test_a_record_of_an_earlier_execution_is_not_read(tmp_path: Path) -> None:
    """The record is written at a run's end: one that lacks agents the journal's latest
    execution started describes an earlier execution (the later one was killed), and is not
    used, whatever the files' times (Claude Code touched the journal after the record)."""
    journal = _write_run(tmp_path, SESSION, FIRST_LOST)
    _record(tmp_path, [_agent(1, "error", 1000, 1200)])
    assert wf.read_progress(journal.parent) is None
    _record(tmp_path, [_agent(1, "error", 1000, 1200), _agent(2, "done", 1201, 1300),
                       _agent(3, "done", 1301, 1400)])  # fmt: skip
    os.utime(journal, (2_000_000_000, 2_000_000_000))  # the journal touched after the record
    assert wf.read_progress(journal.parent) is not None


def test_runs_are_read_from_the_workflow_tool_result(tmp_path: Path) -> None:
    """The tool result's Run ID, Transcript dir and Script file lines name the run; a folder
    that is not named after the run is not taken."""
    folder = _write_run(tmp_path, SESSION, LIMIT_AT_4).parent
    (seen,) = wf.runs_in_events([_tool_result(folder)])
    assert (seen.run_id, seen.folder) == (RUN, folder)
    assert seen.script is not None and seen.script.name == f"six-{RUN}.js"
    odd = _tool_result(tmp_path / "elsewhere")
    assert wf.runs_in_events([odd]) == []
    shallow = _tool_result(Path("/") / RUN)
    assert wf.runs_in_events([shallow]) == []


def test_a_gap_is_a_limit_only_with_a_limit_beside_it(tmp_path: Path) -> None:
    """Lost agents and a rejected rate-limit event: a limit, whose message states the gap;
    lost agents alone (another failure) are not called a limit."""
    folder = _write_run(tmp_path, SESSION, LIMIT_AT_4).parent
    runs = wf.runs_in_events([_tool_result(folder)])
    assert wf.limit_in_workflows([_tool_result(folder)], runs) is None
    found = wf.limit_in_workflows([_tool_result(folder), REJECTED], runs)
    assert found is not None and found.events == (REJECTED,)
    assert f"workflow {RUN}: 5 of 6 agents returned; 1 lost to a usage limit" in found.message()


def test_a_limit_banner_in_the_run_record_is_evidence(tmp_path: Path) -> None:
    """No rate-limit event (its reset passed): the agent's banner in the run's record is the
    limit, and goes in the message for the parser."""
    folder = _write_run(tmp_path, SESSION, LIMIT_AT_4).parent
    record = tmp_path / SESSION / "workflows" / f"{RUN}.json"
    banner = "You've hit your 5-hour limit · resets 12:19pm (UTC)"
    record.write_text(json.dumps({"runId": RUN, "status": "completed", "workflowProgress": [
        {"type": "workflow_agent", "index": 4, "state": "error", "error": banner}]}))  # fmt: skip
    found = wf.limit_in_workflows([], wf.runs_in_events([_tool_result(folder)]))
    assert found is not None and found.message().endswith(banner)


def test_resume_under_a_new_session_copies_the_run_and_names_it(tmp_path: Path) -> None:
    """The session id changed: the run's folder is copied to where the new id points (the
    original byte for byte as it was, still there), the prompt names the run and its script,
    and a second plan copies nothing more."""
    journal = _write_run(tmp_path, SESSION, LIMIT_AT_4)
    original = journal.read_bytes()
    extra: dict[str, Any] = {}
    assert wf.remember(extra, wf.runs_in_events([_tool_result(journal.parent)]), SESSION)
    new = "88888888-8888-4888-8888-888888888888"
    plan = wf.plan_resume(extra, new)
    copied = tmp_path / new / "subagents" / "workflows" / RUN
    assert (copied / "journal.jsonl").read_bytes() == original
    assert (copied / "agent-a1.jsonl").exists()
    assert journal.read_bytes() == original
    assert plan.run_ids == (RUN,) and plan.refusal is None
    assert [p.cached for p in plan.predictions] == [3]
    script = tmp_path / SESSION / "workflows" / "scripts" / f"six-{RUN}.js"
    assert f'scriptPath: "{script}", resumeFromRunId: "{RUN}"' in plan.prompt("Go on.")
    assert wf.plan_resume(extra, new).copied == ()


def test_a_finished_run_is_not_resumed(tmp_path: Path) -> None:
    """Every agent returned: nothing to name, predict or copy."""
    done = [_started("v2:k1", "a1"), _result("v2:k1")]
    journal = _write_run(tmp_path, SESSION, done)
    extra: dict[str, Any] = {}
    wf.remember(extra, wf.runs_in_events([_tool_result(journal.parent)]), SESSION)
    plan = wf.plan_resume(extra, "88888888-8888-4888-8888-888888888888")
    assert plan.run_ids == () and plan.prompt("Go on.") == "Go on."


def test_what_ran_live_is_written_beside_the_prediction(tmp_path: Path) -> None:
    """After the resume, the started entries it appended are what ran live, kept beside the
    prediction; a prediction already noted is not counted twice."""
    journal = _write_run(tmp_path, SESSION, LIMIT_AT_4)
    kept = [wf.predict(wf.read_journal(journal)).as_json()]
    with journal.open("a") as more:
        for key in ("v2:k4", "v2:n5", "v2:n6"):
            more.write(json.dumps(_started(key, key)) + "\n" + json.dumps(_result(key)) + "\n")
    assert wf.note_ran_live(kept) == [f"{RUN}: 3 agents ran live (predicted 3)"]
    assert kept[0]["ran_live"] == 3
    assert wf.note_ran_live(kept) == []
