"""What `rewake ls`, `rewake show` and `rewake auto-resume` print.

Pure functions of the store's JSON (the API's bodies), the instant `now` and the zone times are
shown in: the command reads the clock once and passes it down, so a test pins every countdown.
Times are recomputed here rather than taken from the stored banner, whose countdown was written
against the store's clock and zone.

Everything here may quote a CLI's text, a host's report or a webhook host's answer: every line
and table cell becomes a `Text` through `cell`, which neutralizes control characters
(`rewake.printable`) and never reads Rich markup (a `[link=...]` in a report stays text).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rewake.instants import instant
from rewake.printable import printable
from rewake.reports.banners import banner_for, describe_wait, format_local
from rewake.reports.evidence import evidence_line
from rewake.reports.outcome_words import outcome_reason
from rewake.reports.refusal_words import REFUSALS
from rewake.reports.session_json import current_failure, shown_text
from rewake.runner.store import records
from rewake.runner.store.records import RecordError

JSON = dict[str, Any]
DASH = "—"
LIVE_STATES = ("armed", "claimed", "sending")
#: Lines of a failure's CLI output shown by `rewake show`, and the width each is cut to.
TAIL_LINES = 8
TAIL_WIDTH = 200


def cell(value: Any) -> Text:
    """A line or table cell: control characters shown as escapes, markup never read."""
    return Text(printable(value))


def when(value: Any, now: datetime, zone: tzinfo | None) -> str:
    """`17:40 CET, in 3 h 34 min` (a date when not today), or a dash."""
    moment = instant(value)
    if moment is None:
        return DASH
    return f"{format_local(moment, zone, now)}, {describe_wait(moment, now)}"


def at(value: Any, now: datetime, zone: tzinfo | None) -> str:
    """`17:40 CET` (a date when not today), without a countdown: for past events."""
    moment = instant(value)
    return format_local(moment, zone, now) if moment is not None else DASH


#: Codes whose detail from the store only restates the code (in the API's terms, such as
#: "send despite_native"): their words here say it all, so the detail is not repeated.
GENERIC_DETAIL = frozenset(
    {
        "attempt_already_resumed",
        "native_auto_continue",
        "session_cancelled",
        "recovery_in_progress",
        "conversation_not_saved",  # its detail names the API's field, not the CLI's flag
    }
)


def refusal_words(code: str, detail: str | None = None) -> str:
    """Why the store refused, in words; the store's detail is added when it says more (which
    of the reasons a code covers, the limit message's own words)."""
    known = REFUSALS.get(code)
    words = known.in_terminal() if known else code.replace("_", " ")
    if not detail or detail in words or (known and code in GENERIC_DETAIL):
        return words
    return f"{words} ({detail})"


# -- rewake ls -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LsRow:
    name: str
    provider: str
    state: str
    banner: str
    reset: str
    resume_due: str
    mark: str


def ls_row(summary: JSON, mark: JSON | None, now: datetime, zone: tzinfo | None) -> LsRow:
    """One session of the list (`summary` as GET /api/agent/runs gives it) with its mark."""
    failure = summary.get("failure") or {}
    banner = failure.get("banner") or {}
    if failure.get("reset_at"):
        reset = when(failure["reset_at"], now, zone)
    elif failure.get("failure_kind") == "provider_quota" and not _halted(banner):
        reset = str(banner.get("detail") or DASH)  # why there is none: not relative to now
    else:
        reset = DASH
    mark = mark or {}
    live = mark.get("state") in LIVE_STATES
    return LsRow(
        name=str(summary.get("root_id")),
        provider=str(failure.get("provider") or DASH),
        state=str(summary.get("state") or DASH),
        banner=str(banner.get("business") or DASH),
        reset=reset,
        resume_due=when(mark.get("due_at"), now, zone) if live else DASH,
        mark=mark_state_words(mark),
    )


def _halted(banner: JSON) -> bool:
    return banner.get("business") == "Stopped · halted"


def mark_state_words(mark: JSON | None) -> str:
    """`armed`, `cleared (manual_resume)`, `failed (exit_1)`, or `off` when there is none."""
    if not mark or not mark.get("state"):
        return "off"
    state = str(mark["state"])
    reason = mark.get("clear_reason") or (mark.get("outcome") if state != "done" else None)
    return f"{state} ({reason})" if reason and reason != state else state


def ls_table(rows: Iterable[LsRow]) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    # The name is what `rewake show` takes: never wrapped, so it can be copied whole.
    table.add_column("NAME", no_wrap=True)
    for title in ("PROVIDER", "STATE", "BANNER", "RESET", "RESUME DUE", "MARK"):
        table.add_column(title, overflow="fold")
    for row in rows:
        table.add_row(
            *map(cell, (row.name, row.provider, row.state, row.banner, row.reset,
                        row.resume_due, row.mark))
        )  # fmt: skip
    return table


#: Below this many columns the table's seven columns wrap into unreadable slivers (a Claude
#: root id alone is 43 characters), so each session becomes a block of lines instead.
TABLE_MIN_WIDTH = 120


def ls_lines(rows: Iterable[LsRow]) -> list[str]:
    """The narrow-terminal form of the list: the name alone on its line, then the rest."""
    lines: list[str] = []
    for row in rows:
        lines.append(row.name)
        lines.append(f"  {row.provider} · {row.state} · {row.banner} · mark {row.mark}")
        due = f" · resumes {row.resume_due}" if row.resume_due != DASH else ""
        if row.reset != DASH or due:
            lines.append(f"  reset {row.reset}{due}")
    return lines


def ls_renderable(rows: list[LsRow], width: int) -> RenderableType:
    if width >= TABLE_MIN_WIDTH:
        return ls_table(rows)
    return Group(*(cell(line) for line in ls_lines(rows)))


# -- rewake show ---------------------------------------------------------------------------


def banner_line(failure: JSON, now: datetime, zone: tzinfo | None) -> str:
    """`Paused · provider limit: resets 17:40 CET, in 3 h 34 min`, counted from `now`."""
    verdict = failure.get("verdict") or {}
    try:
        banner = banner_for(
            str(failure.get("failure_kind")),
            verdict,
            halted=bool(failure.get("halted")),
            reset_at=instant(verdict.get("reset_at")),
            now=now,
            display_zone=zone,
        ).to_json()
    except KeyError:  # a failure kind newer than this rewake: the stored banner will do
        banner = failure.get("banner") or {}
    return f"{banner.get('business', DASH)}: {banner.get('detail', DASH)}"


def mark_lines(mark: JSON | None, root_id: str, now: datetime, zone: tzinfo | None) -> list[str]:
    """The auto-resume state in words, with its warnings and how to change it."""
    mark = mark or {}
    state = mark.get("state")
    offer = mark.get("offer") or {}
    lines: list[str] = []
    if state in ("armed", "claimed"):
        lines.append(f"Auto-resume {state}: resumes {when(mark.get('due_at'), now, zone)}")
        lines.append(
            f"  armed by {mark.get('armed_by') or DASH} at {at(mark.get('armed_at'), now, zone)}"
            f", for the reset at {at(mark.get('reset_at'), now, zone)}"
        )
        if mark.get("outcome") == "deferred":
            lines.append(f"  waiting, nothing sent: {mark.get('outcome_detail') or DASH}")
    elif state == "sending":
        lines.append("Auto-resume sending: the resume is being delivered now")
    elif state:
        lines.append(f"Auto-resume {mark_state_words(mark)}" + _ended(mark, now, zone))
    else:
        lines.append("Auto-resume off")
    for warning in mark.get("warnings") or []:
        lines.append(f"  ! {warning}")
    if state not in LIVE_STATES:
        if offer.get("available"):
            lines.append(f"  can be turned on: rewake auto-resume {root_id} on")
        elif offer.get("code"):
            lines.append(f"  not offered: {refusal_words(offer['code'], offer.get('detail'))}")
    if state == "uncertain":
        lines.append(
            "  the resume may or may not have arrived; it is never sent again. Settle it with "
            f"POST /api/agent/runs/{root_id}/auto-resume/resolve"
        )
    return lines


def _ended(mark: JSON, now: datetime, zone: tzinfo | None) -> str:
    """How the mark ended: its outcome in words first, then when it was sent and what the far
    side said (the technical part)."""
    parts = []
    outcome = mark.get("outcome")
    if outcome != mark.get("state") and (words := outcome_reason(outcome)) is not None:
        parts.append(words)
    if mark.get("sent_at"):
        parts.append(f"sent at {at(mark['sent_at'], now, zone)}")
    if mark.get("outcome_detail"):
        parts.append(str(mark["outcome_detail"]))
    return ": " + "; ".join(parts) if parts else ""


def attempts_table(session: JSON, now: datetime, zone: tzinfo | None) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold", title_justify="left")
    for title in ("RUN", "ATTEMPT", "STATUS", "STARTED", "ENDED", "FAILURE"):
        table.add_column(title, overflow="fold")
    for run in session.get("runs") or []:
        for attempt in run.get("attempts") or []:
            failure = attempt.get("failure") or {}
            ended = attempt.get("failed_at") or attempt.get("completed_at")
            table.add_row(
                cell(run.get("run_id")),
                cell(attempt.get("attempt")),
                cell(attempt.get("status")),
                cell(at(attempt.get("started_at"), now, zone)),
                cell(at(ended, now, zone)),
                cell(failure.get("failure_kind") or DASH),
            )
    return table


def failure_lines(failure: JSON, now: datetime, zone: tzinfo | None) -> list[str]:
    """A failure's heading, banner, technical label and the tail of the CLI's text (or of
    what it reported through its events, when its text says nothing)."""
    observed = at(failure.get("observed_at"), now, zone)
    lines = [
        f"run {failure.get('run_id')} attempt {failure.get('attempt')} · observed {observed}"
        f" (zone {failure.get('zone') or 'unknown'})",
        f"  {banner_line(failure, now, zone)}",
        f"  {(failure.get('banner') or {}).get('technical', '')}",
    ]
    shown = shown_text(failure)
    tail = [line for line in shown.text.splitlines() if line.strip()][-TAIL_LINES:]
    # The line the verdict rests on stays in view, whatever the CLI printed after it.
    said = evidence_line(shown.text, (failure.get("verdict") or {}).get("evidence"))
    if said is not None and said.strip() and not any(said in line for line in tail):
        tail = [said.strip(), "…", *tail[-(TAIL_LINES - 2) :]]
    if shown.from_events:
        lines.append("  what the CLI reported (from its error events):")
    elif failure.get("truncated"):
        lines.append("  (the CLI text was cut to its last part when reported)")
    lines += [f"  │ {_cut(line)}" for line in tail]
    return lines


def _cut(line: str) -> str:
    return line if len(line) <= TAIL_WIDTH else line[: TAIL_WIDTH - 1] + "…"


def timeline_table(session: JSON, now: datetime, zone: tzinfo | None) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for title in ("AT", "EVENT", "ACTOR", "RUN", "ATTEMPT", "DETAIL"):
        table.add_column(title, overflow="fold")
    for entry in session.get("timeline") or []:
        detail = entry.get("detail")
        table.add_row(
            cell(at(entry.get("at"), now, zone)),
            cell(entry.get("event")),
            cell(entry.get("actor") or DASH),
            cell(entry.get("run_id") or DASH),
            cell(entry.get("attempt") if entry.get("attempt") is not None else DASH),
            cell(_detail(detail)),
        )
    return table


def _detail(detail: Any) -> str:
    """`key=value` pairs, leaving out the empty ones (no refusal, no warnings) to stay short."""
    if not detail:
        return ""
    if isinstance(detail, dict):
        return ", ".join(f"{k}={v}" for k, v in detail.items() if v not in (None, False, [], {}))
    return str(detail)


def summary_lines(session: JSON, now: datetime, zone: tzinfo | None) -> list[str]:
    """The session's name, state and current attempt, its banner and reset."""
    current = session.get("current") or {}
    lines = [
        f"{session.get('root_id')} · {session.get('state')}",
        f"  created {at(session.get('created_at'), now, zone)}"
        f" · updated {at(session.get('updated_at'), now, zone)}"
        + (
            f" · current run {current.get('run_id')}, attempt {current.get('attempt')}"
            if current
            else ""
        ),
    ]
    if session.get("cancelled_at"):
        lines.append(
            f"  cancelled by {session.get('cancelled_by')} at "
            f"{at(session['cancelled_at'], now, zone)}"
        )
    failure = current_failure(session)
    if failure is not None:
        lines.append(banner_line(failure, now, zone))
    return lines


def attempt_log(root_id: str, failure: JSON) -> Path | None:
    """The failed attempt's whole log, when `rewake run` kept it in this machine's state dir
    (the text shown above is only its tail)."""
    try:
        path = records.log_path(root_id, str(failure.get("run_id")), int(failure["attempt"]))
    except (RecordError, KeyError, TypeError, ValueError):
        return None
    return path if path.is_file() else None


def workflow_lines(root_id: str) -> list[str]:
    """What each resume of a Claude Code workflow was to replay (docs/workflows.md): per
    attempt and run, the prediction kept before it fired (from cache of in all, to run live)
    and, once the resumed run ended, how many agents ran live; none for another session."""
    try:
        record = records.load(root_id)
    except RecordError:
        return []
    kept = record.extra.get("workflow_predictions") if record is not None else None
    lines: list[str] = []
    for attempt, items in sorted((kept or {}).items(), key=lambda item: str(item[0]).zfill(9)):
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict):
                continue
            line = (
                f"  attempt {attempt}: {item.get('run_id')} replays {item.get('cached')} of "
                f"{item.get('total')} agents from cache, {item.get('live')} to run live"
            )
            if item.get("ran_live") is not None:
                line += f"; {item['ran_live']} ran live"
            lines.append(line)
    return lines


def show_view(session: JSON, now: datetime, zone: tzinfo | None) -> RenderableType:
    """Everything `rewake show` prints, as one renderable."""
    root_id = str(session.get("root_id"))
    failures = [
        attempt["failure"]
        for run in session.get("runs") or []
        for attempt in run.get("attempts") or []
        if isinstance(attempt.get("failure"), dict)
    ]
    parts: list[RenderableType] = [cell(line) for line in summary_lines(session, now, zone)]
    parts += [cell(line) for line in mark_lines(session.get("mark"), root_id, now, zone)]
    parts += [Text(""), Text("Attempts", style="bold"), attempts_table(session, now, zone)]
    if replays := workflow_lines(root_id):
        parts += [Text(""), Text("Workflow resumes", style="bold")]
        parts += [cell(line) for line in replays]
    if failures:
        parts += [Text(""), Text("Failures", style="bold")]
        for failure in failures:
            parts += [cell(line) for line in failure_lines(failure, now, zone)]
            if (log := attempt_log(root_id, failure)) is not None:
                parts.append(cell(f"  full log: {log} (rewake logs {root_id})"))
    parts += [Text(""), Text("Timeline", style="bold"), timeline_table(session, now, zone)]
    return Group(*parts)
