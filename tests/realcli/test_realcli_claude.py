"""The real Claude Code (2.1.332, and 2.1.197 for its older wording) against the mock's
Anthropic Messages API: `claude -p` in text and stream-json, and interactively under tmux,
each case with a fresh HOME, TZ set to a drawn zone and a reset drawn against the real
clock. What the CLI printed is parsed (text and structured events apart) with the instant
and zone it printed them under, and judged against the reset the mock served."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rewake.parsers import parse
from rewake.runner.clis.hostzone import host_zone
from tests.realcli import mock_provider as mp
from tests.realcli.realcli_cases import (
    DAY,
    HOUR,
    MINUTE,
    ZONES,
    Expect,
    Judged,
    assert_judged,
    assert_sources,
    band_offset,
    drawn_at,
    dst_transitions,
    midnight_offset,
    run_parallel,
    run_seed,
    slug,
    span,
)
from tests.realcli.realcli_drive import (
    Box,
    Tmux,
    claude_env,
    cli_binary,
    json_lines,
    run_headless,
    waits_for,
)
from tests.realcli.realcli_install import CLAUDE, CLAUDE_OLD, Pin

pytestmark = pytest.mark.realcli

SEED = run_seed()


@dataclass(frozen=True)
class Case:
    """One run: the claim served, how far ahead its reset is, the zone, the output mode."""

    claim: str
    offset_s: float | None
    zone: str | None
    mode: str = "stream"  # stream (stream-json), text (-p), tty (interactive)
    extra: dict[str, str] = field(default_factory=dict)
    tag: str = ""
    pin: Pin = CLAUDE

    @property
    def id(self) -> str:
        offset = span(self.offset_s) if self.offset_s is not None else "none"
        parts = [self.mode, self.claim, offset, slug(self.zone), self.tag, f"v{self.pin.version}"]
        return "-".join(p for p in parts if p) + f"-seed{SEED}"


WEEKLY_CLAIMS = ("seven_day", "seven_day_opus", "seven_day_sonnet", "seven_day_overage_included")


def draw_cases() -> list[Case]:
    rng = random.Random(f"claude:{SEED}")
    now = drawn_at()
    zone = lambda: rng.choice(ZONES)  # noqa: E731
    cases = [Case("five_hour", band_offset(rng, "five_hour"), zone()) for _ in range(6)]
    cases += [Case("five_hour", rng.uniform(70, 170), zone(), tag="soon")]
    for claim in WEEKLY_CLAIMS:
        for band in ("minutes", "hours", "day_edge", "days"):
            cases.append(Case(claim, band_offset(rng, band), zone()))
    cases += [Case("seven_day", band_offset(rng, "day_edge"), zone(), tag="day_edge")
              for _ in range(2)]  # fmt: skip
    cases += [Case("overage", band_offset(rng, band), zone()) for band in ("hours", "days")]
    cases += [
        Case("seven_day", band_offset(rng, "days"), zone(), tag="spend",
             extra={"overage_status": "rejected",
                    "overage_disabled_reason": "org_spend_cap_reached"}),
        Case("five_hour", band_offset(rng, "five_hour"), zone(), tag="credits",
             extra={"overage_status": "rejected", "overage_disabled_reason": "out_of_credits"}),
    ]  # fmt: skip
    for where in ("Asia/Kathmandu", "Australia/Adelaide", "America/New_York", None):
        offset = midnight_offset(rng, where, now, earliest_s=6 * HOUR)
        cases.append(Case("seven_day", offset, where, tag="midnight"))
    offset = midnight_offset(rng, "Asia/Kolkata", now, earliest_s=5 * MINUTE)
    cases.append(Case("five_hour" if offset < 5 * HOUR - MINUTE else "seven_day", offset,
                      "Asia/Kolkata", tag="midnight"))  # fmt: skip
    for where, instant in dst_transitions(now + timedelta(minutes=10), 6 * DAY)[:2]:
        offset = (instant - now).total_seconds() + rng.uniform(-90 * MINUTE, 90 * MINUTE)
        cases.append(Case("seven_day", offset, where, tag="dst"))
    cases += [Case(claim, band_offset(rng, band), zone(), mode="text")
              for claim, band in (("five_hour", "five_hour"), ("seven_day", "hours"),
                                  ("seven_day", "day_edge"), ("seven_day", "days"),
                                  ("seven_day_opus", "days"), ("overage", "hours"))]  # fmt: skip
    cases += [Case(claim, band_offset(rng, band), zone(), pin=CLAUDE_OLD)
              for claim, band in (("five_hour", "five_hour"), ("seven_day", "day_edge"),
                                  ("seven_day_opus", "hours"), ("overage", "hours"))]  # fmt: skip
    return cases


def draw_tty_cases() -> list[Case]:
    rng = random.Random(f"claude-tty:{SEED}")
    return [
        Case("five_hour", band_offset(rng, "five_hour"), rng.choice(ZONES), mode="tty"),
        Case("seven_day", band_offset(rng, "hours"), rng.choice(ZONES), mode="tty"),
        Case("seven_day", band_offset(rng, "days"), rng.choice(ZONES), mode="tty"),
        Case("seven_day_opus", band_offset(rng, "hours"), rng.choice(ZONES), mode="tty"),
        Case("overage", band_offset(rng, "hours"), rng.choice(ZONES), mode="tty"),
    ]


CASES = draw_cases()
TTY_CASES = draw_tty_cases()


def serve(mock: mp.MockProvider, case: Case) -> datetime:
    """Script the mock's 429 for the case and return the true reset (whole seconds, as the
    unified reset header carries it)."""
    assert case.offset_s is not None
    reset = int(time.time() + case.offset_s)
    mock.script(mp.ANTHROPIC, mp.claude_limit(reset, case.claim, **case.extra))
    return datetime.fromtimestamp(reset, UTC)


def result_text(stdout: str) -> str:
    """The `result` row's text: what `claude -p` prints in text mode, as stream-json has it."""
    results = [e for e in json_lines(stdout) if e.get("type") == "result"]
    assert results, f"no result event:\n{stdout[-2000:]}"
    return str(results[-1].get("result", ""))


def stream_argv(binary: Path) -> list[str]:
    return [str(binary), "-p", "hi", "--output-format", "stream-json", "--verbose"]


def run_headless_case(case: Case, root: Path) -> Judged:
    binary = cli_binary(case.pin)
    with mp.running() as mock:
        truth = serve(mock, case)
        box = Box.make(root / case.id)
        env = claude_env(box, binary, mock.url, case.zone)
        argv = stream_argv(binary) if case.mode == "stream" else [str(binary), "-p", "hi"]
        ran = run_headless(argv, env, box.work)
    zone = host_zone(env)
    expect = Expect("provider_quota", "claude", truth=truth)
    verdicts = {"text": parse(result_text(ran.stdout) if case.mode == "stream" else ran.stdout,
                              observed_at=ran.observed_at, zone=zone)}  # fmt: skip
    if case.mode == "stream":
        verdicts["structured"] = parse(ran.stdout, observed_at=ran.observed_at, zone=zone)
    return Judged(case.id, verdicts, expect, ran.stdout + ran.stderr)


#: What an interactive screen shows once the limit has been printed.
_TTY_BANNER = r"hit your [^\n]*limit|Usage limit reached|Stop and wait"


def run_tty_case(case: Case, root: Path) -> Judged:
    binary = cli_binary(case.pin)
    box = Box.make(root / case.id)
    with mp.running() as mock:
        env = claude_env(box, binary, mock.url, case.zone, interactive=True)
        tmux = Tmux(box, [str(binary)], env)
        try:
            tmux.wait_for(waits_for(r"❯|for shortcuts"), timeout=150)
            truth = serve(mock, case)
            tmux.submit("hi", lambda: len(mock.requests(mp.ANTHROPIC)))
            tmux.wait_for(waits_for(_TTY_BANNER), timeout=150)
            time.sleep(1.5)  # the status lines under the prompt follow the transcript line
            screen = tmux.screen()
            observed_at = datetime.now(UTC)  # once, for the screen that is parsed
        finally:
            tmux.close()
    # The CLI continues by itself when its screen says so; a menu only offers it.
    native = "Continuing automatically" in screen or "set to continue automatically" in screen
    if "Wait here, then continue automatically" in screen:
        native = False
    expect = Expect("provider_quota", "claude", truth=truth, native=native)
    verdict = parse(screen, observed_at=observed_at, zone=host_zone(env))
    return Judged(case.id, {"text": verdict}, expect, screen)


@pytest.fixture(scope="module")
def headless(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Judged | BaseException]:
    """Every headless case, run two at a time (each with its own mock and HOME)."""
    cli_binary(CLAUDE)
    cli_binary(CLAUDE_OLD)
    root = tmp_path_factory.mktemp("claude")
    return run_parallel(lambda case: run_headless_case(case, root), CASES, key=lambda c: c.id)


@pytest.fixture(scope="module")
def interactive(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Judged | BaseException]:
    cli_binary(CLAUDE)
    root = tmp_path_factory.mktemp("claude-tty")
    return run_parallel(lambda case: run_tty_case(case, root), TTY_CASES, workers=2,
                        key=lambda c: c.id)  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_claude_headless_limit_is_read_within_its_printed_minute(
    case: Case, headless: dict[str, Judged | BaseException]
) -> None:
    """`claude -p` on a 429 with the unified headers: the text and the rate_limit_event each
    give a reset that brackets the served one, as a Claude provider_quota."""
    assert_judged(headless.get(case.id))


@pytest.mark.parametrize("case", TTY_CASES, ids=lambda c: c.id)
def test_claude_interactive_screen_is_read_within_its_printed_minute(
    case: Case, interactive: dict[str, Judged | BaseException]
) -> None:
    """Interactive Claude Code under tmux: the screen after the limit gives the served reset,
    and says the CLI continues by itself exactly when the screen says it will."""
    assert_judged(interactive.get(case.id))


def test_claude_allowed_warning_then_answer_is_no_stop(tmp_path: Path) -> None:
    """An answer that carries `allowed_warning` unified headers (a rate_limit_event with
    status allowed_warning) ends well: the stream and its result text are no stop."""
    binary = cli_binary(CLAUDE)
    reset = int(time.time() + 2 * HOUR)
    warning = {
        "anthropic-ratelimit-unified-status": "allowed_warning",
        "anthropic-ratelimit-unified-reset": str(reset),
        "anthropic-ratelimit-unified-representative-claim": "five_hour",
        "anthropic-ratelimit-unified-5h-utilization": "0.91",
    }
    with mp.running() as mock:
        mock.script(mp.ANTHROPIC, mp.Reply("text", headers=warning, text="Done: tests pass."))
        box = Box.make(tmp_path)
        env = claude_env(box, binary, mock.url, "Europe/Berlin")
        ran = run_headless(stream_argv(binary), env, box.work)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    zone = host_zone(env)
    verdicts = {
        "text": parse(result_text(ran.stdout), observed_at=ran.observed_at, zone=zone),
        "structured": parse(ran.stdout, observed_at=ran.observed_at, zone=zone),
    }
    assert_sources("claude-allowed-warning", verdicts, Expect("none", None), ran.stdout)


def test_claude_tool_turn_then_answer_is_no_stop(tmp_path: Path) -> None:
    """A turn with a tool call and its result, then an answer: nothing to read as a stop."""
    binary = cli_binary(CLAUDE)
    with mp.running() as mock:
        mock.script(mp.ANTHROPIC, mp.tool_call(), mp.answer("All done."))
        box = Box.make(tmp_path)
        env = claude_env(box, binary, mock.url, "Asia/Kolkata")
        ran = run_headless(stream_argv(binary), env, box.work)
        served = [seen.kind for seen in mock.requests(mp.ANTHROPIC)]
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert served[:2] == ["tool", "text"]
    assert any(e.get("type") == "user" for e in json_lines(ran.stdout))  # the tool's result
    verdict = parse(ran.stdout, observed_at=ran.observed_at, zone=host_zone(env))
    assert_sources("claude-tool-turn", {"structured": verdict}, Expect("none", None), ran.stdout)
