"""`rewake run` supervising a real Claude Code 2.1.332 whose turn runs a workflow (its Workflow
tool) of six sequential agents, against a mock that answers by what each request is.

The mock answers the main turn's first request with a Workflow tool call (the script runs
`agent("AGENT-<n>: ...")` for n = 1..6), each agent's request with a short answer or, for the
agents the case names, a usage limit (429 with the unified headers), and the main turn's
later requests with text. A resume prompt that names `scriptPath` and `resumeFromRunId` gets
the Workflow call it names, as a model would make it. What counts is how many times each
agent's prompt reached the mock: the agents a resume served from the journal never do.

docs/workflows.md says what these runs established about the real CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.realcli.realcli_drive import Box, claude_env, cli_binary, run_ended
from tests.realcli.realcli_install import CLAUDE
from tests.realcli.realcli_workflow_mock import AGENTS, Served

pytestmark = pytest.mark.realcli

REPO = Path(__file__).absolute().parents[2]
RUN_TIMEOUT_S = 120
#: Eight agents called at once through parallel().
PARALLEL = (
    "export const meta = { name: 'par', description: 'eight parallel agents', "
    "phases: [{ title: 'Work' }] }\n"
    "const ids = [1, 2, 3, 4, 5, 6, 7, 8]\n"
    "const out = await parallel(ids.map(i => () => agent(`AGENT-${i}: reply with the word "
    "done${i}`, { label: `p${i}`, phase: 'Work' })))\n"
    "return { out: out.filter(Boolean) }\n"
)


@dataclass
class Case:
    box: Box
    env: dict[str, str]
    binary: Path

    def rewake(self, *args: str) -> tuple[int, str]:
        done = run_ended(
            [sys.executable, "-m", "rewake", "run", *args], cwd=self.box.work, env=self.env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S,
        )  # fmt: skip
        return done.returncode, done.stdout

    def claude(self, *args: str) -> str:
        done = run_ended(
            [str(self.binary), *args], cwd=self.box.work, env=self.env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S,
        )  # fmt: skip
        return done.stdout

    def record(self, name: str) -> dict[str, Any]:
        return dict(json.loads((self.box.root / "state" / "runs" / f"{name}.json").read_text()))

    def session(self, name: str) -> dict[str, Any]:
        from rewake.runner.store.stores import LocalStore
        from rewake.settings import Settings

        store = LocalStore(Settings(database_url=f"sqlite:///{self.box.root / 'rewake.db'}"),
                           migrate=False)  # fmt: skip
        try:
            return store.get_session(name)
        finally:
            store.close()

    def attempts(self, name: str) -> list[tuple[int, str]]:
        session = self.session(name)
        return [(a["attempt"], a["status"]) for r in session["runs"] for a in r["attempts"]]


@pytest.fixture
def case(served: Served, tmp_path: Path) -> Case:
    binary = cli_binary(CLAUDE)
    box = Box.make(tmp_path)
    env = claude_env(box, binary, served.url, None)
    env.update(
        PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", CLAUDE_CODE_WORKFLOWS="1",
        REWAKE_DATABASE_URL=f"sqlite:///{box.root / 'rewake.db'}",
        REWAKE_STATE_DIR=str(box.root / "state"), REWAKE_RESUME_DELAY_S="0",
    )  # fmt: skip
    return Case(box, env, binary)


def first_attempt(case: Case, served: Served, name: str, limited: set[int]) -> tuple[int, str]:
    """`rewake run -- claude -p` launching the workflow, with `limited` agents refused."""
    served.mock.limit(limited, reset_in_s=8)
    return case.rewake("--provider", "claude", "--name", name, "--", "claude",
                       "--allowedTools", "Workflow", "-p", "WFTEST use a workflow")  # fmt: skip


def after_the_reset(served: Served) -> None:
    served.mock.limited = set()
    while time.time() < served.mock.reset_epoch + 1:
        time.sleep(0.2)


def journal_of(case: Case, name: str) -> tuple[str, Path]:
    runs = case.record(name)["extra"]["workflow_runs"]
    assert len(runs) == 1, runs
    run_id, seen = next(iter(runs.items()))
    return run_id, Path(seen["journal"])


def test_limit_inside_workflow_is_reported_and_resume_resends_only_lost_agents(
    case: Case, served: Served
) -> None:
    """A limit at agents 4-6 of a run that ends "completed" with exit 0 is recorded as a
    provider limit with the served reset; the resume after the reset sends agents 4, 5, 6
    once each to the provider and 1-3 not at all."""
    code, out = first_attempt(case, served, "wf-limit", {4, 5, 6})
    assert code == 1, out
    assert served.mock.counts() == Counter({1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1}), out
    failure = case.session("wf-limit")["runs"][0]["attempts"][0]["failure"]
    assert failure["failure_kind"] == "provider_quota", (failure, out)
    verdict = failure["verdict"]
    reset_at = datetime.fromisoformat(verdict["reset_at"].replace("Z", "+00:00"))
    truth = datetime.fromtimestamp(served.mock.reset_epoch, UTC)
    assert reset_at <= truth <= reset_at + timedelta(seconds=verdict["resolution_s"]), verdict
    assert "3 of 6 agents returned" in failure["message"], failure["message"]
    after_the_reset(served)
    before = len(served.mock.agents)
    code, out = case.rewake("--resume", "wf-limit")
    assert code == 0, out
    assert served.mock.counts(before) == Counter({4: 1, 5: 1, 6: 1}), (served.mock.main, out)
    assert "replays 3 of 6 agents from cache; 3 run live" in out, out
    (kept,) = case.record("wf-limit")["extra"]["workflow_predictions"]["2"]
    assert (kept["cached"], kept["live"], kept["ran_live"]) == (3, 3, 3), kept
    assert case.attempts("wf-limit") == [(1, "failed"), (2, "completed")], out


def test_auto_resume_fires_after_the_reset_and_replays_the_returned_agents(
    case: Case, served: Served
) -> None:
    """`rewake run --auto-resume`: the workflow's limit arms a resume, rewake waits for the
    reset and fires it in the foreground; the provider gets agents 4, 5, 6 once more and no
    request before the reset."""
    served.mock.limit({4, 5, 6}, reset_in_s=8)
    code, out = case.rewake("--provider", "claude", "--name", "wf-auto", "--auto-resume", "--",
                            "claude", "--allowedTools", "Workflow", "-p",
                            "WFTEST use a workflow")  # fmt: skip
    assert code == 0, out
    assert out.count("firing auto-resume") == 1, out
    assert served.mock.agents == [(1, "ok"), (2, "ok"), (3, "ok"), (4, "limit"), (5, "limit"),
                                  (6, "limit"), (4, "ok"), (5, "ok"), (6, "ok")], out  # fmt: skip
    assert case.attempts("wf-auto") == [(1, "failed"), (2, "completed")], out
    assert case.session("wf-auto")["mark"]["state"] == "done", out
    (kept,) = case.record("wf-auto")["extra"]["workflow_predictions"]["2"]
    assert (kept["cached"], kept["ran_live"]) == (3, 3), kept


def test_resume_after_session_id_change_finds_the_journal(case: Case, served: Served) -> None:
    """The conversation goes on under a new session id (a fork): the real CLI looks for the
    journal under that id only and finds nothing; rewake copies the run's folder there
    (the original untouched), and the resume sends only agents 4, 5, 6."""
    code, out = first_attempt(case, served, "wf-fork", {4, 5, 6})
    assert code == 1, out
    run_id, journal = journal_of(case, "wf-fork")
    old = case.record("wf-fork")["cli_session_id"]
    original = journal.read_bytes()
    after_the_reset(served)
    # Without rewake: a fork resumed by hand with the run named finds no journal.
    script = next(journal.parents[4].glob(f"{old}/workflows/scripts/*-{run_id}.js"))
    bare = "99999999-9999-4999-8999-999999999999"
    said = case.claude("-p", "--resume", old, "--fork-session", "--session-id", bare,
                       "--allowedTools", "Workflow", "--output-format", "stream-json",
                       "--verbose", f'Workflow({{scriptPath: "{script}", resumeFromRunId: '
                       f'"{run_id}"}})')  # fmt: skip
    assert f"The journal for workflow run {run_id} is not on disk" in said, said[-2000:]
    assert served.mock.counts(6) == Counter(), served.mock.agents
    # The conversation moves to a new id, as rewake learns it from the CLI's init event.
    new = "88888888-8888-4888-8888-888888888888"
    case.claude("-p", "--resume", old, "--fork-session", "--session-id", new, "hello")
    path = case.box.root / "state" / "runs" / "wf-fork.json"
    record = json.loads(path.read_text())
    record["cli_session_id"] = new
    path.write_text(json.dumps(record))
    code, out = case.rewake("--resume", "wf-fork")
    assert code == 0, out
    assert served.mock.counts(6) == Counter({4: 1, 5: 1, 6: 1}), (served.mock.main, out)
    assert journal.read_bytes() == original, "the original journal was changed"
    assert (journal.parents[4] / new / "subagents" / "workflows" / run_id / "journal.jsonl"
            ).exists()  # fmt: skip


def test_resume_that_would_replay_nothing_is_refused(case: Case, served: Served) -> None:
    """A limit at agent 1 while 2-6 return: the cache replays only agents before the first
    miss, so a resume would run all six again; rewake refuses it and the provider gets
    nothing more, and forced (--force) it does run all six again."""
    code, out = first_attempt(case, served, "wf-cold", {1})
    assert code == 1, out
    assert case.session("wf-cold")["runs"][0]["attempts"][0]["failure"]["failure_kind"] == (
        "provider_quota"
    ), out
    after_the_reset(served)
    before = (len(served.mock.agents), len(served.mock.main))
    code, out = case.rewake("--resume", "wf-cold")
    assert code == 3, out
    assert "would replay 0 of 6 agents from cache although 5 had completed" in out, out
    assert (len(served.mock.agents), len(served.mock.main)) == before, out
    # The prediction was right: forced, the resume runs all six again.
    code, out = case.rewake("--resume", "wf-cold", "--force")
    assert code == 0, out
    assert served.mock.counts(before[0]) == Counter(range(1, AGENTS + 1)), out
    (kept,) = case.record("wf-cold")["extra"]["workflow_predictions"]["2"]
    assert (kept["cached"], kept["ran_live"]) == (0, 6), kept


def test_parallel_calls_made_alongside_the_limited_one_are_replayed(
    case: Case, served: Served
) -> None:
    """parallel() of eight with a limit at agent 1: the other seven were called before agent
    1 ended, so the resume replays them and runs agent 1 alone; rewake predicts that and does
    not refuse it."""
    served.mock.script = PARALLEL
    code, out = first_attempt(case, served, "wf-par", {1})
    assert code == 1, out
    assert served.mock.counts() == Counter(range(1, 9)), out
    after_the_reset(served)
    code, out = case.rewake("--resume", "wf-par")
    assert code == 0, out
    assert served.mock.counts(8) == Counter({1: 1}), (served.mock.main, out)
    assert "replays 7 of 8 agents from cache; 1 run live" in out, out
