"""Pure rules of the service: no database, no clock (every function takes `now`)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, get_args

from rewake.errors import DomainError

FailureKind = Literal[
    "provider_quota",
    "login_required",
    "runtime_limit",
    "conversation_missing",
    "missing_outcome",
    "interrupted_start",
    "host_failure",
    "execution_failure",
]
FAILURE_KINDS: tuple[FailureKind, ...] = get_args(FailureKind)

#: Characters of CLI output kept per failure; longer text keeps its last part (the banner
#: that stopped the run is at the end) and is flagged `truncated`.
MESSAGE_LIMIT_CHARS = 1_048_576
#: Characters kept of a report's `cli_text` (the CLI's closing error texts, for display): a
#: few lines in practice; longer text keeps its last part, as the message does.
CLI_TEXT_LIMIT_CHARS = 65_536

#: How far after its receipt a report may say it was observed (clock skew between machines).
OBSERVED_AT_SKEW = timedelta(minutes=5)

#: Reports observed before this are refused: no CLI printed them, and times near the ends of
#: the calendar overflow when converted.
EARLIEST_OBSERVED_AT = datetime(2000, 1, 1, tzinfo=UTC)

#: Arrays and objects nested deeper than this inside a report's events are cut: no CLI event
#: nests so deep, and every database (and Python's own recursion) has a limit.
EVENTS_MAX_DEPTH = 64
#: What a cut array or object is stored as.
EVENTS_CUT = f"[cut: nested deeper than {EVENTS_MAX_DEPTH} levels]"

#: NaN and the infinities are not JSON (PostgreSQL refuses them): they are stored as strings.
_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def derive_failure_kind(stated: str | None, verdict_kind: str, halted: bool) -> FailureKind:
    """The host's kind when stated, else the verdict's; a halted run is never a provider limit."""
    kind: FailureKind
    if stated is not None:
        kind = next(k for k in FAILURE_KINDS if k == stated)
    elif verdict_kind in ("provider_quota", "login_required"):
        kind = "provider_quota" if verdict_kind == "provider_quota" else "login_required"
    else:
        kind = "execution_failure"
    if halted and kind == "provider_quota":
        return "execution_failure"
    return kind


def check_observed_at(observed_at: datetime, received_at: datetime) -> None:
    """A report's observed_at must be aware and not more than 5 min after its receipt."""
    if observed_at.tzinfo is None or observed_at.utcoffset() is None:
        raise DomainError(
            "observed_at_naive",
            f"observed_at {observed_at.isoformat()} has no UTC offset; say which instant it is",
        )
    try:
        observed_utc = observed_at.astimezone(UTC)
    except OverflowError:
        # Only the ends of the calendar overflow: a negative offset pushes the instant past
        # year 9999, a positive one before year 1.
        offset = observed_at.utcoffset()
        if offset is not None and offset < timedelta(0):
            raise DomainError(
                "observed_in_future",
                f"observed_at {observed_at.isoformat()} is after year 9999, more than 5 minutes "
                f"after the report arrived ({received_at.isoformat()})",
            ) from None
        observed_utc = EARLIEST_OBSERVED_AT - timedelta(days=1)
    if observed_utc < EARLIEST_OBSERVED_AT:
        raise DomainError(
            "invalid_request",
            f"observed_at {observed_at.isoformat()} is before {EARLIEST_OBSERVED_AT:%Y}: "
            "not a time a CLI printed anything",
        )
    if observed_utc - received_at > OBSERVED_AT_SKEW:
        raise DomainError(
            "observed_in_future",
            f"observed_at {observed_at.isoformat()} is more than 5 minutes after the report "
            f"arrived ({received_at.isoformat()})",
        )


def clean_text(value: str) -> str:
    """Text every database can store: NUL and lone surrogates become U+FFFD."""
    return _UNSTORABLE.sub("\ufffd", value)


@dataclass(frozen=True, slots=True)
class CleanJSON:
    """A JSON value made storable, and what had to change."""

    value: Any
    #: Arrays or objects nested deeper than the limit were replaced by EVENTS_CUT.
    cut_too_deep: bool = False
    #: NaN or an infinity was replaced by its name as a string.
    had_non_finite: bool = False


def clean_json(value: Any, max_depth: int = EVENTS_MAX_DEPTH) -> CleanJSON:
    """A JSON value every database stores as standard JSON: `clean_text` on every string and
    key, NaN and the infinities as the strings "NaN", "Infinity" and "-Infinity", and arrays
    or objects nested more than `max_depth` levels below `value` replaced by EVENTS_CUT.

    Iterative, so that no nesting can exhaust the stack."""
    cut = non_finite = False
    root: list[Any] = [None]
    # (the value to copy, the container its copy goes in, the key there, its depth)
    pending: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 0)]
    while pending:
        item, into, key, depth = pending.pop()
        if isinstance(item, list | dict) and depth > max_depth:
            into[key], cut = EVENTS_CUT, True
        elif isinstance(item, list):
            copy: list[Any] = [None] * len(item)
            into[key] = copy
            for index in range(len(item) - 1, -1, -1):  # popped in order
                pending.append((item[index], copy, index, depth + 1))
        elif isinstance(item, dict):
            mapping: dict[str, Any] = {}
            into[key] = mapping
            children = [(clean_text(str(name)), child) for name, child in item.items()]
            for name, _ in children:
                mapping[name] = None  # the keys keep their order
            for name, child in reversed(children):
                pending.append((child, mapping, name, depth + 1))
        elif isinstance(item, str):
            into[key] = clean_text(item)
        elif isinstance(item, float) and not math.isfinite(item):
            into[key], non_finite = _NON_FINITE[repr(item)], True
        else:
            into[key] = item
    return CleanJSON(root[0], cut_too_deep=cut, had_non_finite=non_finite)


def keep_last_part(message: str, limit: int = MESSAGE_LIMIT_CHARS) -> tuple[str, bool]:
    """The message cut to its last `limit` characters, and whether it was cut."""
    if len(message) <= limit:
        return message, False
    return message[-limit:], True


@dataclass(frozen=True, slots=True)
class FailurePoint:
    """Where a failure sits in a session's tree: which run, which attempt, observed when."""

    run_id: str
    attempt: int
    observed_at: datetime


def is_newer(candidate: FailurePoint, than: FailurePoint) -> bool:
    """A higher attempt of the same run, or another run's failure observed later."""
    if candidate.run_id == than.run_id:
        return candidate.attempt > than.attempt
    return candidate.observed_at > than.observed_at
