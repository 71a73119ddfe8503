"""What the provider scanners report, before rule 8 decides which finding counts."""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, NamedTuple

from rewake.parsers.grammar import Gated
from rewake.parsers.text import Text
from rewake.parsers.timeres import Reset, Resolved
from rewake.parsers.verdict import Kind, Provider, Refusal

#: stop: a provider_quota banner. failure: transient, login or other failure. countdown: a
#: client retry countdown. warning: informational (kind none). went_on: the session continued.
Role = Literal["stop", "failure", "countdown", "warning", "went_on"]


# A NamedTuple, not a frozen dataclass: as immutable, and cheaper to build (a frozen
# dataclass sets each field through object.__setattr__), on the path every message takes.
class Finding(NamedTuple):
    """One thing a scanner recognised, at norm[start:end]."""

    role: Role
    kind: Kind
    provider: Provider | None
    start: int
    end: int
    scope: str | None = None
    resolved: Resolved | None = None
    retry_after_s: float | None = None
    login_command: str | None = None
    native_auto_continue: bool = False
    structured: bool = False
    # Evidence override: an original-text span, for findings read from JSON lines.
    original_span: tuple[int, int] | None = None

    @property
    def reset(self) -> Reset | None:
        return self.resolved if isinstance(self.resolved, Reset) else None

    @property
    def refusal(self) -> Refusal | None:
        return self.resolved if isinstance(self.resolved, Refusal) else None

    def moved(self, start: int, end: int, original_span: tuple[int, int] | None) -> Finding:
        return self._replace(start=start, end=end, original_span=original_span)


def stop(
    provider: Provider | None,
    start: int,
    end: int,
    resolved: Resolved,
    scope: str | None = None,
    *,
    native_auto_continue: bool = False,
) -> Finding:
    return Finding(
        role="stop",
        kind="provider_quota",
        provider=provider,
        start=start,
        end=end,
        scope=scope,
        resolved=resolved,
        native_auto_continue=native_auto_continue,
    )


def not_stated(
    provider: Provider | None, start: int, end: int, scope: str | None, what: str
) -> Finding:
    return stop(
        provider, start, end, Refusal("not_stated", f"{what}: no reset time is stated"), scope
    )


def no_reset(
    provider: Provider | None, start: int, end: int, scope: str | None, what: str
) -> Finding:
    return stop(provider, start, end, Refusal("no_reset", f"{what}: waiting will not help"), scope)


def failure(
    kind: Kind,
    provider: Provider | None,
    start: int,
    end: int,
    *,
    login_command: str | None = None,
    retry_after_s: float | None = None,
    resolved: Resolved | None = None,
    scope: str | None = None,
) -> Finding:
    return Finding(
        role="failure",
        kind=kind,
        provider=provider,
        start=start,
        end=end,
        scope=scope,
        resolved=resolved,
        retry_after_s=retry_after_s,
        login_command=login_command,
    )


def as_structured(finding: Finding) -> Finding:
    """The same finding, read from a structured field (rule 9)."""
    return finding._replace(structured=True)


def marker(role: Role, provider: Provider | None, start: int, end: int) -> Finding:
    return Finding(role=role, kind="none", provider=provider, start=start, end=end)


class Observation(NamedTuple):
    """What every scanner needs besides the text: when it was printed, and the host's zone."""

    observed_at: datetime
    zone: str | None


@dataclass(frozen=True, slots=True)
class CommonPatterns:
    """The failures and markers every CLI prints in its own words: transient errors, sign-in
    failures (and the command that fixes them), other failures, warnings, a session going on."""

    transient: Gated | None = None
    login: Gated | None = None
    login_command: str | None = None
    other: Gated | None = None
    warning: Gated | None = None
    went_on: Gated | None = None
    #: (pattern, role, kind) in the order findings are reported; built once, not per text.
    _entries: tuple[tuple[Gated, Role, Kind], ...] = field(init=False, default=())
    _gates: frozenset[Gated] = field(init=False, default=frozenset())

    def __post_init__(self) -> None:
        entries: list[tuple[Gated | None, Role, Kind]] = [
            (self.transient, "failure", "transient"),
            (self.other, "failure", "other_failure"),
            (self.login, "failure", "login_required"),
            (self.warning, "warning", "none"),
            (self.went_on, "went_on", "none"),
        ]
        present = tuple((gate, role, kind) for gate, role, kind in entries if gate is not None)
        object.__setattr__(self, "_entries", present)
        object.__setattr__(self, "_gates", frozenset(gate for gate, _, _ in present))


def scan_common(
    text: Text, provider: Provider, patterns: CommonPatterns, opened: AbstractSet[Gated]
) -> list[Finding]:
    """The common failures and markers, from the patterns the text opened (GateIndex.open)."""
    # Plain loops, no generators: this runs for every text, and most of its gates stay shut.
    if opened.isdisjoint(patterns._gates):
        return []
    norm = text.norm
    found: list[Finding] = []
    for pattern, role, kind in patterns._entries:
        if pattern not in opened:
            continue
        for match in pattern.finditer(norm):
            start, end = match.span()
            if role != "failure":
                found.append(marker(role, provider, start, end))
            elif kind == "login_required":
                command = patterns.login_command
                named = command is not None and command in text.around(start, end)
                found.append(
                    failure(kind, provider, start, end, login_command=command if named else None)
                )
            else:
                found.append(failure(kind, provider, start, end))
    return found
