"""The real Gemini CLI (0.61.0) against the mock's generateContent API: `gemini -p` with
stream-json, json and text output, and interactively under tmux, on 429 RESOURCE_EXHAUSTED
bodies (RetryInfo delays, per-day QuotaFailure, a delay stated only in the message,
`limit: 0`) and on an invalid API key, each with a fresh HOME and TZ set to a drawn zone.

Gemini states a wait, counted from when the API answered; the CLI prints it a moment later
and the parser counts from that later observed_at, so a reset may come out late by that
moment (never early): the judging allows exactly the measured gap."""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rewake.parsers import parse
from rewake.runner.clis.hostzone import host_zone
from tests.realcli import mock_provider as mp
from tests.realcli.realcli_cases import (
    ZONES,
    Expect,
    Judged,
    assert_judged,
    run_parallel,
    run_seed,
    slug,
)
from tests.realcli.realcli_drive import (
    Box,
    Tmux,
    cli_binary,
    gemini_env,
    json_lines,
    run_headless,
    waits_for,
)
from tests.realcli.realcli_install import GEMINI

pytestmark = pytest.mark.realcli

SEED = run_seed()

#: Body variants: what the mock serves, and whether the truth is a reset or a refusal.
LIMIT_ZERO = (
    "You exceeded your current quota, please check your plan and billing details.\n"
    "* Quota exceeded for metric: generativelanguage.googleapis.com/"
    "generate_content_free_tier_requests, limit: 0, model: gemini-2.5-pro"
)
PER_DAY = (
    "You exceeded your current quota, please check your plan and billing details.\n"
    "* Quota exceeded for metric: generativelanguage.googleapis.com/"
    "generate_content_free_tier_requests, limit: 50, model: gemini-2.5-pro"
)


@dataclass(frozen=True)
class Case:
    variant: str  # retryinfo, daily-retryinfo, message-only, daily-bare, limit-0
    delay_s: float | None
    zone: str | None
    mode: str  # stream-json, json, text, tty

    @property
    def id(self) -> str:
        delay = f"{self.delay_s:g}s" if self.delay_s is not None else "none"
        return f"{self.mode}-{self.variant}-{delay}-{slug(self.zone)}-seed{SEED}"

    def reply(self) -> mp.Reply:
        delay = f"{self.delay_s:g}s" if self.delay_s is not None else None
        if self.variant == "retryinfo":
            return mp.gemini_limit(retry_delay=delay)
        if self.variant == "daily-retryinfo":
            return mp.gemini_limit(retry_delay=delay, per_day=True,
                                   message=f"{PER_DAY}\nPlease retry in {delay}.")  # fmt: skip
        if self.variant == "message-only":
            return mp.gemini_limit(message=f"{PER_DAY}\nPlease retry in {delay}.")
        if self.variant == "daily-bare":
            return mp.gemini_limit(per_day=True, message=PER_DAY)
        if self.variant == "limit-0":
            return mp.gemini_limit(message=LIMIT_ZERO)
        raise ValueError(self.variant)

    @property
    def refusals(self) -> frozenset[str]:
        # A per-day quota prints "You have exhausted your daily quota on this model." and no
        # wait, even when the API stated one (only the error dump on stderr carries it).
        if self.variant in ("daily-bare", "daily-retryinfo"):
            return frozenset({"not_stated"})
        if self.variant == "limit-0":
            # The interactive dialog prints only "Usage limit reached for <model>.": the
            # `limit: 0` that makes waiting useless is not on the screen, so the screen states
            # no reset at all. Either refusal keeps auto-resume from being offered.
            return frozenset({"not_stated"} if self.mode == "tty" else {"no_reset"})
        return frozenset()


def draw_cases() -> list[Case]:
    rng = random.Random(f"gemini:{SEED}")
    zone = lambda: rng.choice(ZONES)  # noqa: E731
    # Past the throttle threshold (300 s) and within a daily quota's day.
    delay = lambda: float(rng.randint(6 * 60, 23 * 3600))  # noqa: E731
    cases = [Case("retryinfo", delay(), zone(), mode) for mode in ("stream-json", "json", "text")]
    cases += [
        Case("daily-retryinfo", delay() + 0.5, zone(), "stream-json"),
        Case("message-only", delay() + 0.5, zone(), "stream-json"),
        Case("daily-bare", None, zone(), "stream-json"),
        Case("limit-0", None, zone(), "json"),
    ]
    return cases


def draw_tty_cases() -> list[Case]:
    rng = random.Random(f"gemini-tty:{SEED}")
    zones = rng.sample([z for z in ZONES if z], 2)
    return [Case("retryinfo", float(rng.randint(6 * 60, 20 * 3600)), where, "tty")
            for where in zones] + [Case("limit-0", None, rng.choice(ZONES), "tty")]  # fmt: skip


CASES = draw_cases()
TTY_CASES = draw_tty_cases()


def json_document(stderr: str) -> str:
    """`--output-format json`'s document: the pretty-printed object that closes stderr,
    after the CLI's warnings and its error dump."""
    start = stderr.rfind("\n{\n")
    assert start >= 0, f"no JSON document on stderr:\n{stderr[-2000:]}"
    return stderr[start + 1 :]


def error_message(printed: str) -> str:
    """The error message of the result (stream-json) or error (json) object."""
    for event in reversed(json_lines(printed)):
        error = event.get("error")
        if isinstance(error, dict) and "message" in error:
            return str(error["message"])
    whole, _ = json.JSONDecoder().raw_decode(printed.strip())
    if isinstance(whole, dict) and isinstance(whole.get("error"), dict):
        return str(whole["error"].get("message", ""))
    raise AssertionError(f"no error message in:\n{printed[-2000:]}")


def expect_for(case: Case, answered_at: float | None, observed_at: datetime) -> Expect:
    if case.refusals:
        return Expect("provider_quota", "gemini", refusals=case.refusals)
    assert answered_at is not None and case.delay_s is not None, "the mock served no limit"
    truth = datetime.fromtimestamp(answered_at, UTC) + timedelta(seconds=case.delay_s)
    late = (observed_at - datetime.fromtimestamp(answered_at, UTC)).total_seconds()
    return Expect("provider_quota", "gemini", truth=truth, late_s=max(late, 0.0) + 1.0)


def run_case(case: Case, root: Path) -> Judged:
    binary = cli_binary(GEMINI)
    with mp.running() as mock:
        mock.script(mp.GEMINI, case.reply())
        box = Box.make(root / case.id)
        env = gemini_env(box, binary, mock.url, case.zone)
        argv = [str(binary), "-p", "hi", "--output-format", case.mode]
        ran = run_headless(argv, env, box.work)
        answered_at = mock.limit_answered_at()
    zone = host_zone(env)
    expect = expect_for(case, answered_at, ran.observed_at)
    at = ran.observed_at
    if case.mode == "stream-json":
        verdicts = {
            "text": parse(error_message(ran.stdout), observed_at=at, zone=zone),
            "structured": parse(ran.stdout, observed_at=at, zone=zone),
        }
    elif case.mode == "json":  # the error JSON goes to stderr, stdout stays empty
        document = json_document(ran.stderr)
        verdicts = {
            "text": parse(error_message(document), observed_at=at, zone=zone),
            "structured": parse(document, observed_at=at, zone=zone),
        }
    else:
        verdicts = {"text": parse(ran.stdout + ran.stderr, observed_at=at, zone=zone)}
    return Judged(case.id, verdicts, expect, ran.stdout + ran.stderr)


_TTY_BANNER = r"Usage limit reached|Access resets|Keep trying|[Qq]uota"


def run_tty_case(case: Case, root: Path) -> Judged:
    binary = cli_binary(GEMINI)
    box = Box.make(root / case.id)
    with mp.running() as mock:
        mock.script(mp.GEMINI, case.reply())
        env = gemini_env(box, binary, mock.url, case.zone, interactive=True)
        tmux = Tmux(box, [str(binary)], env)
        try:
            tmux.wait_for(waits_for(r"Type your message|> "), timeout=150)
            time.sleep(1.0)
            tmux.submit("hi", lambda: len(mock.requests(mp.GEMINI)))
            tmux.wait_for(waits_for(_TTY_BANNER), timeout=150)
            time.sleep(1.0)
            screen = tmux.screen()
            observed_at = datetime.now(UTC)  # once, for the screen that is parsed
        finally:
            tmux.close()
        answered_at = mock.limit_answered_at()
    expect = expect_for(case, answered_at, observed_at)
    verdict = parse(screen, observed_at=observed_at, zone=host_zone(env))
    return Judged(case.id, {"text": verdict}, expect, screen)


@pytest.fixture(scope="module")
def headless(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Judged | BaseException]:
    cli_binary(GEMINI)
    root = tmp_path_factory.mktemp("gemini")
    return run_parallel(lambda case: run_case(case, root), CASES, key=lambda c: c.id)


@pytest.fixture(scope="module")
def interactive(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Judged | BaseException]:
    cli_binary(GEMINI)
    root = tmp_path_factory.mktemp("gemini-tty")
    return run_parallel(lambda case: run_tty_case(case, root), TTY_CASES, workers=2,
                        key=lambda c: c.id)  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gemini_headless_limit_is_read_or_refused(
    case: Case, headless: dict[str, Judged | BaseException]
) -> None:
    """`gemini -p` on a 429 RESOURCE_EXHAUSTED: a stated wait gives the served reset (never
    early), a per-day quota without a wait is `not_stated`, `limit: 0` is `no_reset`."""
    assert_judged(headless.get(case.id))


@pytest.mark.parametrize("case", TTY_CASES, ids=lambda c: c.id)
def test_gemini_interactive_dialog_is_read_within_its_printed_minute(
    case: Case, interactive: dict[str, Judged | BaseException]
) -> None:
    """Interactive Gemini under tmux: "Access resets at 7:00 PM GMT-3." (and the "Keep
    trying / Stop" dialog under it) gives the served reset in the printed zone."""
    assert_judged(interactive.get(case.id))


def test_gemini_invalid_api_key_asks_for_sign_in(tmp_path: Path) -> None:
    """A 400 API_KEY_INVALID is login_required, not some other failure."""
    binary = cli_binary(GEMINI)
    body = {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                      "status": "INVALID_ARGUMENT",
                      "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                   "reason": "API_KEY_INVALID",
                                   "domain": "googleapis.com"}]}}  # fmt: skip
    with mp.running() as mock:
        mock.script(mp.GEMINI, mp.Reply("limit", 400, {}, body))
        box = Box.make(tmp_path)
        env = gemini_env(box, binary, mock.url, "Europe/Berlin")
        ran = run_headless([str(binary), "-p", "hi", "--output-format", "stream-json"],
                           env, box.work)  # fmt: skip
    verdict = parse(ran.stdout, observed_at=ran.observed_at, zone=host_zone(env))
    assert verdict.kind == "login_required", (verdict, ran.stdout[-1500:])


def test_gemini_tool_turn_then_answer_is_no_stop(tmp_path: Path) -> None:
    """A function call, its result and an answer: the stream is no stop."""
    binary = cli_binary(GEMINI)
    with mp.running() as mock:
        mock.script(mp.GEMINI, mp.tool_call(), mp.answer("All done."))
        box = Box.make(tmp_path)
        env = gemini_env(box, binary, mock.url, "Pacific/Auckland")
        ran = run_headless([str(binary), "-p", "hi", "--output-format", "stream-json"],
                           env, box.work)  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert any(e.get("type") == "tool_result" for e in json_lines(ran.stdout))
    verdict = parse(ran.stdout, observed_at=ran.observed_at, zone=host_zone(env))
    assert (verdict.kind, verdict.reset_at) == ("none", None), verdict


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("REWAKE_REALCLI_SLOW") != "1",
    reason="Gemini retries a per-minute quota for minutes: REWAKE_REALCLI_SLOW=1",
)
def test_gemini_per_minute_quota_is_a_throttle(tmp_path: Path) -> None:
    """A per-minute quota with a short RetryInfo, retried until the CLI gives up, is a
    transient throttle, not a usage limit."""
    binary = cli_binary(GEMINI)
    body = mp.gemini_limit(retry_delay="20s").body
    assert body is not None
    body["error"]["details"].append({
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_requests",
                        "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}],
    })  # fmt: skip
    with mp.running() as mock:
        mock.script(mp.GEMINI, mp.Reply("limit", 429, {}, body))
        box = Box.make(tmp_path)
        env = gemini_env(box, binary, mock.url, None)
        ran = run_headless([str(binary), "-p", "hi", "--output-format", "stream-json"],
                           env, box.work, timeout=600)  # fmt: skip
    verdict = parse(ran.stdout, observed_at=ran.observed_at, zone=host_zone(env))
    assert verdict.kind == "transient", verdict
