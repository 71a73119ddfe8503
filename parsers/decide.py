"""Rule 8: which of the findings in a piece of output decides the verdict.

A stop banner counts while no later line shows the session went on. Among the live banners,
per scope the last printed decides; across scopes the latest reset decides (every exhausted
window must clear). A limit that names neither window nor time yields to one that does.
"""

from __future__ import annotations

from bisect import bisect_right
from datetime import datetime
from typing import NamedTuple

from rewake.parsers.findings import Finding
from rewake.parsers.timeres import Reset, Stale
from rewake.parsers.verdict import Refusal

#: Two live banners of one scope may differ by their resolution plus this before they conflict.
CONFLICT_SLACK_S = 15 * 60


#: Findings of one kind this close together are one episode, quoted together as evidence.
EPISODE_GAP = 400


class Decision(NamedTuple):
    finding: Finding | None
    refusal: Refusal | None = None
    #: Where the episode the finding closes began (for evidence), when earlier than it.
    episode_start: int | None = None


def _last_went_on(ordered: list[Finding]) -> int:
    return max((finding.start for finding in ordered if finding.role == "went_on"), default=-1)


def _live_stops(ordered: list[Finding]) -> list[Finding]:
    last_went_on = _last_went_on(ordered)
    return [f for f in ordered if f.role == "stop" and f.start > last_went_on]


def _without_retried_errors(ordered: list[Finding]) -> list[Finding]:
    """A rate-limit error that a client countdown is retrying is not a stop (rule 10)."""
    spans = [(f.start, f.end) for f in ordered if f.role == "countdown"]
    if not spans:
        return ordered
    # Countdowns sorted by start; the furthest end so far covers every start before it.
    starts = [start for start, _ in spans]
    reach: list[int] = []
    for _, end in spans:
        reach.append(max(end, reach[-1]) if reach else end)
    kept = []
    for finding in ordered:
        index = bisect_right(starts, finding.start) - 1
        covered = index >= 0 and finding.start < reach[index]
        if finding.role == "stop" and covered and _code(finding) == "not_stated":
            continue
        kept.append(finding)
    return kept


def _code(finding: Finding) -> str | None:
    refusal = finding.refusal
    return refusal.code if refusal is not None else None


def decide(found: list[Finding]) -> Decision:
    if len(found) <= 1:
        return _decide_one(found[0]) if found else Decision(None)
    ordered = _without_retried_errors(sorted(found, key=lambda f: (f.start, f.end)))
    stops = _structured_first(_live_stops(ordered))
    if stops:
        return _decide_stops(stops)
    # A failure the session went on after ("API Error: 529" then "● Deleted workflow ...")
    # did not stop it either.
    went_on = _last_went_on(ordered)
    failures = [f for f in ordered if f.role in ("failure", "countdown") and f.start > went_on]
    if failures:
        chosen = _last_failure(failures)
        return Decision(chosen, episode_start=_episode_start(failures, chosen))
    warnings = [f for f in ordered if f.role == "warning"]
    if warnings:
        return Decision(warnings[-1])
    return Decision(None)


def _decide_one(only: Finding) -> Decision:
    """What the rules below give for a single finding, which most output holds, without
    their sorting and filtering: a live stop or a failure decides; a lone went_on says nothing."""
    if only.role == "stop" or only.role == "warning":
        return Decision(only)
    if only.role == "failure" or only.role == "countdown":
        return Decision(only, episode_start=only.start)
    return Decision(None)


def _structured_first(stops: list[Finding]) -> list[Finding]:
    """Rule 9: a structured reset speaks for the text about the same limit. Text stops that
    repeat it, or that cannot be read on their own (no time, no zone), give way; a text stop
    naming another window, or another reset, or saying waiting will not help, stays. A
    structured reset that has passed still speaks: that limit has cleared."""
    anchors = [f for f in stops if f.structured and _instant(f) is not None]
    if not anchors:
        return stops
    windows = {_window(f.scope) for f in stops if f.structured}
    kept = []
    for finding in stops:
        if finding.structured or _code(finding) == "no_reset":
            kept.append(finding)
        elif finding.reset is None:
            # "session" text beside a "five_hour" event is the same window: the event's
            # reset speaks for a banner whose time could not be read (a DST fold, say).
            if finding.scope is not None and _window(finding.scope) not in windows:
                kept.append(finding)
        elif not any(_same_limit(finding, anchor) for anchor in anchors):
            kept.append(finding)
    return kept


def _instant(finding: Finding) -> datetime | None:
    if finding.reset is not None:
        return finding.reset.at
    refusal = finding.refusal
    return refusal.at if isinstance(refusal, Stale) else None


#: Scopes that name the same rolling window.
_SAME_WINDOW = {"five_hour": "five_hour", "session": "five_hour"}


def _window(scope: str | None) -> str | None:
    return _SAME_WINDOW.get(scope or "", scope)


#: A printed time of day may be read a DST shift (at most 1 h) or whole days off the
#: structured instant it repeats.
_WALL_TIME_DRIFT_S = 3600


def _same_limit(text: Finding, anchor: Finding) -> bool:
    """Whether a text stop repeats a structured one: the same instant; or, for a time of day
    about the same window (or none named), the same wall time read on another day or across
    a DST fold."""
    reset = text.reset
    instant = _instant(anchor)
    assert reset is not None and instant is not None
    slack = reset.resolution_s + CONFLICT_SLACK_S
    gap = abs((reset.at - instant).total_seconds())
    if gap <= slack:
        return True
    same_window = text.scope is None or _window(text.scope) == _window(anchor.scope)
    if not same_window or reset.form not in ("named_zone", "offset_zone", "local_time"):
        return False
    off_by_days = gap % 86400
    return min(off_by_days, 86400 - off_by_days) <= slack + _WALL_TIME_DRIFT_S


def _same_reset(first: Reset, second: Reset) -> bool:
    gap = abs((first.at - second.at).total_seconds())
    return gap <= max(first.resolution_s, second.resolution_s) + CONFLICT_SLACK_S


def _episode_start(failures: list[Finding], chosen: Finding) -> int:
    """The start of the run of same-kind failures that ends at the chosen one."""
    start = chosen.start
    for finding in reversed(failures):
        if finding.start >= chosen.start:
            continue
        if finding.kind != chosen.kind or start - finding.end > EPISODE_GAP:
            break
        start = finding.start
    return start


def _last_failure(failures: list[Finding]) -> Finding:
    """The last failure printed; a client countdown stays the answer over the transient
    details printed after it (the error it retries), but not over a login or other failure."""
    countdowns = [f for f in failures if f.role == "countdown"]
    if countdowns:
        after = [f for f in failures if f.start > countdowns[-1].start]
        if all(f.kind == "transient" for f in after):
            return countdowns[-1]
    return failures[-1]


def _weak(finding: Finding) -> bool:
    """A limit that names no window and no time (an API body's "try again later") adds
    nothing to a banner that states one."""
    return _code(finding) == "not_stated" and finding.scope is None


def _decide_stops(stops: list[Finding]) -> Decision:
    if len(stops) == 1:
        # Every rule below picks the only live banner (a conflict needs two); most output
        # holds one, so skip the bookkeeping.
        return Decision(stops[0])
    no_reset = [f for f in stops if _code(f) == "no_reset"]
    if no_reset:
        return Decision(no_reset[-1])
    strong = [f for f in stops if not _weak(f)]
    if not strong:
        return Decision(stops[-1])
    by_scope: dict[str | None, list[Finding]] = {}
    for finding in strong:
        by_scope.setdefault(finding.scope, []).append(finding)
    deciders: list[Finding] = []
    for scope_findings in by_scope.values():
        if all(f.structured for f in scope_findings):
            # Rule 9: the latest reset among the rejected events of a window.
            with_reset = [f for f in scope_findings if f.reset is not None]
            deciders.append(max(with_reset, key=_reset_key) if with_reset else scope_findings[-1])
            continue
        conflict = _conflict(scope_findings)
        if conflict is not None:
            return Decision(scope_findings[-1], conflict)
        deciders.append(scope_findings[-1])
    with_reset = [f for f in deciders if f.reset is not None]
    refused = [f for f in deciders if f.reset is None]
    # A stale window has already cleared; any other refusal leaves a window unknown, and
    # every exhausted window must clear before a resume.
    blocking = [f for f in refused if _code(f) != "stale"]
    if blocking:
        return Decision(max(blocking, key=lambda f: f.start))
    if with_reset:
        return Decision(max(with_reset, key=_reset_key))
    return Decision(max(refused, key=lambda f: f.start))


def _reset_key(finding: Finding) -> tuple[float, int]:
    reset = finding.reset
    assert reset is not None
    return (reset.at.timestamp() + reset.resolution_s, finding.start)


def _conflict(scope_findings: list[Finding]) -> Refusal | None:
    """Two live, still-future banners of one scope that disagree beyond their resolution."""
    resets: list[Reset] = [f.reset for f in scope_findings if f.reset is not None]
    if len(resets) < 2:
        return None
    last = resets[-1]
    for earlier in resets[:-1]:
        if not _same_reset(earlier, last):
            return Refusal(
                "conflicting",
                f"two banners of one limit name resets {earlier.at.isoformat()} and "
                f"{last.at.isoformat()}",
            )
    return None
