"""The next 24 hours as one picture: per account, every pending reset and every armed or
claimed resume on a time axis from now, so a person sees when their fleet comes back.

Pure: the sessions' summaries and marks (what the list page already loaded) and the request's
`now` come in; positions come out as numbers for an SVG the template draws, with the same
events as a list for screen readers and for a browser that shows no SVG.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from rewake.context import JSON, iso
from rewake.instants import parse_instant

WINDOW = timedelta(hours=24)
#: The SVG's user units: the account names' column, the axis, one lane's height.
WIDTH, LABEL_W, RIGHT_PAD, TOP, LANE_H, LABEL_ROW_H = 760, 150, 20, 28, 30, 14
AXIS_W = WIDTH - LABEL_W - RIGHT_PAD
#: Roughly how wide a character of a marker's label is (11 px system-ui), to keep labels apart.
CHAR_W = 6.2
TICK_HOURS = 3

EventKind = Literal["reset", "resume"]


@dataclass(frozen=True, slots=True)
class Event:
    """One marker: a reset (a paused session's reset_at) or a resume (a live mark's due_at)."""

    kind: EventKind
    at: str
    root_id: str
    x: float
    label_x: float
    label_row: int = 0
    overdue: bool = False
    labelled: bool = True

    @property
    def words(self) -> str:
        if self.kind == "reset":
            return "limit resets"
        return "resume overdue, due now" if self.overdue else "auto-resume"


@dataclass(frozen=True, slots=True)
class Lane:
    """One account's row: its events in time order, its height and where its axis runs."""

    account: str
    events: tuple[Event, ...]
    y: float
    height: float


@dataclass(frozen=True, slots=True)
class Tick:
    x: float
    at: str


@dataclass(frozen=True, slots=True)
class Fleet:
    """The picture: lanes (accounts with something in the window), ticks, and what lies
    beyond the window (counted, not drawn)."""

    start: str
    end: str
    lanes: tuple[Lane, ...]
    ticks: tuple[Tick, ...]
    height: float
    later: int

    @property
    def events(self) -> int:
        return sum(len(lane.events) for lane in self.lanes)


def account_of(summary: JSON, mark: JSON) -> str:
    """The account a session counts against: the mark's or the failure's account_key, else
    the provider (accounts are per provider), else "no account"."""
    failure = summary.get("failure") or {}
    return str(
        mark.get("account_key")
        or failure.get("account_key")
        or failure.get("provider")
        or "no account"
    )


def fleet(sessions: Iterable[tuple[JSON, JSON]], now: datetime) -> Fleet:
    """The next 24 hours from `now` for these (summary, mark) pairs."""
    end = now + WINDOW
    found: dict[str, list[tuple[datetime, EventKind, str, bool]]] = {}
    later = 0
    for summary, mark in sessions:
        root_id, account = str(summary["root_id"]), account_of(summary, mark)
        failure = summary.get("failure") or {}
        reset = failure.get("reset_at") if summary.get("state") == "paused" else None
        if reset and parse_instant(reset) > now:
            at = parse_instant(reset)
            if at <= end:
                found.setdefault(account, []).append((at, "reset", root_id, False))
            else:
                later += 1
        if mark.get("state") in ("armed", "claimed") and mark.get("due_at"):
            due = parse_instant(mark["due_at"])
            if due <= end:
                found.setdefault(account, []).append((max(due, now), "resume", root_id, due < now))
            else:
                later += 1
    lanes, y = [], float(TOP)
    for account in sorted(found):
        events = _placed(sorted(found[account]), now)
        rows = 1 + max(event.label_row for event in events)
        height = LANE_H + rows * LABEL_ROW_H
        lanes.append(Lane(account, tuple(events), y, height))
        y += height
    return Fleet(iso(now) or "", iso(end) or "", tuple(lanes), _ticks(now), y + 4, later)


def x_of(at: datetime, now: datetime) -> float:
    """Where `at` sits on the axis, in the SVG's units."""
    share = (at - now) / WINDOW
    return round(LABEL_W + AXIS_W * min(1.0, max(0.0, share)), 1)


def _placed(events: list[tuple[datetime, EventKind, str, bool]], now: datetime) -> list[Event]:
    """Events with their x, each session named once, each name in the first row where it does
    not run into another."""
    row_ends: list[float] = []
    placed, named = [], set()
    for at, kind, root_id, overdue in events:
        x = x_of(at, now)
        if root_id in named:
            placed.append(Event(kind, iso(at) or "", root_id, x, x, 0, overdue, labelled=False))
            continue
        named.add(root_id)
        width = CHAR_W * len(root_id) + 8
        start = min(x, WIDTH - width)
        row = next((i for i, ends in enumerate(row_ends) if ends <= start), len(row_ends))
        if row == len(row_ends):
            row_ends.append(0.0)
        row_ends[row] = start + width
        placed.append(Event(kind, iso(at) or "", root_id, x, start, row, overdue))
    return placed


def _ticks(now: datetime) -> tuple[Tick, ...]:
    """A tick every TICK_HOURS whole hours (UTC) within the window."""
    first = now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    ticks, at = [], first
    while at < now + WINDOW:
        if at.hour % TICK_HOURS == 0:
            ticks.append(Tick(x_of(at, now), iso(at) or ""))
        at += timedelta(hours=1)
    return tuple(ticks)
