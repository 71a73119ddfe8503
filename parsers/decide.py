"""Rule 8: which of the findings in a piece of output decides the verdict.

A stop banner counts while no later line shows the session went on. Among the live banners,
per scope the last printed decides; across scopes the latest reset decides (every exhausted
window must clear). A banner that states nothing (not_stated) yields to one that does.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from parsers.findings import Finding
from parsers.timeres import Reset
from parsers.verdict import Refusal

#: Two live banners of one scope may differ by their resolution plus this before they conflict.
CONFLICT_SLACK_S = 15 * 60


#: Findings of one kind this close together are one episode, quoted together as evidence.
EPISODE_GAP = 400


@dataclass(frozen=True, slots=True)
class Decision:
    finding: Finding | None
    refusal: Refusal | None = None
    #: Where the episode the finding closes began (for evidence), when earlier than it.
    episode_start: int | None = None


def _live_stops(ordered: list[Finding]) -> list[Finding]:
    last_went_on = max(
        (finding.start for finding in ordered if finding.role == "went_on"), default=-1
    )
    return [f for f in ordered if f.role == "stop" and f.start > last_went_on]


def _without_retried_errors(ordered: list[Finding]) -> list[Finding]:
    """A rate-limit error that a client countdown is retrying is not a stop (rule 10)."""
    # Countdown spans do not overlap one another, so the nearest start before decides.
    countdowns = [f for f in ordered if f.role == "countdown"]
    starts = [c.start for c in countdowns]
    kept = []
    for finding in ordered:
        index = bisect_right(starts, finding.start) - 1
        retried = finding.role == "stop" and index >= 0 and finding.start < countdowns[index].end
        if retried and finding.refusal is not None and finding.refusal.code == "not_stated":
            continue
        kept.append(finding)
    return kept


def decide(found: list[Finding]) -> Decision:
    ordered = _without_retried_errors(sorted(found, key=lambda f: (f.start, f.end)))
    stops = _live_stops(ordered)
    # Structured sources beat text (rule 9).
    structured = [f for f in stops if f.structured]
    if structured:
        stops = structured
    if stops:
        return _decide_stops(stops)
    failures = [f for f in ordered if f.role in ("failure", "countdown")]
    if failures:
        chosen = _last_failure(failures)
        return Decision(chosen, episode_start=_episode_start(failures, chosen))
    warnings = [f for f in ordered if f.role == "warning"]
    if warnings:
        return Decision(warnings[-1])
    return Decision(None)


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


def _decide_stops(stops: list[Finding]) -> Decision:
    no_reset = [f for f in stops if f.refusal is not None and f.refusal.code == "no_reset"]
    if no_reset:
        return Decision(no_reset[-1])
    stated = [f for f in stops if not (f.refusal is not None and f.refusal.code == "not_stated")]
    if not stated:
        return Decision(stops[-1])
    by_scope: dict[str | None, list[Finding]] = {}
    for finding in stated:
        by_scope.setdefault(finding.scope, []).append(finding)
    deciders: list[Finding] = []
    for scope_findings in by_scope.values():
        last = scope_findings[-1]
        conflict = _conflict(scope_findings)
        if conflict is not None:
            return Decision(last, conflict)
        deciders.append(last)
    with_reset = [f for f in deciders if f.reset is not None]
    refused = [f for f in deciders if f.reset is None]
    # A stale window has already cleared; any other refusal leaves one window unknown.
    blocking = [f for f in refused if f.refusal is None or f.refusal.code != "stale"]
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
        gap = abs((last.at - earlier.at).total_seconds())
        if gap > max(last.resolution_s, earlier.resolution_s) + CONFLICT_SLACK_S:
            return Refusal(
                "conflicting",
                f"two banners of one limit name resets {earlier.at.isoformat()} and "
                f"{last.at.isoformat()}",
            )
    return None
