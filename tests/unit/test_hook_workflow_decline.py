"""`rewake hook claude` when interactive Claude Code 2.1.332 declines to wait out a usage limit
inside a workflow (its `autoContinueAtUsageLimit` off, or a reset more than 24 h ahead): the
run ends "completed" with the limited agents' nulls while the session sits open, and the hook
reports that, at the main turn's Stop, as the session's usage limit with its reset.

The files are what the real CLI wrote against the loopback mock (tests/unit/fixtures/
workflow_decline/: `off` with the setting off and a five-hour limit resetting 75 s ahead,
`far` with a weekly limit resetting two days ahead; the limit at agents 4, 5 and 6 of six;
`rerun` with the setting on, where Claude Code paused at agent 4 and re-ran it itself):
the hook payloads in the order Claude Code sent them, the journal, the run's record, the
agents' transcripts (their last row: a limited agent's synthetic error row). Paths are
placeholders, laid out again under the test's folder.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rewake.runner.clis.providers import provider_named
from rewake.runner.hook import claude as hook
from rewake.runner.hook.payload import HookResult
from rewake.runner.process import workflows
from rewake.runner.store import records

FIXTURES = Path(__file__).parent / "fixtures" / "workflow_decline"
#: The resets the mock served in the two captures (the 429's unified reset header).
SERVED_RESET = {"off": 1796654751, "far": 1796828191}
#: Just after each run ended (its Stop hook), as the captures' clocks said.
ENDED_AT = {
    "off": datetime(2026, 12, 7, 14, 44, 39, tzinfo=UTC),
    "far": datetime(2026, 12, 7, 14, 51, 39, tzinfo=UTC),
    "rerun": datetime(2026, 12, 7, 14, 52, 9, tzinfo=UTC),
}


class Case:
    """One capture laid out under tmp_path: Claude's folder, rewake's state, the payloads."""

    def __init__(self, name: str, tmp_path: Path, *, ended: bool = True) -> None:
        self.name = name
        self.claude = tmp_path / "claude"
        self.work = tmp_path / "work"
        self.work.mkdir()
        self.tmp_path = tmp_path
        self.env = {
            "REWAKE_STATE_DIR": str(tmp_path / "state"),
            "CLAUDE_CONFIG_DIR": str(self.claude),
        }
        self.opened = 0
        source = FIXTURES / name / "projects"
        for path in sorted(source.rglob("*")):
            target = self.claude / "projects" / self._fill(str(path.relative_to(source)))
            if path.is_dir():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(self._fill(path.read_text()))
        self.journal = next(self.claude.glob("projects/*/*/subagents/workflows/wf_*/journal.jsonl"))
        self.run_id = self.journal.parent.name
        self.record_file = self.journal.parents[3] / "workflows" / f"{self.run_id}.json"
        self.kept_record = self.record_file.read_text()
        if not ended:
            self.record_file.unlink()  # the run is paused or running: no record yet
        self.hooks = sorted((FIXTURES / name / "hooks").glob("*.json"))
        self.session_id = json.loads(self.hooks[0].read_text())["session_id"]
        self.root = f"claude-{self.session_id}"

    def _fill(self, text: str) -> str:
        return (
            text.replace("@CLAUDE@", str(self.claude))
            .replace("@SLUG@", "-w")
            .replace("@WORK@", str(self.work))
            .replace("@TMP@", str(self.tmp_path))
        )

    def end_run(self) -> None:
        self.record_file.write_text(self.kept_record)

    def payloads(self, event: str) -> list[dict[str, Any]]:
        found = [json.loads(self._fill(p.read_text())) for p in self.hooks]
        return [p for p in found if p["hook_event_name"] == event]

    def store(self) -> Any:
        from rewake.runner.store.stores import LocalStore
        from rewake.settings import Settings

        return LocalStore(
            Settings(database_url=f"sqlite:///{self.tmp_path / 'r.db'}"),
            clock=lambda: ENDED_AT[self.name],
        )

    def fire(self, payload: dict[str, Any], *, auto_resume: bool) -> HookResult:
        def open_store() -> Any:
            self.opened += 1
            return self.store()

        return hook.run_hook(
            json.dumps(payload),
            now=ENDED_AT[self.name],
            env=self.env,
            open_store=open_store,
            auto_resume=auto_resume,
            zone="UTC",
        )

    def agents_limited(self, *, auto_resume: bool = True) -> None:
        """The three StopFailures of agents 4, 5, 6, as the StopFailure entry runs the hook."""
        for payload in self.payloads("StopFailure"):
            assert self.fire(payload, auto_resume=auto_resume).attempt is None

    def last_stop(self) -> HookResult:
        """The main turn's Stop after the task notification, as an entry without
        --auto-resume runs the hook."""
        return self.fire(self.payloads("Stop")[-1], auto_resume=False)

    def failure(self) -> dict[str, Any]:
        store = self.store()
        try:
            session = store.get_session(self.root)
            mark = session.get("mark") or {}
        finally:
            store.close()
        ((attempt,),) = [r["attempts"] for r in session["runs"]]
        return {**attempt["failure"], "status": attempt["status"], "mark": mark}

    def hold(self) -> dict[str, Any]:
        record = records.load(self.root, self.env)
        assert record is not None
        return dict(record.extra["workflow_holds"][self.run_id])


def reset_of(failure: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(failure["verdict"]["reset_at"].replace("Z", "+00:00"))


def test_setting_off_the_run_end_is_reported_as_the_limit_with_its_exact_reset(
    tmp_path: Path,
) -> None:
    """Setting off: the agents' StopFailures report nothing; the Stop after the run ended
    with 3 of 6 returned reports the session's attempt as provider_quota, reset at the served
    instant, and arms it (the agents' StopFailure was heard with --auto-resume)."""
    case = Case("off", tmp_path)
    case.agents_limited()
    assert case.opened == 0
    result = case.last_stop()
    assert result.attempt == 1 and result.armed, result.lines
    failure = case.failure()
    assert (failure["failure_kind"], failure["status"]) == ("provider_quota", "failed")
    assert reset_of(failure) == datetime.fromtimestamp(SERVED_RESET["off"], UTC)
    assert "3 of 6 agents returned; 3 lost to a usage limit" in failure["message"]
    assert failure["mark"]["state"] == "armed"
    hold = case.hold()
    assert (hold["ended"]["outcome"], hold["ended"]["returned"]) == ("declined", 3)
    assert "autoContinueAtUsageLimit" in hold["ended"]["why"]


def test_without_auto_resume_the_run_end_is_reported_and_offered_not_armed(
    tmp_path: Path,
) -> None:
    """Auto-resume stays off by default: a StopFailure entry without --auto-resume leaves the
    reported limit unarmed, and the hook names the command that arms it."""
    case = Case("off", tmp_path)
    case.agents_limited(auto_resume=False)
    result = case.last_stop()
    assert result.attempt == 1 and not result.armed
    assert f"to resume it when the limit resets: rewake auto-resume {case.root} on" in (
        result.lines
    )
    assert case.failure()["mark"].get("state") != "armed"


def test_a_reset_two_days_ahead_is_reported_and_armed_for_that_day(tmp_path: Path) -> None:
    """A weekly limit resetting two days ahead: Claude Code declined ("too far out to wait
    for" in the run's log); the report carries that reset, and the mark is armed (no
    "continues by itself" judgement from the reset's distance)."""
    case = Case("far", tmp_path)
    case.agents_limited()
    result = case.last_stop()
    assert result.armed, result.lines
    failure = case.failure()
    assert failure["failure_kind"] == "provider_quota"
    assert reset_of(failure) == datetime.fromtimestamp(SERVED_RESET["far"], UTC)
    assert case.hold()["ended"]["why"] == "the reset is more than 24 h ahead"


def test_a_stop_while_the_run_goes_on_reports_nothing_and_the_end_is_reported_once(
    tmp_path: Path,
) -> None:
    """While the run is paused or running (no run record yet) a Stop opens no store; once the
    run ended the next Stop reports it, and a later Stop reports nothing new."""
    case = Case("off", tmp_path, ended=False)
    case.agents_limited()
    assert case.last_stop().lines == [] and case.opened == 0
    assert "ended" not in case.hold()
    case.end_run()
    assert case.last_stop().attempt == 1
    opened = case.opened
    again = case.last_stop()
    assert again.lines == [] and again.attempt is None and case.opened == opened


def test_the_record_of_an_earlier_execution_does_not_end_a_resumed_one(tmp_path: Path) -> None:
    """A resume re-running agent 4 (a new `started` entry, a new agent id) while the record of
    the earlier execution is still on disk: the run has not ended, and a Stop reports nothing
    (the files' times are not relied on: Claude Code touched the journal after the record)."""
    case = Case("off", tmp_path)
    case.agents_limited()
    entries = [json.loads(line) for line in case.journal.read_text().splitlines()]
    fourth = [e for e in entries if e["type"] == "started"][3]
    with case.journal.open("a") as journal:
        journal.write(json.dumps({**fourth, "agentId": "b4"}) + "\n")
    said = case.last_stop()
    assert said.lines == [] and case.opened == 0 and "ended" not in case.hold()


def test_a_run_claude_code_re_ran_itself_is_noted_and_nothing_reported(tmp_path: Path) -> None:
    """The setting on (the `rerun` capture): Claude Code paused at agent 4, re-ran it after the
    reset, and 5 and 6 returned; the Stop after the run's end notes it on the hold, opens no
    store and reports nothing."""
    case = Case("rerun", tmp_path)
    case.agents_limited()
    said = case.last_stop()
    assert case.opened == 0 and said.attempt is None
    assert "with all 6 agents returned" in said.lines[0]
    assert case.hold()["ended"]["outcome"] == "rerun_by_claude_code"


def test_a_stop_in_a_session_rewake_never_heard_of_costs_one_lookup(tmp_path: Path) -> None:
    """The first Stop of the capture (before any limit): no record, nothing said or opened."""
    case = Case("off", tmp_path)
    first = case.fire(case.payloads("Stop")[0], auto_resume=False)
    assert first.lines == [] and case.opened == 0
    assert records.load(case.root, case.env) is None


def test_the_resume_names_the_run_and_predicts_the_three_lost_agents(tmp_path: Path) -> None:
    """After the reported end, the resume (typed into the open Claude or headless) names the
    run's script and id, and predicts 3 of 6 agents from cache, kept for attempt 2."""
    case = Case("off", tmp_path)
    case.agents_limited()
    case.last_stop()
    record = records.load(case.root, case.env)
    assert record is not None and record.cli_session_id == case.session_id
    plan = workflows.plan_and_keep(record.extra, case.session_id, record.attempt + 1)
    assert plan is not None and plan.refusal is None and plan.copied == ()
    script = case.journal.parents[3] / "workflows" / "scripts" / f"six-{case.run_id}.js"
    assert f'Workflow({{scriptPath: "{script}", resumeFromRunId: "{case.run_id}"}})' in (
        plan.prompt("Continue.")
    )
    assert plan.predictions[0].words().startswith(f"resume of {case.run_id} replays 3 of 6")
    (kept,) = record.extra["workflow_predictions"]["2"]
    assert (kept["cached"], kept["live"]) == (3, 3)


def test_the_headless_resume_of_a_declined_run_may_call_the_workflow_tool(tmp_path: Path) -> None:
    """The flags that let the interactive Claude run the Workflow tool are not in the payload,
    and `claude -p` refuses a tool that needs permission: the headless resume of the reported
    end allows Workflow, beside the session's permission mode, and names the run."""
    case = Case("off", tmp_path)
    case.agents_limited()
    case.last_stop()
    record = records.load(case.root, case.env)
    assert record is not None and record.cli_session_id is not None
    argv = provider_named("claude").resume_argv("claude", record.args, record.cli_session_id,
                                                "Continue.")  # fmt: skip
    flags = argv[: argv.index("--")]
    assert flags[:4] == ["claude", "-p", "--resume", case.session_id], argv
    assert flags[4:6] == ["--permission-mode", "auto"], argv
    assert flags[flags.index("--allowedTools") + 1] == "Workflow", argv


def test_lost_agents_without_a_limit_are_not_reported(tmp_path: Path) -> None:
    """Agents lost with nothing saying a limit did it (no rejected row in their transcripts,
    no limit in the run's record) are noted, not reported: another failure is not a limit."""
    case = Case("off", tmp_path)
    case.agents_limited()
    folder = case.journal.parent
    for transcript in folder.glob("agent-*.jsonl"):
        transcript.write_text("{}\n")
    record = json.loads(case.record_file.read_text())
    for agent in record["workflowProgress"]:
        agent.pop("error", None)
    case.record_file.write_text(json.dumps(record))
    said = case.last_stop()
    assert case.opened == 0 and said.attempt is None
    assert case.hold()["ended"]["outcome"] == "lost_not_to_a_limit"
    shutil.rmtree(folder)  # and a hold whose run is gone is passed over
    assert case.last_stop().lines == []


def test_what_a_typed_resume_ran_live_is_noted_once_its_run_ended(tmp_path: Path) -> None:
    """After the resume typed into the open Claude (attempt 2, its prediction kept): the Stop
    of the turn that launched it, before any agent started, notes nothing; once the resumed
    run re-ran agents 4-6 and its record names them, the next Stop notes 3 ran live."""
    case = Case("off", tmp_path)
    case.agents_limited()
    case.last_stop()
    record = records.load(case.root, case.env)
    assert record is not None
    workflows.plan_and_keep(record.extra, case.session_id, 2)
    records.save(replace(record, attempt=2), case.env)
    assert case.last_stop().lines == []
    entries = [json.loads(line) for line in case.journal.read_text().splitlines()]
    run = json.loads(case.record_file.read_text())
    with case.journal.open("a") as journal:
        for n, entry in enumerate([e for e in entries if e["type"] == "started"][3:], 4):
            again = {**entry, "agentId": f"b{n}"}
            done = {"type": "result", "key": entry["key"], "agentId": f"b{n}", "result": "ok"}
            journal.write(json.dumps(again) + "\n" + json.dumps(done) + "\n")
            for agent in run["workflowProgress"]:
                if agent.get("index") == n:
                    agent.update(agentId=f"b{n}", state="done")
    case.record_file.write_text(json.dumps(run))
    said = case.last_stop()
    assert said.lines == [f"{case.root}: {case.run_id}: 3 agents ran live (predicted 3)"]
    kept = records.load(case.root, case.env)
    assert kept is not None
    assert kept.extra["workflow_predictions"]["2"][0]["ran_live"] == 3
