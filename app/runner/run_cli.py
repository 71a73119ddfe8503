"""`rewake run`: run a coding CLI's headless mode under rewake.

    rewake run [--auto-resume] [--name NAME] [--fresh-if-missing] -- claude -p "fix the tests"
    rewake run --provider codex -- --full-auto "fix the tests"
    rewake run --resume NAME [--fresh-if-missing] [--auto-resume] [-- PROMPT]
    rewake run --resume-of MARK_ID -- PROMPT        (what the command executor runs)

Only the standard library is imported at module level: `rewake parse` builds the same argument
parser and must start fast.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from app.runner.providers import PROVIDERS, UsageError

EXIT_USAGE = 2
EXIT_NOT_FOUND = 127
#: `--resume-of` for a mark whose attempt has moved on: nothing was run.
EXIT_SUPERSEDED = 3


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
    """`<cli> --version`'s first line, or None."""
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
    from app.runner.store import StoreError
    from app.runner.supervise import ProgramNotFound

    try:
        return _dispatch(args)
    except ProgramNotFound as error:
        print(f"rewake run: {error}", file=sys.stderr)
        return EXIT_NOT_FOUND
    except UsageError as error:
        print(f"rewake run: {error}", file=sys.stderr)
        return EXIT_USAGE
    except StoreError as error:
        print(f"rewake run: {error.detail} ({error.code})", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("\nrewake run: stopped waiting; the auto-resume mark stays armed "
              "(rewake auto-resume NAME off turns it off)", file=sys.stderr)  # fmt: skip
        return 130


def _dispatch(args: argparse.Namespace) -> int:
    rest = _args_after_dashes(list(args.args))
    if args.resume_of is not None:
        return _resume_of(args.resume_of, rest)
    if args.resume is not None:
        return _resume(args, rest)
    return _first_run(args, rest)


def _runner(store: Any, record: Any, provider: Any, *, auto_resume: bool, wait: bool) -> Any:
    from app.executors.base import DEFAULT_PROMPT
    from app.runner.attempts import Options, Runner
    from app.runner.outcome import host_zone

    prompt = os.environ.get("REWAKE_RESUME_PROMPT") or DEFAULT_PROMPT
    options = Options(auto_resume=auto_resume, wait=wait, zone=host_zone(), resume_prompt=prompt)
    return Runner(store, record, provider, options, out=sys.stdout, err=sys.stderr)


def _first_run(args: argparse.Namespace, rest: list[str]) -> int:
    from app.runner import records
    from app.runner.attempts import Step
    from app.runner.providers import resolve_command
    from app.runner.store import check_id, open_store

    provider, program, cli_args = resolve_command(args.provider, rest)
    name = args.name or f"{provider.name}-{uuid.uuid4().hex[:8]}"
    try:
        check_id(name, "--name")
    except Exception as error:
        raise UsageError(str(error)) from error
    if records.load(name) is not None:
        raise UsageError(
            f"a session named {name!r} exists: resume it with rewake run --resume {name}, "
            "or pick another --name"
        )
    pinned = None if provider.pinned_session_id(cli_args) else str(uuid.uuid4())
    if provider.name != "claude":
        pinned = None  # only Claude takes an id for a new session; the others report theirs
    argv = provider.first_argv(program, cli_args, pinned)
    store = open_store()
    try:
        record = records.RunRecord(
            root_id=name, run_id="r1", provider=provider.name, cwd=str(Path.cwd()), args=cli_args,
            cli_session_id=pinned, cli_version=cli_version(program), attempt=1,
            fresh_if_missing=args.fresh_if_missing,
            extra={"program": program, "auto_resume": args.auto_resume},
        )  # fmt: skip
        if record.cli_version is None and not _on_path(program):
            print(f"rewake run: {program}: not found (is it installed and on PATH?)",
                  file=sys.stderr)  # fmt: skip
            return EXIT_NOT_FOUND
        records.save(record)
        runner = _runner(store, record, provider, auto_resume=args.auto_resume, wait=True)
        return int(runner.run(Step(argv, 1, gated=False, fresh_allowed=False)))
    finally:
        store.close()


def _on_path(program: str) -> bool:
    import shutil

    return shutil.which(program) is not None


def _resume(args: argparse.Namespace, rest: list[str]) -> int:
    """A resume by hand: clears the mark (manual_resume), then the provider's resume form."""
    from app.runner import records
    from app.runner.providers import provider_named
    from app.runner.store import open_store

    record = records.load(args.resume)
    if record is None:
        raise UsageError(
            f"no session {args.resume!r} was supervised here ({records.state_dir()}); "
            "rewake ls lists them"
        )
    auto = bool(args.auto_resume or record.extra.get("auto_resume"))
    if args.fresh_if_missing:
        record.fresh_if_missing = True
    store = open_store()
    try:
        store.manual_resume(record.root_id, record.run_id)
        runner = _runner(store, record, provider_named(record.provider), auto_resume=auto,
                         wait=True)  # fmt: skip
        prompt = " ".join(rest) or _manual_prompt()
        step = runner.resume_step(prompt, fresh_allowed=args.fresh_if_missing)
        return int(runner.run(step))
    finally:
        store.close()


def _manual_prompt() -> str:
    from app.runner.attempts import MANUAL_PROMPT

    return MANUAL_PROMPT


def _resume_of(mark_id: int, rest: list[str]) -> int:
    """The command executor's resume: the sweeper claimed mark `mark_id` and holds it in
    `sending`; the session is named by REWAKE_ROOT_ID."""
    from app.runner import records
    from app.runner.providers import provider_named
    from app.runner.store import open_store

    root_id = os.environ.get("REWAKE_ROOT_ID")
    if not root_id:
        raise UsageError("--resume-of is run by the command executor, with REWAKE_ROOT_ID set")
    record = records.load(root_id)
    if record is None:
        print(f"rewake run: no record of session {root_id!r} in {records.state_dir()} (is the "
              "sweeper's REWAKE_STATE_DIR or HOME the same as rewake run's?)",
              file=sys.stderr)  # fmt: skip
        return EXIT_USAGE
    expected = os.environ.get("REWAKE_EXPECTED_ATTEMPT")
    if expected is not None and expected.isdigit() and int(expected) != record.attempt:
        print(f"rewake run: mark {mark_id} resumes attempt {expected}, but {root_id} is at "
              f"attempt {record.attempt}: not resuming twice", file=sys.stderr)  # fmt: skip
        return EXIT_SUPERSEDED
    store = open_store()
    try:
        auto = bool(record.extra.get("auto_resume"))
        runner = _runner(store, record, provider_named(record.provider), auto_resume=auto,
                         wait=False)  # fmt: skip
        prompt = " ".join(rest) or _manual_prompt()
        step = runner.resume_step(prompt, fresh_allowed=record.fresh_if_missing)
        return int(runner.run(step))
    finally:
        store.close()
