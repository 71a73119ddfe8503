"""The real Codex CLI (0.171.0) against the mock's OpenAI Responses API: `codex exec --json
--skip-git-repo-check` on a 429 usage_limit_reached (per plan, five-hour and weekly windows,
resets on and after the host's local date, next to local midnight) and on the credit and
spend-cap variants, each with a fresh CODEX_HOME and TZ set to a drawn zone."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from rewake.parsers import parse
from rewake.runner.clis.hostzone import host_zone
from tests.realcli import mock_provider as mp
from tests.realcli.realcli_cases import (
    HOUR,
    MINUTE,
    ZONES,
    Expect,
    Judged,
    assert_judged,
    band_offset,
    drawn_at,
    midnight_offset,
    run_parallel,
    run_seed,
    slug,
    span,
)
from tests.realcli.realcli_drive import Box, cli_binary, codex_env, json_lines, run_headless
from tests.realcli.realcli_install import CODEX

pytestmark = pytest.mark.realcli

SEED = run_seed()
PLANS = ("plus", "pro", "free", "go", "team", "business", "enterprise", "edu", None)
#: x-codex-rate-limit-reached-type values after which waiting does not help.
NO_RESET_TYPES = (
    "workspace_owner_credits_depleted",
    "workspace_member_credits_depleted",
    "workspace_owner_usage_limit_reached",
    "workspace_member_usage_limit_reached",
)


@dataclass(frozen=True)
class Case:
    plan: str | None
    offset_s: float | None
    zone: str | None
    tag: str = ""
    reached_type: str | None = None
    error_type: str = "usage_limit_reached"

    @property
    def id(self) -> str:
        offset = span(self.offset_s) if self.offset_s is not None else "none"
        parts = [str(self.plan), offset, slug(self.zone), self.tag, self.reached_type or ""]
        return "-".join(p for p in parts if p) + f"-seed{SEED}"

    @property
    def waits_help(self) -> bool:
        return (self.offset_s is not None and self.reached_type not in NO_RESET_TYPES
                and self.error_type == "usage_limit_reached")  # fmt: skip


def draw_cases() -> list[Case]:
    rng = random.Random(f"codex:{SEED}")
    now = drawn_at()
    zone = lambda: rng.choice(ZONES)  # noqa: E731
    cases = [Case(plan, band_offset(rng, "five_hour"), zone()) for plan in PLANS]
    cases += [
        Case(rng.choice(PLANS), band_offset(rng, band), zone())
        for band in ("minutes", "hours", "hours", "day_edge", "day_edge", "days", "days")
    ]
    for where in ("Asia/Kathmandu", "Australia/Eucla", "America/Los_Angeles", "UTC"):
        offset = midnight_offset(rng, where, now, earliest_s=5 * MINUTE)
        cases.append(Case("plus", offset, where, tag="midnight"))
    cases += [
        Case("team", band_offset(rng, "five_hour"), zone(), reached_type=kind)
        for kind in (*NO_RESET_TYPES, "spend_control_reached", "rate_limit_reached")
    ]
    cases += [
        Case("plus", None, zone(), tag="no-reset"),
        Case("plus", None, zone(), tag="not-included", error_type="usage_not_included"),
    ]  # fmt: skip
    return cases


CASES = draw_cases()


def failure_text(stdout: str) -> str:
    """The turn.failed message: what a person reads (the error event says the same)."""
    failed = [e for e in json_lines(stdout) if e.get("type") == "turn.failed"]
    assert failed, f"no turn.failed event:\n{stdout[-2000:]}"
    error = failed[-1].get("error")
    return str(error.get("message", "")) if isinstance(error, dict) else ""


def run_case(case: Case, root: Path) -> Judged:
    binary = cli_binary(CODEX)
    now = time.time()
    reset = int(now + case.offset_s) if case.offset_s is not None else None
    window = 300 if case.offset_s is None or case.offset_s <= 5 * HOUR else 10080
    headers = {"x-codex-rate-limit-reached-type": case.reached_type} if case.reached_type else {}
    with mp.running() as mock:
        mock.script(mp.OPENAI, mp.codex_limit(reset, now=now, plan=case.plan,
                                              error_type=case.error_type,
                                              window_minutes=window, headers=headers))  # fmt: skip
        box = Box.make(root / case.id)
        env = codex_env(box, binary, mock.url, case.zone)
        ran = run_headless([str(binary), "exec", "--json", "--skip-git-repo-check", "hi"],
                           env, box.work)  # fmt: skip
    zone = host_zone(env)
    if case.waits_help:
        assert reset is not None
        expect = Expect("provider_quota", "codex", truth=datetime.fromtimestamp(reset, UTC))
    elif case.offset_s is None and case.error_type == "usage_limit_reached":
        expect = Expect("provider_quota", "codex", refusals=frozenset({"not_stated"}))
    else:
        expect = Expect("provider_quota", "codex", refusals=frozenset({"no_reset"}))
    verdicts = {
        "text": parse(failure_text(ran.stdout), observed_at=ran.observed_at, zone=zone),
        "structured": parse(ran.stdout, observed_at=ran.observed_at, zone=zone),
    }
    return Judged(case.id, verdicts, expect, ran.stdout + ran.stderr)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Judged | BaseException]:
    cli_binary(CODEX)
    root = tmp_path_factory.mktemp("codex")
    return run_parallel(lambda case: run_case(case, root), CASES, key=lambda c: c.id)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_codex_limit_is_read_or_refused_as_the_truth_calls_for(
    case: Case, results: dict[str, Judged | BaseException]
) -> None:
    """`codex exec --json` on a 429: a stated "try again at" brackets the served resets_at in
    the event stream and in the message; credits, spend caps and plans without Codex are
    refused as `no_reset`, a limit with no reset as `not_stated`."""
    assert_judged(results.get(case.id))


def test_codex_answer_under_a_full_window_is_no_stop(tmp_path: Path) -> None:
    """An answer whose headers show the five-hour window at 100 % is a finished turn: the
    events are no stop."""
    binary = cli_binary(CODEX)
    now = time.time()
    full = {"x-codex-primary-used-percent": "100", "x-codex-primary-window-minutes": "300",
            "x-codex-primary-reset-at": str(int(now + 2 * HOUR))}  # fmt: skip
    with mp.running() as mock:
        mock.script(mp.OPENAI, mp.Reply("text", headers=full, text="Done: the tests pass."))
        box = Box.make(tmp_path)
        env = codex_env(box, binary, mock.url, "Asia/Kolkata")
        ran = run_headless([str(binary), "exec", "--json", "--skip-git-repo-check", "hi"],
                           env, box.work)  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert any(e.get("type") == "turn.completed" for e in json_lines(ran.stdout))
    verdict = parse(ran.stdout, observed_at=ran.observed_at, zone=host_zone(env))
    assert (verdict.kind, verdict.reset_at) == ("none", None), verdict
