"""One supervised session, attempt after attempt: run the CLI, record the attempt through the
store, report a failure, arm auto-resume, wait, and run the provider's resume form.

The first attempt is recorded `started` as the CLI is spawned. A resumed attempt is recorded
`started` only once the CLI shows the conversation under way (Provider.proves_started): that
record is what settles the mark `done` in the service, so a resume that finds no conversation
never counts as landed; its `conversation_missing` report ends the mark `failed` instead.

The clock is `Options.clock`, read at the edge of each step (an attempt's exit, a wait tick)
and passed down. The stop signals stay handled from an attempt's spawn until it is recorded: a
second Ctrl-C while the report is sent is noted, and the report still goes out. A report the
store cannot take (the service is down) is written to the outbox instead of being lost.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import signal
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any

from rewake.exits import Exit
from rewake.instants import local_clock, parse_instant
from rewake.notifications.apprise_notices import Announcer, Notice
from rewake.parsers.verdict import Verdict
from rewake.printable import printable
from rewake.runner.clis import conversations
from rewake.runner.clis.providers import Provider, valid_cli_id
from rewake.runner.process import workflows
from rewake.runner.process.guard import SessionLock
from rewake.runner.process.notices import pause_notice
from rewake.runner.process.outcome import Classified, classify, failure_body
from rewake.runner.process.supervise import Finished, Hooks, StopSignals, supervise, utc_now
from rewake.runner.process.waiting import (
    Fire,
    Settled,
    finish,
    resume_path,
    wait_for_mark,
)
from rewake.runner.store import records
from rewake.runner.store.base import JSON, Store, StoreError
from rewake.runner.store.records import RunRecord

#: What a resume started by hand tells the agent unless the user gives a prompt.
MANUAL_PROMPT = "Continue the task from where it stopped."
#: Store codes that mean the report never reached the store (kept in the outbox), as opposed
#: to a refusal of the report itself; store_unavailable is the local database failing (locked
#: past its busy timeout, unreadable), which loses the report just the same.
UNREACHABLE = ("service_unreachable", "service_error", "store_unavailable")


@dataclass
class Options:
    auto_resume: bool = False
    #: Wait in the foreground for an armed mark (not in a resume a sweeper started).
    wait: bool = True
    zone: str | None = None
    resume_prompt: str = ""
    stop_grace_s: float = 5.0
    env: dict[str, str] | None = None
    clock: Callable[[], datetime] = utc_now
    #: This session's lock, held while an attempt runs; let go while only watching a mark.
    lock: SessionLock | None = None
    #: REWAKE_NOTIFY's URLs: told when a limit pauses the session, and about a resume this
    #: process fires itself (a sweeper's resumes are told by the sweeper).
    announcer: Announcer | None = None
    #: Fire a resume whose workflow would replay 0 % of its completed agents (--force).
    cold_workflow_ok: bool = False


@dataclass
class Step:
    """What to run next: an argv as attempt `attempt`."""

    argv: list[str]
    attempt: int
    #: Record `started` only once the CLI proves the conversation under way (resumes).
    started_when_proven: bool
    #: A missing conversation may start a fresh one on the saved work directory.
    fresh_allowed: bool
    fire: Fire | None = None
    notes: list[str] = field(default_factory=list)
    #: Why this resume must not fire (its workflow would start over): docs/workflows.md.
    refusal: str | None = None


class Runner:
    def __init__(
        self,
        store: Store,
        record: RunRecord,
        provider: Provider,
        options: Options,
        *,
        out: IO[str],
        err: IO[str],
    ) -> None:
        self.store = store
        self.record = record
        self.provider = provider
        self.options = options
        self.out = out
        self.err = err

    # -- argv ----------------------------------------------------------------------------

    @property
    def program(self) -> str:
        return str(self.record.extra.get("program") or self.provider.name)

    def resume_step(self, prompt: str, *, fresh_allowed: bool, fire: Fire | None = None) -> Step:
        """The provider's resume form as the next attempt (a fresh start when no conversation
        id was ever recorded, or the CLI saved no conversation, and that is allowed)."""
        attempt = self.record.attempt + 1
        session_id = self.record.cli_session_id
        if session_id is None or self.nothing_saved:
            # run() starts afresh or reports it missing: `--resume` could only fail.
            return Step([], attempt, True, fresh_allowed, fire)
        plan = self._workflow_plan(session_id)
        argv = self.provider.resume_argv(self.program, self.record.args, session_id,
                                         plan.prompt(prompt) if plan else prompt)  # fmt: skip
        step = Step(argv, attempt, True, fresh_allowed, fire)
        if plan is not None:
            step.notes = [f"· {p.words()}" for p in plan.predictions]
            step.notes += [f"· copied the workflow journal {c}" for c in plan.copied]
            step.refusal = None if self.options.cold_workflow_ok else plan.refusal
        return step

    def _workflow_plan(self, session_id: str) -> workflows.ResumePlan | None:
        """Claude's unfinished workflow runs: found, predicted and named (docs/workflows.md);
        the predictions are kept in the record beside the attempt they are for."""
        if self.provider.name != "claude" or not self.record.extra.get(workflows.EXTRA_KEY):
            return None
        plan = workflows.plan_resume(self.record.extra, session_id)
        if plan.predictions:
            kept = self.record.extra.setdefault("workflow_predictions", {})
            kept[str(self.record.attempt + 1)] = [p.as_json() for p in plan.predictions]
            records.save(self.record)
        return plan

    @property
    def nothing_saved(self) -> bool:
        """The CLI saved no conversation to resume: it saves one only once the model answered,
        and no attempt of this conversation got an answer (a Gemini session whose first
        request hit the limit). `--resume` would fail with "No previous sessions found"."""
        return self.record.conversation_saved is False

    def _nothing_saved_words(self) -> str:
        return records.nothing_saved(self.record) or ""

    def fresh_argv(self) -> list[str]:
        session_id = None if self.provider.name != "claude" else str(uuid.uuid4())
        self.record.cli_session_id = session_id
        self.record.conversation_saved = None  # a new conversation: its attempt will tell
        return self.provider.fresh_argv(self.program, self.record.args, session_id)

    # -- one attempt ---------------------------------------------------------------------

    def _say(self, text: str, *, error: bool = False) -> None:
        stream = self.err if error else self.out
        try:
            # Banners, refusals and marks quote the store, which quotes hosts and CLIs.
            stream.write(printable(text, newlines=True) + "\n")
            stream.flush()
        except OSError:
            pass  # the terminal hung up: the record and the log still say what happened

    def _started(self, attempt: int) -> None:
        try:
            self.store.record_attempt(self.record.root_id, self.record.run_id, attempt, "started")
        except StoreError as refused:
            self._say(f"rewake: attempt {attempt} not recorded as started: {refused}", error=True)

    def _session(self, session_id: str) -> None:
        if not valid_cli_id(session_id):
            # It would be passed after --resume next time, where it could read as a flag.
            self._say(f"rewake: ignoring the CLI's session id {session_id!r}: not an id",
                      error=True)  # fmt: skip
            return
        if session_id != self.record.cli_session_id:
            if self.record.cli_session_id is not None:
                self._say(f"· the CLI's session id is now {session_id}")
            self.record.cli_session_id = session_id
            records.save(self.record)

    def attempt(
        self, argv: list[str], attempt: int, *, started_when_proven: bool, stop: StopSignals
    ) -> Finished:
        self.record.attempt = attempt
        records.save(self.record)
        log = records.log_path(self.record.root_id, self.record.run_id, attempt)
        self._say(f"▶ {self.record.root_id} attempt {attempt}: {shlex.join(argv)}")
        version = self.record.cli_version or "unknown"
        self._say(f"  {self.program} version: {version}; log: {log}")
        self._log_header(log, argv, version)
        if not started_when_proven:
            self._started(attempt)
        hooks = Hooks(
            on_started=(lambda: self._started(attempt)) if started_when_proven else (lambda: None),
            on_session=self._session,
        )
        finished = supervise(
            argv, provider=self.provider, cwd=self.record.cwd, log=log, env=self.options.env,
            hooks=hooks, out=self.out, err=self.err, stop=stop, clock=self.options.clock,
        )  # fmt: skip
        self._note_saved(finished)
        return finished

    def _note_saved(self, finished: Finished) -> None:
        """Keep whether the CLI has the conversation saved (RunRecord.conversation_saved), for
        a CLI that saves it only once the model answered. Once saved it stays saved; a
        conversation the user's own `--resume` named existed before rewake ran it."""
        if not self.provider.saves_only_answered:
            return
        if finished.answered:
            saved = True
        elif self.record.conversation_saved is None and not self.provider.pinned_session_id(
            self.record.args
        ):
            saved = False
        else:
            return
        if saved is not self.record.conversation_saved:
            self.record.conversation_saved = saved
            records.save(self.record)

    def _log_header(self, log: Any, argv: list[str], version: str) -> None:
        """Which CLI version ran (the first thing to ask when a CLI changes its output)."""
        records.ensure_dir(log.parent)
        try:
            with log.open("a", encoding="utf-8") as header:
                header.write(f"# rewake run {self.record.root_id} {self.record.run_id}: "
                             f"{self.program} {version}\n# argv: {shlex.join(argv)}\n")  # fmt: skip
        except OSError as error:
            raise records.RecordError(f"cannot write {log}: {error}") from error

    # -- the loop ------------------------------------------------------------------------

    def run(self, step: Step) -> int:
        """Run `step`, and the resumes that follow it; `rewake run`'s exit status."""
        while True:
            if not step.argv and step.fresh_allowed:
                why = (self._nothing_saved_words() if self.nothing_saved
                       else "rewake recorded no conversation id to resume")  # fmt: skip
                self._say(f"⚠ {why}: starting a FRESH conversation in {self.record.cwd} "
                          "(--fresh-if-missing)")  # fmt: skip
                step.argv, step.started_when_proven = self.fresh_argv(), True
            if not step.argv:
                return self._no_conversation(step)
            if step.refusal is not None:
                return self._refuse_cold(step)
            for note in step.notes:
                self._say(note)
            # Handled from the spawn until the attempt is recorded (and the fired mark settled).
            with StopSignals(grace_s=self.options.stop_grace_s) as stop:
                finished, verdict, answer = self._attempt_recorded(step, stop)
            if not verdict.failed and not stop.requested:
                return 0
            code = self._exit_code(finished)
            if finished.halted or stop.requested:
                if not finished.halted:
                    self._say("■ a stop signal came while the attempt was being recorded: "
                              "stopping here")  # fmt: skip
                self._say(f"■ stopped. Resume it with: rewake run --resume {self.record.root_id}")
                return 128 + (stop.first_signal or signal.SIGINT)
            if answer is None:
                return code
            mark = self._offer(answer)
            self._announce_pause(answer, mark)
            if mark is None or not self.options.wait:
                return code
            waited = self._wait(mark)
            if waited is None:
                return Exit.INTERRUPTED
            if isinstance(waited, Settled):
                return self._settled(waited, code)
            env = self.options.env if self.options.env is not None else os.environ
            moved = conversation_moved_on(
                self.store, self.record, env, say=lambda line: self._say(f"  {line}")
            )
            if moved is not None:
                # Claimed and sending: the mark ends superseded, and nothing is started.
                finish(waited, self.options.clock(), "superseded", "attempt_moved_on",
                       moved.reason)  # fmt: skip
                self._say(f"■ mark {waited.delivery.mark_id} not resumed: {moved.reason}")
                if self.options.lock is not None:
                    self.options.lock.release()
                return Exit.SUPERSEDED
            self._say(f"▶ firing auto-resume (mark {waited.delivery.mark_id}) in the foreground")
            self._announce(Notice(
                f"Resumed · {self.record.root_id}",
                f"{self.record.root_id}: rewake run sent the resume of attempt "
                f"{self.record.attempt} (mark {waited.delivery.mark_id}) in the foreground",
                "success",
            ))  # fmt: skip
            step = self.resume_step(
                self.options.resume_prompt, fresh_allowed=self.record.fresh_if_missing,
                fire=waited,
            )  # fmt: skip

    def _attempt_recorded(
        self, step: Step, stop: StopSignals
    ) -> tuple[Finished, Classified, JSON | None]:
        finished = self.attempt(
            step.argv, step.attempt, started_when_proven=step.started_when_proven, stop=stop
        )
        verdict = classify(self.provider, finished, self.options.zone)
        if verdict.missing_conversation and not finished.halted and step.fresh_allowed:
            self._say(
                f"⚠ conversation {self.record.cli_session_id} not found: starting a FRESH "
                f"conversation in {self.record.cwd} with the original task "
                "(--fresh-if-missing)"
            )
            finished = self.attempt(
                self.fresh_argv(), step.attempt, started_when_proven=True, stop=stop
            )
            verdict = classify(self.provider, finished, self.options.zone)
        finished, verdict = self._workflow_limit(finished, verdict)
        answer = self._record_end(finished, verdict, step.attempt)
        if step.fire is not None:
            self._finish_fire(step.fire, finished, verdict)
        return finished, verdict, answer

    def _workflow_limit(
        self, finished: Finished, verdict: Classified
    ) -> tuple[Finished, Classified]:
        """Remember the attempt's workflow runs; an attempt that "completed" with agents lost
        to a usage limit is that limit (its report carries the rejected rate-limit events
        and the journals' gap), so that auto-resume is offered for it."""
        if self.provider.name != "claude":
            return finished, verdict
        kept = self.record.extra.get("workflow_predictions", {}).get(str(self.record.attempt))
        for line in workflows.note_ran_live(kept or []):
            self._say(f"· {line}")
            records.save(self.record)
        runs = workflows.runs_in_events(finished.events)
        if workflows.remember(self.record.extra, runs, finished.session_id):
            records.save(self.record)
        found = None if verdict.failed else workflows.limit_in_workflows(finished.events, runs)
        if found is None:
            return finished, verdict
        limited = dataclasses.replace(finished, events=list(found.events), tail=found.message())
        read = classify(self.provider, limited, self.options.zone)
        return limited, Classified(True, read.verdict, False, "provider_quota")

    def _replayed(self) -> str | None:
        """What this attempt's workflow resumes replayed, beside the fired mark's outcome."""
        kept = self.record.extra.get("workflow_predictions", {}).get(str(self.record.attempt))
        words = [f"{k['run_id']}: {k['cached']} of {k['total']} agents from cache, "
                 f"{k.get('ran_live')} ran live" for k in kept or []]  # fmt: skip
        return "; ".join(words) or None

    def _refuse_cold(self, step: Step) -> int:
        """A resume that would start a workflow over: not fired, and the mark says why."""
        self._say(f"■ not resuming {self.record.root_id}: {step.refusal}")
        self._say(f"  the journal is kept as it is; to start the workflow over anyway: "
                  f"rewake run --resume {self.record.root_id} --force")  # fmt: skip
        if step.fire is not None:
            finish(step.fire, self.options.clock(), "failed", "workflow_cold_resume",
                   step.refusal)  # fmt: skip
            self._announce_failed_fire("workflow_cold_resume", step.refusal)
        return Exit.REFUSED

    def _wait(self, mark: JSON) -> Fire | Settled | None:
        """Watch the mark (letting go of the session's lock meanwhile, so that a sweeper's
        `--resume-of` can take it); None after Ctrl-C."""
        lock = self.options.lock
        if lock is not None:
            lock.release()
        try:
            return wait_for_mark(self.store, self.record.root_id, mark, out=self.out,
                                 clock=self.options.clock, lock=lock,
                                 attempt=self.record.attempt)  # fmt: skip
        except KeyboardInterrupt:
            self._say(f"■ stopped waiting; the auto-resume mark stays armed (rewake "
                      f"auto-resume {self.record.root_id} off turns it off)")  # fmt: skip
            return None

    def _exit_code(self, finished: Finished) -> int:
        if finished.exit_code > 0:
            return finished.exit_code
        return 1  # stopped by a signal, or a stop the CLI ended with status 0

    def _record_end(self, finished: Finished, verdict: Classified, attempt: int) -> JSON | None:
        """Completed, or the failure report's answer (None if the store refused it)."""
        root, run = self.record.root_id, self.record.run_id
        try:
            if not verdict.failed:
                if not finished.started:
                    self.store.record_attempt(root, run, attempt, "started")
                self.store.record_attempt(root, run, attempt, "completed")
                self._say(f"✓ {root} attempt {attempt} completed")
                return None
            body = failure_body(finished, verdict, attempt=attempt,
                                provider=self.provider.name, zone=self.options.zone)  # fmt: skip
            if self.nothing_saved:
                # The store then offers no plain resume, only one armed as a fresh start.
                body["conversation_saved"] = False
            answer = self.store.report_failure(root, run, body)
        except StoreError as refused:
            self._say(f"rewake: the attempt was not recorded: {refused}", error=True)
            if verdict.failed and refused.code in UNREACHABLE:
                self._keep_in_outbox(body, verdict, attempt)
            return None
        self._banner(answer, verdict)
        hint = self.provider.setup_hint(finished.exit_code, finished.tail)
        if hint is not None:
            self._say(f"  why: {hint}")
        return answer

    def _keep_in_outbox(self, body: JSON, verdict: Classified, attempt: int) -> None:
        """The store is unreachable: keep the report on disk and say what it said locally."""
        path = records.save_outbox(self.record.root_id, self.record.run_id, attempt, body)
        found = verdict.verdict
        self._say(f"■ {verdict.failure_kind or found.kind} (read here; the store has no record)")
        if found.reset_at is not None:
            when = found.reset_at.astimezone()
            self._say(f"  the limit resets at {when:%Y-%m-%d %H:%M:%S %Z} (local time)")
        self._say(f"  the report is kept in {path}; docs/run.md says how to replay it")

    def _banner(self, answer: JSON, verdict: Classified) -> None:
        banner = answer.get("banner") or {}
        self._say(f"■ {banner.get('business', 'Stopped')} — {banner.get('detail', '')}")
        reset_at = (answer.get("verdict") or {}).get("reset_at")
        if reset_at and answer.get("failure_kind") == "provider_quota":
            when = parse_instant(str(reset_at)).astimezone()
            self._say(f"  the limit resets at {when:%Y-%m-%d %H:%M:%S %Z} (local time)")
        if verdict.missing_conversation:
            self._say(
                f"  start a fresh conversation in {self.record.cwd} with: "
                f"rewake run --resume {self.record.root_id} --fresh-if-missing"
            )

    def _offer(self, answer: JSON) -> JSON | None:
        """Arm auto-resume when asked for (the mark), else say how to."""
        if answer.get("failure_kind") == "conversation_missing":
            return None  # resuming it again cannot help; _banner said how to start afresh
        if answer.get("failure_kind") != "provider_quota":
            self._say(f"  resume by hand: rewake run --resume {self.record.root_id}")
            return None
        name = self.record.root_id
        if self.nothing_saved and not self.record.fresh_if_missing:
            self._offer_fresh(answer)
            return None
        if not self.options.auto_resume:
            offer = answer.get("auto_resume") or {}
            if offer.get("available"):
                self._say(f"  resume automatically after the reset: rewake auto-resume {name} on")
            else:
                self._say(f"  auto-resume is not offered: {offer.get('detail')}")
            return None
        if self.nothing_saved:
            self._say(f"  note: {self._nothing_saved_words()}; the auto-resume starts the task "
                      f"afresh in {self.record.cwd} (--fresh-if-missing)")  # fmt: skip
        try:
            mark = self.store.set_auto_resume(
                name, enabled=True, fresh_if_missing=self.nothing_saved
            )
        except StoreError as refused:
            self._say(f"  auto-resume not armed: {refused.detail} ({refused.code})")
            return None
        self._say(f"  auto-resume armed by {mark.get('armed_by')}: due at "
                  f"{local_clock(parse_instant(str(mark['due_at'])))}")  # fmt: skip
        for warning in mark.get("warnings") or []:
            self._say(f"  note: {warning}")
        if self.options.wait:
            for line in resume_path(self.store):
                self._say(f"  {line}")
        return mark

    def _offer_fresh(self, answer: JSON) -> None:
        """Paused on a limit with no conversation saved: a plain resume could only fail, so
        none is armed or offered; the fresh start is, by the command that asks for it. Never
        armed without that flag: a fresh start re-runs the task, which the user must choose."""
        name = self.record.root_id
        offer = answer.get("auto_resume") or {}
        self._say(f"  {self._nothing_saved_words()}")
        if self.options.auto_resume:
            self._say("  auto-resume not armed: it would resume a conversation that does not "
                      "exist; only --fresh-if-missing arms a fresh start")  # fmt: skip
        # The store refuses a plain resume of it (conversation_not_saved), not the fresh start.
        if (
            self.options.auto_resume
            or offer.get("available")
            or (offer.get("code") == "conversation_not_saved")
        ):
            self._say(f"  start the task afresh in {self.record.cwd} after the reset: "
                      f"rewake auto-resume {name} on --fresh-if-missing")  # fmt: skip
        else:
            self._say(f"  auto-resume is not offered: {offer.get('detail')}")
        self._say(f"  or now: rewake run --resume {name} --fresh-if-missing")

    def _settled(self, settled: Settled, code: int) -> int:
        mark = settled.mark
        if settled.taken_over is not None:
            # As for a mark a sweeper resumed: the resume happened, in another process, and
            # whatever follows belongs to the attempt that owns the session now.
            self._say(f"✓ {self.record.root_id} went on without this run: {settled.taken_over}; "
                      f"see rewake show {self.record.root_id}")  # fmt: skip
            return 0
        state = mark.get("state")
        if state == "done":
            log = records.log_path(self.record.root_id, self.record.run_id, self.record.attempt + 1)
            self._say(f"✓ a sweeper resumed {self.record.root_id}; its output goes to {log}")
            return 0
        self._say(
            f"■ auto-resume {state}: {mark.get('outcome_detail') or mark.get('clear_reason')}"
        )
        return code

    def _finish_fire(self, fire: Fire, finished: Finished, verdict: Classified) -> None:
        if finished.started:
            state, code, detail = "done", "resumed_in_foreground", self._replayed()
        elif verdict.missing_conversation:
            state, code, detail = "failed", "conversation_missing", "no conversation to continue"
        else:
            state, code, detail = "failed", f"exit_{finished.exit_code}", None
        finish(fire, finished.ended_at, state, code, detail)
        if state == "failed":
            self._announce_failed_fire(code, detail)

    def _announce_failed_fire(self, code: str, detail: str | None) -> None:
        name = self.record.root_id
        self._announce(Notice(
            f"The resume failed · {name}",
            f"{name}: the resume rewake run sent in the foreground failed ({code})"
            + (f": {detail}" if detail else ""),
            "failure",
        ))  # fmt: skip

    def _announce(self, notice: Notice) -> None:
        if self.options.announcer is not None:
            self.options.announcer.send(notice)

    def _announce_pause(self, answer: JSON, mark: JSON | None) -> None:
        notice = pause_notice(self.record.root_id, answer, mark)
        if notice is not None:
            self._announce(notice)

    def _no_conversation(self, step: Step) -> int:
        """A resume with no conversation id on record: reported as conversation_missing."""
        now = self.options.clock()
        message = (self._nothing_saved_words() if self.nothing_saved
                   else "rewake recorded no conversation id to resume")  # fmt: skip
        body: dict[str, Any] = {
            "attempt": step.attempt, "message": message,
            "observed_at": now.isoformat(), "provider": self.provider.name,
            "failure_kind": "conversation_missing", "capture": "live",
        }  # fmt: skip
        self.record.attempt = step.attempt
        records.save(self.record)
        try:
            answer = self.store.report_failure(self.record.root_id, self.record.run_id, body)
        except StoreError as refused:
            self._say(f"rewake: the attempt was not recorded: {refused}", error=True)
        else:
            self._banner(answer, Classified(True, _none_verdict(), True, "conversation_missing"))
        if step.fire is not None:
            finish(step.fire, now, "failed", "conversation_missing", "no conversation id")
            self._announce_failed_fire("conversation_missing", "no conversation id")
        return Exit.NOT_FOUND


def conversation_moved_on(
    store: Store, record: RunRecord, env: Mapping[str, str], *, say: Callable[[str], None]
) -> conversations.Continuation | None:
    """Why the conversation must not be resumed, when it moved on since the failed attempt:
    the CLI's own store shows a turn after it, or an open interactive CLI holds it
    (rewake.runner.clis.conversations). None to resume. When the store cannot tell, the
    documented default is to resume (rewake is the net for a conversation nobody continues),
    and `say` gets why."""
    since = conversations.failed_at(store.get_session(record.root_id), record.run_id,
                                    record.attempt)  # fmt: skip
    if since is None:
        say(f"the failure of attempt {record.attempt} has no time on record; resuming "
            "without looking for a later turn")  # fmt: skip
        return None
    found = conversations.check(record.provider, record.cli_session_id, since, env)
    # What interactive Claude Code said of its own continuation (rewake.runner.hook.native).
    found = conversations.with_native(found, record.extra.get(records.NATIVE), record.attempt)
    if found.state == "unknown":
        say(f"cannot tell whether the conversation moved on ({found.reason}); resuming, "
            "the default")  # fmt: skip
    return found if found.state == "moved_on" else None


def _none_verdict() -> Verdict:
    return Verdict(kind="none")
