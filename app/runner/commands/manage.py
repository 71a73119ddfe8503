"""What a person does to a session from the terminal, beside `ls` and `show`: cancel it,
delete it, settle its uncertain mark, read its attempt logs.

    rewake cancel NAME                      final; an armed mark is cleared (cancel)
    rewake rm NAME                          a finished or cancelled session; a tombstone is kept
    rewake resolve NAME done|not-sent       an uncertain mark, after finding out by hand
    rewake logs NAME [--attempt N] [--path] an attempt's log (the latest by default)

Each is the service's own route (POST .../cancel, DELETE, POST .../auto-resume/resolve) through
the same store as `rewake run` (REWAKE_URL, else the local database); the logs are the run
records' own, in the state dir.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rewake.exits import Exit
from rewake.printable import json_printable, printable
from rewake.runner.commands.status import _invalid_name, _with_store
from rewake.runner.store import records
from rewake.runner.store.stores import JSON, Store

#: An attempt's log file: `<run>-attempt-<n>.log`.
_LOG = re.compile(r"^(?P<run>.+)-attempt-(?P<attempt>\d+)\.log$")


def register(commands: Any) -> None:
    """Add `cancel`, `rm`, `resolve` and `logs` to the `rewake` command."""
    cancel = commands.add_parser("cancel", help="cancel a session (final; clears its armed mark)")
    cancel.add_argument("name", help="the session's root id (as `rewake ls` shows it)")
    cancel.add_argument("--json", action="store_true", help="the session as the API returns it")
    cancel.set_defaults(func=run_cancel)

    rm = commands.add_parser(
        "rm", help="delete a finished or cancelled session (a tombstone is kept)"
    )
    rm.add_argument("name", help="the session's root id")
    rm.add_argument("--json", action="store_true", help="the tombstone as JSON")
    rm.set_defaults(func=run_rm)

    resolve = commands.add_parser(
        "resolve", help="settle a session's uncertain mark: the resume was done, or not sent"
    )
    resolve.add_argument("name", help="the session's root id")
    resolve.add_argument("outcome", choices=["done", "not-sent"])
    resolve.add_argument("--run", dest="run_id", help="the run, when several marks are uncertain")
    resolve.add_argument("--attempt", type=int, help="the attempt, with --run")
    resolve.add_argument("--json", action="store_true", help="the mark as JSON")
    resolve.set_defaults(func=run_resolve)

    logs = commands.add_parser("logs", help="print a session's attempt log (the latest)")
    logs.add_argument("name", help="the session's root id")
    logs.add_argument("--attempt", type=int, help="this attempt's log (default: the latest)")
    logs.add_argument("--path", action="store_true", help="print the log's path only")
    logs.set_defaults(func=run_logs)


def run_cancel(args: argparse.Namespace) -> int:
    return _act(args, "cancel", lambda store: store.cancel(args.name), "cancelled")


def run_rm(args: argparse.Namespace) -> int:
    return _act(args, "rm", lambda store: store.delete(args.name), "deleted; its tombstone is kept")


def _act(args: argparse.Namespace, command: str, call: Callable[[Store], JSON], words: str) -> int:
    """One call of the store on session `args.name`: its answer as JSON (`--json`), or the
    session's name and what became of it."""
    if (bad := _invalid_name(command, args.name)) is not None:
        return bad

    def work(store: Store) -> int:
        answer = call(store)
        if args.json:
            print(json_printable(answer, indent=2))
        else:
            print(printable(f"{args.name}: {words}"))
        return Exit.OK

    return _with_store(command, datetime.now(UTC), work)


def run_resolve(args: argparse.Namespace) -> int:
    if (bad := _invalid_name("resolve", args.name)) is not None:
        return bad
    outcome = "not_sent" if args.outcome == "not-sent" else "done"

    def work(store: Store) -> int:
        mark = store.resolve(args.name, outcome, run_id=args.run_id, attempt=args.attempt)
        if args.json:
            print(json_printable(mark, indent=2))
        else:
            print(printable(f"{args.name}: the uncertain mark is now {mark.get('state')}"))
        return Exit.OK

    return _with_store("resolve", datetime.now(UTC), work)


def attempt_logs(name: str) -> list[tuple[int, str, Path]]:
    """The session's attempt logs as (attempt, run, path), oldest first."""
    folder = records.log_path(name, "r", 1).parent
    found = []
    for path in folder.glob("*-attempt-*.log") if folder.is_dir() else ():
        if match := _LOG.match(path.name):
            found.append((int(match["attempt"]), match["run"], path))
    return sorted(found)


def run_logs(args: argparse.Namespace) -> int:
    if (bad := _invalid_name("logs", args.name)) is not None:
        return bad
    logs = attempt_logs(args.name)
    if args.attempt is not None:
        logs = [entry for entry in logs if entry[0] == args.attempt]
    if not logs:
        which = f"attempt {args.attempt} of " if args.attempt is not None else ""
        print(printable(f"rewake logs: no log of {which}{args.name} in {records.state_dir()} "
                        "(logs are kept where `rewake run` ran)"), file=sys.stderr)  # fmt: skip
        return Exit.NOT_FOUND
    _attempt, _run, path = logs[-1]
    if args.path:
        print(path)
        return Exit.OK
    print(printable(f"==> {path} <=="), file=sys.stderr)
    sys.stdout.write(printable(path.read_text(encoding="utf-8", errors="replace"), newlines=True))
    return Exit.OK
