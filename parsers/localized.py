"""Dates the Codex App formats with the operating system's locale.

    10 de jul. de 2026, 11:52          pt-BR
    26 may 2026, 2:40 p.m.             es
    2026. 9. 13. 오전 10:36             ko (오전 a.m., 오후 p.m.)
    9월 13일 오전 10:36                  ko, without a year
    2026年8月7日 21:15                   ja, zh (午前/上午 a.m., 午後/下午 p.m.)
    2026/08/07 21:15, 07.08.2026, 21:15  ja, de (24-hour numeric dates)

The grammar finds the phrase; the pt-BR, es and ko month words are read from a table, and a
phrase in another locale goes to dateparser with a fixed base date (the clock is never read).
"""

from __future__ import annotations

import re
from datetime import datetime

from rewake.parsers import clock
from rewake.parsers.findings import Observation
from rewake.parsers.timeres import Resolved
from rewake.parsers.verdict import Provider, Refusal
from rewake.parsers.zones import ZoneError, host_zone

#: pt-BR "10 de jul. de 2026, 11:52" and es "26 may 2026, 2:40 p.m."; fr "7 août 2026 à 21:15",
#: de "7. Aug. 2026, 21:15" (their month words go to dateparser).
ROMANCE_DATE = re.compile(
    r"(?P<phrase>(?P<day>\d{1,2})\.?\s{1,2}(?:de\s{1,2})?(?P<month>[A-Za-zçéûäö]{3,10})\.?\s{1,2}"
    r"(?:de\s{1,2})?(?P<year>\d{4}),?\s{1,2}(?:(?:à|às|a\s+las|alle|um|om)\s{1,2})?"
    r"(?P<hour>\d{1,2}):(?P<minute>\d{2})"
    r"(?:\s{0,2}(?P<meridiem>[ap])\.\s?m\.)?)"
)
#: ko "2026. 9. 13. 오전 10:36" and "9월 13일 오전 10:36" (오전 is a.m., 오후 p.m.).
KO_DATE = re.compile(
    r"(?P<phrase>(?:(?P<year>\d{4})\.\s{0,2}(?P<month>\d{1,2})\.\s{0,2}(?P<day>\d{1,2})\."
    r"|(?P<month_word>\d{1,2})월\s{0,2}(?P<day_word>\d{1,2})일)"
    r"\s{0,2}(?P<meridiem>오전|오후)\s{0,2}(?P<hour>\d{1,2}):(?P<minute>\d{2}))"
)
#: ru "27 июл. 2026 г., 12:22".
RU_DATE = re.compile(
    r"(?P<phrase>(?P<day>\d{1,2})\s{1,2}(?P<month>[а-я]{3,8})\.?\s{1,2}(?P<year>\d{4})"
    r"\s{0,2}г\.?,?\s{1,2}(?P<hour>\d{1,2}):(?P<minute>\d{2}))"
)
#: ja and zh "2026年8月7日 21:15", "8月7日(金) 午後9:15" (午前/上午 a.m., 午後/下午 p.m.).
CJK_DATE = re.compile(
    r"(?P<phrase>(?:(?P<year>\d{4})\s{0,2}年\s{0,2})?(?P<month>\d{1,2})\s{0,2}月\s{0,2}"
    r"(?P<day>\d{1,2})\s{0,2}日(?:\s{0,2}[(（][^)）\n]{1,4}[)）])?\s{0,2}"
    r"(?P<meridiem>午前|午後|上午|下午)?\s{0,2}(?P<hour>\d{1,2})\s{0,1}[:：時]\s{0,1}(?P<minute>\d{2}))"
)
#: ja "2026/08/07 21:15" and de "07.08.2026, 21:15": numeric dates of 24-hour locales.
NUMERIC_DATE = re.compile(
    r"(?P<phrase>(?:(?P<year>\d{4})/(?P<month>\d{1,2})/(?P<day>\d{1,2})"
    r"|(?P<day_dot>\d{1,2})\.(?P<month_dot>\d{1,2})\.(?P<year_dot>\d{4}))"
    r",?\s{1,2}(?P<hour>\d{1,2}):(?P<minute>\d{2})(?![\d:]))"
)
#: Month abbreviations of the Codex App's pt-BR, es and ru locales (they never disagree).
_MONTHS = {
    "jan": 1, "ene": 1, "fev": 2, "feb": 2, "mar": 3, "abr": 4, "mai": 5, "may": 5,
    "jun": 6, "jul": 7, "ago": 8, "set": 9, "sep": 9, "out": 10, "oct": 10, "nov": 11,
    "dez": 12, "dic": 12,
    "янв": 1, "фев": 2, "мар": 3, "апр": 4, "мая": 5, "май": 5, "июн": 6, "июл": 7,
    "авг": 8, "сен": 9, "окт": 10, "ноя": 11, "дек": 12,
}  # fmt: skip
LOCALIZED_DATES = (ROMANCE_DATE, KO_DATE, RU_DATE, CJK_DATE, NUMERIC_DATE)


def _printed_localized(match: re.Match[str]) -> clock.Printed | None:
    """The parts of a localized date the grammar matched, when its words are known."""
    groups = match.groupdict()
    phrase = match.group("phrase")
    meridiem = groups.get("meridiem")
    hour = int(groups["hour"])
    if meridiem in ("오전", "오후", "午前", "午後", "上午", "下午"):
        meridiem = "am" if meridiem in ("오전", "午前", "上午") else "pm"
    elif meridiem is not None:
        meridiem += "m"
    if groups.get("month_word"):
        month, day, year = int(groups["month_word"]), int(groups["day_word"]), None
    elif groups.get("month_dot"):
        month, day = int(groups["month_dot"]), int(groups["day_dot"])
        year = int(groups["year_dot"])
    elif groups["month"].isdigit():
        month, day = int(groups["month"]), int(groups["day"])
        year = int(groups["year"]) if groups.get("year") else None
    else:
        found = _MONTHS.get(groups["month"][:3].lower())
        if found is None:
            return None
        month, day, year = found, int(groups["day"]), int(groups["year"])
    return clock.Printed(
        hour=hour,
        minute=int(groups["minute"]),
        meridiem=meridiem,
        month=month,
        day=day,
        year=year,
        as_printed=phrase,
    )


def resolve_localized(
    match: re.Match[str], ctx: Observation, provider: Provider, scope: str | None
) -> Resolved:
    """A date the Codex App formatted with the OS locale. The pt-BR, es and ko forms are read
    from their month words; other locales by dateparser on the phrase the grammar found, with
    a fixed base date (the clock is never read). Without a year, rule 4 applies."""
    printed: clock.Printed | Refusal | None = _printed_localized(match)
    if printed is None:
        printed = _dateparser_localized(match.group("phrase"), ctx)
    if isinstance(printed, Refusal):
        return printed
    return clock.resolve(printed, ctx, provider, scope)


def _dateparser_localized(phrase: str, ctx: Observation) -> clock.Printed | Refusal:
    try:
        zone = host_zone(ctx.zone)
    except ZoneError as error:
        return Refusal(error.code, f"{phrase!r}: {error.detail}")
    import dateparser  # imported here: only phrases in unlisted locales need it

    base = ctx.observed_at.astimezone(zone).replace(tzinfo=None)
    parsed: datetime | None = dateparser.parse(
        phrase,
        settings={
            "RELATIVE_BASE": base,
            "RETURN_AS_TIMEZONE_AWARE": False,
            "REQUIRE_PARTS": ["day", "month"],
            "PREFER_DAY_OF_MONTH": "first",
        },
    )
    if parsed is None:
        return Refusal("unparseable", f"the localized date {phrase!r} could not be read")
    return clock.Printed(
        hour=parsed.hour,
        minute=parsed.minute,
        meridiem=None,
        month=parsed.month,
        day=parsed.day,
        year=parsed.year if re.search(r"\d{4}", phrase) else None,
        as_printed=phrase,
    )
