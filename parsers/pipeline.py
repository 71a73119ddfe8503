"""The parsing pipeline behind `rewake.parsers.parse`.

The text is normalized once; JSON lines are read first (rewake.parsers.structured) and hidden from
the text scanners; each provider's scanner reports findings, only from the patterns whose
needles the text holds (rewake.parsers.grammar.GateIndex); rule 8 picks the finding that counts
(rewake.parsers.decide); the Verdict is built from it, with the words it rests on as evidence.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime
from functools import cache
from typing import Literal

from rewake.parsers import claude, codex, gemini, general, grammar, structured
from rewake.parsers.decide import decide
from rewake.parsers.findings import Finding, Observation, failure
from rewake.parsers.grammar import Gated, GateIndex
from rewake.parsers.quoting import is_quoted
from rewake.parsers.text import Text, normalize
from rewake.parsers.verdict import PROVIDERS, Evidence, Provider, Verdict

__all__ = ["parse"]

# Far enough from datetime's limits that windows and grace never overflow.
_EARLIEST_OBSERVED = datetime(1971, 1, 1, tzinfo=UTC)
_LATEST_OBSERVED = datetime(9000, 1, 1, tzinfo=UTC)

_Scanner = Callable[[Text, Observation, AbstractSet[Gated] | None], list[Finding]]
_SCANNERS: dict[str, _Scanner] = {"claude": claude.scan, "codex": codex.scan, "gemini": gemini.scan}
#: The scanners to run for a given provider argument (None: all of them).
# The network's failures and credit walls read alike for every CLI: read once, for any.
_SCANNERS_FOR: dict[str | None, tuple[_Scanner, ...]] = {
    None: (*_SCANNERS.values(), general.scan),
    **{name: (scan, general.scan) for name, scan in _SCANNERS.items()},
}
# Which gated patterns a text opens is found once, for every scanner that reads it.
_ALL_GATES = GateIndex((*claude.GATES, *codex.GATES, *gemini.GATES, *general.GATES))
_PROVIDER_GATES = {"claude": claude.GATES, "codex": codex.GATES, "gemini": gemini.GATES}


@cache
def _gates(reader: str | None) -> GateIndex:
    """The index of the gates a reader's scanners read; one CLI's is built when first needed:
    `rewake parse` of one message without a provider never needs one."""
    if reader is None:
        return _ALL_GATES
    return GateIndex((*_PROVIDER_GATES[reader], *general.GATES))


# Every alternative starts with a literal character ("Resets" and "resets" spelled out, not
# [Rr]): only then does the regex engine skip, in C, the positions where none can start; one
# character class up front makes it try every alternative at every position.
_MARKERS: dict[Provider, re.Pattern[str]] = {
    "claude": re.compile(
        r"Claude|Anthropic|anthropic|claude\.(?:ai|com)|/login|/upgrade|/extra-usage|✻|⎿"
        r"|rate_limit_event|\"req_011|Opus|Sonnet"
        r"|Resets [^\n]{0,30}\([A-Z][a-z]+/[A-Za-z_]+\)"
        r"|resets [^\n]{0,30}\([A-Z][a-z]+/[A-Za-z_]+\)"
    ),
    "codex": re.compile(
        r"Codex|codex|chatgpt\.com|openai|OpenAI|platform\.openai|🖐|■|/status for a breakdown"
        r"|usage_limit_reached|thread\.started|\"rate_limits\"|\"used_percent\""
    ),
    "gemini": re.compile(
        r"Gemini|gemini|googleapis|goo\.gle|ai\.google\.dev|/stats|/auth\b|Code Assist"
        r"|RESOURCE_EXHAUSTED|⚡"
    ),
}


def parse(
    text: str,
    *,
    observed_at: datetime,
    zone: str | None = None,
    provider: str | None = None,
) -> Verdict:
    """Why the run stopped and when it may resume, from the CLI's output.

    observed_at: aware instant at which the CLI printed the text (or the latest it can have).
    zone: IANA zone of the machine that ran the CLI; None means unknown, and a time that needs
        it is then refused, never filled from the server's zone.
    provider: "claude", "codex", "gemini", or None to detect it.
    """
    if observed_at.tzinfo is None or observed_at.utcoffset() is None:
        raise ValueError("observed_at must be an aware datetime")
    # Arithmetic on an aware datetime follows its own zone's wall clock; across a DST change
    # that is an hour off. All reasoning happens in UTC. (Comparing in UTC is also cheaper
    # than comparing datetimes of two zones.)
    try:
        observed_utc = observed_at.astimezone(UTC)
    except OverflowError:  # near year 1 or 9999: outside the range either way
        observed_utc = None
    if observed_utc is None or not _EARLIEST_OBSERVED <= observed_utc <= _LATEST_OBSERVED:
        raise ValueError(f"observed_at {observed_at.isoformat()} is outside 1971-9000")
    if provider is not None and provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r}; expected one of {PROVIDERS}")
    if not isinstance(text, str):
        raise TypeError("text must be a str")
    ctx = Observation(observed_utc, zone)
    source = normalize(text)
    try:
        found = _scan(source, ctx, provider)
    finally:
        # The needle searches a long text's gates shared hold the text: let go of both.
        grammar.forget_searches()
    # Counting the marks is three passes over the text: done at most once, and only when needed.
    detected: Provider | Literal[False] | None = False
    if provider is None and _read_alike(found):
        # Where two CLIs' scanners read the same words, the CLI the text names wins: its
        # finding goes last among those, and rule 8 keeps the order of findings at one place.
        detected = _detect(source.norm)
        found.sort(key=lambda finding: finding.provider == detected)
    decision = decide(found)
    chosen = decision.finding
    given: Provider | None = provider
    if given is None and (chosen is None or chosen.provider is None):
        given = _detect(source.norm) if detected is False else detected
    if chosen is None:
        return Verdict(kind="none", provider=given)
    verdict_provider = given or chosen.provider
    evidence = _evidence(source, chosen, decision.episode_start)
    refusal = decision.refusal or chosen.refusal
    reset = None if decision.refusal else chosen.reset
    if chosen.role in ("warning", "went_on"):
        return Verdict(kind="none", provider=verdict_provider, evidence=evidence)
    if chosen.kind != "provider_quota":
        refusal = None
    return Verdict(
        kind=chosen.kind,
        provider=verdict_provider,
        reset_at=reset.at if reset else None,
        resolution_s=reset.resolution_s if reset else None,
        form=reset.form if reset else None,
        refusal=refusal,
        scope=chosen.scope,
        retry_after_s=chosen.retry_after_s,
        native_auto_continue=chosen.native_auto_continue and reset is not None,
        login_command=chosen.login_command if chosen.kind == "login_required" else None,
        evidence=evidence,
    )


def _scan(source: Text, ctx: Observation, provider: str | None) -> list[Finding]:
    """Findings from JSON lines first, then from the text with those lines hidden."""
    norm = source.norm
    scanners = _SCANNERS_FOR[provider]
    gates = _gates(provider)
    # Most texts hold no JSON line: they skip decoding, the hidden copy and the inner messages.
    if not structured.may_hold_json(norm):
        found: list[Finding] = []
        _scan_text(source, ctx, scanners, gates.open(norm), found)
        return found
    read = structured.read(norm, ctx)
    found = [f for f in read.findings if provider is None or f.provider in (None, provider)]
    if read.spans:
        text_view = Text(
            original=source.original,
            norm=_hidden(norm, read.spans),
            _runs_norm=source._runs_norm,
            _runs_orig=source._runs_orig,
        )
    else:
        text_view = source
    _scan_text(text_view, ctx, scanners, gates.open(text_view.norm), found)
    for message in read.messages:
        if provider is not None and message.provider not in (None, provider):
            continue
        inner = normalize(message.text)
        # One needle pass for all the scanners that read the message, as for the text.
        reader = provider or message.provider
        inner_opened = _gates(reader).open(inner.norm)
        placed = [
            _place(source, message, inner, finding)
            for scan in _SCANNERS_FOR[reader]
            for finding in scan(inner, ctx, inner_opened)
        ]
        if message.failed_result and not any(
            f.role in ("stop", "failure", "countdown") for f in placed
        ):
            line = source.original_span(message.line_start, message.line_end)
            placed.append(
                failure("other_failure", message.provider, message.line_start, message.line_end)
                .moved(message.line_start, message.line_end, line)
            )  # fmt: skip
        found.extend(placed)
    return found


def _hidden(norm: str, spans: list[tuple[int, int]]) -> str:
    """norm with each span blanked by as many spaces: offsets stay. Joined from slices, not
    from a list of every character of a megabyte."""
    pieces = []
    kept_from = 0
    for start, end in sorted(spans):
        if end <= kept_from:
            continue
        start = max(start, kept_from)
        pieces.append(norm[kept_from:start])
        pieces.append(" " * (end - start))
        kept_from = end
    pieces.append(norm[kept_from:])
    return "".join(pieces)


def _scan_text(
    text: Text,
    ctx: Observation,
    scanners: tuple[_Scanner, ...],
    opened: set[Gated],
    found: list[Finding],
) -> None:
    """Append the text scanners' findings; a banner inside quotes is someone quoting it."""
    for scan in scanners:
        for finding in scan(text, ctx, opened):
            if finding.role != "stop" or not is_quoted(text, finding.start, finding.end):
                found.append(finding)


def _place(source: Text, message: structured.Message, inner: Text, finding: Finding) -> Finding:
    """A finding from a JSON string, placed at its JSON line; its evidence is the same words in
    the original line when they appear there unescaped, else the whole line."""
    words = inner.norm[finding.start : finding.end].strip()
    line = source.norm[message.line_start : message.line_end]
    at = line.find(words) if words else -1
    if at >= 0:
        start = message.line_start + at
        span = source.original_span(start, start + len(words))
    else:
        span = source.original_span(message.line_start, message.line_end)
    return finding.moved(message.line_start, message.line_end, span)


#: How far evidence for a failure or warning reaches beyond its phrase, within its line.
_EVIDENCE_REACH = 240


def _evidence(source: Text, finding: Finding, episode_start: int | None) -> Evidence:
    """The words the verdict rests on: a banner with its reset as matched; a failure, warning
    or banner without a reset with the rest of its lines (within reach), so the status code
    and wording around it show."""
    first = min(finding.start, episode_start if episode_start is not None else finding.start)
    if finding.original_span is not None:
        start, end = finding.original_span
    elif finding.role == "stop" and finding.reset is not None:
        start, end = source.original_span(finding.start, finding.end)
    else:
        line_start = source.line_start_within(first, _EVIDENCE_REACH)
        line_end = source.line_end_within(finding.end, _EVIDENCE_REACH)
        start, end = source.original_span(line_start, max(line_end, finding.end))
    return Evidence(text=source.original[start:end], start=start, end=end)


def _read_alike(found: list[Finding]) -> bool:
    """Whether scanners of two CLIs read the same words: findings with one start and end but
    different providers. Only their order depends on which CLI the text names."""
    providers_at: dict[tuple[int, int], Provider | None] = {}
    for finding in found:
        place = (finding.start, finding.end)
        if providers_at.setdefault(place, finding.provider) != finding.provider:
            return True
    return False


def _detect(norm: str) -> Provider | None:
    """The CLI whose marks the text carries most often; None when none or a tie."""
    counts = {name: len(pattern.findall(norm, 0, 200_000)) for name, pattern in _MARKERS.items()}
    best = max(counts.values())
    if best == 0:
        return None
    winners = [name for name, count in counts.items() if count == best]
    return winners[0] if len(winners) == 1 else None
