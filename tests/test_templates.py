"""Every message template read out of a released CLI, rendered with drawn resets, is read right.

The templates and the formatter fields come from `tests/corpus/templates/*.json`, which
`tools/extract_templates.py` writes from the shipped packages. Each case renders one template
as one version of its CLI prints it (the formatter fields of that version decide the time
text), with resets drawn from minutes to the scope's window ahead (23 h 50 min to 24 h 05 min
included, where Claude starts printing a date), in zones with half- and quarter-hour offsets,
then parses it with the observed_at and zone it was printed under.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from rewake.parsers import parse
from tests.support.render import (
    HOST_ZONES,
    MONTHS,
    en_us_short_zone_name,
    local,
    ordinal_suffix,
    twelve_hour,
)

TEMPLATES = Path(__file__).parent / "corpus" / "templates"
DRAWS = 24

#: Claude prints the TZ value as given; the legacy IANA names are in the database too.
CLAUDE_ZONES = (*HOST_ZONES, "Japan", "EST5EDT", "CET")
CODEX_LIMIT_NAMES = ("GPT-5.3-Codex-Spark", "gpt-5.5-mini")
GEMINI_MODELS = ("gemini-3.8-flash", "gemini-2.5-pro", "all Pro models")
ADMIN_URLS = ("https://claude.ai/admin-settings/usage", "claude.ai/settings/usage")


@dataclass(frozen=True)
class Case:
    cli: str
    version: str
    template: Mapping[str, Any]
    formatter: Mapping[str, Any] | None

    @property
    def id(self) -> str:
        return f"{self.cli}-{self.template['id']}@{self.version}"


def load_cases() -> list[Case]:
    cases = []
    for path in sorted(TEMPLATES.glob("*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        for template in document["templates"]:
            for version in template["versions"]:
                formatter = next(
                    (
                        f
                        for f in document["formatters"]
                        if f["name"] == template["formatter"] and version in f["versions"]
                    ),
                    None,
                )
                cases.append(Case(document["cli"], version, template, formatter))
    return cases


CASES = load_cases()


# --------------------------------------------------------------------------- rendering


def claude_time(fields: Mapping[str, Any], reset: datetime, zone: str, now: datetime) -> str:
    """Claude's reset formatter, driven by the fields read from that version's code."""
    wall = local(reset, zone)
    meridiem = "am" if wall.hour < 12 else "pm"
    if fields["ampm"] != "lower":
        meridiem = f" {meridiem.upper()}"
    minute = "" if fields["minute_dropped_at_zero"] and wall.minute == 0 else f":{wall.minute:02d}"
    clock = f"{twelve_hour(wall.hour)}{minute}{meridiem}"
    threshold = fields["date_when_hours_ahead_over"]
    text = clock
    if threshold is not None and (reset - now) / timedelta(hours=1) > threshold:
        year = ""
        if fields["year_when_not_this_year"] and wall.year != local(now, zone).year:
            year = f", {wall.year}"
        text = f"{MONTHS[wall.month - 1]} {wall.day}{year}, {clock}"
    if fields["zone"] == "(TZ)":
        text += f" ({zone})"
    return text


def codex_time(fields: Mapping[str, Any], reset: datetime, zone: str, now: datetime) -> str:
    """Codex's `format_retry_timestamp` in the host's zone: the date only off today."""
    wall = local(reset, zone)
    clock = f"{twelve_hour(wall.hour)}:{wall.minute:02d} {'AM' if wall.hour < 12 else 'PM'}"
    if wall.date() == local(now, zone).date():
        return clock
    assert fields["other_date"] == "%b %-d{ordinal}, %Y %-I:%M %p"
    return f"{MONTHS[wall.month - 1]} {wall.day}{ordinal_suffix(wall.day)}, {wall.year} {clock}"


def gemini_time(fields: Mapping[str, Any], reset: datetime, zone: str, now: datetime) -> str:
    """Gemini's `Intl.DateTimeFormat('en-US', {hour, minute: '2-digit', timeZoneName})`."""
    assert fields["options"] == 'hour:"numeric",minute:"2-digit",timeZoneName:"short"'
    wall = local(reset, zone)
    meridiem = "AM" if wall.hour < 12 else "PM"
    name = en_us_short_zone_name(reset, zone)
    return f"{twelve_hour(wall.hour)}:{wall.minute:02d} {meridiem} {name}"


TIME_FORMATTERS = {
    "claude_reset": claude_time,
    "claude_continue": claude_time,
    "codex_retry": codex_time,
    "gemini_reset": gemini_time,
}


@dataclass(frozen=True)
class Drawn:
    text: str
    observed_at: datetime
    zone: str
    #: the instant the limit really resets, when the text states one
    truth: datetime | None
    #: the same text also names another instant in the window, printed alike (a day that DST
    #: shortens), so no reading can be trusted: the parser must refuse (day_ambiguous)
    twin: datetime | None = None


def leads(rng: random.Random, window_s: int) -> float:
    """A lead time in seconds: minutes, hours, around 24 h, or days ahead, within the window."""
    bands = [(60.0, 3600.0), (3600.0, min(window_s, 5 * 3600.0))]
    if window_s >= 24 * 3600 + 300:
        bands.append((23 * 3600 + 50 * 60.0, 24 * 3600 + 5 * 60.0))
        bands.append((24 * 3600.0, float(window_s)))
    low, high = rng.choice(bands)
    lead = rng.uniform(low, min(high, window_s))
    if 24 * 3600 - 60 < lead <= 24 * 3600:
        # Printed at h:mm:ss, a reset at h:mm on the next day reads exactly as one seconds
        # ahead, which rule 3a takes (no text tells them apart): not a case a reader can get.
        lead -= 60
    return lead


def draw(case: Case, rng: random.Random) -> Drawn:
    """One rendering of the case's template with drawn values, as its CLI would print it."""
    template = case.template
    zones = CLAUDE_ZONES if case.cli == "claude" else HOST_ZONES
    zone = rng.choice(zones)
    # Some draws sit in the last days of a year, where Claude adds the year to a date.
    start = (
        datetime(2026, 12, 24, tzinfo=UTC)
        if rng.random() < 0.2
        else datetime(2026, 1, 1, tzinfo=UTC)
    )
    now = start + timedelta(seconds=rng.uniform(0, 7 * 86400 if start.month == 12 else 360 * 86400))
    now = now.replace(microsecond=0)
    text: str = template["template"]
    truth = twin = None
    formatter = template["formatter"]
    if formatter in TIME_FORMATTERS:
        assert case.formatter is not None, "no formatter fields for this version"
        truth = now + timedelta(seconds=leads(rng, template["window_s"]))
        printed = TIME_FORMATTERS[formatter](case.formatter, truth, zone, now)
        text = text.replace("{reset}", printed).replace("{time}", printed)
        if case.cli == "claude":
            twin = twin_printed_alike(case, truth, zone, now, printed)
    elif formatter == "gemini_delay":
        delay = rng.uniform(301, template["window_s"])
        decimals = rng.choice((0, 1, 6, 9))
        rendered = f"{delay:.{decimals}f}"
        truth = now + timedelta(seconds=float(rendered))
        text = text.replace("{delay}", f"{rendered}s")
    text = text.replace("{limit_name}", rng.choice(CODEX_LIMIT_NAMES))
    text = text.replace("{url}", rng.choice(ADMIN_URLS)).replace(
        "{model}", rng.choice(GEMINI_MODELS)
    )
    assert "{" not in text, f"unrendered placeholder in {text!r}"
    return Drawn(text=text, observed_at=now, zone=zone, truth=truth, twin=twin)


def twin_printed_alike(case: Case, truth: datetime, zone: str, now: datetime,
                       printed: str) -> datetime | None:  # fmt: skip
    """An instant in the printed minute a day before or after `truth`'s that is still ahead of
    `now`, in the template's window, and that the CLI would print exactly as `printed` (Claude
    drops the date under 24 h ahead: on a day that DST shortens, both days' are; and a reset
    printed at 24 h ahead to the second has a twin seconds earlier in its minute). A minute
    already under way the day before is no twin: rule 3a reads the later day then."""
    fields, format_time = case.formatter, TIME_FORMATTERS[case.template["formatter"]]
    assert fields is not None
    minute = local(truth, zone).replace(tzinfo=None, second=0, microsecond=0)
    for days, seconds in ((-1, (0,)), (1, (0, 59))):
        for second in seconds:
            other = minute + timedelta(days=days, seconds=second)
            instant = other.replace(tzinfo=ZoneInfo(zone)).astimezone(UTC)
            if local(instant, zone).replace(tzinfo=None) != other:
                continue  # the zone skips that wall time that day: it cannot be printed
            ahead = (instant - now).total_seconds()
            in_window = 0 < ahead <= case.template["window_s"]
            if in_window and format_time(fields, instant, zone, now) == printed:
                return instant
    return None


def draws(case: Case) -> Iterator[Drawn]:
    rng = random.Random(case.id)
    for _ in range(DRAWS):
        yield draw(case, rng)


# --------------------------------------------------------------------------- the test


def misreading(case: Case, drawn: Drawn) -> str | None:
    """Why the parser's reading of one rendering is wrong, or None when it is right."""
    template = case.template
    verdict = parse(drawn.text, observed_at=drawn.observed_at, zone=drawn.zone, provider=case.cli)
    if verdict.kind != template["kind"]:
        return f"kind {verdict.kind}, expected {template['kind']}"
    if drawn.twin is not None:
        refusal = verdict.refusal.code if verdict.refusal else None
        if verdict.reset_at is not None or refusal != "day_ambiguous":
            return (
                f"read {verdict.reset_at} (refusal {refusal}) where {drawn.truth} and "
                f"{drawn.twin} are printed alike: expected day_ambiguous"
            )
    elif drawn.truth is not None:
        if verdict.reset_at is None:
            refusal = verdict.refusal.code if verdict.refusal else None
            return f"no reset (refusal {refusal}), truth {drawn.truth.isoformat()}"
        latest = verdict.reset_at + timedelta(seconds=verdict.resolution_s or 0)
        if not verdict.reset_at <= drawn.truth <= latest:
            return (
                f"reset {verdict.reset_at.isoformat()} +{verdict.resolution_s}s, "
                f"truth {drawn.truth.isoformat()}"
            )
    elif template["refusal"] is not None:
        refusal = verdict.refusal.code if verdict.refusal else None
        if verdict.reset_at is not None or refusal != template["refusal"]:
            return f"refusal {refusal} / reset {verdict.reset_at}, expected {template['refusal']}"
    if template["native_auto_continue"] and not verdict.native_auto_continue:
        return "native_auto_continue false"
    if template["login_command"] and verdict.login_command != template["login_command"]:
        return f"login_command {verdict.login_command!r}"
    return None


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_template_is_read_right(case: Case) -> None:
    """A CLI template rendered with drawn resets and zones reads as its kind, reset or refusal."""
    wrong = []
    for drawn in draws(case):
        why = misreading(case, drawn)
        if why is not None:
            wrong.append(
                f"{drawn.text!r} at {drawn.observed_at.isoformat()} in {drawn.zone}: {why}"
            )
    assert not wrong, f"{len(wrong)} of {DRAWS} misread; first: " + "; ".join(wrong[:2])
