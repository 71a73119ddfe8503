"""`rewake ls`, `rewake show`, `rewake auto-resume` and `rewake doctor`: what rewake knows of
the sessions, and whether what it needs is in place.

Registered from app/cli.py; like the other commands they import the store, rich and the domain
only inside the functions that run them, once they know they need them: `rewake --help` builds
this parser (tests/unit/test_cli_budget.py holds each command to its imports). Each command
reads the clock once and passes `now` down.

Exit statuses:
  0  done
  1  `rewake doctor` found something rewake needs missing or broken
  2  bad usage (argparse, or a NAME that is not a valid session id)
  3  the store refused by its rules (409: e.g. auto-resume not offered for this failure)
  4  no such session (unknown or deleted)
  5  the store could not be used (unreachable service, bad configuration, unauthorized, ...)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, tzinfo
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from rewake.exits import Exit
from rewake.printable import json_printable, printable
from rewake.runner.store import records
from rewake.runner.store.base import Store, StoreError, check_id, no_local_database

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

NOT_FOUND_CODES = frozenset({"session_not_found", "session_deleted"})


def register(commands: Any) -> None:
    ls = commands.add_parser("ls", help="list sessions: state, reset, resume due, mark")
    ls.add_argument("--state", choices=["running", "paused", "finished", "cancelled"])
    ls.add_argument("--provider", choices=["claude", "codex", "gemini"])
    ls.add_argument("--limit", type=int, default=50, choices=range(1, 201), metavar="1..200")
    ls.add_argument("--json", action="store_true", help="the sessions with their marks, as JSON")
    ls.add_argument(
        "--watch", nargs="?", const=2.0, type=float, metavar="SECONDS",
        help="keep the list on screen, refreshed in place every SECONDS (default 2); Ctrl-C ends",
    )  # fmt: skip
    ls.set_defaults(func=run_ls)

    show = commands.add_parser("show", help="one session: banner, countdowns, mark, timeline")
    show.add_argument("name", help="the session's root id (as `rewake ls` shows it)")
    show.add_argument("--json", action="store_true", help="the session as the API returns it")
    show.set_defaults(func=run_show)

    resume = commands.add_parser(
        "auto-resume", help="turn auto-resume on or off for a session paused on a limit"
    )
    resume.add_argument("name", help="the session's root id")
    resume.add_argument("switch", choices=["on", "off"])
    resume.add_argument(
        "--despite-native",
        action="store_true",
        help="arm even though the CLI says it continues by itself",
    )
    resume.add_argument(
        "--fresh-if-missing",
        action="store_true",
        help="if the conversation is gone at resume time, start a fresh one in its directory",
    )
    resume.add_argument(
        "--anyway",
        action="store_true",
        help="arm even when no sweeper that resumes runs on this database (it fires once one does)",
    )
    resume.add_argument("--json", action="store_true", help="print the mark as JSON")
    resume.set_defaults(func=run_auto_resume)

    doctor = commands.add_parser(
        "doctor", help="check the CLIs' flags, the store, the sweeper and the state dir"
    )
    doctor.set_defaults(func=run_doctor_command)


def display_zone() -> tzinfo | None:
    """REWAKE_DISPLAY_ZONE when it names a zone, else the terminal's local zone (None)."""

    name = os.environ.get("REWAKE_DISPLAY_ZONE")
    if name:
        try:
            return ZoneInfo(name)
        except (ValueError, KeyError, OSError):
            print(f"rewake: REWAKE_DISPLAY_ZONE {name!r} is no zone; local time", file=sys.stderr)
    return None


def _store_failure(command: str, error: Exception) -> int:
    """One line for a store that refused or failed; the exit status that says which."""

    if not isinstance(error, StoreError):
        print(printable(f"rewake {command}: the store failed: {type(error).__name__}: {error}"),
              file=sys.stderr)  # fmt: skip
        return Exit.STORE
    # A service's answer: its words are shown, never obeyed by the terminal.
    print(printable(f"rewake {command}: {error.code}: {error.detail}"), file=sys.stderr)
    if error.code in NOT_FOUND_CODES:
        return Exit.NOT_FOUND
    if error.code == "invalid_request":
        return Exit.USAGE
    return Exit.REFUSED if error.status == 409 else Exit.STORE


def _with_store(command: str, now: datetime, work: Callable[[Store], int]) -> int:
    """Open the store, run `work`, close it; any store problem is one line and a status. A
    local store answers every call as of `now`, the command's one reading of the clock."""

    from rewake.runner.store.stores import open_store

    try:
        store = open_store(clock=lambda: now)
    except Exception as error:  # a bad URL or database: one line, no traceback
        return _store_failure(command, error)
    try:
        return work(store)
    except Exception as error:  # only the store's own failures are caught below
        if isinstance(error, StoreError) or _is_database_error(error):
            return _store_failure(command, error)
        raise
    finally:
        store.close()


def _is_database_error(error: Exception) -> bool:
    from sqlalchemy.exc import SQLAlchemyError  # a local store is open: it is loaded already

    return isinstance(error, SQLAlchemyError | OSError)


def run_ls(args: argparse.Namespace) -> int:
    if getattr(args, "watch", None) is not None:
        return watch_ls(args)
    now, zone = datetime.now(UTC), display_zone()
    filters = {k: v for k in ("state", "provider") if (v := getattr(args, k))}
    if no_local_database(os.environ):
        # Nothing was ever recorded here: the list is empty, and opening the store would
        # create and migrate a database only to say so.
        return _print_listing([], None, filters, now, zone, as_json=args.json)

    def work(store: Store) -> int:
        listing = store.list_sessions(limit=args.limit, **filters)
        sessions = []
        # The list's items carry no mark (GET /api/agent/runs), so each row costs one more
        # call: at most --limit of them.
        for summary in listing.get("sessions", [])[: args.limit]:
            try:
                mark = store.get_mark(summary["root_id"])
            except StoreError:
                mark = None  # deleted between the two calls
            sessions.append({**summary, "mark": mark})
        next_offset = listing.get("next_offset")
        return _print_listing(sessions, next_offset, filters, now, zone, as_json=args.json)

    return _with_store("ls", now, work)


def _print_listing(
    sessions: list[dict[str, Any]],
    next_offset: Any,
    filters: dict[str, str],
    now: datetime,
    zone: tzinfo | None,
    *,
    as_json: bool,
) -> int:
    if as_json:
        print(json_printable({"sessions": sessions, "next_offset": next_offset}, indent=2))
        return Exit.OK
    if not sessions:
        print("no sessions" + (f" ({_words(filters)})" if filters else ""))
        return Exit.OK
    from rich.console import Console

    from rewake.runner.commands import status_text as views

    rows = [views.ls_row(s, s["mark"], now, zone) for s in sessions]
    console = Console(highlight=False)
    console.print(views.ls_renderable(rows, console.width))
    return Exit.OK


def _words(filters: dict[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in filters.items())


def run_show(args: argparse.Namespace) -> int:
    now, zone = datetime.now(UTC), display_zone()
    if (bad := _invalid_name("show", args.name)) is not None:
        return bad

    def work(store: Store) -> int:
        from rich.console import Console

        from rewake.runner.commands import status_text as views

        session = store.get_session(args.name)
        if args.json:
            print(json_printable(session, indent=2))
        else:
            Console(highlight=False).print(views.show_view(session, now, zone))
        return Exit.OK

    return _with_store("show", now, work)


#: What `auto-resume on` prints when no sweeper that resumes runs on the local database.
NO_SWEEPER_FIX = (
    "Start one as a user service with `rewake setup` (once), then run this again; or arm it "
    "now with `rewake auto-resume {name} on --anyway` and it fires when a sweeper runs."
)


def run_auto_resume(args: argparse.Namespace) -> int:
    now, zone = datetime.now(UTC), display_zone()
    enabled = args.switch == "on"
    if (bad := _invalid_name("auto-resume", args.name)) is not None:
        return bad

    def work(store: Store) -> int:
        from rewake.runner.commands import status_text as views

        record = records.load(args.name) if enabled and not args.fresh_if_missing else None
        if record is not None and (empty := records.nothing_saved(record)) is not None:
            # The resume would fail at the reset ("No previous sessions found"): say so now.
            print(printable(f"rewake auto-resume: not armed: {empty}."), file=sys.stderr)
            print(f"Arm the fresh start instead: rewake auto-resume {args.name} on "
                  "--fresh-if-missing", file=sys.stderr)  # fmt: skip
            return Exit.REFUSED
        unfired = store.sweepers_warnings() if enabled and not args.anyway else []
        if unfired and _would_arm(store.get_mark(args.name), despite_native=args.despite_native,
                                  fresh=args.fresh_if_missing):  # fmt: skip
            # Arming would say "on" and nothing would ever resume it: say so, and the fix.
            print(printable(f"rewake auto-resume: not armed: {'; '.join(unfired)}, so nothing "
                            f"would resume {args.name}."), file=sys.stderr)  # fmt: skip
            print(NO_SWEEPER_FIX.format(name=args.name), file=sys.stderr)
            return Exit.REFUSED
        try:
            mark = store.set_auto_resume(
                args.name, enabled=enabled, despite_native=args.despite_native,
                fresh_if_missing=enabled and args.fresh_if_missing,
            )  # fmt: skip
        except StoreError as error:
            if error.status != 409:
                raise
            words = views.refusal_words(error.code, error.detail)
            print(printable(f"rewake auto-resume: refused ({error.code}): {words}"),
                  file=sys.stderr)  # fmt: skip
            return Exit.REFUSED
        asked = args.fresh_if_missing or not enabled
        if asked and (said := _set_fresh_if_missing(args.name, enabled)) is not None:
            print(printable(said))
        if args.json:
            print(json_printable(mark, indent=2))
        else:
            for line in views.mark_lines(mark, args.name, now, zone):
                print(printable(line))
        return Exit.OK

    return _with_store("auto-resume", now, work)


def _would_arm(mark: Mapping[str, Any], *, despite_native: bool, fresh: bool = False) -> bool:
    """Whether `auto-resume on` would arm a new mark: the offer stands (or only the CLI's own
    continuation stands in its way, and --despite-native was given, or only the missing saved
    conversation, and --fresh-if-missing was) and no mark is live. A refusal is left to the
    store, which says why in its own words."""
    offer = mark.get("offer") or {}
    code = offer.get("code")
    stands = (
        offer.get("available")
        or (despite_native and code == "native_auto_continue")
        or (fresh and code == "conversation_not_saved")
    )
    return bool(stands) and not mark.get("enabled")


def _invalid_name(command: str, name: str) -> int | None:
    """Bad usage (exit 2, with the reason) when NAME cannot be a session's root id at all."""

    try:
        check_id(name, "NAME")
    except StoreError as error:
        print(printable(f"rewake {command}: {error.code}: {error.detail}"), file=sys.stderr)
        return Exit.USAGE
    return None


def _set_fresh_if_missing(root_id: str, enabled: bool) -> str | None:
    """Arm a fresh start for a missing conversation (on), or disarm it (off): turning
    auto-resume off must not leave a fresh start waiting for a later arming."""
    record = records.load(root_id)
    if not enabled:
        if record is None or not record.fresh_if_missing:
            return None
        record.fresh_if_missing = False
        records.save(record)
        return "--fresh-if-missing: cleared (a missing conversation will not be started fresh)"
    if record is None:
        return (
            f"--fresh-if-missing: no local record for {root_id} in {records.state_dir()}; "
            "the flag is for sessions rewake run or rewake hook started on this machine"
        )
    record.fresh_if_missing = True
    records.save(record)
    return f"--fresh-if-missing: a missing conversation will be started fresh in {record.cwd}"


def run_doctor_command(args: argparse.Namespace) -> int:
    from rewake.runner.setup.doctor import run_doctor

    lines, status = run_doctor(os.environ, datetime.now(UTC))
    for line in lines:
        print(printable(line))  # a CLI's --version output among them
    return status


def listing(store: Store, args: argparse.Namespace, now: datetime, width: int) -> RenderableType:
    """What `rewake ls` prints, as one renderable (the sessions with their marks)."""
    from rich.text import Text

    from rewake.runner.commands import status_text as views

    filters = {k: v for k in ("state", "provider") if (v := getattr(args, k))}
    summaries = store.list_sessions(limit=args.limit, **filters).get("sessions", [])
    rows = []
    for summary in summaries[: args.limit]:
        try:
            mark = store.get_mark(summary["root_id"])
        except StoreError:
            mark = None  # deleted between the two calls
        rows.append(views.ls_row(summary, mark, now, display_zone()))
    if not rows:
        return Text("no sessions")
    return views.ls_renderable(rows, width)


def watch_ls(
    args: argparse.Namespace,
    *,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    sleep: Callable[[float], None] = time.sleep,
    console: Console | None = None,
    turns: int | None = None,
) -> int:
    """`rewake ls --watch`: the list redrawn in place (rich's Live) every `args.watch` seconds
    with the time it was read, until Ctrl-C. Only on a terminal: piped, it says so (exit 2)."""
    # rich is loaded here, as by ls itself: the hook, which shares this module, never needs it.
    from rich.console import Console, Group
    from rich.live import Live
    from rich.text import Text

    console = console or Console(highlight=False)
    if not console.is_terminal:
        print("rewake ls: --watch needs a terminal; without it, ls prints the list once",
              file=sys.stderr)  # fmt: skip
        return Exit.USAGE
    interval = max(0.5, float(args.watch))

    def work(store: Store) -> int:
        with Live(console=console, auto_refresh=False, transient=False) as live:
            done = 0
            try:
                while turns is None or done < turns:
                    now = clock()
                    heading = Text(f"rewake ls · {now.astimezone().strftime('%H:%M:%S')} · "
                                   f"every {interval:g} s · Ctrl-C ends", style="dim")  # fmt: skip
                    live.update(Group(heading, listing(store, args, now, console.width)),
                                refresh=True)  # fmt: skip
                    done += 1
                    if turns is None or done < turns:
                        sleep(interval)
            except KeyboardInterrupt:
                pass
        return Exit.OK

    return _with_store("ls", clock(), work)
