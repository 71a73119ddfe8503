"""`rewake run`: run a coding CLI's headless mode under rewake.

    rewake run [--auto-resume] [--name NAME] [--fresh-if-missing] -- claude -p "fix the tests"
    rewake run --provider codex -- --full-auto "fix the tests"
    rewake run --resume NAME [--fresh-if-missing] [--auto-resume] [--force] [-- PROMPT]
    rewake run --resume-of MARK_ID -- PROMPT        (what the command executor runs)

Every form holds the session's lock (rewake.runner.process.guard) while it runs the CLI, and checks
that the store answers before it spawns anything: an attempt that cannot be recorded is not started.

`rewake.cli` imports this module only for `rewake run` (or to list every command: `--help`, a
mistyped one), so what it needs is imported at the top: `rewake parse` never loads it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rewake.executors.base import DEFAULT_PROMPT
from rewake.exits import Exit
from rewake.instants import instant, local_clock
from rewake.logs import redact_url
from rewake.notifications.apprise_notices import Announcer, Notice
from rewake.printable import printable
from rewake.reports.banners import describe_wait
from rewake.reports.session_json import JSON, current_failure
from rewake.runner.clis.conversations import Continuation
from rewake.runner.clis.hostzone import host_zone
from rewake.runner.clis.providers import (
    PROVIDERS,
    Provider,
    UsageError,
    provider_named,
    resolve_command,
)
from rewake.runner.process import panes, workflows
from rewake.runner.process.attempts import (
    MANUAL_PROMPT,
    Options,
    Runner,
    Step,
    conversation_moved_on,
)
from rewake.runner.process.guard import SessionBusy, SessionLock, manual_resume_refusal
from rewake.runner.process.notices import announcer_from_env
from rewake.runner.process.supervise import ProgramNotFound
from rewake.runner.store import records
from rewake.runner.store.records import TYPED_RESUME, RecordError, RunRecord
from rewake.runner.store.stores import Store, StoreError, check_id, database_url, open_store
from rewake.spawn_env import agent_environment, without_rewake_settings


def register(subparsers: Any) -> None:
    """Add `run` to the `rewake` command."""
    run = subparsers.add_parser(
        "run",
        help="run claude, codex or gemini headless; record limits; resume once after the reset",
        description=(
            "Run a coding CLI's headless mode, show its output, keep a log per attempt, and "
            "record every attempt in rewake (REWAKE_URL, else the local database). On a usage "
            "limit with a stated reset, --auto-resume arms the resume and waits for it."
        ),
        epilog='example: rewake run --auto-resume -- claude -p "fix the tests"',
    )
    run.add_argument("--provider", choices=PROVIDERS, help="the CLI, when ARGS do not name it")
    run.add_argument(
        "--auto-resume", action="store_true",
        help="on a provider limit with a stated reset, arm the resume and wait for it",
    )  # fmt: skip
    run.add_argument("--name", help="the session's name (default: generated; see rewake ls)")
    run.add_argument(
        "--fresh-if-missing", action="store_true",
        help="if the conversation is gone when resuming, start the task afresh in the same "
        "directory (after a warning) instead of failing",
    )  # fmt: skip
    run.add_argument(
        "--force", action="store_true",
        help="with --resume: resume even while the mark is sending or uncertain, the "
        "session is cancelled, or its workflow would replay none of its completed agents",
    )  # fmt: skip
    which = run.add_mutually_exclusive_group()
    which.add_argument("--resume", metavar="NAME", help="resume a supervised session by hand")
    which.add_argument("--resume-of", metavar="MARK_ID", type=int, help=argparse.SUPPRESS)
    run.add_argument(
        "args", nargs=argparse.REMAINDER, metavar="-- ARGS",
        help="the CLI and its arguments (with --resume: the prompt)",
    )  # fmt: skip
    run.set_defaults(func=run_command)


def _args_after_dashes(args: list[str]) -> list[str]:
    return args[1:] if args[:1] == ["--"] else args


def cli_version(program: str, env: dict[str, str] | None = None) -> str | None:
    """`<cli> --version`'s first line, or None. The CLI sees `env` (default: this process's
    environment without rewake's settings), as the attempt will."""
    if env is None:
        env = without_rewake_settings(os.environ)
    try:
        done = subprocess.run(  # noqa: S603  (the user's CLI, no shell)
            [program, "--version"], capture_output=True, text=True, timeout=15, env=env,
            stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0].strip() if lines and done.returncode == 0 else None


def run_command(args: argparse.Namespace) -> int:
    exits: list[tuple[type[Exception], int]] = [
        (SessionBusy, Exit.BUSY),
        (RecordError, Exit.STORE),
        (ProgramNotFound, Exit.PROGRAM_NOT_FOUND),
        (UsageError, Exit.USAGE),
    ]
    try:
        return _dispatch(args)
    except (SessionBusy, RecordError, ProgramNotFound, UsageError) as error:
        print(printable(f"rewake run: {error}"), file=sys.stderr)
        return next(code for kind, code in exits if isinstance(error, kind))
    except StoreError as error:
        print(printable(f"rewake run: {error.detail} ({error.code})"), file=sys.stderr)
        return Exit.USAGE
    except KeyboardInterrupt:
        # Outside an attempt and its wait (those handle Ctrl-C themselves): nothing ran yet.
        print("\nrewake run: interrupted", file=sys.stderr)
        return Exit.INTERRUPTED


def _dispatch(args: argparse.Namespace) -> int:
    rest = _args_after_dashes(list(args.args))
    if args.resume_of is not None:
        return _resume_of(args.resume_of, rest)
    if args.resume is not None:
        return _resume(args, rest)
    return _first_run(args, rest)


def _runner(
    store: Store,
    record: RunRecord,
    provider: Provider,
    lock: SessionLock,
    *,
    auto_resume: bool,
    wait: bool,
    env: dict[str, str] | None = None,
) -> Runner:
    """The Runner; `env` is what the CLI sees (None: this process's, without rewake's settings)."""
    prompt = os.environ.get("REWAKE_RESUME_PROMPT") or DEFAULT_PROMPT
    options = Options(
        auto_resume=auto_resume, wait=wait, zone=host_zone(), resume_prompt=prompt, lock=lock,
        env=env, announcer=_announcer(),
    )  # fmt: skip
    return Runner(store, record, provider, options, out=sys.stdout, err=sys.stderr)


def _announcer() -> Announcer | None:
    def warn(text: str) -> None:
        print(printable(f"rewake: {text}"), file=sys.stderr, flush=True)

    return announcer_from_env(warn)


def _run_steps(runner: Runner, step: Step) -> int:
    """`runner.run(step)`, then a bounded wait for notifications still going out."""
    try:
        return int(runner.run(step))
    finally:
        if runner.options.announcer is not None:
            runner.options.announcer.close()


def _session_name(value: str, what: str) -> str:
    try:
        return check_id(value, what)
    except Exception as error:
        raise UsageError(str(error)) from error


def _open_checked_store(probe: Callable[[Store], object] | None = None) -> Store:
    """The store, once it has answered a cheap call (`probe`, else listing one session): a CLI
    whose limit could not be recorded is not worth starting (the failure would be lost)."""

    store = None
    try:
        # Opening counts as answering: a local database that cannot be opened or upgraded
        # (a corrupt file, a missing directory) is the same one line and exit 5.
        store = open_store()
        if probe is None:
            store.list_sessions(limit=1)
        else:
            probe(store)
    except StoreError as error:
        if store is not None:
            store.close()
        where = os.environ.get("REWAKE_URL") or "the local database"
        print(printable(f"rewake run: the store at {where} does not answer ({error.code}: "
                        f"{error.detail}); nothing was started"), file=sys.stderr)  # fmt: skip
        raise _StoreDown from error
    return store


class _StoreDown(Exception):
    """The store did not answer the probe (already said on stderr)."""


def _with_store(
    work: Callable[[Store], int], probe: Callable[[Store], object] | None = None
) -> int:
    try:
        store = _open_checked_store(probe)
    except _StoreDown:
        return Exit.STORE
    try:
        return int(work(store))
    finally:
        store.close()


def _refresh_version(record: RunRecord, env: dict[str, str] | None = None) -> None:
    """The CLI may have been upgraded since the first run: the version that runs now."""
    program = str(record.extra.get("program") or record.provider)
    record.cli_version = cli_version(program, env) or record.cli_version


def _first_run(args: argparse.Namespace, rest: list[str]) -> int:
    provider, program, cli_args = resolve_command(args.provider, rest)
    name = _session_name(args.name or f"{provider.name}-{uuid.uuid4().hex[:8]}", "--name")
    lock = SessionLock(name)
    lock.acquire("first run")
    if records.load(name) is not None:
        raise UsageError(
            f"a session named {name!r} exists: resume it with rewake run --resume {name}, "
            "or pick another --name"
        )
    pinned = None if provider.pinned_session_id(cli_args) else str(uuid.uuid4())
    if provider.name != "claude":
        pinned = None  # only Claude takes an id for a new session; the others report theirs
    argv = provider.first_argv(program, cli_args, pinned)

    def work(store: Store) -> int:
        record = records.RunRecord(
            root_id=name, run_id="r1", provider=provider.name, cwd=str(Path.cwd()), args=cli_args,
            cli_session_id=pinned, cli_version=cli_version(program), attempt=1,
            fresh_if_missing=args.fresh_if_missing,
            extra={"program": program, "auto_resume": args.auto_resume},
        )  # fmt: skip
        if record.cli_version is None and not _on_path(program):
            print(f"rewake run: {program}: not found (is it installed and on PATH?)",
                  file=sys.stderr)  # fmt: skip
            return Exit.PROGRAM_NOT_FOUND
        records.save(record)
        runner = _runner(store, record, provider, lock, auto_resume=args.auto_resume, wait=True)
        return _run_steps(runner, Step(argv, 1, started_when_proven=False, fresh_allowed=False))

    return _with_store(work)


def _on_path(program: str) -> bool:
    return shutil.which(program) is not None


def _before_the_reset(session: JSON, now: datetime) -> str | None:
    """What to say when a resume by hand comes before the limit it stopped on resets: it
    will most likely stop on the same limit (the user may know better, so it is not refused)."""
    failure = current_failure(session) or {}
    reset_at = instant((failure.get("verdict") or {}).get("reset_at"))
    if failure.get("failure_kind") != "provider_quota" or reset_at is None or reset_at <= now:
        return None
    return (
        f"the limit resets at {local_clock(reset_at)} ({describe_wait(reset_at, now)}); "
        "resuming before then will most likely stop on the same limit"
    )


def _resume(args: argparse.Namespace, rest: list[str]) -> int:
    """A resume by hand: clears the mark (manual_resume), then the provider's resume form;
    refused while another rewake run holds the session, an automatic resume is sending (or
    may have run), or the session is cancelled (the last three unless --force)."""

    name = _session_name(args.resume, "--resume")
    lock = SessionLock(name)
    lock.acquire("resume by hand")
    record = records.load(name)
    if record is None:
        raise UsageError(
            f"no session {args.resume!r} was supervised here ({records.state_dir()}); "
            "rewake ls lists them"
        )
    auto = bool(args.auto_resume or record.extra.get("auto_resume"))
    if args.fresh_if_missing:
        record.fresh_if_missing = True

    def work(store: Store) -> int:
        session = store.get_session(name)
        refusal = manual_resume_refusal(store.get_mark(name), session)
        if refusal is not None and not args.force:
            print(printable(f"rewake run: not resuming {name}: {refusal} (--force resumes "
                            "anyway)"), file=sys.stderr)  # fmt: skip
            return Exit.REFUSED
        if refusal is not None:
            print(printable(f"rewake run: resuming {name} anyway (--force): {refusal}"),
                  file=sys.stderr)  # fmt: skip
        early = _before_the_reset(session, datetime.now(UTC))
        if early is not None:
            print(printable(f"rewake run: note: {early}"), file=sys.stderr)
        store.manual_resume(record.root_id, record.run_id)
        return _run_resume(store, record, lock, rest, auto=auto, wait=True,
                           fresh_allowed=args.fresh_if_missing, force=args.force)  # fmt: skip

    return _with_store(work)


def _manual_prompt() -> str:
    return MANUAL_PROMPT


def _resume_of(mark_id: int, rest: list[str]) -> int:
    """The command executor's resume: the sweeper claimed mark `mark_id` and holds it in
    `sending`; the session is named by REWAKE_ROOT_ID."""

    root_id = os.environ.get("REWAKE_ROOT_ID")
    if not root_id:
        raise UsageError("--resume-of is run by the command executor, with REWAKE_ROOT_ID set")
    root_id = _session_name(root_id, "REWAKE_ROOT_ID")
    lock = SessionLock(root_id)
    # Held by a running attempt (a manual resume, or rewake run firing the mark itself):
    # SessionBusy, a non-zero exit, and nothing runs.
    lock.acquire(f"resume of mark {mark_id}")
    record = records.load(root_id)
    if record is None:
        lock.release()
        print(f"rewake run: no record of session {root_id!r} in {records.state_dir()} (is the "
              "sweeper's REWAKE_STATE_DIR or HOME the same as rewake run's?)",
              file=sys.stderr)  # fmt: skip
        return Exit.USAGE
    expected = os.environ.get("REWAKE_EXPECTED_ATTEMPT")
    if expected is not None and expected.isdigit() and int(expected) != record.attempt:
        lock.release()
        print(f"rewake run: mark {mark_id} resumes attempt {expected}, but {root_id} is at "
              f"attempt {record.attempt}: not resuming twice", file=sys.stderr)  # fmt: skip
        return Exit.SUPERSEDED

    # This process was started by a sweeper, with the service's environment: the CLI gets the
    # agent's allowlist only, never the store's names this process itself needed.
    env = agent_environment(os.environ)

    def work(store: Store) -> int:
        refusal = _not_the_marks_store(store, root_id, mark_id)
        if refusal is not None:
            lock.release()
            print(printable(f"rewake run: {refusal}"), file=sys.stderr)
            return Exit.STORE
        if (moved := _moved_on(store, record, env)) is not None:
            reason = moved.reason
            if moved.holder_pid is not None and moved.pending:
                # It said it continues by itself and has not yet: it may still give up (slept
                # past the reset, turned off) before it says so. Look again rather than stand
                # down for good; nothing is sent meanwhile.
                return _defer(store, record, mark_id, lock, reason, notify=False)
            if moved.holder_pid is not None and not moved.continues_itself:
                prompt = " ".join(rest) or DEFAULT_PROMPT
                plan = _workflow_plan(record)
                if plan is not None and plan.refusal is not None:
                    lock.release()
                    print(printable(f"rewake run: mark {mark_id} not resumed: {plan.refusal}"),
                          file=sys.stderr)  # fmt: skip
                    return Exit.REFUSED
                prompt = plan.prompt(prompt) if plan is not None else prompt
                not_typed = _type_into_holder(record, moved.holder_pid, prompt, lock)
                if not_typed is None:
                    print(f"rewake run: mark {mark_id}: typed the resume into the open Claude "
                          f"Code (pid {moved.holder_pid})", file=sys.stderr)  # fmt: skip
                    return Exit.OK
                reason = (f"an open Claude Code (pid {moved.holder_pid}) holds this conversation "
                          f"and will not continue by itself, and rewake cannot type into it "
                          f"({not_typed.reason}): type the resume there")  # fmt: skip
                if not not_typed.keys_sent:
                    # Nothing reached it: the mark waits, and continues it headless once that
                    # Claude is closed (or types into it once its pane shows it at its prompt).
                    return _defer(store, record, mark_id, lock, reason, notify=True)
                # Some keys reached its input box: a second try could type them twice.
                _notify_unreachable(root_id, mark_id, reason)
            lock.release()
            print(printable(f"rewake run: mark {mark_id} not resumed: {reason}"), file=sys.stderr)
            records.save(replace(record, extra={**record.extra, "superseded": {
                "mark_id": mark_id, "attempt": record.attempt, "reason": reason}}))  # fmt: skip
            return Exit.SUPERSEDED
        return _run_resume(store, record, lock, rest, auto=bool(record.extra.get("auto_resume")),
                           wait=False, fresh_allowed=record.fresh_if_missing,
                           env=env)  # fmt: skip

    # The probe is a read the resume's own credential allows (it may list nothing else).
    return _with_store(work, probe=lambda store: _probe_session(store, root_id))


def _probe_session(store: Store, root_id: str) -> None:
    """The store answers; a session it does not hold is for `_not_the_marks_store` to say."""
    try:
        store.get_mark(root_id)
    except StoreError as error:
        if error.code != "session_not_found":
            raise


def _store_where() -> str:
    """The store this process records into, in words (a URL, a database without password)."""
    url = os.environ.get("REWAKE_URL")
    if url:
        return url
    database, _how = database_url(os.environ, create=False)
    return redact_url(database)


def _not_the_marks_store(store: Store, root_id: str, mark_id: int) -> str | None:
    """Why `store` is not where mark `mark_id` lives (its session unknown there, or its latest
    mark another one, or sent under another attempt key); None when it is. Recording the resume
    elsewhere would leave the mark's session paused for good and make an orphan session."""
    key = os.environ.get("REWAKE_ATTEMPT_KEY")
    try:
        mark = store.get_mark(root_id)
    except StoreError as error:
        if error.code != "session_not_found":
            raise
        mark = {}
    if mark.get("id") == mark_id and (key is None or mark.get("attempt_key") == key):
        return None
    return (
        f"mark {mark_id} of {root_id} is not in the store this resume would record into "
        f"({_store_where()}), so nothing was started: the sweeper that fired it keeps its marks "
        "elsewhere. A sweeper hands its own store to the program it starts (rewake serve: its "
        "URL and a credential for this resume; rewake sweep: REWAKE_DATABASE_URL); a wrapper "
        "around REWAKE_COMMAND must pass REWAKE_URL, REWAKE_TOKEN and REWAKE_DATABASE_URL on "
        "unchanged"
    )


def _moved_on(store: Store, record: RunRecord, env: dict[str, str]) -> Continuation | None:
    """Why the conversation must not be resumed headless (rewake.runner.process.attempts)."""

    def say(line: str) -> None:
        print(printable(f"rewake run: {line}"), file=sys.stderr)

    return conversation_moved_on(store, record, env, say=say)


def _defer(
    store: Store, record: RunRecord, mark_id: int, lock: SessionLock, reason: str, *, notify: bool
) -> int:
    """Nothing was sent, and the open CLI holding the conversation may yet be reached or
    closed: exit DEFERRED, which the command executor records as the mark waiting again
    (docs/design.md#states), with `reason` (the last line on stderr) as its outcome detail.
    With `notify`, REWAKE_NOTIFY hears it once: not when the mark was already deferred."""
    lock.release()
    if notify and _first_deferral(store, record.root_id):
        _notify_unreachable(record.root_id, mark_id, reason, waits=True)
    print(printable(f"rewake run: mark {mark_id} waits: {reason}"), file=sys.stderr)
    return Exit.DEFERRED


def _first_deferral(store: Store, root_id: str) -> bool:
    """Whether the mark being sent was not deferred before (a mark looked at again keeps the
    outcome of its last deferral until it ends); True when the store cannot say."""
    try:
        return store.get_mark(root_id).get("outcome") != "deferred"
    except StoreError:
        return True


def _notify_unreachable(root_id: str, mark_id: int, reason: str, *, waits: bool = False) -> None:
    """REWAKE_NOTIFY's notice that the open Claude holding the conversation cannot be reached
    (the mark waits, or, when keys reached its input box, ends `superseded`); nothing when no
    notifier is set."""
    announcer = _announcer()
    if announcer is None:
        return
    what = ("is waiting: rewake resumes it once that Claude is closed" if waits
            else "was not resumed")  # fmt: skip
    try:
        announcer.send(Notice(f"Not resumed, continue it by hand · {root_id}",
                              f"{root_id}: mark {mark_id} {what}: {reason}",
                              "warning"))  # fmt: skip
    finally:
        announcer.close()


def _workflow_plan(record: RunRecord) -> workflows.ResumePlan | None:
    """For a resume typed into the open Claude: its workflow runs made findable, predicted
    (kept in the record for the attempt the typed prompt starts) and named, as a headless
    resume does (docs/workflows.md); None for a session with none."""
    if record.provider != "claude" or not record.cli_session_id:
        return None
    plan = workflows.plan_and_keep(record.extra, record.cli_session_id, record.attempt + 1)
    for line in [p.words() for p in plan.predictions] if plan is not None else []:
        print(printable(f"rewake run: · {line}"), file=sys.stderr)
    return plan


def _type_into_holder(
    record: RunRecord, pid: int, prompt: str, lock: SessionLock
) -> panes.NotTyped | None:
    """Continue the conversation in the interactive CLI that holds it, by typing `prompt` into
    its tmux pane (rewake.runner.process.panes); None once typed, else why not. The session's
    lock is let go first and the prompt noted in the record: the hook that Claude Code runs
    for it (UserPromptSubmit) then lets it through as rewake's own, and records the attempt."""
    pane = panes.find_pane(pid)
    if pane is None:
        return panes.NotTyped("it runs in no tmux pane rewake can reach")
    typed = " ".join(prompt.split())
    records.save(replace(record, extra={**record.extra, TYPED_RESUME: typed}))
    lock.release()
    why_not = panes.type_into(pane, typed)
    if why_not is not None:
        extra = {k: v for k, v in record.extra.items() if k != TYPED_RESUME}
        records.save(replace(record, extra=extra))
    return why_not


def _run_resume(
    store: Store, record: RunRecord, lock: SessionLock, rest: list[str], *, auto: bool, wait: bool,
    fresh_allowed: bool, env: dict[str, str] | None = None, force: bool = False,
) -> int:  # fmt: skip
    """The provider's resume form under supervision, as the next attempt of `record`'s run."""

    _refresh_version(record, env)
    runner = _runner(store, record, provider_named(record.provider), lock, auto_resume=auto,
                     wait=wait, env=env)  # fmt: skip
    runner.options.cold_workflow_ok = force  # a workflow's 0 % resume too (docs/workflows.md)
    prompt = " ".join(rest) or _manual_prompt()
    return _run_steps(runner, runner.resume_step(prompt, fresh_allowed=fresh_allowed))
