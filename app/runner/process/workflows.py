"""Claude Code's workflows (its Workflow tool): what a limit inside one cost, and a resume that
finds the run's journal again. docs/workflows.md says what the real CLI does; in short:

- Every agent() call of a run is journalled in
  `<projects>/<cwd-slug>/<session-id>/subagents/workflows/<run-id>/journal.jsonl`: a
  `started` entry when it starts, a `result` entry when it returns, sometimes a `failed` one.
  A usage limit inside the run makes the agent return null; the run still ends `completed`
  and `claude -p` exits 0, so the attempt looks finished. The gap between started and
  returned agents, with the rejected rate-limit event beside it, is what says otherwise.
- `Workflow({scriptPath, resumeFromRunId})` replays a returned agent from the journal when
  the script calls it before the first agent the resume runs live has finished (the calls
  before it, and those of a parallel() made alongside it); later calls run live.
- The resume looks for the journal under the *current* session id only. rewake keeps, per
  session, the run id → journal path it saw, and before a resume copies the run's folder to
  where the current session id points when it is not there (never moving the original).

Pure reading and copying: no clock, no store. The runner passes the events and the record's
`extra` in and says what comes out.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: A run id as the Workflow tool's schema states it (`^wf_[a-z0-9-]{6,}$`).
RUN_ID = re.compile(r"wf_[a-z0-9-]{6,}")
#: The lines of the Workflow tool's result that name the run, its folder and its script.
_RESULT_RUN = re.compile(r"^Run ID: (wf_[a-z0-9-]{6,})\s*$", re.MULTILINE)
_RESULT_DIR = re.compile(r"^Transcript dir: (/.+?)\s*$", re.MULTILINE)
_RESULT_SCRIPT = re.compile(r"^Script file: (/.+?)\s*$", re.MULTILINE)
#: Where the runs live under a session's folder.
RUNS_UNDER_SESSION = ("subagents", "workflows")
JOURNAL = "journal.jsonl"
#: The record's `extra` key of the map run id -> what rewake saw of it.
EXTRA_KEY = "workflow_runs"
#: The record's `extra` key of the predictions, by the attempt they were made for.
PREDICTIONS_KEY = "workflow_predictions"
#: A journal larger than this is not read (no run writes one near it; 516 journals on one
#: machine were all under a few MB).
MAX_JOURNAL_BYTES = 64 * 1024 * 1024


class WorkflowError(Exception):
    """A journal rewake cannot read or copy; `code` is stable, the words say which file."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


@dataclass(frozen=True)
class Journal:
    """What one run's journal says."""

    run_id: str
    path: Path
    #: The agent keys of the run's latest execution, in the order they first started (a key
    #: started again is the resume re-running from that position: what came after it in the
    #: earlier execution is not part of the latest one).
    order: tuple[str, ...]
    #: Every key that has a `result` entry, in any execution: what the cache can serve.
    returned: frozenset[str]
    started_entries: int
    result_entries: int
    failed_entries: int
    #: The agent id of each key's latest `started` entry (its transcript is
    #: `agent-<id>.jsonl` beside the journal).
    agent_ids: Mapping[str, str] = field(default_factory=dict)

    @property
    def lost(self) -> tuple[str, ...]:
        """The latest execution's agents that started and never returned."""
        return tuple(key for key in self.order if key not in self.returned)

    @property
    def cached_prefix(self) -> int:
        """The agents a resume surely serves from the journal: the returned ones before the
        first that did not return (a floor: calls made alongside that one are served too,
        which only the run's record tells, see predict)."""
        count = 0
        for key in self.order:
            if key not in self.returned:
                break
            count += 1
        return count


@dataclass(frozen=True)
class Prediction:
    """What a resume of one run should cost, computed from its journal before firing."""

    run_id: str
    cached: int
    total: int
    #: Agents of the run that had returned (a 0 % prediction with some is refused).
    completed: int
    #: The journal the resume will read, and its `started` entries before it: what the
    #: resume appends to it afterwards is what ran live (ran_live).
    journal: str = ""
    started_entries: int = 0
    #: Read from the run's record (when each agent was called and ended); False: from the
    #: journal alone, where `cached` is a floor (the agents before the first miss).
    certain: bool = True

    @property
    def live(self) -> int:
        return self.total - self.cached

    @property
    def refused(self) -> str | None:
        """Why firing would throw completed work away (None when it would not, or when the
        prediction is only a floor)."""
        if self.certain and self.cached == 0 and self.completed > 0:
            return (f"resume of {self.run_id} would replay 0 of {self.total} agents from cache "
                    f"although {self.completed} had completed: the first agent never returned, "
                    "and every later call waited on it")  # fmt: skip
        return None

    def words(self) -> str:
        if not self.certain:
            return (f"resume of {self.run_id} replays at least {self.cached} of {self.total} "
                    f"agents from cache; at most {self.live} run live")  # fmt: skip
        return (f"resume of {self.run_id} replays {self.cached} of {self.total} agents from "
                f"cache; {self.live} run live")  # fmt: skip

    def as_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "cached": self.cached, "total": self.total,
                "live": self.live, "completed": self.completed, "journal": self.journal,
                "started_entries": self.started_entries, "certain": self.certain}  # fmt: skip


@dataclass(frozen=True)
class SeenRun:
    """A run as a Workflow tool result named it."""

    run_id: str
    folder: Path
    script: Path | None


def read_journal(path: Path, run_id: str | None = None) -> Journal:
    """The journal at `path`; lines that are not JSON objects of a known type are skipped (a
    line cut by a kill of the CLI is the last one)."""
    try:
        size = path.stat().st_size
        if size > MAX_JOURNAL_BYTES:
            raise WorkflowError("journal_too_large",
                                f"{path} is {size} bytes, over {MAX_JOURNAL_BYTES}")  # fmt: skip
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise WorkflowError("journal_missing", f"no journal at {path}") from None
    except OSError as error:
        raise WorkflowError("journal_unreadable", f"cannot read {path}: {error}") from None
    order: list[str] = []
    returned: set[str] = set()
    agent_ids: dict[str, str] = {}
    counts = {"started": 0, "result": 0, "failed": 0}
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        kind, key = entry.get("type"), entry.get("key")
        if kind not in counts or not isinstance(key, str):
            continue
        counts[kind] += 1
        if kind == "started":
            if key in order:
                # Started again: a resume re-running from this position.
                del order[order.index(key) :]
            order.append(key)
            if isinstance(entry.get("agentId"), str):
                agent_ids[key] = entry["agentId"]
        elif kind == "result":
            returned.add(key)
    return Journal(
        run_id=run_id or path.parent.name, path=path, order=tuple(order),
        returned=frozenset(returned), started_entries=counts["started"],
        result_entries=counts["result"], failed_entries=counts["failed"], agent_ids=agent_ids,
    )  # fmt: skip


@dataclass(frozen=True)
class AgentProgress:
    """One agent() call as the run's record (`<session>/workflows/<run-id>.json`) states it."""

    index: int
    done: bool
    #: When the script called agent() (`queuedAt`; a call served from cache: `startedAt`).
    called_ms: float
    #: When it ended (`lastProgressAt`); None while it ran.
    ended_ms: float | None


def read_progress(folder: Path) -> list[AgentProgress] | None:
    """The agents of the run's last execution, from its record; None when there is no record
    or it describes an earlier execution (one killed after it: the record is written at a
    run's end), see run_status."""
    record = folder.parents[2] / "workflows" / f"{folder.name}.json"  # parents[2]: the session
    if run_status(folder) is None:
        return None
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    agents: list[AgentProgress] = []
    for entry in data.get("workflowProgress") or [] if isinstance(data, dict) else []:
        if not isinstance(entry, dict) or entry.get("type") != "workflow_agent":
            continue
        index, called = entry.get("index"), entry.get("queuedAt", entry.get("startedAt"))
        ended = entry.get("lastProgressAt")
        if not isinstance(index, int) or not isinstance(called, int | float):
            return None  # a shape docs/workflows.md does not describe: no guessing
        stop = float(ended) if isinstance(ended, int | float) else None
        agents.append(AgentProgress(index, entry.get("state") == "done", float(called), stop))
    return sorted(agents, key=lambda agent: agent.index) or None


def predict(journal: Journal, progress: list[AgentProgress] | None = None) -> Prediction:
    """What a resume replays. The cache serves every returned agent whose agent() call the
    script makes before the first agent the resume runs live has finished: the calls before
    it, and calls that did not wait on it (parallel() makes them all at once); a call made
    after it finished runs live even when its result is in the journal. The run's record
    says which calls waited (called after the first lost agent ended); without it, only the
    agents before the first miss are sure (`certain` False)."""
    if not progress:
        completed = sum(1 for key in journal.order if key in journal.returned)
        return Prediction(journal.run_id, journal.cached_prefix, len(journal.order), completed,
                          str(journal.path), journal.started_entries, certain=False)  # fmt: skip
    lost = [agent for agent in progress if not agent.done]
    first = lost[0] if lost else None
    end = float("inf") if first is None or first.ended_ms is None else first.ended_ms
    cached = sum(
        1 for agent in progress
        if agent.done and (first is None or agent.index < first.index or agent.called_ms < end)
    )  # fmt: skip
    completed = sum(1 for agent in progress if agent.done)
    return Prediction(journal.run_id, cached, len(progress), completed, str(journal.path),
                      journal.started_entries)  # fmt: skip


def note_ran_live(kept: list[dict[str, Any]]) -> list[str]:
    """After the resume: how many agents it ran live per run (the `started` entries it added
    to the journal), written into the kept predictions beside what they predicted."""
    said: list[str] = []
    for item in kept:
        if not isinstance(item, dict) or "ran_live" in item or not item.get("journal"):
            continue
        try:
            now = read_journal(Path(str(item["journal"])), str(item.get("run_id")))
        except WorkflowError:
            continue
        item["ran_live"] = now.started_entries - int(item.get("started_entries") or 0)
        said.append(f"{item.get('run_id')}: {item['ran_live']} agents ran live "
                    f"(predicted {item.get('live')})")  # fmt: skip
    return said


# -- what the attempt's events say ------------------------------------------------------------


def _result_texts(event: Mapping[str, Any]) -> Iterable[str]:
    """The texts of a `user` event's tool results (where the Workflow tool's result is)."""
    if event.get("type") != "user":
        return
    message = event.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            continue
        inner = block.get("content")
        if isinstance(inner, str):
            yield inner
        elif isinstance(inner, list):
            for part in inner:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    yield part["text"]


def runs_in_events(events: Sequence[dict[str, Any]]) -> list[SeenRun]:
    """The runs the attempt's Workflow tool results named (a launch and a resume alike)."""
    seen: dict[str, SeenRun] = {}
    for event in events:
        for text in _result_texts(event):
            run, folder = _RESULT_RUN.search(text), _RESULT_DIR.search(text)
            if run is None or folder is None:
                continue
            script = _RESULT_SCRIPT.search(text)
            path = Path(folder.group(1))
            if path.name != run.group(1) or not in_layout(path):
                continue  # not the layout docs/workflows.md describes: not a guess either
            seen[run.group(1)] = SeenRun(run.group(1), path,
                                         Path(script.group(1)) if script else None)  # fmt: skip
    return list(seen.values())


def in_layout(run_folder: Path) -> bool:
    """Whether a run's folder is `<project>/<session>/subagents/workflows/<run-id>`."""
    return (
        run_folder.is_absolute()
        and len(run_folder.parents) >= 4
        and (run_folder.parent.parent.name, run_folder.parent.name) == RUNS_UNDER_SESSION
    )


def rejected_limits(events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Claude's rejected rate-limit events: the workflow's agents hit them too (the stream
    carries them even when the main turn goes on and the result says success)."""
    return [
        event for event in events
        if event.get("type") == "rate_limit_event"
        and isinstance(event.get("rate_limit_info"), dict)
        and event["rate_limit_info"].get("status") == "rejected"
    ]  # fmt: skip


def limit_texts(folder: Path) -> list[str]:
    """What the run's record (`<session>/workflows/<run-id>.json`) says its agents failed
    with: the limit banner the agent got ("You've hit your 5-hour limit · resets ...")."""
    record = folder.parents[2] / "workflows" / f"{folder.name}.json"  # parents[2]: the session
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    texts: list[str] = []
    for agent in data.get("workflowProgress") or [] if isinstance(data, dict) else []:
        if isinstance(agent, dict) and isinstance(agent.get("error"), str):
            texts.append(agent["error"])
    return texts


def run_status(folder: Path) -> str | None:
    """The status the run's record (`<session>/workflows/<run-id>.json`, written when a run
    ends) gives its last execution, e.g. "completed"; None while the run goes on: no record
    yet, or one of an earlier execution (an agent the journal's latest execution started is
    not in it). The files' times do not tell: Claude Code 2.1.332 was seen to touch the
    journal after writing the record."""
    record = folder.parents[2] / "workflows" / f"{folder.name}.json"  # parents[2]: the session
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
        journal = read_journal(folder / JOURNAL, folder.name)
    except (OSError, ValueError, WorkflowError):
        return None
    if not isinstance(data, dict):
        return None
    progress = data.get("workflowProgress")
    recorded = {
        agent.get("agentId") for agent in progress if isinstance(agent, dict)
    } if isinstance(progress, list) else set()  # fmt: skip
    if any(journal.agent_ids.get(key) not in recorded for key in journal.order):
        return None
    status = data.get("status")
    return status if isinstance(status, str) and status else None


def run_logs(folder: Path) -> list[str]:
    """The run's log lines from its record ("[a4] failed: usage limit; resets ..., too far
    out to wait for: ...", "Usage limit reached · ... Workflow paused; ...")."""
    record = folder.parents[2] / "workflows" / f"{folder.name}.json"  # parents[2]: the session
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    logs = data.get("logs") if isinstance(data, dict) else None
    return [line for line in logs or [] if isinstance(line, str)]


#: How much of a lost agent's transcript is read for the limit it got (its last rows).
AGENT_TAIL_BYTES = 256 * 1024


def limit_events(journal: Journal) -> list[dict[str, Any]]:
    """The rejected rate-limit events the run's lost agents got, in the shape Claude's stream
    carries them (`{"type": "rate_limit_event", "rate_limit_info": {...}}`): Claude Code
    writes each into the synthetic error row of the agent's transcript
    (`apiErrorParams.rate_limit_info`, with the exact reset where its banner gives the
    minute)."""
    events: list[dict[str, Any]] = []
    for key in journal.lost:
        agent = journal.agent_ids.get(key, "")
        if not agent.isalnum():
            continue
        path = journal.path.parent / f"agent-{agent}.jsonl"
        try:
            with path.open("rb") as handle:
                start = max(0, handle.seek(0, 2) - AGENT_TAIL_BYTES)
                handle.seek(start)
                lines = handle.read().splitlines()[1 if start else 0 :]
        except OSError:
            continue
        for line in lines:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            params = row.get("apiErrorParams") if isinstance(row, dict) else None
            info = params.get("rate_limit_info") if isinstance(params, dict) else None
            if isinstance(info, dict) and info.get("status") == "rejected":
                events.append({"type": "rate_limit_event", "rate_limit_info": info})
    return events


@dataclass(frozen=True)
class WorkflowLimit:
    """Agents of this attempt's runs lost to a usage limit."""

    journals: tuple[Journal, ...]
    #: The rejected rate-limit events (the exact reset) the report carries.
    events: tuple[dict[str, Any], ...]
    #: The banners the lost agents got, from the runs' records.
    banners: tuple[str, ...]

    def message(self) -> str:
        """The report's message: the gap per run, then the banner (which the parser reads)."""
        lines = [
            f"workflow {j.run_id}: {len(j.order) - len(j.lost)} of {len(j.order)} agents "
            f"returned; {len(j.lost)} lost to a usage limit ({j.started_entries} started, "
            f"{j.result_entries} returned entries in {j.path})"
            for j in self.journals
        ]
        lines.extend(dict.fromkeys(self.banners))
        return "\n".join(lines)


def limit_in_workflows(
    events: Sequence[dict[str, Any]], runs: Sequence[SeenRun]
) -> WorkflowLimit | None:
    """A limit that nulled agents of the attempt's runs, or None (no run lost an agent, or
    nothing says a limit did it: another failure is not rewake's to call a limit)."""
    lost: list[Journal] = []
    banners: list[str] = []
    for run in runs:
        try:
            journal = read_journal(run.folder / JOURNAL, run.run_id)
        except WorkflowError:
            continue
        if journal.lost:
            lost.append(journal)
            banners.extend(text for text in limit_texts(run.folder) if "limit" in text.lower())
    limits = rejected_limits(events)
    if not lost or not (limits or banners):
        return None
    return WorkflowLimit(tuple(lost), tuple(limits), tuple(banners))


# -- the map run id -> journal, and the resume ------------------------------------------------


def remember(
    extra: MutableMapping[str, Any], runs: Sequence[SeenRun], session_id: str | None
) -> bool:
    """Add the runs to the record's map (a run seen again keeps its first folder: the one its
    journal was written in). True when the map changed."""
    known = extra.get(EXTRA_KEY)
    if not isinstance(known, dict):
        known = {}
    changed = False
    for run in runs:
        if run.run_id in known:
            continue
        known[run.run_id] = {"journal": str(run.folder / JOURNAL), "session_id": session_id,
                             "script": str(run.script) if run.script else None}  # fmt: skip
        changed = True
    if changed:
        extra[EXTRA_KEY] = known
    return changed


@dataclass(frozen=True)
class ResumePlan:
    """What a resume of a session with unfinished runs needs: the runs to name, the copies
    made, the predictions, and a refusal when firing would throw work away."""

    run_ids: tuple[str, ...]
    scripts: tuple[str | None, ...]
    copied: tuple[str, ...]
    predictions: tuple[Prediction, ...]
    refusal: str | None

    def prompt(self, prompt: str) -> str:
        """The resume prompt, naming each run to resume (its script and run id)."""
        if not self.run_ids:
            return prompt
        calls = "; ".join(
            f'Workflow({{scriptPath: "{script}", resumeFromRunId: "{run_id}"}})' if script
            else f'Workflow with resumeFromRunId "{run_id}"'
            for run_id, script in zip(self.run_ids, self.scripts, strict=True)
        )  # fmt: skip
        return (
            f"{prompt} A usage limit stopped agents of your workflow: re-invoke {calls} "
            "so the agents that returned come from its journal and only the rest run."
        )


def plan_resume(extra: Mapping[str, Any], session_id: str) -> ResumePlan:
    """For each remembered run with lost agents: make its journal findable where
    `session_id` points (a copy of the run's folder; the original stays as it is), predict
    what the resume replays, and refuse when that is 0 % of a run that had completed agents."""
    known = extra.get(EXTRA_KEY)
    run_ids: list[str] = []
    scripts: list[str | None] = []
    copied: list[str] = []
    predictions: list[Prediction] = []
    refusal: str | None = None
    for run_id, seen in (known or {}).items() if isinstance(known, dict) else []:
        if not RUN_ID.fullmatch(run_id) or not isinstance(seen, dict):
            continue
        recorded = Path(str(seen.get("journal")))
        if recorded.name != JOURNAL or not in_layout(recorded.parent):
            continue  # a record edited by hand: not a path to copy from or to
        target = findable_at(recorded, session_id)
        try:
            # Where the resume will look, once a copy is there: a run resumed there already
            # has its newer journal there.
            journal = read_journal(target if target.exists() else recorded, run_id)
        except WorkflowError:
            continue  # gone (the CLI prunes old sessions): nothing to resume or predict
        if not journal.lost:
            continue
        try:
            if target != recorded and not target.exists():
                copy_run(recorded.parent, target.parent)
                copied.append(f"{recorded.parent} -> {target.parent}")
            there = read_journal(target, run_id)
            progress = read_progress(target.parent)
            if progress is None and target != recorded and journal.path == recorded:
                progress = read_progress(recorded.parent)  # a copy no resume has run in yet
            prediction = predict(there, progress)
        except WorkflowError as error:
            refusal = refusal or (f"the journal of {run_id} cannot be made findable for "
                                  f"session {session_id}: {error.detail}")  # fmt: skip
            continue
        predictions.append(prediction)
        run_ids.append(run_id)
        script = seen.get("script")
        scripts.append(script if isinstance(script, str) and Path(script).exists() else None)
        refusal = refusal or prediction.refused
    return ResumePlan(tuple(run_ids), tuple(scripts), tuple(copied), tuple(predictions), refusal)


def plan_and_keep(
    extra: MutableMapping[str, Any], session_id: str, attempt: int
) -> ResumePlan | None:
    """plan_resume for the resume that will be attempt `attempt`, its predictions kept in
    `extra` beside that attempt (`workflow_predictions`); None when no run is remembered."""
    if not extra.get(EXTRA_KEY):
        return None
    plan = plan_resume(extra, session_id)
    if plan.predictions:
        kept = extra.setdefault(PREDICTIONS_KEY, {})
        kept[str(attempt)] = [p.as_json() for p in plan.predictions]
    return plan


def findable_at(journal: Path, session_id: str) -> Path:
    """Where a resume under `session_id` looks for the run whose journal is `journal`: the same
    project folder, the current session's folder (the CLI builds the path from it)."""
    run_folder = journal.parent  # <project>/<session>/subagents/workflows/<run-id>
    project = run_folder.parents[3]
    return project.joinpath(session_id, *RUNS_UNDER_SESSION, run_folder.name, JOURNAL)


def copy_run(source: Path, target: Path) -> None:
    """Copy a run's folder (journal and agent transcripts): the resume appends to the copy,
    and the original stays untouched."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(source, target)
    except OSError as error:
        raise WorkflowError("journal_copy_failed",
                            f"cannot copy {source} to {target}: {error}") from None  # fmt: skip
