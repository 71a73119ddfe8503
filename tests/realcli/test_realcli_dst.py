"""The real CLIs next to a DST transition, on a faked wall clock (issue 14).

The CLIs read the real clock, and most weeks no zone changes its offset, so the matrix meets a
transition only by luck. Here each CLI runs under libfaketime (`realcli_clock.py`) with its
clock set near the next transitions of America/New_York and Europe/Berlin (one hour),
Australia/Lord_Howe (half an hour) and Pacific/Auckland (southern hemisphere: the clocks go
back in April), and the mock serves a reset on that same faked clock. The true reset is drawn
to land:

- `across`: after the transition, the run before it (and past any repeated wall time);
- `gap`: just after the skipped wall time; `gap_dated` the same a day or more ahead (Claude
  prints a date then);
- `short_day`: 23-24 h ahead across the gap (a day with 23 or 23.5 hours), where Claude prints
  no date and the printed wall time also names an instant under an hour ahead: its text is
  refused (day_ambiguous), its rate_limit_event gives the reset;
- `fold_first` / `fold_second`: in the first or the second pass of the repeated wall time;
  `fold_dated` the first pass a day or more ahead;
- `fold_now`: the run in the first pass, the reset in the second at a wall time a few minutes
  before the one on the clock (the 10-minute grace of rule 3a must not take it as passed).

What the CLI printed is parsed with the faked observed_at and the CLI's zone (every case sets
TZ to its zone, so the zone is the case's own). A time printed
with an IANA zone or none (Claude) names two instants in a fold, and docs/design.md rule 2 reads
the later one: the expected reading is then the reset's wall time in the second pass. A time
printed with its offset (Gemini's "EDT", "GMT+10:30") names one instant. Structured sources
(Claude's rate_limit_event) must give the true reset.

Codex 0.171.0 cannot be put on a faked clock (a statically linked binary: see
realcli_clock.py); its cases skip saying so, and a probe shows it writes the real date while
libfaketime is preloaded.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from rewake.parsers import Verdict, parse
from tests.realcli import mock_provider as mp
from tests.realcli.realcli_cases import (
    HOUR,
    MINUTE,
    Expect,
    Outcome,
    Transition,
    draw_near_transition,
    drawn_at,
    judge,
    named_reading,
    next_transitions,
    record,
    run_parallel,
    run_seed,
    slug,
    verdict_json,
)
from tests.realcli.realcli_clock import (
    FakedClock,
    assert_clock_faked,
    libfaketime_or_skip,
    unfakeable_reason,
)
from tests.realcli.realcli_drive import (
    Box,
    Tmux,
    claude_env,
    cli_binary,
    codex_env,
    gemini_env,
    json_lines,
    run_headless,
    waits_for,
)
from tests.realcli.realcli_install import CLAUDE, CODEX, GEMINI

pytestmark = pytest.mark.realcli

SEED = run_seed()

#: Hour-long DST in both hemispheres, and Lord Howe's half hour.
DST_ZONES = ("America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Pacific/Auckland")
GAP_KINDS = ("across", "gap", "gap_dated", "short_day")
FOLD_KINDS = ("across", "fold_first", "fold_second", "fold_now", "fold_dated")
#: A reset this close is a five-hour limit's; further ahead, a weekly one's.
FIVE_HOUR_UPTO = 4 * HOUR + 40 * MINUTE


@dataclass(frozen=True)
class Case:
    """One run: the CLI and how it is driven, the transition it runs next to, the faked clock
    at its start and the true reset (whole seconds)."""

    cli: str  # claude, gemini, codex
    mode: str  # stream (-p, stream-json), tty (interactive), exec (codex exec --json)
    kind: str
    transition: Transition
    start: datetime
    truth: datetime

    @property
    def zone(self) -> str:
        return self.transition.zone

    @property
    def id(self) -> str:
        where = f"{slug(self.zone)}-{self.transition.at:%Y%m%d}"
        return f"{self.cli}-{self.mode}-{self.kind}-{where}-seed{SEED}"

    @property
    def ahead_s(self) -> float:
        return (self.truth - self.start).total_seconds()


def transitions() -> list[Transition]:
    """Each zone's next gap and next fold after today."""
    now = drawn_at()
    found = []
    for zone in DST_ZONES:
        changes = next_transitions(zone, now)
        found += [next(c for c in changes if c.gap), next(c for c in changes if not c.gap)]
    return found


#: Which kinds each CLI and mode runs. Gemini prints no date, so no dated kinds. Interactive
#: Claude also prints a wall time with no zone at all ("continue automatically at 1:30am"):
#: a few kinds, each in one zone (Berlin's `across` both ways).
GEMINI_KINDS = ("gap", "short_day", "fold_first", "fold_now")
CLAUDE_TTY = {
    ("America/New_York", "fold_first"),
    ("Australia/Lord_Howe", "fold_now"),
    ("Pacific/Auckland", "gap"),
    ("Europe/Berlin", "across"),
}
CODEX_KINDS = ("gap", "fold_first")


def draw_cases() -> list[Case]:
    rng = random.Random(f"dst:{SEED}")
    cases = []
    for change in transitions():
        for kind in GAP_KINDS if change.gap else FOLD_KINDS:
            runs = [("claude", "stream")]
            if (change.zone, kind) in CLAUDE_TTY:
                runs.append(("claude", "tty"))
            if kind in GEMINI_KINDS:
                runs.append(("gemini", "tty"))
            if kind in CODEX_KINDS:
                runs.append(("codex", "exec"))
            for cli, mode in runs:
                start, truth = draw_near_transition(rng, kind, change)
                cases.append(Case(cli, mode, kind, change, start, truth))
    return cases


CASES = draw_cases()


class ReadEarly(AssertionError):
    """A text source read a reset earlier than the true one: what the marked cases pin."""


def params(cli: str) -> list[Any]:
    """The CLI's cases as test parameters."""
    return [pytest.param(case, id=case.id) for case in CASES if case.cli == cli]


def claude_text_expect(case: Case) -> Expect:
    """What Claude's text calls for: the reset's wall time (a fold's later instant); on a day
    shortened by DST, where its dateless time also names an instant under an hour ahead and
    both are printed alike, the refusal (day_ambiguous): either reading could be a day off."""
    if case.kind == "short_day":
        return Expect("provider_quota", "claude", refusals=frozenset({"day_ambiguous"}))
    return Expect("provider_quota", "claude", named_reading(case.truth, case.zone))


@dataclass
class Source:
    """One source the CLI printed: its verdict, what it must say, and the text parsed."""

    verdict: Verdict
    expect: Expect
    text: str


@dataclass
class Run:
    """A case as it ran: the true reset, the faked instant the CLI had printed it by, and
    what each source it printed reads as."""

    case: Case
    truth: datetime
    observed_at: datetime
    sources: dict[str, Source]


def assert_dst(run: Run) -> None:
    """Every source judged right against its own expected reading. A failure says the text,
    observed_at, zone, truth and verdict; one where every wrong source read early raises
    ReadEarly."""
    case, truth, observed_at = run.case, run.truth, run.observed_at
    failures, early = [], []
    for name, source in run.sources.items():
        outcome, why = judge(source.verdict, source.expect)
        record(Outcome(case.cli, case.id, name, outcome, verdict_json(source.verdict), why))
        if outcome == "right":
            continue
        stated, wanted = source.verdict.reset_at, source.expect.truth
        resolution = timedelta(seconds=source.verdict.resolution_s or 0)
        early.append(stated is not None and wanted is not None and stated + resolution < truth)
        printed = "\n".join(line.rstrip() for line in source.text.splitlines() if line.strip())
        failures.append(
            f"{name}: {outcome}: {why}\n"
            f"  text: {printed[-700:]!r}\n"
            f"  observed_at {observed_at.isoformat()}, zone {case.zone}, truth "
            f"{truth.isoformat()} ({truth.astimezone(ZoneInfo(case.zone)).isoformat()}), "
            f"reading {wanted.isoformat() if wanted else None}\n"
            f"  verdict {verdict_json(source.verdict)}"
        )
    if failures:
        kind = ReadEarly if all(early) else AssertionError
        raise kind(f"{case.id} (transition {case.transition.at.isoformat()}):\n"
                   + "\n".join(failures))  # fmt: skip


def faked_clock(case: Case) -> FakedClock:
    return FakedClock.at(libfaketime_or_skip(), case.start)


def claude_claim(case: Case) -> str:
    return "five_hour" if case.ahead_s <= FIVE_HOUR_UPTO else "seven_day"


def result_text(stdout: str) -> str:
    """The `result` row's text: what `claude -p` prints in text mode."""
    results = [e for e in json_lines(stdout) if e.get("type") == "result"]
    assert results, f"no result event:\n{stdout[-2000:]}"
    return str(results[-1].get("result", ""))


def run_claude_stream(case: Case, root: Path) -> Run:
    binary = cli_binary(CLAUDE)
    clock = faked_clock(case)
    box = Box.make(root / case.id)
    with mp.running(clock.skew_s) as mock:
        mock.script(mp.ANTHROPIC, mp.claude_limit(int(case.truth.timestamp()), claude_claim(case)))
        env = {**claude_env(box, binary, mock.url, case.zone), **clock.env()}
        started = clock.now()
        ran = run_headless([str(binary), "-p", "hi", "--output-format", "stream-json",
                            "--verbose"], env, box.work)  # fmt: skip
    observed_at = clock.faked(ran.observed_at)
    assert_clock_faked(box.home, started, observed_at, ran.ended())
    zone = case.zone
    text = result_text(ran.stdout)
    return Run(case, case.truth, observed_at, {
        "text": Source(parse(text, observed_at=observed_at, zone=zone), claude_text_expect(case),
                       text),
        "structured": Source(parse(ran.stdout, observed_at=observed_at, zone=zone),
                             Expect("provider_quota", "claude", case.truth), ran.stdout),
    })  # fmt: skip


#: What an interactive screen shows once the limit has been printed.
_CLAUDE_BANNER = r"hit your [^\n]*limit|Usage limit reached|Stop and wait"
_GEMINI_BANNER = r"Access resets at [^\n]*\.|Usage limit reached"


def run_claude_tty(case: Case, root: Path) -> Run:
    binary = cli_binary(CLAUDE)
    clock = faked_clock(case)
    box = Box.make(root / case.id)
    with mp.running(clock.skew_s) as mock:
        mock.script(mp.ANTHROPIC, mp.claude_limit(int(case.truth.timestamp()), claude_claim(case)))
        env = {**claude_env(box, binary, mock.url, case.zone, interactive=True), **clock.env()}
        started = clock.now()
        tmux = Tmux(box, [str(binary)], env)
        try:
            tmux.wait_for(waits_for(r"❯|for shortcuts"), timeout=150)
            tmux.submit("hi", lambda: len(mock.requests(mp.ANTHROPIC)))
            tmux.wait_for(waits_for(_CLAUDE_BANNER), timeout=150)
            time.sleep(1.5)  # the status lines under the prompt follow the transcript line
            screen = tmux.screen()
            observed_at = clock.now()  # once, for the screen that is parsed
        finally:
            tmux.close()
    assert_clock_faked(box.home, started, observed_at)
    expect = claude_text_expect(case)
    verdict = parse(screen, observed_at=observed_at, zone=case.zone)
    return Run(case, case.truth, observed_at, {"text": Source(verdict, expect, screen)})


def run_gemini_tty(case: Case, root: Path) -> Run:
    binary = cli_binary(GEMINI)
    clock = faked_clock(case)
    box = Box.make(root / case.id)
    delay = round(case.ahead_s)
    with mp.running(clock.skew_s) as mock:
        mock.script(mp.GEMINI, mp.gemini_limit(retry_delay=f"{delay}s"))
        env = {**gemini_env(box, binary, mock.url, case.zone, interactive=True), **clock.env()}
        started = clock.now()
        tmux = Tmux(box, [str(binary)], env)
        try:
            tmux.wait_for(waits_for(r"Type your message|> "), timeout=150)
            time.sleep(1.0)
            tmux.submit("hi", lambda: len(mock.requests(mp.GEMINI)))
            tmux.wait_for(waits_for(_GEMINI_BANNER), timeout=150)
            time.sleep(1.0)
            screen = tmux.screen()
            observed_at = clock.now()  # once, for the screen that is parsed
        finally:
            tmux.close()
        answered_at = mock.limit_answered_at()
    assert answered_at is not None, "the mock served no limit"
    assert_clock_faked(box.home, started, observed_at)
    # Gemini counts the wait from the API's answer (on the faked clock) and prints the reset
    # with its offset ("EDT", "GMT+10:30"): one instant, no fold to read through.
    truth = datetime.fromtimestamp(answered_at, UTC) + timedelta(seconds=delay)
    late = (observed_at - datetime.fromtimestamp(answered_at, UTC)).total_seconds()
    expect = Expect("provider_quota", "gemini", truth, late_s=max(late, 0.0) + 1.0)
    verdict = parse(screen, observed_at=observed_at, zone=case.zone)
    return Run(case, truth, observed_at, {"text": Source(verdict, expect, screen)})


def failure_text(stdout: str) -> str:
    """Codex's turn.failed message: what a person reads."""
    failed = [e for e in json_lines(stdout) if e.get("type") == "turn.failed"]
    assert failed, f"no turn.failed event:\n{stdout[-2000:]}"
    error = failed[-1].get("error")
    return str(error.get("message", "")) if isinstance(error, dict) else ""


def run_codex_exec(case: Case, root: Path) -> Run:
    """`codex exec --json` on the faked clock; the clock check fails where it is not faked."""
    binary = cli_binary(CODEX)
    clock = faked_clock(case)
    box = Box.make(root / case.id)
    with mp.running(clock.skew_s) as mock:
        window = 300 if case.ahead_s <= FIVE_HOUR_UPTO else 10080
        mock.script(mp.OPENAI, mp.codex_limit(int(case.truth.timestamp()), now=mock.now(),
                                              window_minutes=window))  # fmt: skip
        env = {**codex_env(box, binary, mock.url, case.zone), **clock.env()}
        started = clock.now()
        ran = run_headless([str(binary), "exec", "--json", "--skip-git-repo-check", "hi"],
                           env, box.work)  # fmt: skip
    observed_at = clock.faked(ran.observed_at)
    assert_clock_faked(box.home, started, observed_at, ran.ended())
    zone = case.zone
    text = failure_text(ran.stdout)
    # Codex prints a bare time on the host's local date, else a date; neither names an
    # offset, so a fold reads as its later instant (rule 3b, rule 2), in both event kinds.
    reading = named_reading(case.truth, case.zone)
    return Run(case, case.truth, observed_at, {
        "text": Source(parse(text, observed_at=observed_at, zone=zone),
                       Expect("provider_quota", "codex", reading), text),
        "structured": Source(parse(ran.stdout, observed_at=observed_at, zone=zone),
                             Expect("provider_quota", "codex", reading), ran.stdout),
    })  # fmt: skip


Results = dict[str, Run | BaseException]


def run_all(cli: str, run: Callable[[Case, Path], Run], root: Path, workers: int,
            mode: str | None = None) -> Results:  # fmt: skip
    libfaketime_or_skip()
    chosen = [c for c in CASES if c.cli == cli and (mode is None or c.mode == mode)]
    return run_parallel(lambda case: run(case, root), chosen, workers=workers,
                        key=lambda c: c.id)  # fmt: skip


@pytest.fixture(scope="module")
def claude_runs(tmp_path_factory: pytest.TempPathFactory) -> Results:
    """Every Claude case: `-p` two at a time, then the interactive ones two at a time."""
    cli_binary(CLAUDE)
    root = tmp_path_factory.mktemp("dst-claude")
    results = run_all("claude", run_claude_stream, root, 2, mode="stream")
    results.update(run_all("claude", run_claude_tty, root, 2, mode="tty"))
    return results


@pytest.fixture(scope="module")
def gemini_runs(tmp_path_factory: pytest.TempPathFactory) -> Results:
    cli_binary(GEMINI)
    root = tmp_path_factory.mktemp("dst-gemini")
    return run_all("gemini", run_gemini_tty, root, 2)


def judged(results: Results, case: Case) -> None:
    """The case's run judged (or its run's own failure raised)."""
    result = results.get(case.id)
    if result is None:
        raise AssertionError("the case did not run")
    if isinstance(result, BaseException):
        raise result
    assert_dst(result)


@pytest.mark.parametrize("case", params("claude"))
def test_dst_claude_reads_the_reset_printed_on_a_faked_clock(
    case: Case, claude_runs: Results
) -> None:
    """Claude Code on a clock faked next to a DST transition: its text gives the reset
    (a fold's later instant where the wall time repeats), its rate_limit_event the exact one."""
    judged(claude_runs, case)


@pytest.mark.parametrize("case", params("gemini"))
def test_dst_gemini_dialog_on_a_faked_clock_gives_the_exact_reset(
    case: Case, gemini_runs: Results
) -> None:
    """Interactive Gemini on a clock faked next to a DST transition: "Access resets at 1:30 AM
    EDT" names its offset, so the reset is exact, in a fold and across a gap alike."""
    judged(gemini_runs, case)


@pytest.mark.parametrize("case", params("codex"))
def test_dst_codex_reads_the_reset_printed_on_a_faked_clock(case: Case, tmp_path: Path) -> None:
    """Codex on a clock faked next to a DST transition: its "try again at" gives the reset,
    where libfaketime can reach Codex's clock at all (skipped, saying why, where not)."""
    cli_binary(CODEX)
    libfaketime_or_skip()
    why = unfakeable_reason(CODEX)
    if why is not None:
        pytest.skip(why)
    assert_dst(run_codex_exec(case, tmp_path))


def test_dst_codex_clock_is_out_of_libfaketime_reach(tmp_path: Path) -> None:
    """Why the Codex cases skip: with libfaketime preloaded, Codex still writes the real date
    into its rollout, and its native binary is found to be statically linked."""
    cli_binary(CODEX)
    why = unfakeable_reason(CODEX)
    if why is None:
        pytest.fail("Codex's binaries all link dynamically now: its DST cases run; drop this probe")
    case = next(c for c in CASES if c.cli == "codex")
    with pytest.raises(AssertionError, match="not the faked one"):
        run_codex_exec(case, tmp_path)
